//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/tensor"

// setQTileAVX2 gives t the AVX2 prompt tile (qtile_avx2_amd64.s) for every
// tile type, their repacks of whole groups in assembly (a last group of
// fewer rows takes the pure-Go one), and the tile's activation quantizer.
// AVX2 has no VPDPBUSD: its byte products (VPMADDUBSW) add pairs into
// saturating 16-bit lanes. Q4_0's and Q5_0's codes less their base are
// small enough for one product per value; the codes of 0..255 of IQ4_NL,
// IQ4_XS and Q8_0 take two, with the activations split in nibbles
// (weightKernels.qtSplit).
func setQTileAVX2(t *table) {
	t.qtQuant = func(src []float32, xq []int8, xs []qtScale) {
		if len(xs) == 0 {
			return
		}
		src, xq = src[:32*len(xs)], xq[:32*len(xs)]
		qtQuantQ8_0AVX2(&src[0], &xq[0], &xs[0], len(xs))
	}
	for typ, k := range map[tensor.Type]qt2Kernel{tensor.Q4_0: qt2Q4_0, tensor.Q5_0: qt2Q5_0,
		tensor.IQ4_NL: qt2Wide, tensor.IQ4_XS: qt2Wide, tensor.Q8_0: qt2Wide} {
		wk := &t.weights[typ]
		wk.qtRepack, wk.qtBlock = qtRepackAVX2(typ), qtBlockBytes
		wk.qtile = k.tile
		wk.qtSplit = k == qt2Wide
	}
	t.weights[tensor.Q4_K].qtBlock = qkBlockBytes / 8
	t.weights[tensor.Q4_K].qtRepack = qkRepackAVX2Go
	t.weights[tensor.Q4_K].qtile = qkTileAVX2
}

// qkRepackAVX2Go is the Q4_K tile's repack (qtRepackFunc, qtile_q4k.go):
// whole groups in AVX2 assembly, a last group of fewer rows by the
// pure-Go twin.
func qkRepackAVX2Go(dst, w []byte, rb, rows, nb int) {
	nk := nb / 8
	if rows < qtRows || nk == 0 {
		qkRepackGeneric(dst, w, rb, rows, nb)
		return
	}
	dst, w = dst[:nk*qkBlockBytes], w[:(qtRows-1)*rb+nk*q4KBytes]
	qkRepackAVX2(&dst[0], &w[0], rb, nk)
}

// qkTileAVX2 is the Q4_K tile kernel (qtTileFunc, qtile_q4k.go) in AVX2
// assembly: each half of the group by four tokens at a time (a last
// group of fewer repeats its last token, whose copies are dropped).
func qkTileAVX2(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int) {
	nk := nb / 8
	if nk <= 0 || nt <= 0 || rows <= 0 {
		return
	}
	w = w[:nk*qkBlockBytes]
	xq, xs = xq[:nt*nb*32], xs[:nt*nb]
	rows = min(rows, qtRows)
	_ = out[(nt-1)*ldo+rows-1]
	for h := 0; h*8 < rows; h++ {
		nr := min(8, rows-8*h)
		for t := 0; t < nt; t += 4 {
			var px [4]*int8
			var ps [4]*qtScale
			for u := range 4 {
				tu := min(t+u, nt-1)
				px[u], ps[u] = &xq[tu*nb*32], &xs[tu*nb]
			}
			var o [32]float32
			qkTile4AVX2(&w[32*h], &px, &ps, nk, &o)
			for u := range min(4, nt-t) {
				copy(out[(t+u)*ldo+8*h:(t+u)*ldo+8*h+nr], o[8*u:8*u+nr])
			}
		}
	}
}

// qtRepackAVX2 returns the repack of tile type typ whose whole groups are
// rewritten by the AVX2 kernels below (also the avx512 path's: on the
// Zen 4 VM they beat its gathers, BenchmarkQTile repack of a Q4_0 group
// 635 against 1910 ns); a last group of fewer rows takes the pure-Go one.
func qtRepackAVX2(typ tensor.Type) qtRepackFunc {
	twin := qtRepackGeneric(qtDecoder(typ))
	var whole func(dst, w *byte, rb, nk int) // the kernel of whole groups
	switch typ {
	case tensor.Q4_0:
		whole = func(dst, w *byte, rb, nk int) { qtRepackNib18AVX2(dst, w, rb, nk, &qtQ4_0) }
	case tensor.IQ4_NL:
		whole = func(dst, w *byte, rb, nk int) { qtRepackNib18AVX2(dst, w, rb, nk, &qtIQ4) }
	case tensor.Q5_0:
		whole = qtRepackQ5_0AVX2
	case tensor.Q8_0:
		whole = qtRepackQ8_0AVX2
	case tensor.IQ4_XS:
		whole = func(dst, w *byte, rb, nk int) { qtRepackIQ4XSAVX2(dst, w, rb, nk, &qtIQ4) }
	default:
		return twin
	}
	bb, per := typ.BlockBytes(), typ.BlockSize()/32
	return func(dst, w []byte, rb, rows, nb int) {
		if rows < qtRows {
			twin(dst, w, rb, rows, nb)
			return
		}
		nk := nb / per
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nk*bb]
		if nk == 0 {
			return
		}
		whole(&dst[0], &w[0], rb, nk)
	}
}

