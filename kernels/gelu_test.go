package kernels

import (
	"math"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// TestGELUMul checks GELUMul against GELU's tanh form in float64: within
// the F16 rounding of the input and of the table entry, exact at the
// ±10 cut-offs, and multiplied by up.
func TestGELUMul(t *testing.T) {
	gelu64 := func(x float64) float64 {
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*x*(1+0.044715*x*x)))
	}
	for _, tc := range []struct {
		gate, up float32
		tol      float64 // relative, of the larger of |want| and 1e-3
	}{
		{0, 1, 0}, {1, 1, 2e-3}, {-1, 1, 2e-3}, {0.5, -3, 2e-3}, {3.25, 0.5, 2e-3}, {-3.25, 2, 4e-3},
		{9.99, 1, 2e-3}, {10, 2, 0}, {12.5, 1, 0}, {-10, 5, 0}, {-11, 5, 0}, {1e-3, 1, 2e-3},
	} {
		dst := []float32{0}
		GELUMul(dst, []float32{tc.gate}, []float32{tc.up})
		want := gelu64(float64(tc.gate)) * float64(tc.up)
		switch {
		case tc.gate >= 10:
			want = float64(tc.gate) * float64(tc.up)
		case tc.gate <= -10:
			want = 0
		}
		if d := math.Abs(float64(dst[0]) - want); d > tc.tol*math.Max(math.Abs(want), 1e-3) {
			t.Errorf("GELUMul(%g, %g) = %g, want %g", tc.gate, tc.up, dst[0], want)
		}
	}
}

// TestGELUMulTable checks the result is the F16 table entry of the
// F16-rounded input, as ggml looks it up, not the exact GELU: an input
// between two F16 values gives the same result as its rounding.
func TestGELUMulTable(t *testing.T) {
	x := float32(1.0001) // rounds to F16 1.0
	a, b := []float32{0}, []float32{0}
	GELUMul(a, []float32{x}, []float32{1})
	GELUMul(b, []float32{1}, []float32{1})
	if a[0] != b[0] {
		t.Errorf("GELUMul(%g) = %g, GELUMul(1) = %g: the input was not rounded to F16", x, a[0], b[0])
	}
	if r := quant.F16ToF32(quant.F32ToF16(a[0])); r != a[0] {
		t.Errorf("GELUMul(1) = %g is not an F16 value", a[0])
	}
}

// TestSoftcap checks c·tanh(x/c): bounded by c, odd, near x for small x.
func TestSoftcap(t *testing.T) {
	x := []float32{0, 0.01, -0.01, 5, -5, 1000, float32(math.Inf(1))}
	Softcap(x, 2)
	want := []float32{0, 0.01, -0.01, 2 * float32(math.Tanh(2.5)), -2 * float32(math.Tanh(2.5)), 2, 2}
	for i := range x {
		if math.Abs(float64(x[i]-want[i])) > 1e-6 {
			t.Errorf("Softcap[%d] = %g, want %g", i, x[i], want[i])
		}
	}
}
