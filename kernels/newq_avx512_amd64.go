//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// setNewQAVX512 puts the AVX-512 row-run dots of Q4_0, Q5_0, IQ4_NL,
// Q4_1, Q5_1, IQ4_XS, Q5_K, Q3_K and Q2_K (newq_avx512_amd64.s, quant_avx512_amd64.s) into t's
// rows: the one-token dot is a run of one row.
func setNewQAVX512(t *table) {
	q8k := func(typ tensor.Type, bb int, f func(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)) {
		rows := func(w []byte, x []quant.BlockQ8K, out []float32) {
			w = w[:bb*len(x)*len(out)]
			if len(x) == 0 || len(out) == 0 {
				clear(out)
				return
			}
			f(&w[0], &x[0], len(x), len(out), &out[0])
		}
		t.weights[typ].q8k = dots[quant.BlockQ8K]{one: oneOfRows(rows), rows: rows}
	}
	q81 := func(typ tensor.Type, bb int, f func(w *byte, x *quant.BlockQ8_1, nb, rows int, out *float32)) {
		rows := func(w []byte, x []quant.BlockQ8_1, out []float32) {
			w = w[:bb*len(x)*len(out)]
			if len(x) == 0 || len(out) == 0 {
				clear(out)
				return
			}
			f(&w[0], &x[0], len(x), len(out), &out[0])
		}
		t.weights[typ].q81 = dots[quant.BlockQ8_1]{one: oneOfRows(rows), rows: rows}
	}
	q81(tensor.Q4_1, quant.BlockQ4_1Bytes, dotQ4_1RowsAVX512)
	q81(tensor.Q5_1, quant.BlockQ5_1Bytes, dotQ5_1RowsAVX512)
	for _, k := range []q80Kernel{q80Q4_0, q80Q5_0, q80IQ4NL} {
		t.weights[k.typ()].q80 = dots[quant.BlockQ8_0]{
			one: k.one, rows: k.rows,
			prepLen: q80PrepLen, prep: k.prep, prepRows: k.prepRows,
		}
	}
	q80x8 := func(typ tensor.Type, bb int, f func(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)) {
		t.weights[typ].q80.x8 = func(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32) {
			x, dx = x[:8*nb], dx[:8*nb]
			w = w[:bb*nb]
			if nb == 0 {
				*out = [8]float32{}
				return
			}
			f(&w[0], &x[0], &dx[0], nb, out)
		}
	}
	q80x8(tensor.Q4_0, quant.BlockQ4_0Bytes, dotQ4_0x8AVX512)
	q80x8(tensor.Q5_0, quant.BlockQ5_0Bytes, dotQ5_0x8AVX512)
	q80x8(tensor.IQ4_NL, quant.BlockIQ4_NLBytes, dotIQ4NLx8AVX512)
	q8k(tensor.IQ4_XS, quant.BlockIQ4_XSBytes, dotIQ4XSRowsAVX512)
	iq4xsPrepAVX512Split.set(t)
	q8k(tensor.Q5_K, quant.BlockQ5_KBytes, dotQ5KRowsAVX512)
	q8k(tensor.Q3_K, quant.BlockQ3_KBytes, dotQ3KRowsAVX512)
	if detect().gfni {
		q3kPrepGFNISplit.set(t)
	} else {
		q3kPrepAVX512Split.set(t)
	}
	q8k(tensor.Q2_K, quant.BlockQ2_KBytes, dotQ2KRowsAVX512)
	t.weights[tensor.Q3_K].q8k.x8 = func(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
		x = x[:8*nb]
		w = w[:quant.BlockQ3_KBytes*nb]
		if nb == 0 {
			*out = [8]float32{}
			return
		}
		dotQ3Kx8AVX512(&w[0], &x[0], nb, out)
	}
	t.weights[tensor.IQ4_XS].q8k.x8 = func(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
		x = x[:8*nb]
		w = w[:quant.BlockIQ4_XSBytes*nb]
		if nb == 0 {
			*out = [8]float32{}
			return
		}
		dotIQ4XSx8AVX512(&w[0], &x[0], nb, out)
	}
	t.weights[tensor.Q5_K].q8k.x8 = func(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
		x = x[:8*nb]
		w = w[:quant.BlockQ5_KBytes*nb]
		if nb == 0 {
			*out = [8]float32{}
			return
		}
		dotQ5Kx8AVX512(&w[0], &x[0], nb, out)
	}
}

