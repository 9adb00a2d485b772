package kernels

import (
	"encoding/binary"
	"math"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// The prompt tile of the weight types made of 32-value blocks with one
// scale each (Q4_0, Q5_0, IQ4_NL, Q8_0, and IQ4_XS, whose 256-value blocks
// are eight such sub-blocks with a scale each). On a path with a tile
// kernel (avx512), a product of two or more tokens of these types does not
// run row dots: each goroutine first rewrites a run of its weight rows
// into a scratch buffer of its own, qtRows rows at a time, in a layout
// where one 512-bit register holds the same four values of sixteen rows
// (row-interleaved, as ggml's repacked Q4_0 does for its GEMM), and then
// multiplies every token by them with VPDPBUSD: a token's four activation
// bytes are broadcast to all sixteen rows, so one instruction adds 64
// products and no horizontal sum is ever taken. The mmap'd weights are
// only read; the scratch is bounded (qtScratchBytes per goroutine, or one
// group of rows of a wider matrix) and reused between calls.
//
// Every weight value becomes an unsigned code u = v + 128 (v its signed
// integer value: Q4_0's nibble - 8, Q5_0's 5-bit code - 16, the IQ4
// codebook's value, Q8_0's byte), so that VPDPBUSD (unsigned × signed
// bytes) takes the activation codes x as they are; the token's block then
// carries bias = -128·Σx, which makes the lane's integer sum Σ v·x
// exactly. Per block and (row, token) lane the float step is
//
//	acc = fma(float32(Σ v·x), dw·dx, acc)
//
// with dw the row's block scale (Q4_0, Q5_0, IQ4_NL, Q8_0: its f16 scale;
// IQ4_XS: d·(scale-32), exact in float32), dx the token's (Q8_0
// activations: the block's f16 scale; Q8_K: the block's d) and dw·dx
// rounded to float32 once. Each result is this sequence over the row's
// blocks in order, whatever lane, group of rows or group of tokens it
// falls in, so the results do not depend on the thread count, on how the
// rows are split into pieces or on how the tokens of a prompt are split
// into passes of two or more. qtileGeneric is the pure-Go twin, bit for
// bit (fma32Once rounds once, as the instruction does).

// qtRows is the number of weight rows in one group of the tile layout:
// one float32 lane each of a 512-bit register.
const qtRows = 16

// qtBlockBytes is the size of one 32-value block of a group in the tile
// layout: 8 registers of codes (register j holds values 4j..4j+3 of the
// sixteen rows, row r at bytes 4r..4r+3), then the sixteen rows' scales as
// float32.
const qtBlockBytes = qtRows*32 + qtRows*4

// qtScratchBytes bounds a goroutine's scratch of rewritten weight rows:
// small enough to stay in the second-level cache while the token blocks
// go by. A group of a matrix wider than that takes more (qtRows rows).
const qtScratchBytes = 256 << 10

// qtScale is one token's scale and code sum of one 32-value block.
type qtScale struct {
	d    float32 // the block's scale
	bias int32   // -128 times the sum of the block's codes
}

// qtTileFunc is a path's tile kernel: for the nt tokens (1..8) whose
// codes are xq[t*nb*32:] (or, for a kernel that takes them split,
// xq[t*nb*64:] in qtSplitActs's layout) and scales xs[t*nb:], it sets
// out[t*ldo+r] to the product of row r of the group w (nb blocks in the
// tile layout) for r < rows (1..qtRows); the other rows' results are
// dropped.
type qtTileFunc func(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int)

// qtRepackFunc rewrites rows (1..qtRows) weight rows of rb bytes each, at
// w, into the tile layout at dst (nb 32-value blocks per row); the rows
// of the group past rows get zero codes and scales.
type qtRepackFunc func(dst, w []byte, rb, rows, nb int)

// qtBlockFunc decodes 32-value block b of one weight row into its
// unsigned codes (v + 128) and its scale (by value: a pointer would make
// the callers' arrays escape to the heap).
type qtBlockFunc func(row []byte, b int) (u [32]byte, d float32)

// qtDecoder returns the pure-Go block decoder of tile type t, or nil.
func qtDecoder(t tensor.Type) qtBlockFunc {
	switch t {
	case tensor.Q4_0:
		return qtBlockQ4_0
	case tensor.Q5_0:
		return qtBlockQ5_0
	case tensor.IQ4_NL:
		return qtBlockIQ4NL
	case tensor.Q8_0:
		return qtBlockQ8_0
	case tensor.IQ4_XS:
		return qtBlockIQ4XS
	}
	return nil
}

// qtIQ4 is the IQ4 codebook plus 128, as unsigned codes.
var qtIQ4 = [16]byte{1, 24, 45, 63, 79, 93, 106, 118, 129, 141, 153, 166, 181, 197, 217, 241}

func qtBlockQ4_0(row []byte, b int) (u [32]byte, d float32) {
	blk := row[b*quant.BlockQ4_0Bytes : (b+1)*quant.BlockQ4_0Bytes]
	for j, q := range blk[2:18] {
		u[j], u[j+16] = q&15+120, q>>4+120
	}
	return u, quant.F16ToF32(binary.LittleEndian.Uint16(blk))
}

func qtBlockIQ4NL(row []byte, b int) (u [32]byte, d float32) {
	blk := row[b*quant.BlockIQ4_NLBytes : (b+1)*quant.BlockIQ4_NLBytes]
	for j, q := range blk[2:18] {
		u[j], u[j+16] = qtIQ4[q&15], qtIQ4[q>>4]
	}
	return u, quant.F16ToF32(binary.LittleEndian.Uint16(blk))
}

func qtBlockQ5_0(row []byte, b int) (u [32]byte, d float32) {
	blk := row[b*quant.BlockQ5_0Bytes : (b+1)*quant.BlockQ5_0Bytes]
	qh := binary.LittleEndian.Uint32(blk[2:])
	for j, q := range blk[6:22] {
		u[j] = (q&15 | byte(qh>>j&1)<<4) + 112
		u[j+16] = (q>>4 | byte(qh>>(j+16)&1)<<4) + 112
	}
	return u, quant.F16ToF32(binary.LittleEndian.Uint16(blk))
}

func qtBlockQ8_0(row []byte, b int) (u [32]byte, d float32) {
	blk := row[b*quant.BlockQ8_0Bytes : (b+1)*quant.BlockQ8_0Bytes]
	for j, q := range blk[2:34] {
		u[j] = q ^ 0x80
	}
	return u, quant.F16ToF32(binary.LittleEndian.Uint16(blk))
}

// qtBlockIQ4XS decodes sub-block b%8 of IQ4_XS block b/8: its scale is
// d·(scale-32), exact in float32 (an 11-bit significand times a 6-bit
// integer).
func qtBlockIQ4XS(row []byte, b int) (u [32]byte, d float32) {
	blk := row[b/8*quant.BlockIQ4_XSBytes : (b/8+1)*quant.BlockIQ4_XSBytes]
	ib := b % 8
	for j, q := range blk[8+16*ib : 24+16*ib] {
		u[j], u[j+16] = qtIQ4[q&15], qtIQ4[q>>4]
	}
	sc := quant.IQ4XSScale(binary.LittleEndian.Uint16(blk[2:]), blk[4:8], ib)
	return u, float32(quant.F16ToF32(binary.LittleEndian.Uint16(blk)) * float32(sc-32))
}

// qtRepackGeneric returns the pure-Go repack of the type decoded by dec.
func qtRepackGeneric(dec qtBlockFunc) qtRepackFunc {
	return func(dst, w []byte, rb, rows, nb int) {
		dst = dst[:nb*qtBlockBytes]
		w = w[:rows*rb]
		for b := range nb {
			blk := dst[b*qtBlockBytes : (b+1)*qtBlockBytes]
			for r := range qtRows {
				var u [32]byte
				var d float32
				if r < rows {
					u, d = dec(w[r*rb:(r+1)*rb], b)
				}
				for j := range 8 {
					copy(blk[j*64+r*4:j*64+r*4+4], u[4*j:4*j+4])
				}
				binary.LittleEndian.PutUint32(blk[512+4*r:], math.Float32bits(d))
			}
		}
	}
}

// qtActsQ8_0 lays out Q8_0 activation blocks for the tile kernel: their
// codes in xq (32 a block) and their scales and code sums in xs.
func qtActsQ8_0(xq []int8, xs []qtScale, x []quant.BlockQ8_0) {
	xq, xs = xq[:32*len(x)], xs[:len(x)]
	for i := range x {
		b := &x[i]
		copy(xq[32*i:32*i+32], b.Qs[:])
		var s int32
		for _, q := range b.Qs {
			s += int32(q)
		}
		xs[i] = qtScale{d: quant.F16ToF32(b.D), bias: -128 * s}
	}
}

// qtQuantQ8_0Generic quantizes activations (32·len(xs) of src) for the
// tile kernel: the codes and scales quant.QuantizeRowQ8_0Act gives (the
// Q8_0 partner format of llama.cpp's x86 builds), laid out as
// qtActsQ8_0 does.
func qtQuantQ8_0Generic(src []float32, xq []int8, xs []qtScale) {
	var b [1]quant.BlockQ8_0
	for i := range xs {
		quant.QuantizeRowQ8_0Act(src[32*i:32*i+32], b[:])
		qtActsQ8_0(xq[32*i:32*i+32], xs[i:i+1], b[:])
	}
}

// qtActsQ8K does so for Q8_K blocks, eight 32-value blocks each (the
// sums from the block's 16-value sums).
func qtActsQ8K(xq []int8, xs []qtScale, x []quant.BlockQ8K) {
	xq, xs = xq[:quant.QK_K*len(x)], xs[:8*len(x)]
	for i := range x {
		b := &x[i]
		copy(xq[quant.QK_K*i:quant.QK_K*(i+1)], b.Qs[:])
		for k := range 8 {
			s := int32(b.Bsums[2*k]) + int32(b.Bsums[2*k+1])
			xs[8*i+k] = qtScale{d: b.D, bias: -128 * s}
		}
	}
}

// qtSplitActs writes the activation codes xq (whole blocks of 32) split
// in nibbles into dst, 64 bytes a block: the high ones as signed values
// (x>>4, -8..7), then the low ones (x&15, 0..15), so that x = 16·hi + lo.
// The avx2 tile kernel of the types whose codes take all of 0..255 reads
// them so (qtile_avx2_amd64.s).
func qtSplitActs(dst, xq []int8) {
	dst = dst[:2*len(xq)]
	for b := 0; b+32 <= len(xq); b += 32 {
		hi, lo := dst[2*b:2*b+32], dst[2*b+32:2*b+64]
		for i, x := range xq[b : b+32] {
			hi[i], lo[i] = x>>4, x&15
		}
	}
}

// qtileGeneric is the pure-Go tile kernel (qtTileFunc), the twin of the
// assembly ones: the same float steps per lane, so the same bits.
func qtileGeneric(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int) {
	w = w[:nb*qtBlockBytes]
	for t := range nt {
		x, s := xq[t*nb*32:(t+1)*nb*32], xs[t*nb:(t+1)*nb]
		o := out[t*ldo : t*ldo+rows]
		for r := range o {
			var acc float32
			for b := range nb {
				blk := w[b*qtBlockBytes : (b+1)*qtBlockBytes]
				xb := x[32*b : 32*b+32]
				sum := s[b].bias
				for j := range 8 {
					u := blk[j*64+r*4 : j*64+r*4+4]
					for i, c := range u {
						sum += int32(c) * int32(xb[4*j+i])
					}
				}
				dw := math.Float32frombits(binary.LittleEndian.Uint32(blk[512+4*r:]))
				acc = fma32Once(float32(sum), float32(dw*s[b].d), acc)
			}
			o[r] = acc
		}
	}
}

// fma32Once returns a·b + c rounded once to float32, as VFMADD231PS does: the
// float64 product of two float32 is exact, the float64 sum is rounded to
// odd (kept if inexact and odd, else moved one unit towards the exact
// value), and a float64 rounded to odd rounds to float32 correctly.
func fma32Once(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			s = math.Float64frombits(bits + 1)
		} else {
			s = math.Float64frombits(bits - 1)
		}
	}
	return float32(s)
}