// qtQ4_0 maps a Q4_0 nibble q to its code q - 8 + 128 (the repack's table).
var qtQ4_0 = [16]byte{120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135}

// qt2Kernel names one of the AVX2 tile kernels; its methods call the
// assembly directly, so that the output arrays stay on the stack.
type qt2Kernel uint8

const (
	qt2Q4_0 qt2Kernel = iota // Q4_0's codes, 120..135
	qt2Q5_0                  // Q5_0's, 112..143
	qt2Wide                  // any code, the activations split (qtSplitActs)
)

// tile is k's tile kernel (qtTileFunc): each half of the group (eight
// rows, one 256-bit register) by four tokens at a time, the last one to
// three one at a time, through arrays on the stack from which the valid
// rows are copied to out.
func (k qt2Kernel) tile(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int) {
	if nb <= 0 || nt <= 0 || rows <= 0 {
		return
	}
	xb := 32 // activation bytes per block and token
	if k == qt2Wide {
		xb = 64
	}
	w = w[:nb*qtBlockBytes]
	xq, xs = xq[:nt*nb*xb], xs[:nt*nb]
	rows = min(rows, qtRows)
	_ = out[(nt-1)*ldo+rows-1]
	for h := 0; h*8 < rows; h++ {
		wh := &w[32*h]
		nr := min(8, rows-8*h)
		t := 0
		for ; t+4 <= nt; t += 4 {
			var o [32]float32
			k.call4(wh, &xq[t*nb*xb], &xs[t*nb], nb, &o)
			for u := range 4 {
				copy(out[(t+u)*ldo+8*h:(t+u)*ldo+8*h+nr], o[8*u:8*u+nr])
			}
		}
		for ; t < nt; t++ {
			var o [8]float32
			k.call1(wh, &xq[t*nb*xb], &xs[t*nb], nb, &o)
			copy(out[t*ldo+8*h:t*ldo+8*h+nr], o[:nr])
		}
	}
}

// call4 and call1 run k's four- and one-token kernels.
func (k qt2Kernel) call4(w *byte, xq *int8, xs *qtScale, nb int, o *[32]float32) {
	switch k {
	case qt2Q4_0:
		qtile4Q4_0AVX2(w, xq, xs, nb, o)
	case qt2Q5_0:
		qtile4Q5_0AVX2(w, xq, xs, nb, o)
	case qt2Wide:
		qtile4WideAVX2(w, xq, xs, nb, o)
	}
}

func (k qt2Kernel) call1(w *byte, xq *int8, xs *qtScale, nb int, o *[8]float32) {
	switch k {
	case qt2Q4_0:
		qtile1Q4_0AVX2(w, xq, xs, nb, o)
	case qt2Q5_0:
		qtile1Q5_0AVX2(w, xq, xs, nb, o)
	case qt2Wide:
		qtile1WideAVX2(w, xq, xs, nb, o)
	}
}

// The kernels multiply eight rows of a group (w points at their half of
// the first block's registers) by four tokens (codes nb·32 bytes apart,
// nb·64 split for the wide ones; scales nb apart) or one, over nb >= 1
// blocks, and store token t's eight results at o[8t:].

//go:noescape
func qtile4Q4_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)

//go:noescape
func qtile4Q5_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)

//go:noescape
func qtile1Q4_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)

//go:noescape
func qtile4WideAVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)

//go:noescape
func qtile1WideAVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)

//go:noescape
func qtile1Q5_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)

// qkRepackAVX2 rewrites sixteen Q4_K rows (rb bytes apart) of nk blocks
// into the Q4_K tile layout at dst.
//
//go:noescape
func qkRepackAVX2(dst, w *byte, rb, nk int)

// qkTile4AVX2 multiplies eight rows of a Q4_K group (w at their half)
// by four tokens (codes and scales at xq[t] and xs[t]) over nk >= 1
// 256-value blocks, adding token t's eight results to out[8t:].
//
//go:noescape
func qkTile4AVX2(w *byte, xq *[4]*int8, xs *[4]*qtScale, nk int, out *[32]float32)

// qtQuantQ8_0AVX2 quantizes nb blocks of 32 activations at src into the
// tile's codes and scales, as qtQuantQ8_0Generic.
//
//go:noescape
func qtQuantQ8_0AVX2(src *float32, xq *int8, xs *qtScale, nb int)

// qtRepackNib18AVX2 rewrites sixteen rows (rb bytes apart) of nb 18-byte
// blocks (f16 scale, 16 bytes of nibbles: Q4_0, IQ4_NL) into the tile layout,
// each nibble mapped to its code by lut.
//
//go:noescape
func qtRepackNib18AVX2(dst, w *byte, rb, nb int, lut *[16]byte)

// qtRepackQ5_0AVX2 rewrites sixteen rows of nb Q5_0 blocks.
//
//go:noescape
func qtRepackQ5_0AVX2(dst, w *byte, rb, nb int)

// qtRepackQ8_0AVX2 rewrites sixteen rows of nb Q8_0 blocks.
//
//go:noescape
func qtRepackQ8_0AVX2(dst, w *byte, rb, nb int)

// qtRepackIQ4XSAVX2 rewrites sixteen rows of nb IQ4_XS blocks (eight
// layout blocks each).
//
//go:noescape
func qtRepackIQ4XSAVX2(dst, w *byte, rb, nb int, lut *[16]byte)
