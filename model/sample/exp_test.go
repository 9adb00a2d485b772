package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := []float64{0, -1e-300, -1e-9, -0.5, -1, -math.Ln2, -10, -49.99, -100, -699, -700, -800, math.Inf(-1), math.NaN()}
	for range 100000 {
		xs = append(xs, -r.Float64()*60)
	}
	for _, x := range xs {
		got := exp(x)
		want := math.Exp(x)
		if x <= -700 || x != x {
			want = 0
		}
		if got != want && math.Abs(got-want) > 4e-16*want {
			t.Fatalf("exp(%v) = %v, want %v (rel %g)", x, got, want, math.Abs(got-want)/want)
		}
	}
}

func BenchmarkExp(b *testing.B) {
	xs := make([]float64, 1024)
	for i := range xs {
		xs[i] = -float64(i) / 64
	}
	var sum float64
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sum += exp(x)
			}
		}
	})
	b.Run("math", func(b *testing.B) {
		for b.Loop() {
			for _, x := range xs {
				sum += math.Exp(x)
			}
		}
	})
	_ = sum
}
