//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// nativeTable returns the table of an assembly path, or nil if p has none.
// The avx512 path has its own Q4_K and Q6_K dots (one token, runs of
// rows, and up to eight tokens that each equal the one-token dot)
// and Q8_0 dots (one, four and eight tokens) and blocked float matrix
// product, and shares the AVX2 float vector kernels. The avx2 path has an
// AVX2+FMA blocked product of its own.
func nativeTable(p Path) *table {
	switch p {
	case AVX2:
		t := genericTable()
		t.path = AVX2
		setVecAVX2(t)
		// Q4_K's multi-token products take the prompt tile, whose tokens
		// each equal this one-token dot (qtile_q4k.go).
		t.weights[tensor.Q4_K].q8k = dots[quant.BlockQ8K]{one: dotQ4KAVX2Go}
		t.weights[tensor.Q6_K].q8k = dots[quant.BlockQ8K]{one: dotQ6KAVX2Go, x4: dotQ6Kx4AVX2Go}
		t.weights[tensor.Q8_0].q80 = dots[quant.BlockQ8_0]{one: dotQ8_0AVX2Go, x4: dotQ8_0x4AVX2Go, x8: dotQ8_0x8AVX2Go}
		setNewQAVX2(t)
		setRowsAVX2(t)
		setMXFP4AVX2(t)
		setQTileAVX2(t)
		t.quantQ8_0 = quantizeQ8_0AVX2Go
		t.quantQ8_1 = quantizeQ8_1AVX2Go
		t.quantQ8K = quantizeQ8KAVX2Go
		setGEMMAVX2(t)
		return t
	case AVX512:
		t := genericTable()
		t.path = AVX512
		setVecAVX2(t)
		t.weights[tensor.Q4_K].q8k = xnDots(dotQ4KAVX512Go, dotQ4KRowsAVX512Go, dotQ4KRowsNAVX512Go)
		t.weights[tensor.Q6_K].q8k = xnDots(dotQ6KAVX512Go, dotQ6KRowsAVX512Go, dotQ6KRowsNAVX512Go)
		t.weights[tensor.Q8_0].q80 = dots[quant.BlockQ8_0]{one: dotQ8_0AVX512Go, x4: dotQ8_0x4AVX512Go, x8: dotQ8_0x8AVX512Go}
		setNewQAVX2(t)
		setNewQAVX512(t)
		setMXFP4AVX512(t)
		setQTileAVX512(t)
		t.quantQ8K = quantizeQ8KAVX512Go
		t.quantQ8_0 = quantizeQ8_0AVX512Go
		t.quantQ8_1 = quantizeQ8_1AVX512Go
		setGEMMAVX512(t)
		return t
	}
	return nil
}

// dotQ4KAVX2Go works like dotQ4KGeneric, in AVX2 assembly.
func dotQ4KAVX2Go(w []byte, x []quant.BlockQ8K) float32 {
	if len(x) == 0 {
		return 0
	}
	w = w[:q4KBytes*len(x)]
	return dotQ4KAVX2(&w[0], &x[0].D, len(x))
}

// dotQ6KAVX2Go works like dotQ6KGeneric, in AVX2 assembly.
func dotQ6KAVX2Go(w []byte, x []quant.BlockQ8K) float32 {
	if len(x) == 0 {
		return 0
	}
	w = w[:q6KBytes*len(x)]
	return dotQ6KAVX2(&w[0], &x[0].D, len(x))
}

// dotQ8_0AVX2Go works like dotQ8_0Generic, in AVX2 assembly.
func dotQ8_0AVX2Go(w []byte, x []quant.BlockQ8_0) float32 {
	if len(x) == 0 {
		return 0
	}
	w = w[:q8_0Bytes*len(x)]
	return dotQ8_0AVX2(&w[0], &x[0].D, len(x))
}

// dotQ4KAVX512Go works like dotQ4KGeneric, in AVX-512 assembly, up to
// the rounding of its summation order (float32 vector lanes).
func dotQ4KAVX512Go(w []byte, x []quant.BlockQ8K) float32 {
	var out [1]float32
	dotQ4KRowsAVX512Go(w, x, out[:])
	return out[0]
}