// Row-run splits of the avx512 path. IQ4_XS's prepares each block's
// activations into six 64-byte registers and dx (IQ4XS_X: the work its
// row run did in every row); Q3_K's reorders them to match its whole
// qs load (the VINSERTI64X4 its row run does in every row).
var (
	iq4xsPrepAVX512Split = q8kPrep{tensor.IQ4_XS, quant.BlockIQ4_XSBytes, 448, iq4xsPrepAVX512, dotIQ4XSRowsPrepAVX512}
	q3kPrepAVX512Split   = q8kPrep{tensor.Q3_K, quant.BlockQ3_KBytes, 256, q3kPrepAVX512, dotQ3KRowsPrepAVX512}
	// On a processor with GFNI (Ice Lake and Zen 4 on, not Cascade Lake),
	// the same split with the hmask bits placed by an affine byte
	// transform.
	q3kPrepGFNISplit = q8kPrep{tensor.Q3_K, quant.BlockQ3_KBytes, 256, q3kPrepAVX512, dotQ3KRowsPrepGFNI}
)

// oneOfRows returns the one-token dot that is a run of one row of rows.
func oneOfRows[X any](rows func(w []byte, x []X, out []float32)) func(w []byte, x []X) float32 {
	return func(w []byte, x []X) float32 {
		var out [1]float32
		rows(w, x, out[:])
		return out[0]
	}
}

// q80RowsMaxBlocks bounds the blocks of a row (65536 columns) that the
// Q8_0-partner row-run dots take: their activation scratch is on the
// caller's stack or, prepared once per product, the pool's
// (q80ScrBytes).
const q80RowsMaxBlocks = 2048

// q80RowsSmallBlocks and q80RowsTinyBlocks are the widths (8192 and 2048
// columns) up to which rows uses smaller stack arrays: Go zeroes them at
// every call, 52 bytes per block.
const (
	q80RowsSmallBlocks = 256
	q80RowsTinyBlocks  = 64
)

// q80XsGroupBytes is the reordered activations per whole group of eight
// blocks in the Q8_0-partner row-run dots' scratch: the activations of
// values 0-15 and 16-31 of four blocks and their offset lanes, 64 bytes
// each, twice. The group's eight scales as float32 take 32 bytes more.
const q80XsGroupBytes = 384

// q80ScrBytes is the scratch of the Q8_0-partner row-run dots for rows of
// nb blocks (q80PrepAVX512's layout): 64 bytes to align it, then every
// whole group's activations and then its scales, and 32 bytes more for
// MXFP4's layout (mxfp4PrepAVX512's), which keeps the scales of all nb
// blocks, the last nb%8 too, after the groups. The AVX2 ones' layout
// (rowsPrepAVX2's) takes 320 of the 416 bytes a group.
func q80ScrBytes(nb int) int { return 64 + nb/8*(q80XsGroupBytes+32) + 32 }

// The stack arrays of rows, q80ScrBytes of the three widths.
const (
	q80ScrTiny  = 64 + q80RowsTinyBlocks/8*(q80XsGroupBytes+32) + 32
	q80ScrSmall = 64 + q80RowsSmallBlocks/8*(q80XsGroupBytes+32) + 32
	q80ScrLarge = 64 + q80RowsMaxBlocks/8*(q80XsGroupBytes+32) + 32
)

// q80PrepLen is the dots.prepLen of the Q8_0-partner row-run dots: the
// scratch of rows of nb blocks, 0 (rows alone) for rows wider than
// q80RowsMaxBlocks, which take the generic twin.
func q80PrepLen(nb int) int {
	if nb < 1 || nb > q80RowsMaxBlocks {
		return 0
	}
	return q80ScrBytes(nb)
}

// The row-run dots: for each of rows weight rows of nb blocks at w,
// out[r] is its dot with the nb blocks at x (nb, rows >= 1). The
// Q8_0-partner ones read the activations of every whole group of eight
// blocks, in the order the kernel takes the codes, and their scales as
// float32 from scr, which q80PrepAVX512 wrote from x (nb <=
// q80RowsMaxBlocks); the last nb%8 blocks from x.

// q80Kernel names one of the Q8_0-partner row-run kernels. Its methods
// call the kernel directly, so that the compiler sees the scratch arrays
// on the caller's stack do not escape (no allocation per call).
type q80Kernel uint8

