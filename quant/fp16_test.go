package quant

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// halfValue computes the value of half-precision bits h from the IEEE 754
// definition in float64 (not used for NaN).
func halfValue(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * math.Ldexp(m, -24)
	case 0x1f:
		return s * math.Inf(1)
	}
	return s * math.Ldexp(1024+m, e-25)
}

func TestF16ToF32AllValues(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got := F16ToF32(h)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			want := uint32(h&0x8000)<<16 | 0x7fc00000 | uint32(h&0x3ff)<<13
			if math.Float32bits(got) != want {
				t.Fatalf("F16ToF32(%#04x) = %#08x, want quiet NaN %#08x", h, math.Float32bits(got), want)
			}
			continue
		}
		want := float32(halfValue(h))
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("F16ToF32(%#04x) = %g (%#08x), want %g", h, got, math.Float32bits(got), want)
		}
	}
}

// halfOracle rounds f to the nearest half, ties to even, by searching the
// table of positive half values; it does not handle NaN.
type halfOracle struct{ vals []float64 } // vals[h] for h in 0..0x7c00, 0x7c00 standing for 65536

func newHalfOracle() *halfOracle {
	o := &halfOracle{vals: make([]float64, 0x7c01)}
	for h := range 0x7c00 {
		o.vals[h] = halfValue(uint16(h))
	}
	o.vals[0x7c00] = 65536
	return o
}

func (o *halfOracle) round(f float32) uint16 {
	sign := uint16(0)
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	a := math.Abs(float64(f))
	if a >= 65536 {
		return sign | 0x7c00
	}
	// h is the largest index with vals[h] <= a.
	h := sort.Search(len(o.vals), func(i int) bool { return o.vals[i] > a }) - 1
	lo, hi := o.vals[h], o.vals[h+1]
	switch {
	case a-lo < hi-a:
	case a-lo > hi-a:
		h++
	case h&1 == 1:
		h++
	}
	return sign | uint16(h)
}

func TestF32ToF16(t *testing.T) {
	o := newHalfOracle()
	check := func(f float32) {
		t.Helper()
		if got, want := F32ToF16(f), o.round(f); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	// Every half value, every midpoint between neighbours, and the float32
	// values just beside each midpoint, with both signs.
	for h := range 0x7c00 {
		v := float32(o.vals[h])
		mid := float32((o.vals[h] + o.vals[h+1]) / 2)
		for _, f := range []float32{v, mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(f)
			check(-f)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		f := math.Float32frombits(rng.Uint32())
		if f != f {
			continue
		}
		check(f)
	}
	for _, f := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), 65504, 65519.996, 65520, 1e-8, 2.9802322e-08, 2.9802326e-08, math.SmallestNonzeroFloat32} {
		check(f)
		check(-f)
	}
}

func TestF32ToF16NaN(t *testing.T) {
	for _, b := range []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0x7fa00000} {
		want := uint16(b>>16)&0x8000 | 0x7e00
		if got := F32ToF16(math.Float32frombits(b)); got != want {
			t.Errorf("F32ToF16(%#08x) = %#04x, want %#04x", b, got, want)
		}
	}
}

func TestF16RoundTrip(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue
		}
		if got := F32ToF16(F16ToF32(h)); got != h {
			t.Fatalf("F32ToF16(F16ToF32(%#04x)) = %#04x", h, got)
		}
	}
}

// bf16Oracle rounds f to bfloat16, ties to even, by comparing distances
// in float64.
func bf16Oracle(f float32) uint16 {
	b := math.Float32bits(f)
	lo := b &^ 0xffff
	hiBits := lo + 0x10000
	vlo := math.Abs(float64(math.Float32frombits(lo)))
	var vhi float64
	if hiBits&0x7fffffff >= 0x7f800000 {
		vhi = math.Ldexp(1, 128)
	} else {
		vhi = math.Abs(float64(math.Float32frombits(hiBits)))
	}
	a := math.Abs(float64(f))
	switch {
	case a-vlo < vhi-a:
		return uint16(lo >> 16)
	case a-vlo > vhi-a:
		return uint16(hiBits >> 16)
	case (lo>>16)&1 == 1:
		return uint16(hiBits >> 16)
	}
	return uint16(lo >> 16)
}