// dotQ6KAVX512Go works like dotQ6KGeneric, in AVX-512 assembly, up to
// the rounding of its summation order (float32 vector lanes).
func dotQ6KAVX512Go(w []byte, x []quant.BlockQ8K) float32 {
	var out [1]float32
	dotQ6KRowsAVX512Go(w, x, out[:])
	return out[0]
}

// dotQ4KRowsAVX512Go sets out[r] to dotQ4KAVX512Go of weight row r, the
// r-th len(x) blocks of w, and x: one call for a run of rows, bit for bit
// the one-row results.
func dotQ4KRowsAVX512Go(w []byte, x []quant.BlockQ8K, out []float32) {
	w = w[:q4KBytes*len(x)*len(out)]
	if len(x) == 0 || len(out) == 0 {
		clear(out)
		return
	}
	dotQ4KRowsAVX512(&w[0], &x[0], len(x), len(out), &out[0])
}

// dotQ6KRowsAVX512Go works like dotQ4KRowsAVX512Go for Q6_K rows.
func dotQ6KRowsAVX512Go(w []byte, x []quant.BlockQ8K, out []float32) {
	w = w[:q6KBytes*len(x)*len(out)]
	if len(x) == 0 || len(out) == 0 {
		clear(out)
		return
	}
	dotQ6KRowsAVX512(&w[0], &x[0], len(x), len(out), &out[0])
}

// xnDots returns the dots of a type whose multi-token kernel xn equals
// its one-token row-run kernel rows for every token: x4 and x8 are xn on
// one row (for the tests and benchmarks that call them; MatMul uses xn).
func xnDots(one func([]byte, []quant.BlockQ8K) float32, rows func([]byte, []quant.BlockQ8K, []float32),
	xn func(w []byte, x []quant.BlockQ8K, nb, rows, tokens int, out []float32, stride int)) dots[quant.BlockQ8K] {
	return dots[quant.BlockQ8K]{
		one:  one,
		rows: rows,
		xn:   xn,
		x4: func(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
			xn(w, x, nb, 1, 4, out[:], 1)
		},
		x8: func(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
			xn(w, x, nb, 1, 8, out[:], 1)
		},
	}
}

// dotQ4KRowsNAVX512Go sets out[t*stride+r] to dotQ4KRowsAVX512Go's dot
// of weight row r (the r-th nb blocks of w) with token t (the nb blocks
// x[t*nb:(t+1)*nb]), bit for bit, for rows rows and tokens tokens, in
// groups of up to xnTokens tokens that stream each weight block once. It
// panics when stride < rows (the tokens' outputs would overlap) or a
// slice is too short.
func dotQ4KRowsNAVX512Go(w []byte, x []quant.BlockQ8K, nb, rows, tokens int, out []float32, stride int) {
	kRowsN(false, w, x, nb, rows, tokens, out, stride)
}

// dotQ6KRowsNAVX512Go works like dotQ4KRowsNAVX512Go for Q6_K rows,
// each token equal to dotQ6KRowsAVX512Go's dot.
func dotQ6KRowsNAVX512Go(w []byte, x []quant.BlockQ8K, nb, rows, tokens int, out []float32, stride int) {
	kRowsN(true, w, x, nb, rows, tokens, out, stride)
}

// knAccFloats is the size of the multi-token kernels' accumulator
// scratch: 32 floats a token from the first 64-byte boundary on.
const knAccFloats = xnTokens*32 + 16

// kRowsN runs the Q4_K (or, q6, the Q6_K) multi-token row-run kernels
// over the tokens in groups of up to xnTokens, after checking every slice
// it reads or writes: groups of 2, 3, 4 and 8 tokens with the kernels
// that keep the tokens' float lanes in registers, the others with the one
// that keeps them in acc. The kernels are called directly, not through a
// function value, so that acc stays on the stack.
func kRowsN(q6 bool, w []byte, x []quant.BlockQ8K, nb, rows, tokens int, out []float32, stride int) {
	size := q4KBytes
	if q6 {
		size = q6KBytes
	}
	if rows <= 0 || tokens <= 0 {
		return
	}
	if stride < rows {
		panic("kernels: multi-token dot: output stride below the row count")
	}
	w = w[:size*nb*rows]
	x = x[:tokens*nb]
	out = out[:(tokens-1)*stride+rows]
	if nb == 0 {
		for t := range tokens {
			clear(out[t*stride : t*stride+rows])
		}
		return
	}
	// The kernel keeps each token's float lanes here, on this stack.
	var acc [knAccFloats]float32
	for t := 0; t < tokens; t += xnTokens {
		k := min(xnTokens, tokens-t)
		switch {
		case k == 8 && q6:
			dotQ6KRows8AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 8:
			dotQ4KRows8AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 4 && q6:
			dotQ6KRows4AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 4:
			dotQ4KRows4AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 3 && q6:
			dotQ6KRows3AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 3:
			dotQ4KRows3AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 2 && q6:
			dotQ6KRows2AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case k == 2:
			dotQ4KRows2AVX512(&w[0], &x[t*nb], nb, rows, &out[t*stride], stride)
		case q6:
			dotQ6KRowsNAVX512(&w[0], &x[t*nb], nb, rows, k, &out[t*stride], stride, &acc)
		default:
			dotQ4KRowsNAVX512(&w[0], &x[t*nb], nb, rows, k, &out[t*stride], stride, &acc)
		}
	}
}

