//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/quant"

// quantizeQ8KAVX512Go works like quant.QuantizeRowQ8K, in AVX-512
// assembly, byte for byte: src holds 256*len(dst) values.
func quantizeQ8KAVX512Go(src []float32, dst []quant.BlockQ8K) {
	src = src[:quant.QK_K*len(dst)]
	if len(dst) == 0 {
		return
	}
	quantizeQ8KAVX512(&src[0], &dst[0], len(dst))
}

// quantizeQ8KAVX512 works like quantizeQ8KAVX512Go on the nb blocks at x
// and b.
//
//go:noescape
func quantizeQ8KAVX512(x *float32, b *quant.BlockQ8K, nb int)

// quantizeQ8KAVX2Go works like quant.QuantizeRowQ8K, in AVX2 assembly,
// byte for byte: src holds 256*len(dst) values.
func quantizeQ8KAVX2Go(src []float32, dst []quant.BlockQ8K) {
	src = src[:quant.QK_K*len(dst)]
	if len(dst) == 0 {
		return
	}
	quantizeQ8KAVX2(&src[0], &dst[0], len(dst))
}

// quantizeQ8KAVX2 works like quantizeQ8KAVX2Go on the nb blocks at x and
// b.
//
//go:noescape
func quantizeQ8KAVX2(x *float32, b *quant.BlockQ8K, nb int)
