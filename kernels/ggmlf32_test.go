package kernels

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactFMA is a*b+c rounded once to float32, through an exact big.Float
// sum: the reference fmaF32 and the assembly must equal.
func exactFMA(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(2000).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(2000).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(2000).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

func TestFMAF32(t *testing.T) {
	// (1+2^-12)² = 1 + 2^-11 + 2^-24, a float32 halfway point; 2^-60 more
	// must round up, which rounding to float64 first loses.
	x := float32(1 + 0x1p-12)
	if got, want := fmaF32(x, x, 0x1p-60), float32(1+0x1p-11+0x1p-23); got != want {
		t.Fatalf("fmaF32 halfway case = %g, want %g", got, want)
	}
	if got, want := fmaF32(x, x, -0x1p-60), float32(1+0x1p-11); got != want {
		t.Fatalf("fmaF32 halfway case below = %g, want %g", got, want)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	vals := func() float32 {
		switch rng.IntN(4) {
		case 0:
			return float32(rng.NormFloat64())
		case 1:
			return float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(80)-40))
		case 2:
			return math.Float32frombits(rng.Uint32())
		}
		return float32(rng.IntN(1<<13)) * 0x1p-12
	}
	for range 200000 {
		a, b, c := vals(), vals(), vals()
		if finite := func(v float32) bool { return !math.IsInf(float64(v), 0) && v == v }; !finite(a) || !finite(b) || !finite(c) {
			continue
		}
		got, want := fmaF32(a, b, c), exactFMA(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fmaF32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

// refGGMLDot and refLanes16 are the two orders written out value by value.
func refGGMLDot(w, x []float32) float32 {
	var acc [4][16]float32
	nb := len(x) &^ 63
	for i := range nb {
		j, k := (i%64)/16, i%16
		acc[j][k] = exactFMA(w[i], x[i], acc[j][k])
	}
	var s [16]float32
	for k := range s {
		s[k] = (acc[0][k] + acc[2][k]) + (acc[1][k] + acc[3][k])
	}
	sum := reduceHalves16(&s)
	for i := nb; i < len(x); i++ {
		sum += float32(w[i] * x[i])
	}
	return sum
}

func refLanes16(w, x []float32) float32 {
	var acc [16]float32
	for i := range x {
		acc[i%16] = exactFMA(w[i], x[i], acc[i%16])
	}
	return reduceHalves16(&acc)
}

func TestDotF32GGML(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 2048} {
		w, x := make([]float32, n), make([]float32, n)
		wb := make([]byte, 4*n+1) // odd offset: unaligned rows
		for i := range w {
			w[i], x[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			if i%7 == 3 {
				x[i] *= 1e4
			}
			binary.LittleEndian.PutUint32(wb[1+4*i:], math.Float32bits(w[i]))
		}
		for _, tc := range []struct {
			name     string
			got, ref func() float32
		}{
			{"ggml", func() float32 { return DotF32GGML(wb[1:], x) }, func() float32 { return refGGMLDot(w, x) }},
			{"lanes16", func() float32 { return DotF32Lanes16(wb[1:], x) }, func() float32 { return refLanes16(w, x) }},
		} {
			if got, want := tc.got(), tc.ref(); math.Float32bits(got) != math.Float32bits(want) {
				t.Errorf("%s n=%d (path %s): %g, want %g", tc.name, n, Selected(), got, want)
			}
		}
		// The generic accumulators equal the selected path's.
		if nb := n &^ 63; nb > 0 {
			var a, g [64]float32
			f32Acc4(wb[1:1+4*nb], x[:nb], &a)
			f32Acc4Generic(wb[1:1+4*nb], x[:nb], &g)
			if a != g {
				t.Errorf("n=%d: f32Acc4 on %s differs from the generic one", n, Selected())
			}
		}
		if nb := n &^ 15; nb > 0 {
			var a, g [16]float32
			f32Acc1(wb[1:1+4*nb], x[:nb], &a)
			f32Acc1Generic(wb[1:1+4*nb], x[:nb], &g)
			if a != g {
				t.Errorf("n=%d: f32Acc1 on %s differs from the generic one", n, Selected())
			}
		}
	}
}