// dotQ4KRowsNAVX512 works like dotQ4KRowsNAVX512Go on rows rows of nb
// blocks at w and tokens tokens at x (nb, rows >= 1, 1 <= tokens <=
// xnTokens), keeping each token's float lanes in acc.
//
//go:noescape
func dotQ4KRowsNAVX512(w *byte, x *quant.BlockQ8K, nb, rows, tokens int, out *float32, stride int, acc *[knAccFloats]float32)

// dotQ6KRowsNAVX512 works like dotQ4KRowsNAVX512 for Q6_K rows.
//
//go:noescape
func dotQ6KRowsNAVX512(w *byte, x *quant.BlockQ8K, nb, rows, tokens int, out *float32, stride int, acc *[knAccFloats]float32)

// dotQ4KRows8AVX512 works like dotQ4KRowsNAVX512 for eight tokens, with
// every token's float lanes in registers (the prompt's common case).
//
//go:noescape
func dotQ4KRows8AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ6KRows8AVX512 works like dotQ6KRowsNAVX512 for eight tokens, with
// every token's float lanes in registers.
//
//go:noescape
func dotQ6KRows8AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ4KRows4AVX512 works like dotQ4KRows8AVX512 for four tokens (a
// serving step's batch of four sequences).
//
//go:noescape
func dotQ4KRows4AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ6KRows4AVX512 works like dotQ6KRows8AVX512 for four tokens.
//
//go:noescape
func dotQ6KRows4AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ4KRows3AVX512 works like dotQ4KRows8AVX512 for three tokens.
//
//go:noescape
func dotQ4KRows3AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ6KRows3AVX512 works like dotQ6KRows8AVX512 for three tokens.
//
//go:noescape
func dotQ6KRows3AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ4KRows2AVX512 works like dotQ4KRows8AVX512 for two tokens.
//
//go:noescape
func dotQ4KRows2AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ6KRows2AVX512 works like dotQ6KRows8AVX512 for two tokens.
//
//go:noescape
func dotQ6KRows2AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)

// dotQ4KRowsAVX512 works like dotQ4KRowsAVX512Go on rows rows of nb
// blocks at w, x and out (nb, rows >= 1).
//
//go:noescape
func dotQ4KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// dotQ6KRowsAVX512 works like dotQ6KRowsAVX512Go on rows rows of nb
// blocks at w, x and out (nb, rows >= 1).
//
//go:noescape
func dotQ6KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// dotQ6Kx4AVX2Go works like dotQ6Kx4Generic, in AVX2 assembly.
func dotQ6Kx4AVX2Go(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q6KBytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ6Kx4AVX2(&w[0], &x[0].D, nb, out)
}

// dotQ8_0x4AVX2Go works like dotQ8_0x4Generic, in AVX2 assembly.
func dotQ8_0x4AVX2Go(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q8_0Bytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ8_0x4AVX2(&w[0], &x[0].D, nb, out)
}

// dotQ8_0x8AVX2Go works like dotQ8_0x8Generic, as two four-token AVX2
// dots.
func dotQ8_0x8AVX2Go(w []byte, x []quant.BlockQ8_0, _ []float32, nb int, out *[8]float32) {
	x = x[:8*nb]
	dotQ8_0x4AVX2Go(w, x[:4*nb], nb, (*[4]float32)(out[:4]))
	dotQ8_0x4AVX2Go(w, x[4*nb:], nb, (*[4]float32)(out[4:]))
}