const (
	q80Q4_0 q80Kernel = iota
	q80Q5_0
	q80IQ4NL
	// MXFP4's (mxfp4_amd64.s), whose scratch mxfp4PrepAVX512 writes.
	q80MXFP4
	// The AVX2 ones (rows_avx2_amd64.s), whose scratch rowsPrepAVX2
	// writes in a layout of its own, of q80ScrBytes's size.
	q80Q4_0AVX2
	q80Q5_0AVX2
	q80IQ4NLAVX2
)

// typ returns the weight type of kernel k.
func (k q80Kernel) typ() tensor.Type {
	return [...]tensor.Type{tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.MXFP4, tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL}[k]
}

// offset returns k's code offset o (the codes are u-o for unsigned u) in
// every byte (0 for the AVX2 IQ4_NL kernel, which multiplies signed
// codes, and for MXFP4's, whose prep has its own).
func (k q80Kernel) offset() uint32 {
	return [...]uint32{0x08080808, 0x10101010, 0x80808080, 0, 0x08080808, 0x10101010, 0}[k]
}

// rows is k's row-run dot: the activations prepared into scratch in
// stack arrays of one of three sizes, then the kernel; rows wider than
// q80RowsMaxBlocks take the generic twin row by row, so that the
// one-token dot (a run of one) still equals every row.
func (k q80Kernel) rows(w []byte, x []quant.BlockQ8_0, out []float32) {
	nb := len(x)
	w = w[:k.typ().BlockBytes()*nb*len(out)]
	switch {
	case nb == 0 || len(out) == 0:
		clear(out)
	case nb <= q80RowsTinyBlocks:
		var scr [q80ScrTiny]byte
		k.prepCall(w, x, out, &scr[0])
	case nb <= q80RowsSmallBlocks:
		k.rowsSmall(w, x, out)
	case nb <= q80RowsMaxBlocks:
		k.rowsLarge(w, x, out)
	default:
		twin := quant.DotQ4_0Q8_0
		switch k.typ() {
		case tensor.Q5_0:
			twin = quant.DotQ5_0Q8_0
		case tensor.IQ4_NL:
			twin = quant.DotIQ4NLQ8_0
		case tensor.MXFP4:
			twin = quant.DotMXFP4Q8_0
		}
		rb := k.typ().BlockBytes() * nb
		for r := range out {
			out[r] = twin(w[r*rb:(r+1)*rb], x)
		}
	}
}

// one is k's one-token dot, a run of one row of rows; a method rather
// than oneOfRows, so that the compiler sees its result array does not
// escape (no allocation per call).
func (k q80Kernel) one(w []byte, x []quant.BlockQ8_0) float32 {
	var out [1]float32
	k.rows(w, x, out[:])
	return out[0]
}

// rowsSmall and rowsLarge keep their arrays out of the narrower rows'
// frames.
func (k q80Kernel) rowsSmall(w []byte, x []quant.BlockQ8_0, out []float32) {
	var scr [q80ScrSmall]byte
	k.prepCall(w, x, out, &scr[0])
}

func (k q80Kernel) rowsLarge(w []byte, x []quant.BlockQ8_0, out []float32) {
	var scr [q80ScrLarge]byte
	k.prepCall(w, x, out, &scr[0])
}

// prepCall prepares the activations into scr (q80ScrBytes(len(x)) bytes)
// and runs kernel k on len(out) rows (len(x), len(out) >= 1).
func (k q80Kernel) prepCall(w []byte, x []quant.BlockQ8_0, out []float32, scr *byte) {
	k.prepare(x, scr)
	k.call(w, x, out, scr)
}

// prepare writes kernel k's scratch for the blocks x (len(x) >= 1) to scr.
func (k q80Kernel) prepare(x []quant.BlockQ8_0, scr *byte) {
	switch {
	case k == q80MXFP4:
		mxfp4PrepAVX512(&x[0], len(x), scr)
	case k >= q80Q4_0AVX2:
		rowsPrepAVX2(&x[0], len(x), k.offset(), scr)
	default:
		q80PrepAVX512(&x[0], len(x), k.offset(), scr)
	}
}

