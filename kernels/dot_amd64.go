//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// nativeTable returns the table of an assembly path, or nil if p has none.
// The avx512 path has its own Q4_K and Q6_K dots (one, four and eight tokens)
// and Q8_0 dots (one, four and eight tokens) and blocked float matrix
// product, and shares the AVX2 float vector kernels. The avx2 path has an
// AVX2+FMA blocked product of its own.
func nativeTable(p Path) *table {
	switch p {
	case AVX2:
		t := genericTable()
		t.path = AVX2
		setVecAVX2(t)
		t.weights[tensor.Q4_K].q8k = dots[quant.BlockQ8K]{one: dotQ4KAVX2Go, x4: dotQ4Kx4AVX2Go}
		t.weights[tensor.Q6_K].q8k = dots[quant.BlockQ8K]{one: dotQ6KAVX2Go, x4: dotQ6Kx4AVX2Go}
		t.weights[tensor.Q8_0].q80 = dots[quant.BlockQ8_0]{one: dotQ8_0AVX2Go, x4: dotQ8_0x4AVX2Go, x8: dotQ8_0x8AVX2Go}
		setNewQAVX2(t)
		setMXFP4AVX2(t)
		setGEMMAVX2(t)
		return t
	case AVX512:
		t := genericTable()
		t.path = AVX512
		setVecAVX2(t)
		t.weights[tensor.Q4_K].q8k = dots[quant.BlockQ8K]{one: dotQ4KAVX512Go, rows: dotQ4KRowsAVX512Go, x4: dotQ4Kx4AVX512Go, x8: dotQ4Kx8AVX512Go}
		t.weights[tensor.Q6_K].q8k = dots[quant.BlockQ8K]{one: dotQ6KAVX512Go, rows: dotQ6KRowsAVX512Go, x4: dotQ6Kx4AVX512Go, x8: dotQ6Kx8AVX512Go}
		t.weights[tensor.Q8_0].q80 = dots[quant.BlockQ8_0]{one: dotQ8_0AVX512Go, x4: dotQ8_0x4AVX512Go, x8: dotQ8_0x8AVX512Go}
		setNewQAVX2(t)
		setNewQAVX512(t)
		setMXFP4AVX512(t)
		setQTileAVX512(t)
		t.quantQ8K = quantizeQ8KAVX512Go
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

// dotQ4Kx4AVX2Go works like dotQ4Kx4Generic, in AVX2 assembly.
func dotQ4Kx4AVX2Go(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q4KBytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ4Kx4AVX2(&w[0], &x[0].D, nb, out)
}

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

// dotQ4Kx4AVX512Go works like dotQ4Kx4Generic, in AVX-512 assembly.
func dotQ4Kx4AVX512Go(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q4KBytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ4Kx4AVX512(&w[0], &x[0], nb, out)
}

// dotQ4Kx4AVX512 works like dotQ4Kx4Generic on nb blocks of w and of each
// of the four tokens at x.
//
//go:noescape
func dotQ4Kx4AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[4]float32)

// dotQ6Kx4AVX512Go works like dotQ6Kx4Generic, in AVX-512 assembly.
func dotQ6Kx4AVX512Go(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	w = w[:q6KBytes*nb]
	if nb == 0 {
		*out = [4]float32{}
		return
	}
	dotQ6Kx4AVX512(&w[0], &x[0], nb, out)
}

// dotQ6Kx4AVX512 works like dotQ6Kx4Generic on nb blocks of w and of each
// of the four tokens at x.
//
//go:noescape
func dotQ6Kx4AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[4]float32)

// dotQ4Kx8AVX512Go sets out[t] to the dot of w with token t's nb blocks
// x[t*nb:(t+1)*nb], for eight tokens, in AVX-512 assembly. It rounds in
// another order than dotQ4KGeneric (see quant_avx512_amd64.s).
func dotQ4Kx8AVX512Go(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
	x = x[:8*nb]
	w = w[:q4KBytes*nb]
	if nb == 0 {
		*out = [8]float32{}
		return
	}
	dotQ4Kx8AVX512(&w[0], &x[0], nb, out)
}

// dotQ4Kx8AVX512 works like dotQ4Kx8AVX512Go on nb blocks of w and of
// each of the eight tokens at x.
//
//go:noescape
func dotQ4Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)

// dotQ6Kx8AVX512Go sets out[t] to the dot of w with token t's nb blocks
// x[t*nb:(t+1)*nb], for eight tokens, in AVX-512 assembly. It rounds in
// another order than dotQ6KGeneric (see quant_avx512_amd64.s).
func dotQ6Kx8AVX512Go(w []byte, x []quant.BlockQ8K, _ []float32, nb int, out *[8]float32) {
	x = x[:8*nb]
	w = w[:q6KBytes*nb]
	if nb == 0 {
		*out = [8]float32{}
		return
	}
	dotQ6Kx8AVX512(&w[0], &x[0], nb, out)
}

// dotQ6Kx8AVX512 works like dotQ6Kx8AVX512Go on nb blocks of w and of
// each of the eight tokens at x.
//
//go:noescape
func dotQ6Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)
