package model

import "github.com/lisa-llm/lisa/kernels"

// arith is the arithmetic a Runner computes with. Production runners use
// package kernels (kernelArith); tests swap in an emulation of ggml's
// exact summation orders to show that the forward pass reproduces
// llama.cpp bit for bit when the arithmetic does.
type arith struct {
	// matmul computes out = w·x for n activation rows.
	matmul func(out []float32, w kernels.Matrix, x []float32, n int) error
	// rope rotates the heads of one token's query or key row.
	rope func(x []float32, nHeads, headDim, ropeDim, pos int, base, scale float32)
	// softmax normalises one row of attention scores in place.
	softmax func(x []float32)
	// siluMul computes silu(gate)*up for one row.
	siluMul func(dst, gate, up []float32)
	// dotKQ returns the F16 key row times the F16-rounded query.
	dotKQ func(k, q []uint16) float32
	// dotKQV returns the transposed F16 value row times the F16-rounded
	// attention weights of a step of batch tokens.
	dotKQV func(v, p []uint16, batch int) float32
}

// kernelArith returns the arithmetic of package kernels on pool.
func kernelArith(pool *kernels.Pool) arith {
	return arith{
		matmul: pool.MatMul,
		rope: func(x []float32, nHeads, headDim, ropeDim, pos int, base, scale float32) {
			kernels.RoPE(x, nHeads, headDim, ropeDim, pos, base, scale, false)
		},
		softmax: kernels.Softmax,
		siluMul: kernels.SiLUMul,
		dotKQ:   kernels.DotF16,
		dotKQV:  func(v, p []uint16, _ int) float32 { return kernels.DotF16(v, p) },
	}
}
