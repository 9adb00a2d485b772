package quant

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkDequantize(b *testing.B) {
	const n = 64 * QK_K
	rng := rand.New(rand.NewPCG(31, 32))
	src := randomActivations(rng, n)
	for _, typ := range supportedTypes() {
		q := make([]byte, n/typ.BlockSize()*typ.BlockBytes())
		if err := Quantize(typ, src, q); err != nil {
			b.Fatal(err)
		}
		dst := make([]float32, n)
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(len(q)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Dequantize(typ, q, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	const n = 16 * QK_K
	rng := rand.New(rand.NewPCG(33, 34))
	src := randomActivations(rng, n)
	for _, typ := range supportedTypes() {
		q := make([]byte, n/typ.BlockSize()*typ.BlockBytes())
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(4 * n)
			b.ReportAllocs()
			for b.Loop() {
				if err := Quantize(typ, src, q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkQuantizeRowQ8K quantizes one 2048- and one 5632-value
// activation row, the hidden and feed-forward widths of a 1.1B Llama.
func BenchmarkQuantizeRowQ8K(b *testing.B) {
	for _, n := range []int{2048, 5632} {
		rng := rand.New(rand.NewPCG(35, uint64(n)))
		src := randomActivations(rng, n)
		dst := make([]BlockQ8K, n/QK_K)
		b.Run(itoa(n), func(b *testing.B) {
			b.SetBytes(int64(4 * n))
			b.ReportAllocs()
			for b.Loop() {
				QuantizeRowQ8K(src, dst)
			}
		})
	}
}

// BenchmarkQuantizeRowQ8_0 quantizes one 2048-value activation row.
func BenchmarkQuantizeRowQ8_0(b *testing.B) {
	const n = 2048
	rng := rand.New(rand.NewPCG(37, 38))
	src := randomActivations(rng, n)
	dst := make([]BlockQ8_0, n/QK8_0)
	b.SetBytes(4 * n)
	b.ReportAllocs()
	for b.Loop() {
		QuantizeRowQ8_0(src, dst)
	}
}

// BenchmarkDot measures the reference dots over a 2048-value row.
func BenchmarkDot(b *testing.B) {
	const n = 2048
	rng := rand.New(rand.NewPCG(39, 40))
	x := randomActivations(rng, n)
	xk := make([]BlockQ8K, n/QK_K)
	QuantizeRowQ8K(x, xk)
	x0 := make([]BlockQ8_0, n/QK8_0)
	QuantizeRowQ8_0(x, x0)
	w4 := randomWeights(rng, n/QK_K, BlockQ4_KBytes, 0, 2)
	w6 := randomWeights(rng, n/QK_K, BlockQ6_KBytes, 208)
	w8 := randomWeights(rng, n/QK8_0, BlockQ8_0Bytes, 0)
	var sink float32
	cases := []struct {
		name string
		w    []byte
		f    func() float32
	}{
		{"Q8_0", w8, func() float32 { return DotQ8_0Q8_0(w8, x0) }},
		{"Q4_K", w4, func() float32 { return DotQ4KQ8K(w4, xk) }},
		{"Q6_K", w6, func() float32 { return DotQ6KQ8K(w6, xk) }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.w)))
			b.ReportAllocs()
			for b.Loop() {
				sink += c.f()
			}
		})
	}
	_ = sink
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
