//go:build arm64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// nativeTable returns the table of an arm64 assembly path, or nil if p has
// none. Both paths replace the Q8_0, Q4_0, Q4_K and Q6_K dots with assembly that
// keeps the generic float order (bit-exact twins); they differ in how the
// 16-byte integer dots are done (quant_neon_arm64.s, quant_dotprod_arm64.s).
// The multi-token dots loop over the one-token kernel, as the generic ones
// do, so they equal it exactly.
func nativeTable(p Path) *table {
	var q80, q40 func(w *byte, x *quant.BlockQ8_0, nb int) float32
	var q4k, q6k func(w *byte, x *quant.BlockQ8K, nb int) float32
	switch p {
	case NEON:
		q80, q40, q4k, q6k = dotQ8_0NEON, dotQ4_0NEON, dotQ4KNEON, dotQ6KNEON
	case DotProd:
		q80, q40, q4k, q6k = dotQ8_0DotProd, dotQ4_0DotProd, dotQ4KDotProd, dotQ6KDotProd
	default:
		return nil
	}
	t := genericTable()
	t.path = p
	one0 := func(kernel func(*byte, *quant.BlockQ8_0, int) float32, size int) func([]byte, []quant.BlockQ8_0) float32 {
		return func(w []byte, x []quant.BlockQ8_0) float32 {
			if len(x) == 0 {
				return 0
			}
			w = w[:size*len(x)]
			return kernel(&w[0], &x[0], len(x))
		}
	}
	one80 := one0(q80, q8_0Bytes)
	oneK := func(kernel func(*byte, *quant.BlockQ8K, int) float32, size int) func([]byte, []quant.BlockQ8K) float32 {
		return func(w []byte, x []quant.BlockQ8K) float32 {
			if len(x) == 0 {
				return 0
			}
			w = w[:size*len(x)]
			return kernel(&w[0], &x[0], len(x))
		}
	}
	t.weights[tensor.Q8_0].q80 = dots[quant.BlockQ8_0]{one: one80, x4: x4Of(one80), x8: x8Of80(one80)}
	t.weights[tensor.Q4_0].q80 = dots[quant.BlockQ8_0]{one: one0(q40, quant.BlockQ4_0Bytes)}
	q4 := oneK(q4k, q4KBytes)
	t.weights[tensor.Q4_K].q8k = dots[quant.BlockQ8K]{one: q4, x4: x4Of(q4)}
	q6 := oneK(q6k, q6KBytes)
	t.weights[tensor.Q6_K].q8k = dots[quant.BlockQ8K]{one: q6, x4: x4Of(q6)}
	return t
}

// x4Of returns the four-token dot that calls one once per token.
func x4Of[X any](one func([]byte, []X) float32) func([]byte, []X, int, *[4]float32) {
	return func(w []byte, x []X, nb int, out *[4]float32) {
		x = x[:4*nb]
		for t := range out {
			out[t] = one(w, x[t*nb:(t+1)*nb])
		}
	}
}

// x8Of80 returns the eight-token Q8_0 dot that calls one once per token
// (the block scales are read from x, so dx is not needed).
func x8Of80(one func([]byte, []quant.BlockQ8_0) float32) func([]byte, []quant.BlockQ8_0, []float32, int, *[8]float32) {
	return func(w []byte, x []quant.BlockQ8_0, _ []float32, nb int, out *[8]float32) {
		x = x[:8*nb]
		for t := range out {
			out[t] = one(w, x[t*nb:(t+1)*nb])
		}
	}
}

// dotQ8_0NEON returns dotQ8_0Generic of nb (>= 0) blocks at w and x, in
// ASIMD assembly.
//
//go:noescape
func dotQ8_0NEON(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotQ4_0NEON returns quant.DotQ4_0Q8_0 of nb blocks at w and x, in ASIMD
// assembly.
//
//go:noescape
func dotQ4_0NEON(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotQ4_0DotProd works like dotQ4_0NEON with SDOT.
//
//go:noescape
func dotQ4_0DotProd(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotQ4KNEON returns dotQ4KGeneric of nb blocks at w and x, in ASIMD
// assembly.
//
//go:noescape
func dotQ4KNEON(w *byte, x *quant.BlockQ8K, nb int) float32

// dotQ6KNEON returns dotQ6KGeneric of nb blocks at w and x, in ASIMD
// assembly.
//
//go:noescape
func dotQ6KNEON(w *byte, x *quant.BlockQ8K, nb int) float32

// dotQ8_0DotProd works like dotQ8_0NEON with SDOT.
//
//go:noescape
func dotQ8_0DotProd(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotQ4KDotProd works like dotQ4KNEON with SDOT.
//
//go:noescape
func dotQ4KDotProd(w *byte, x *quant.BlockQ8K, nb int) float32

// dotQ6KDotProd works like dotQ6KNEON with SDOT.
//
//go:noescape
func dotQ6KDotProd(w *byte, x *quant.BlockQ8K, nb int) float32
