//go:build amd64 && !purego

package kernels

import (
	"math"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// setQTileAVX512 gives t the AVX-512 prompt tile (qtile_avx512_amd64.s)
// and the rows of the tile types their repacks: whole groups of a Q4_0,
// Q5_0, IQ4_NL, Q8_0 or IQ4_XS matrix in assembly (gathers), the rest (a last
// group of fewer rows, rows too far apart for 32-bit offsets) with the
// pure-Go repack.
func setQTileAVX512(t *table) {
	t.qtQuant = func(src []float32, xq []int8, xs []qtScale) {
		if len(xs) == 0 {
			return
		}
		src, xq = src[:32*len(xs)], xq[:32*len(xs)]
		qtQuantQ8_0AVX512(&src[0], &xq[0], &xs[0], len(xs))
	}
	asm := func(typ tensor.Type, f func(dst, w []byte, rb, nb int)) {
		twin := qtRepackGeneric(qtDecoder(typ))
		t.weights[typ].qtRepack = func(dst, w []byte, rb, rows, nb int) {
			if rows < qtRows || (qtRows-1)*rb > math.MaxInt32 {
				twin(dst, w, rb, rows, nb)
				return
			}
			f(dst, w, rb, nb)
		}
		t.weights[typ].qtile = qtileAVX512
	}
	asm(tensor.Q4_0, func(dst, w []byte, rb, nb int) {
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nb*quant.BlockQ4_0Bytes]
		qtRepackNib18AVX512(&dst[0], &w[0], rb, nb, &qtQ4_0)
	})
	asm(tensor.IQ4_NL, func(dst, w []byte, rb, nb int) {
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nb*quant.BlockIQ4_NLBytes]
		qtRepackNib18AVX512(&dst[0], &w[0], rb, nb, &qtIQ4)
	})
	asm(tensor.Q8_0, func(dst, w []byte, rb, nb int) {
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nb*quant.BlockQ8_0Bytes]
		qtRepackQ8_0AVX512(&dst[0], &w[0], rb, nb)
	})
	asm(tensor.IQ4_XS, func(dst, w []byte, rb, nb int) {
		nk := nb / 8
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nk*quant.BlockIQ4_XSBytes]
		qtRepackIQ4XSAVX512(&dst[0], &w[0], rb, nk, &qtIQ4)
	})
	asm(tensor.Q5_0, func(dst, w []byte, rb, nb int) {
		dst, w = dst[:nb*qtBlockBytes], w[:(qtRows-1)*rb+nb*quant.BlockQ5_0Bytes]
		qtRepackQ5_0AVX512(&dst[0], &w[0], rb, nb)
	})
}

// qtQ4_0 maps a Q4_0 nibble q to its code q - 8 + 128.
var qtQ4_0 = [16]byte{120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135}

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

// qtRepackNib18AVX512 rewrites sixteen rows (rb bytes apart) of nb
// 18-byte blocks (f16 scale, 16 bytes of nibbles: Q4_0, IQ4_NL) into the
// tile layout, each nibble mapped to its code by lut.
//
//go:noescape
func qtRepackNib18AVX512(dst, w *byte, rb, nb int, lut *[16]byte)

// qtRepackQ8_0AVX512 rewrites sixteen rows of nb Q8_0 blocks.
//
//go:noescape
func qtRepackQ8_0AVX512(dst, w *byte, rb, nb int)

// qtRepackQ5_0AVX512 rewrites sixteen rows of nb Q5_0 blocks.
//
//go:noescape
func qtRepackQ5_0AVX512(dst, w *byte, rb, nb int)

// qtRepackIQ4XSAVX512 rewrites sixteen rows of nb IQ4_XS blocks (eight
// layout blocks each).
//
//go:noescape
func qtRepackIQ4XSAVX512(dst, w *byte, rb, nb int, lut *[16]byte)

// qtQuantQ8_0AVX512 quantizes nb blocks of 32 activations at src into
// the tile's codes and scales, as qtQuantQ8_0Generic.
//
//go:noescape
func qtQuantQ8_0AVX512(src *float32, xq *int8, xs *qtScale, nb int)
