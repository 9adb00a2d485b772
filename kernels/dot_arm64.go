//go:build arm64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// nativeTable returns the table of an arm64 assembly path, or nil if p has
// none. Every path replaces the Q8_0, Q4_0, Q4_K, Q6_K, Q5_K and IQ4_XS
// dots with assembly that keeps the generic float order (bit-exact twins);
// neon and dotprod differ in how the 16-byte integer dots are done
// (quant_neon_arm64.s, quant_dotprod_arm64.s), and i8mm is dotprod plus
// the SMMLA two-row tiles of Q8_0, Q4_0 and Q4_K (quant_i8mm_arm64.s). The
// multi-token dots loop over the one-token kernel, as the generic ones do,
// so they equal it exactly; so does every output of a tile. All three
// share the float vector kernels of vec_arm64.s.
func nativeTable(p Path) *table {
	var q80, q40 func(w *byte, x *quant.BlockQ8_0, nb int) float32
	var q4k, q6k, q5k, iq4xs func(w *byte, x *quant.BlockQ8K, nb int) float32
	switch p {
	case NEON:
		q80, q40, q4k, q6k = dotQ8_0NEON, dotQ4_0NEON, dotQ4KNEON, dotQ6KNEON
		q5k, iq4xs = dotQ5KNEON, dotIQ4XSNEON
	case DotProd, I8MM:
		q80, q40, q4k, q6k = dotQ8_0DotProd, dotQ4_0DotProd, dotQ4KDotProd, dotQ6KDotProd
		q5k, iq4xs = dotQ5KDotProd, dotIQ4XSDotProd
	default:
		return nil
	}
	t := genericTable()
	t.path = p
	setVecNEON(t, detect().fhm)
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
	if p == I8MM {
		t.weights[tensor.Q8_0].q80.x8r2 = x8r2Q80I8MM(dotQ8_0x8r2I8MM, q8_0Bytes)
	}
	one40 := one0(q40, quant.BlockQ4_0Bytes)
	t.weights[tensor.Q4_0].q80 = dots[quant.BlockQ8_0]{one: one40}
	if p == I8MM {
		// The tiles run inside the eight-token loop, which needs an x8:
		// eight one-token dots, as the tile's rows equal.
		t.weights[tensor.Q4_0].q80.x8 = x8Of80(one40)
		t.weights[tensor.Q4_0].q80.x8r2 = x8r2Q80I8MM(dotQ4_0x8r2I8MM, quant.BlockQ4_0Bytes)
	}
	q4 := oneK(q4k, q4KBytes)
	t.weights[tensor.Q4_K].q8k = dots[quant.BlockQ8K]{one: q4, x4: x4Of(q4)}
	if p == I8MM {
		// The tiles run inside the eight-token loop, which needs an x8:
		// eight one-token dots, as the tile's rows equal.
		t.weights[tensor.Q4_K].q8k.x8 = x8OfK(q4)
		t.weights[tensor.Q4_K].q8k.x8r2 = x8r2Q4KI8MM
	}
	q6 := oneK(q6k, q6KBytes)
	t.weights[tensor.Q6_K].q8k = dots[quant.BlockQ8K]{one: q6, x4: x4Of(q6)}
	q5 := oneK(q5k, quant.BlockQ5_KBytes)
	t.weights[tensor.Q5_K].q8k = dots[quant.BlockQ8K]{one: q5, x4: x4Of(q5)}
	iq4 := oneK(iq4xs, quant.BlockIQ4_XSBytes)
	t.weights[tensor.IQ4_XS].q8k = dots[quant.BlockQ8K]{one: iq4, x4: x4Of(iq4)}
	return t
}