func TestF32ToBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []uint32{0, 0x80000000, 0x3f808000, 0x3f818000, 0x3f808001, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0x00008000, 0x00018000}
	for range 1 << 20 {
		cases = append(cases, rng.Uint32())
	}
	for _, b := range cases {
		f := math.Float32frombits(b)
		got := F32ToBF16(f)
		if f != f {
			want := uint16(b>>16) | 0x40
			if got != want {
				t.Fatalf("F32ToBF16(NaN %#08x) = %#04x, want %#04x", b, got, want)
			}
			continue
		}
		if want := bf16Oracle(f); got != want {
			t.Fatalf("F32ToBF16(%g = %#08x) = %#04x, want %#04x", f, b, got, want)
		}
		if back := BF16ToF32(got); math.Float32bits(back) != uint32(got)<<16 {
			t.Fatalf("BF16ToF32(%#04x) = %#08x", got, math.Float32bits(back))
		}
	}
}

func TestNearestInt(t *testing.T) {
	cases := []struct {
		in   float32
		want int32
	}{
		{0, 0}, {0.5, 0}, {1.5, 2}, {2.5, 2}, {-0.5, 0}, {-1.5, -2}, {-2.5, -2},
		{0.49999997, 0}, {3.7, 4}, {-3.7, -4}, {4194303, 4194303}, {-4194303, -4194303},
		{float32(math.NaN()), 0},
	}
	for _, c := range cases {
		if got := nearestInt(c.in); got != c.want {
			t.Errorf("nearestInt(%g) = %d, want %d", c.in, got, c.want)
		}
	}
	// Inside ggml's range the trick is round-half-to-even.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100000 {
		f := float32(rng.Float64()*8e6 - 4e6)
		if got, want := nearestInt(f), int32(math.RoundToEven(float64(f))); got != want {
			t.Fatalf("nearestInt(%g) = %d, want %d", f, got, want)
		}
	}
}

func TestTruncAndRound(t *testing.T) {
	cases := []struct {
		in         float32
		trunc      int32
		roundfWant float32
	}{
		{2.5, 2, 3}, {-2.5, -2, -3}, {0.4999, 0, 0}, {127.5, 127, 128},
		{float32(math.NaN()), math.MinInt32, float32(math.NaN())},
		{3e9, math.MinInt32, 3e9}, {-3e9, math.MinInt32, -3e9}, {-2147483648, math.MinInt32, -2147483648},
	}
	for _, c := range cases {
		if got := truncInt32(c.in); got != c.trunc {
			t.Errorf("truncInt32(%g) = %d, want %d", c.in, got, c.trunc)
		}
		if got := roundf(c.in); got != c.roundfWant && !(got != got && c.roundfWant != c.roundfWant) {
			t.Errorf("roundf(%g) = %g, want %g", c.in, got, c.roundfWant)
		}
	}
}

// TestRowConversionsAllHalves checks the row converters against the scalar
// ones on every 16-bit pattern.
func TestRowConversionsAllHalves(t *testing.T) {
	raw := make([]byte, 2<<16)
	for i := range 1 << 16 {
		raw[2*i], raw[2*i+1] = byte(i), byte(i>>8)
	}
	f16v := make([]float32, 1<<16)
	bf16v := make([]float32, 1<<16)
	DequantizeF16(raw, f16v)
	DequantizeBF16(raw, bf16v)
	for i := range 1 << 16 {
		if got, want := math.Float32bits(f16v[i]), math.Float32bits(F16ToF32(uint16(i))); got != want {
			t.Fatalf("DequantizeF16 of %#04x = %#08x, F16ToF32 %#08x", i, got, want)
		}
		if got, want := math.Float32bits(bf16v[i]), math.Float32bits(BF16ToF32(uint16(i))); got != want {
			t.Fatalf("DequantizeBF16 of %#04x = %#08x, BF16ToF32 %#08x", i, got, want)
		}
	}
	back := make([]byte, len(raw))
	QuantizeF16(f16v, back)
	for i := range 1 << 16 {
		h := uint16(back[2*i]) | uint16(back[2*i+1])<<8
		if want := F32ToF16(f16v[i]); h != want {
			t.Fatalf("QuantizeF16 of %g = %#04x, F32ToF16 %#04x", f16v[i], h, want)
		}
	}
}

func TestRoundfInt32(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	cases := []float32{0, float32(math.Copysign(0, -1)), 0.5, -0.5, 1.5, -1.5, 2.5, 0.49999997, -0.49999997, 127.5, -128.5,
		4194303.5, 4194304, -4194304.5, 8388607.5, 1e9, -1e9, 3e9, float32(math.Inf(1)), float32(math.NaN())}
	for range 1 << 20 {
		cases = append(cases, float32(rng.NormFloat64()*100), math.Float32frombits(rng.Uint32()))
	}
	for _, f := range cases {
		if got, want := roundfInt32(f), truncInt32(roundf(f)); got != want {
			t.Fatalf("roundfInt32(%g) = %d, want %d", f, got, want)
		}
	}
}