// qtMinTokens is the fewest tokens a product takes the tile path with.
// Each call rewrites its weight rows once; from two tokens on that costs
// less than the row dots it replaces (measured on the Zen 5 VM).
const qtMinTokens = 2

// qtUse reports whether the current job takes the tile path on tab.
func (j *job) qtUse(tab *table) bool {
	wk := &tab.weights[j.w.Type]
	return wk.qtile != nil && wk.qtRepack != nil && j.n >= qtMinTokens && j.w.Cols%32 == 0
}

// qtGrow sizes the tile path's scratch for the current job: the
// activations and each goroutine's rewritten rows.
func (j *job) qtGrow(tab *table, threads int) {
	nb := j.w.Cols / 32
	j.qtq = growSlice(j.qtq, j.n*j.w.Cols)
	if j.qtSplit {
		j.qtx = growSlice(j.qtx, 2*j.n*j.w.Cols)
	}
	j.qts = growSlice(j.qts, j.n*nb)
	group := nb * tab.weights[j.w.Type].qtBlock
	groups := max(1, min(qtScratchBytes/group, (j.w.Rows+qtRows-1)/qtRows))
	if len(j.qtScr) < threads {
		j.qtScr = make([][]byte, threads)
	}
	for i := range j.qtScr {
		j.qtScr[i] = growSlice(j.qtScr[i], groups*group)
	}
}

