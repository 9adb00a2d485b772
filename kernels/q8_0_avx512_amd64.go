//go:build amd64 && !purego

package kernels

import "github.com/lisa-llm/lisa/quant"

// dotQ8_0AVX512Go works like dotQ8_0Generic in AVX-512 assembly, with the
// float sums in the lane order q8_0_avx512_amd64.s describes: within
// quantDotEps per step of the generic twin, and bit-identical with
// dotQ8_0x4AVX512Go and dotQ8_0x8AVX512Go for each token.
func dotQ8_0AVX512Go(w []byte, x []quant.BlockQ8_0) float32 {
	if len(x) == 0 {
		return 0
	}
	w = w[:q8_0Bytes*len(x)]
	return dotQ8_0AVX512(&w[0], &x[0], len(x))
}

// dotQ8_0x4AVX512Go sets out[t] to dotQ8_0AVX512Go of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for four tokens, reading each weight block
// once.
func dotQ8_0x4AVX512Go(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q8_0Bytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ8_0x4AVX512(&w[0], &x[0], nb, out)
}

// dotQ8_0x8AVX512Go sets out[t] to dotQ8_0AVX512Go of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for eight tokens, reading each weight block
// once. dx holds the tokens' block scales as float32, block-major
// (q80Scales's layout).
func dotQ8_0x8AVX512Go(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32) {
	x = x[:8*nb]
	w = w[:q8_0Bytes*nb]
	dx = dx[:8*nb]
	if nb == 0 {
		*out = [8]float32{}
		return
	}
	dotQ8_0x8AVX512(&w[0], &x[0], &dx[0], nb, out)
}

// dotQ8_0AVX512 computes the Q8_0 dot of nb blocks at w and x.
//
//go:noescape
func dotQ8_0AVX512(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotQ8_0x4AVX512 computes the Q8_0 dots of nb blocks at w with each of
// the four tokens' nb blocks that follow one another at x.
//
//go:noescape
func dotQ8_0x4AVX512(w *byte, x *quant.BlockQ8_0, nb int, out *[4]float32)

// dotQ8_0x8AVX512 computes the Q8_0 dots of nb blocks at w with each of
// the eight tokens' nb blocks that follow one another at x, whose scales
// are the 8*nb float32 at dx.
//
//go:noescape
func dotQ8_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
