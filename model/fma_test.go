package model

import (
	"math"
	"testing"
)

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
		{"vecDotF32 tail", vecDotF32, 0},
		{"vecDotF32 tail after a block of 64", vecDotF32, 64},
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