// qtConvert lays out the activations of tokens t0..t1-1 for the tile
// kernel: Q8_0-partner ones quantized straight from float32 with
// quantize (nil: the pure-Go one), Q8_K ones from their blocks.
func (j *job) qtConvert(p partner, quantize func([]float32, []int8, []qtScale), t0, t1 int) {
	c := j.w.Cols
	xq, xs := j.qtq[t0*c:t1*c], j.qts[t0*c/32:t1*c/32]
	switch p {
	case partnerQ8_0:
		if quantize == nil {
			quantize = qtQuantQ8_0Generic
		}
		quantize(j.x[t0*c:t1*c], xq, xs)
	case partnerQ8K:
		nb := c / quant.QK_K
		qtActsQ8K(xq, xs, j.q8k[t0*nb:t1*nb])
	}
	if j.qtSplit {
		qtSplitActs(j.qtx[2*t0*c:2*t1*c], xq)
	}
}

// qtRowsRun computes the outputs of weight rows r0..r1-1 for every token
// on the tile path: a run of groups that fits the goroutine's scratch is
// rewritten once, then every token block is multiplied by each of its
// groups, eight tokens at a time.
func (j *job) qtRowsRun(tab *table, part, r0, r1 int) {
	nb := j.w.Cols / 32
	group := nb * tab.weights[j.w.Type].qtBlock
	scr := j.qtScr[part]
	run := len(scr) / group * qtRows
	repack := tab.weights[j.w.Type].qtRepack
	kern := tab.weights[j.w.Type].qtile
	rb, rows, n := j.rb, j.w.Rows, j.n
	xq, xb := j.qtq, 32 // the kernel's activation codes, bytes per block
	if j.qtSplit {
		xq, xb = j.qtx, 64
	}
	tb := max(8, j.tokenBlock/(nb*(xb+8))/8*8)
	for g0 := r0; g0 < r1; g0 += run {
		g1 := min(g0+run, r1)
		for g := g0; g < g1; g += qtRows {
			k := (g - g0) / qtRows
			repack(scr[k*group:(k+1)*group], j.w.Data[g*rb:], rb, min(qtRows, g1-g), nb)
		}
		for t0 := 0; t0 < n; t0 += tb {
			t1 := min(t0+tb, n)
			for g := g0; g < g1; g += qtRows {
				k := (g - g0) / qtRows
				wg := scr[k*group : (k+1)*group]
				nr := min(qtRows, g1-g)
				for t := t0; t < t1; t += 8 {
					nt := min(8, t1-t)
					kern(wg, xq[t*nb*xb:], j.qts[t*nb:], nb, nt, j.out[t*rows+g:], rows, nr)
				}
			}
		}
	}
}