// prep is k's dots.prep: the activation work of rows, once per product
// (1 <= len(x) <= q80RowsMaxBlocks, len(scr) >= q80PrepLen(len(x))).
func (k q80Kernel) prep(x []quant.BlockQ8_0, scr []byte) {
	scr = scr[:q80PrepLen(len(x))]
	if len(scr) == 0 {
		return
	}
	k.prepare(x, &scr[0])
}

// prepRows is k's dots.prepRows: rows's dots from the scratch prep wrote
// from x, bit for bit rows's.
func (k q80Kernel) prepRows(w []byte, x []quant.BlockQ8_0, scr []byte, out []float32) {
	nb := len(x)
	w = w[:k.typ().BlockBytes()*nb*len(out)]
	scr = scr[:q80PrepLen(nb)]
	if len(scr) == 0 || len(out) == 0 {
		k.rows(w, x, out)
		return
	}
	k.call(w, x, out, &scr[0])
}

// call runs kernel k on len(out) rows (len(x), len(out) >= 1) with the
// activations prepared in scr.
func (k q80Kernel) call(w []byte, x []quant.BlockQ8_0, out []float32, scr *byte) {
	switch k {
	case q80Q4_0:
		dotQ4_0RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80Q5_0:
		dotQ5_0RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80IQ4NL:
		dotIQ4NLRowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80MXFP4:
		dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80Q4_0AVX2:
		dotQ4_0RowsAVX2(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80Q5_0AVX2:
		dotQ5_0RowsAVX2(&w[0], &x[0], len(x), len(out), &out[0], scr)
	case q80IQ4NLAVX2:
		dotIQ4NLRowsAVX2(&w[0], &x[0], len(x), len(out), &out[0], scr)
	}
}

// q80PrepAVX512 writes the scratch of the Q8_0-partner row-run dots for
// the nb blocks at x, off their code offset in every byte (nb >= 1).
//
//go:noescape
func q80PrepAVX512(x *quant.BlockQ8_0, nb int, off uint32, scr *byte)

//go:noescape
func dotQ4_0RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotQ5_0RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotQ4_1RowsAVX512(w *byte, x *quant.BlockQ8_1, nb, rows int, out *float32)

//go:noescape
func dotQ5_1RowsAVX512(w *byte, x *quant.BlockQ8_1, nb, rows int, out *float32)

//go:noescape
func dotIQ4NLRowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotIQ4XSRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// iq4xsPrepAVX512 writes the prepared activations of the nb blocks at x
// (nb >= 1) to scr, iq4xsPrepAVX512Split.prepLen(nb) bytes.
//
//go:noescape
func iq4xsPrepAVX512(x *quant.BlockQ8K, nb int, scr *byte)

// dotIQ4XSRowsPrepAVX512 works like dotIQ4XSRowsAVX512, bit for bit, with
// the activations iq4xsPrepAVX512 wrote to scr (x is not read).
//
//go:noescape
func dotIQ4XSRowsPrepAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotQ5KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

//go:noescape
func dotQ3KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// q3kPrepAVX512 writes the activations of the nb blocks at x (nb >= 1) to
// scr, q3kPrepAVX512Split.prepLen(nb) bytes, in the order of the Q3_K row
// run's products.
//
//go:noescape
func q3kPrepAVX512(x *quant.BlockQ8K, nb int, scr *byte)

// dotQ3KRowsPrepAVX512 works like dotQ3KRowsAVX512, bit for bit, with the
// activations q3kPrepAVX512 wrote to scr (x is read for its scales and
// bsums).
//
//go:noescape
func dotQ3KRowsPrepAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)

// dotQ3KRowsPrepGFNI works like dotQ3KRowsPrepAVX512, bit for bit, on a
// processor with GFNI.
//
//go:noescape
func dotQ3KRowsPrepGFNI(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)

