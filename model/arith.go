package model

import (
	"fmt"

	"github.com/lisa-llm/lisa/kernels"
)

// arith is the arithmetic a Runner computes with. Production runners use
// ggmlArith (ggml.go): llama.cpp's summation orders for F32 products and
// RoPE, and for F32 models the attention dot products, softmax and SiLU
// too; package kernels for the rest. Tests swap in a slower, independent emulation
// (emuArith) that also reproduces ggml's quantized dot products.
type arith struct {
	// matmul computes out = w·x for n activation rows; group[t] is how
	// many of the n rows belong to row t's sequence (ggml's order for a
	// row depends on the size of its sequence's batch, and taking it per
	// sequence keeps each sequence's results independent of the others
	// sharing the batch).
	matmul func(out []float32, w kernels.Matrix, x []float32, n int, group []int32) error
	// rope rotates the heads of one token's query or key row.
	rope func(x []float32, nHeads, headDim, pos int, r *kernels.Rope)
	// softmax normalises one row of attention scores in place.
	softmax func(x []float32)
	// siluMul computes silu(gate)*up for one row.
	siluMul func(dst, gate, up []float32)
	// dotKQ sets out[j] to the F16 key row at k[j*stride:] times the
	// F16-rounded query q.
	dotKQ func(out []float32, k []uint16, stride int, q []uint16)
	// dotKQV sets out[d] to the transposed F16 value row at v[d*stride:]
	// times the F16-rounded attention weights p, for a sequence with
	// batch tokens in this step.
	dotKQV func(out []float32, v []uint16, stride int, p []uint16, batch int)
}

// Arithmetic names the summation orders a Runner computes the attention
// dot products, softmax and SiLU in (F32 matrix products and RoPE always
// follow ggml's orders, and the other weight types package kernels', which
// round activations to each type's partner format as ggml does).
type Arithmetic int

const (
	// ArithAuto is ArithGGML for models whose weights are all F32 (whose
	// activations are never rounded, so only ggml's exact orders keep
	// them within float32 ulps of llama.cpp) and ArithKernels otherwise.
	// It is the default.
	ArithAuto Arithmetic = iota
	// ArithGGML is llama.cpp's CPU orders (ggml.go), emulated in pure
	// Go: up to five times slower prompt processing.
	ArithGGML
	// ArithKernels is package kernels' vector code.
	ArithKernels
)

var arithNames = [...]string{ArithAuto: "auto", ArithGGML: "ggml", ArithKernels: "kernels"}

// String returns the name ParseArithmetic takes.
func (a Arithmetic) String() string {
	if a < 0 || int(a) >= len(arithNames) {
		return fmt.Sprintf("Arithmetic(%d)", int(a))
	}
	return arithNames[a]
}

// ParseArithmetic returns the Arithmetic named s ("auto", "ggml" or
// "kernels").
func ParseArithmetic(s string) (Arithmetic, error) {
	for i, n := range arithNames {
		if s == n {
			return Arithmetic(i), nil
		}
	}
	return 0, fmt.Errorf("model: arithmetic %q: %w (want auto, ggml or kernels)", s, ErrUnsupported)
}

// exact reports whether a asks for ggml's attention orders on m.
func (a Arithmetic) exact(m *Model) bool {
	switch a {
	case ArithGGML:
		return true
	case ArithKernels:
		return false
	}
	return m.allF32()
}
