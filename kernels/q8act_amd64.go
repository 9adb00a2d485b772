//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/quant"

// quantizeQ8_0AVX512Go and quantizeQ8_0AVX2Go work like
// quant.QuantizeRowQ8_0Act, in assembly, byte for byte: src holds
// 32*len(dst) values. A block whose largest magnitude is NaN, which the
// kernels leave alone, is quantized by the twin.
func quantizeQ8_0AVX512Go(src []float32, dst []quant.BlockQ8_0) {
	src = src[:quant.QK8_0*len(dst)]
	for len(dst) > 0 {
		n := quantizeQ8_0AVX512(&src[0], &dst[0], len(dst))
		if n == len(dst) {
			return
		}
		quant.QuantizeRowQ8_0Act(src[quant.QK8_0*n:quant.QK8_0*(n+1)], dst[n:n+1])
		src, dst = src[quant.QK8_0*(n+1):], dst[n+1:]
	}
}

func quantizeQ8_0AVX2Go(src []float32, dst []quant.BlockQ8_0) {
	src = src[:quant.QK8_0*len(dst)]
	for len(dst) > 0 {
		n := quantizeQ8_0AVX2(&src[0], &dst[0], len(dst))
		if n == len(dst) {
			return
		}
		quant.QuantizeRowQ8_0Act(src[quant.QK8_0*n:quant.QK8_0*(n+1)], dst[n:n+1])
		src, dst = src[quant.QK8_0*(n+1):], dst[n+1:]
	}
}

// quantizeQ8_0AVX512 and quantizeQ8_0AVX2 quantize the nb (>= 0) blocks
// at x into b up to the first whose largest magnitude is NaN, and return
// the count of blocks written.
//
//go:noescape
func quantizeQ8_0AVX512(x *float32, b *quant.BlockQ8_0, nb int) int

//go:noescape
func quantizeQ8_0AVX2(x *float32, b *quant.BlockQ8_0, nb int) int

// quantizeQ8_1AVX512Go and quantizeQ8_1AVX2Go work like
// quant.QuantizeRowQ8_1Act, in assembly, byte for byte: src holds
// 32*len(dst) values. A block whose largest magnitude is NaN or infinite,
// which the kernels leave alone, is quantized by the twin.
func quantizeQ8_1AVX512Go(src []float32, dst []quant.BlockQ8_1) {
	src = src[:quant.QK8_1*len(dst)]
	for len(dst) > 0 {
		n := quantizeQ8_1AVX512(&src[0], &dst[0], len(dst))
		if n == len(dst) {
			return
		}
		quant.QuantizeRowQ8_1Act(src[quant.QK8_1*n:quant.QK8_1*(n+1)], dst[n:n+1])
		src, dst = src[quant.QK8_1*(n+1):], dst[n+1:]
	}
}

func quantizeQ8_1AVX2Go(src []float32, dst []quant.BlockQ8_1) {
	src = src[:quant.QK8_1*len(dst)]
	for len(dst) > 0 {
		n := quantizeQ8_1AVX2(&src[0], &dst[0], len(dst))
		if n == len(dst) {
			return
		}
		quant.QuantizeRowQ8_1Act(src[quant.QK8_1*n:quant.QK8_1*(n+1)], dst[n:n+1])
		src, dst = src[quant.QK8_1*(n+1):], dst[n+1:]
	}
}

// quantizeQ8_1AVX512 and quantizeQ8_1AVX2 quantize the nb (>= 0) blocks
// at x into b up to the first whose largest magnitude is NaN or
// infinite, and return the count of blocks written.
//
//go:noescape
func quantizeQ8_1AVX512(x *float32, b *quant.BlockQ8_1, nb int) int

//go:noescape
func quantizeQ8_1AVX2(x *float32, b *quant.BlockQ8_1, nb int) int