// setNewQAVX2 puts the AVX2 dots of the types added after Q4_K, Q6_K and
// Q8_0 but Q4_0, Q5_0, IQ4_NL and IQ4_XS (generated into avx2_amd64.s by
// q3k.go, q5k.go, more.go and kx4.go) into t's rows: one-token dots, and
// four-token ones that equal them bit for bit. Those of Q4_1 and Q5_1
// equal package quant's dots, the generic rows, bit for bit; Q2_K's,
// Q3_K's and Q5_K's sum in the AVX2 Q4_K dot's order. (The avx2 path's
// Q4_0, Q5_0 and IQ4_NL dots are row runs that sum in float32 lanes,
// setRowsAVX2, and IQ4_XS's too, setIQ4XSAVX2; the avx512 path replaces
// these rows with its own, setNewQAVX512.)
func setNewQAVX2(t *table) {
	setIQ4XSAVX2(t)
	q81 := func(typ tensor.Type, bb int, f func(w *byte, x *uint16, nb int) float32) {
		t.weights[typ].q81.one = func(w []byte, x []quant.BlockQ8_1) float32 {
			if len(x) == 0 {
				return 0
			}
			w = w[:bb*len(x)]
			return f(&w[0], &x[0].D, len(x))
		}
	}
	q81(tensor.Q4_1, quant.BlockQ4_1Bytes, dotQ4_1AVX2)
	q81(tensor.Q5_1, quant.BlockQ5_1Bytes, dotQ5_1AVX2)
	q81x4 := func(typ tensor.Type, bb int, f func(w *byte, x *uint16, nb int, out *[4]float32)) {
		t.weights[typ].q81.x4 = func(w []byte, x []quant.BlockQ8_1, nb int, out *[4]float32) {
			x = x[:4*nb]
			w = w[:bb*nb]
			if nb == 0 {
				*out = [4]float32{}
				return
			}
			f(&w[0], &x[0].D, nb, out)
		}
	}
	q81x4(tensor.Q4_1, quant.BlockQ4_1Bytes, dotQ4_1x4AVX2)
	q81x4(tensor.Q5_1, quant.BlockQ5_1Bytes, dotQ5_1x4AVX2)
	// Q2_K, Q3_K and Q5_K sum like the AVX2 Q4_K dot: up to rounding, not
	// bit for bit.
	t.weights[tensor.Q2_K].q8k.one = func(w []byte, x []quant.BlockQ8K) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:quant.BlockQ2_KBytes*len(x)]
		return dotQ2KAVX2(&w[0], &x[0].D, len(x))
	}
	t.weights[tensor.Q3_K].q8k.one = func(w []byte, x []quant.BlockQ8K) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:quant.BlockQ3_KBytes*len(x)]
		return dotQ3KAVX2(&w[0], &x[0].D, len(x))
	}
	t.weights[tensor.Q5_K].q8k.one = func(w []byte, x []quant.BlockQ8K) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:quant.BlockQ5_KBytes*len(x)]
		return dotQ5KAVX2(&w[0], &x[0].D, len(x))
	}
	// Their four-token dots decode a weight block once for four tokens
	// and equal these one-token dots bit for bit.
	q8kx4 := func(typ tensor.Type, bb int, f func(w *byte, x *float32, nb int, out *[4]float32)) {
		t.weights[typ].q8k.x4 = func(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
			x = x[:4*nb]
			w = w[:bb*nb]
			if nb == 0 {
				*out = [4]float32{}
				return
			}
			f(&w[0], &x[0].D, nb, out)
		}
	}
	q8kx4(tensor.Q5_K, quant.BlockQ5_KBytes, dotQ5Kx4AVX2)
	q8kx4(tensor.Q3_K, quant.BlockQ3_KBytes, dotQ3Kx4AVX2)
	q8kx4(tensor.Q2_K, quant.BlockQ2_KBytes, dotQ2Kx4AVX2)
}

// dotQ5Kx8AVX512 sets out[t] to the dot of the nb Q5_K blocks at w with
// token t's nb blocks at x[t*nb:], for eight tokens (nb >= 1), summing in
// vector lanes (see quant_avx512_amd64.s).
//
//go:noescape
func dotQ5Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)

// The eight-token dots of the Q8_0-partner types: out[t] is the dot of
// the nb blocks at w with token t's nb blocks at x[t*nb:], dx the
// tokens' block scales as float32 (q80Scales's layout), nb >= 1.

//go:noescape
func dotQ4_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)

//go:noescape
func dotQ5_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)

//go:noescape
func dotIQ4NLx8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)

// dotIQ4XSx8AVX512 sets out[t] to the dot of the nb IQ4_XS blocks at w
// with token t's nb blocks at x[t*nb:], for eight tokens (nb >= 1).
//
//go:noescape
func dotIQ4XSx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)

// dotQ3Kx8AVX512 sets out[t] to the dot of the nb Q3_K blocks at w with
// token t's nb blocks at x[t*nb:], for eight tokens (nb >= 1).
//
//go:noescape
func dotQ3Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)

//go:noescape
func dotQ2KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
