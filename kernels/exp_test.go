package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// expUlps is the error allowed in expf, in units in the last place.
const expUlps = 2

func TestExpf(t *testing.T) {
	r := rand.New(rand.NewPCG(40, 41))
	xs := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.5, 88.72, 88.7228, 88.73, 89, -86.89, -86.9, -87, -100,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-8, -1e-8, 0.34657359, -0.34657359}
	for range 200000 {
		xs = append(xs, (r.Float32()*2-1)*88)
	}
	for _, x := range xs {
		got := expf(x)
		want := math.Exp(float64(x))
		switch {
		case x != x:
			if got == got {
				t.Fatalf("expf(NaN) = %v", got)
			}
			continue
		case x > expHi:
			if !math.IsInf(float64(got), 1) {
				t.Fatalf("expf(%v) = %v, want +Inf", x, got)
			}
			continue
		case x < expLo:
			if got != 0 {
				t.Fatalf("expf(%v) = %v, want 0", x, got)
			}
			continue
		}
		ulp := math.Abs(float64(math.Nextafter32(float32(want), float32(math.Inf(1)))) - float64(float32(want)))
		if ulp == 0 || math.IsInf(ulp, 0) {
			ulp = math.Abs(want) * 1.2e-7
		}
		if d := math.Abs(float64(got) - want); d > expUlps*ulp {
			t.Fatalf("expf(%v) = %v, want %v (%.2f ulp)", x, got, want, d/ulp)
		}
	}
}

// TestExpPaths checks the vectorised exponentials of every path: SiLU×mul
// bit-identical with the generic loop, exp-and-sum bit-identical values
// and a sum within rounding of the generic one, at every length 1..300
// and on unaligned sub-slices, with extreme and non-finite inputs.
func TestExpPaths(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(42, 43))
		for n := 1; n <= 300; n++ {
			g := randF32(r, n+1, 100)[1:]
			if n > 4 {
				g[0], g[1], g[2], g[3] = float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 88.72
			}
			u := randF32(r, n, 2)
			got, want := make([]float32, n), make([]float32, n)
			tab.siluMul(got, g, u)
			siluMulGeneric(want, g, u)
			for i := range got {
				if !sameFloat(got[i], want[i]) {
					t.Fatalf("siluMul n=%d [%d] (gate %v): got %v, want %v", n, i, g[i], got[i], want[i])
				}
			}
			x := randF32(r, n+3, 90)[3:]
			y := append([]float32(nil), x...)
			s1 := tab.expSubSum(x, 3)
			s2 := expSubSumGeneric(y, 3)
			for i := range x {
				if !sameFloat(x[i], y[i]) {
					t.Fatalf("expSubSum n=%d [%d]: got %v, want %v", n, i, x[i], y[i])
				}
			}
			if math.Abs(s1-s2) > 1e-12*math.Abs(s2) {
				t.Fatalf("expSubSum n=%d: sum %v, want %v", n, s1, s2)
			}
		}
	})
}

// TestExpSub checks the exported exp-and-sum: expf's values on every
// path, -Inf and far-below inputs giving 0, and the sum of the values.
func TestExpSub(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 45))
	for _, n := range []int{0, 1, 7, 8, 9, 64, 301} {
		x := randF32(r, n, 60)
		for i := 0; i < n; i += 5 {
			x[i] = float32(math.Inf(-1))
		}
		if n > 2 {
			x[1] = -200
		}
		want := make([]float32, n)
		var sum float64
		for i, v := range x {
			want[i] = expf(v - 2)
			sum += float64(want[i])
		}
		got := ExpSub(x, 2)
		for i := range x {
			if !sameFloat(x[i], want[i]) {
				t.Fatalf("n=%d [%d]: got %v, want %v", n, i, x[i], want[i])
			}
			if i%5 == 0 && x[i] != 0 {
				t.Fatalf("n=%d [%d]: e^-Inf = %v", n, i, x[i])
			}
		}
		if n > 2 && x[1] != 0 {
			t.Fatalf("n=%d: e^-202 = %v, want 0", n, x[1])
		}
		if math.Abs(got-sum) > 1e-12*sum {
			t.Fatalf("n=%d: sum %v, want %v", n, got, sum)
		}
	}
}
