//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/quant"

// quantizeQ8_0AVX512Go and quantizeQ8_0AVX2Go work like
// quant.QuantizeRowQ8_0Act, in assembly, byte for byte: src holds
// 32*len(dst) values. A block whose largest magnitude is NaN, which the
// kernels leave alone, is quantized by the twin.
func quantizeQ8_0AVX512Go(src []float32, dst []quant.BlockQ8_0) {
	quantizeAct(src, dst, quantizeQ8_0AVX512, quant.QuantizeRowQ8_0Act)
}

func quantizeQ8_0AVX2Go(src []float32, dst []quant.BlockQ8_0) {
	quantizeAct(src, dst, quantizeQ8_0AVX2, quant.QuantizeRowQ8_0Act)
}

// quantizeQ8_1AVX512Go and quantizeQ8_1AVX2Go work like
// quant.QuantizeRowQ8_1Act, in assembly, byte for byte: src holds
// 32*len(dst) values. A block whose largest magnitude is NaN or infinite,
// which the kernels leave alone, is quantized by the twin.
func quantizeQ8_1AVX512Go(src []float32, dst []quant.BlockQ8_1) {
	quantizeAct(src, dst, quantizeQ8_1AVX512, quant.QuantizeRowQ8_1Act)
}

func quantizeQ8_1AVX2Go(src []float32, dst []quant.BlockQ8_1) {
	quantizeAct(src, dst, quantizeQ8_1AVX2, quant.QuantizeRowQ8_1Act)
}

// quantizeAct quantizes the 32*len(dst) values of src into dst with
// kernel, which stops at the blocks it leaves to twin: those go to twin
// one at a time and the kernel resumes after them. The callers pass the
// pool's arenas, so the kernel's pointers, unknown to escape analysis
// through the function value, allocate nothing.
func quantizeAct[B any](src []float32, dst []B, kernel func(*float32, *B, int) int, twin func([]float32, []B)) {
	const qk = quant.QK8_0
	src = src[:qk*len(dst)]
	for len(dst) > 0 {
		n := kernel(&src[0], &dst[0], len(dst))
		if n == len(dst) {
			return
		}
		twin(src[qk*n:qk*(n+1)], dst[n:n+1])
		src, dst = src[qk*(n+1):], dst[n+1:]
	}
}

// The kernels quantize the nb (>= 0) blocks at x into b up to the first
// they leave to the twin, and return the count of blocks written.

//go:noescape
func quantizeQ8_0AVX512(x *float32, b *quant.BlockQ8_0, nb int) int

//go:noescape
func quantizeQ8_0AVX2(x *float32, b *quant.BlockQ8_0, nb int) int

//go:noescape
func quantizeQ8_1AVX512(x *float32, b *quant.BlockQ8_1, nb int) int

//go:noescape
func quantizeQ8_1AVX2(x *float32, b *quant.BlockQ8_1, nb int) int
