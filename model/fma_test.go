package model

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/kernels"
)

// dotF32GGML is kernels.DotF32GGML (the production F32 product, in
// ggml_vec_dot_f32's order) with the weights given as float32 values.
func dotF32GGML(a, b []float32) float32 {
	w := make([]byte, 4*len(a))
	for i, v := range a {
		binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(v))
	}
	return kernels.DotF32GGML(w, b)
}

// TestNoFusedMultiplyAdd guards the unfused steps of ggml's orders
// against Go's fused multiply-adds: the compiler may turn sum += x*y into
// one FMADD with a single rounding, and does on arm64 (never on amd64),
// unless the product is rounded by an explicit conversion. On arm64 that
// alone moved stories260K's logits by up to 4e-3. Each case ends with
// -1 + x*y where x*y is not a float32, so the fused and the separately
// rounded results differ (checked) and the function must return the
// separately rounded one. Run under qemu by make test-arm64.
func TestNoFusedMultiplyAdd(t *testing.T) {
	// x*x = 1 + 2^-11 + 2^-24: a tie at float32 precision.
	x := float32(1 + 0x1p-12)
	cases := []struct {
		name string
		f    func(a, b []float32) float32
		n    int // values before the last product, all zero
	}{
		{"DotF32GGML tail", dotF32GGML, 0},
		{"DotF32GGML tail after a block of 64", dotF32GGML, 64},
		{"emuVecDotF32 tail", emuVecDotF32, 0},
	}
	for _, c := range cases {
		a := make([]float32, c.n+2)
		b := make([]float32, c.n+2)
		a[c.n], b[c.n] = -1, 1
		a[c.n+1], b[c.n+1] = x, x
		want := -1 + float32(x*x)
		fused := float32(math.FMA(float64(x), float64(x), -1))
		if want == fused {
			t.Fatalf("%s: the case does not tell fused from separate rounding (%g)", c.name, want)
		}
		if got := c.f(a, b); got != want {
			t.Errorf("%s = %g (bits %#x), want the separately rounded %g (%#x); fused would be %g",
				c.name, got, math.Float32bits(got), want, math.Float32bits(want), fused)
		}
	}
}
