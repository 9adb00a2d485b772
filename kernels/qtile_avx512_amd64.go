//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/tensor"

// setQTileAVX512 gives t the AVX-512 prompt tile (qtile_avx512_amd64.s)
// for Q4_0, Q5_0, IQ4_NL, Q8_0 and IQ4_XS, with the AVX2 repacks
// (qtRepackAVX2), and the tile's activation quantizer.
func setQTileAVX512(t *table) {
	t.qtQuant = func(src []float32, xq []int8, xs []qtScale) {
		if len(xs) == 0 {
			return
		}
		src, xq = src[:32*len(xs)], xq[:32*len(xs)]
		qtQuantQ8_0AVX512(&src[0], &xq[0], &xs[0], len(xs))
	}
	for _, typ := range []tensor.Type{tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.Q8_0, tensor.IQ4_XS} {
		t.weights[typ].qtRepack, t.weights[typ].qtBlock = qtRepackAVX2(typ), qtBlockBytes
		t.weights[typ].qtile = qtileAVX512
	}
}

// qtileAVX512 is the tile kernel (qtTileFunc) in AVX-512 assembly: eight
// tokens in one pass over the group's blocks, fewer one at a time.
func qtileAVX512(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int) {
	if nb <= 0 || nt <= 0 || rows <= 0 {
		return
	}
	w = w[:nb*qtBlockBytes]
	xq, xs = xq[:nt*nb*32], xs[:nt*nb]
	_ = out[(nt-1)*ldo+rows-1]
	mask := uint16(1<<min(rows, qtRows) - 1)
	if nt == 8 {
		qtile8AVX512(&w[0], &xq[0], &xs[0], nb, ldo, mask, &out[0])
		return
	}
	for t := range nt {
		qtile1AVX512(&w[0], &xq[t*nb*32], &xs[t*nb], nb, mask, &out[t*ldo])
	}
}

//go:noescape
func qtile8AVX512(w *byte, xq *int8, xs *qtScale, nb, ldo int, mask uint16, out *float32)

//go:noescape
func qtile1AVX512(w *byte, xq *int8, xs *qtScale, nb int, mask uint16, out *float32)

// qtQuantQ8_0AVX512 quantizes nb blocks of 32 activations at src into
// the tile's codes and scales, as qtQuantQ8_0Generic.
//
//go:noescape
func qtQuantQ8_0AVX512(src *float32, xq *int8, xs *qtScale, nb int)
