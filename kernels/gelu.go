package kernels

import (
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// geluF16 is GELU (tanh approximation) of every F16 value, rounded to
// F16, indexed by the value's bits: the table ggml's CPU backend builds
// once and looks its GELU up in (GGML_GELU_FP16). It is filled when the
// package initialises and only read afterwards.
var geluF16 = func() *[1 << 16]uint16 {
	var t [1 << 16]uint16
	for i := range t {
		x := quant.F16ToF32(uint16(i))
		t[i] = quant.F32ToF16(geluTanh(x))
	}
	return &t
}()

// geluTanh is 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²))) in float32,
// ggml's ggml_gelu_f32.
func geluTanh(x float32) float32 {
	const coefA, sqrt2OverPi = float32(0.044715), float32(0.79788456080286535587989211986876)
	// float32(…) rounds the product before the addition: Go would fuse
	// them into one multiply-add on arm64 (never on amd64).
	inner := sqrt2OverPi * x * (1 + float32(coefA*x*x))
	return 0.5 * x * (1 + float32(math.Tanh(float64(inner))))
}

// GELUMul writes gelu(gate[i]) * up[i] into dst the way ggml's GEGLU
// computes it on the CPU: 0 for gate ≤ -10, gate itself for gate ≥ 10,
// otherwise the F16 table entry of gate rounded to F16. dst may alias
// gate or up. It panics if the lengths differ.
func GELUMul(dst, gate, up []float32) {
	mustLen("GELUMul", len(dst), len(gate))
	mustLen("GELUMul", len(up), len(gate))
	for i, g := range gate {
		switch {
		case g <= -10:
			dst[i] = 0
		case g >= 10:
			dst[i] = g * up[i]
		default:
			dst[i] = quant.F16ToF32(geluF16[quant.F32ToF16(g)]) * up[i]
		}
	}
}

// Softcap replaces every x[i] by c·tanh(x[i]/c) as ggml's graph of
// scale, tanh, scale computes it (x·(1/c) rounded, then tanh, then ·c).
func Softcap(x []float32, c float32) {
	inv := 1 / c
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v*inv))) * c
	}
}
