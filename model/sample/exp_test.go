package sample

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExp(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	xs := []float64{0, -1e-300, -1e-9, -0.5, -1, -math.Ln2, -10, -49.99, -100, -699}
	for range 100000 {
		xs = append(xs, -r.Float64()*60)
	}
	for _, x := range xs {
		got := exp(x)
		want := math.Exp(x)
		if got != want && math.Abs(got-want) > 2e-13*want {
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

func TestWeightIsExp(t *testing.T) {
	f := newFastState(32000)
	r := rand.New(rand.NewPCG(8, 8))
	for range 100000 {
		top := float32(r.NormFloat64() * 10)
		l := top - float32(r.Float64()*60)
		temp := []float32{1, 0.7, 1.3}[r.IntN(3)]
		d := l/temp - top/temp
		var want uint64
		if d > -40 {
			want = uint64(exp(float64(d)) * float64(uint64(1)<<f.fracBits))
		}
		if l == top {
			want = 1 << f.fracBits
		}
		if got := f.weight(l, top, temp); got != want {
			t.Fatalf("weight(%v, %v, %v) = %d, exp gives %d", l, top, temp, got, want)
		}
	}
}