// x8r2Q80I8MM returns the i8mm path's two-row tile of weights of size
// bytes a block against Q8_0 activations, run by kernel (dotQ8_0x8r2I8MM
// or dotQ4_0x8r2I8MM), each output equal to the one-token dot. Without dx
// (the tokens' block scales, q80Scales's layout) it computes them.
func x8r2Q80I8MM(kernel func(w *byte, rb int, x *quant.BlockQ8_0, dx *float32, nb int, out *[16]float32), size int) func([]byte, []quant.BlockQ8_0, []float32, int, []float32, int) {
	return func(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out []float32, stride int) {
		_ = out[7*stride+1]
		var o [16]float32
		if nb > 0 {
			w, x = w[:2*nb*size], x[:8*nb]
			if dx == nil {
				dx = make([]float32, 8*nb)
				for k := range 8 {
					q80Scales(dx, x[k*nb:(k+1)*nb], k)
				}
			}
			dx = dx[:8*nb]
			kernel(&w[0], nb*size, &x[0], &dx[0], nb, &o)
		}
		for t := range 8 {
			out[t*stride], out[t*stride+1] = o[t], o[8+t]
		}
	}
}

// x8r2Q4KI8MM is the i8mm path's two-row Q4_K tile (dotQ4Kx8r2I8MM),
// each output equal to the one-token dot; dx is not used.
func x8r2Q4KI8MM(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out []float32, stride int) {
	_ = out[7*stride+1]
	var o [16]float32
	if nb > 0 {
		w, x = w[:2*nb*q4KBytes], x[:8*nb]
		dotQ4Kx8r2I8MM(&w[0], nb*q4KBytes, &x[0], nb, &o)
	}
	for t := range 8 {
		out[t*stride], out[t*stride+1] = o[t], o[8+t]
	}
}

// x8OfK returns the eight-token K-quant dot that calls one once per token.
func x8OfK(one func([]byte, []quant.BlockQ8K) float32) func([]byte, []quant.BlockQ8K, []float32, int, *[8]float32) {
	return func(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
		x = x[:8*nb]
		for t := range out {
			out[t] = one(w, x[t*nb:(t+1)*nb])
		}
	}
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

// dotQ8_0x8r2I8MM sets out[8k+t] to dotQ8_0Generic of weight row k (0,
// 1; row 1 starts rb bytes after row 0) with token t's nb blocks
// x[t*nb:], for eight tokens, with SMMLA; dx holds the tokens' block
// scales as float32, dx[8b+t].
//
//go:noescape
func dotQ8_0x8r2I8MM(w *byte, rb int, x *quant.BlockQ8_0, dx *float32, nb int, out *[16]float32)

// dotQ4_0x8r2I8MM sets out[8k+t] to quant.DotQ4_0Q8_0 of weight row k
// (0, 1; row 1 starts rb bytes after row 0) with token t's nb blocks
// x[t*nb:], for eight tokens, with SMMLA; dx as dotQ8_0x8r2I8MM's.
//
//go:noescape
func dotQ4_0x8r2I8MM(w *byte, rb int, x *quant.BlockQ8_0, dx *float32, nb int, out *[16]float32)

// dotQ4Kx8r2I8MM sets out[8k+t] to dotQ4KGeneric of weight row k (0, 1;
// row 1 starts rb bytes after row 0) with token t's nb blocks x[t*nb:],
// for eight tokens, with SMMLA.
//
//go:noescape
func dotQ4Kx8r2I8MM(w *byte, rb int, x *quant.BlockQ8K, nb int, out *[16]float32)

// dotQ5KNEON returns quant.DotQ5KQ8K of nb blocks at w and x, in ASIMD
// assembly (the dotprod path runs the same code: see _arm64gen's q5K).
//
//go:noescape
func dotQ5KNEON(w *byte, x *quant.BlockQ8K, nb int) float32

// dotQ5KDotProd is dotQ5KNEON's code under the dotprod path's name.
//
//go:noescape
func dotQ5KDotProd(w *byte, x *quant.BlockQ8K, nb int) float32

// dotIQ4XSNEON returns quant.DotIQ4XSQ8K of nb blocks at w and x, in
// ASIMD assembly.
//
//go:noescape
func dotIQ4XSNEON(w *byte, x *quant.BlockQ8K, nb int) float32

// dotIQ4XSDotProd works like dotIQ4XSNEON with SDOT.
//
//go:noescape
func dotIQ4XSDotProd(w *byte, x *quant.BlockQ8K, nb int) float32
