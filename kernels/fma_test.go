package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// TestNoFusedMultiplyAdd guards the pure-Go float32 sums against Go's
// fused multiply-adds. The Go compiler may turn s += x*y into one FMADD
// with a single rounding, and does on arm64 (never on amd64), unless the
// product is rounded by an explicit conversion. Each case ends with -1 +
// x*y where x*y is not a float32, so the fused and the separately rounded
// results differ (checked, so the case cannot pass vacuously) and the
// kernel must return the separately rounded one, as on amd64 and in the
// assembly twins. Run under qemu by make test-arm64.
func TestNoFusedMultiplyAdd(t *testing.T) {
	// x*x = 1 + 2^-11 + 2^-24: a tie at float32 precision.
	x := float32(1 + 0x1p-12)
	// h is a half; a*h needs 33 significant bits.
	h := quant.F32ToF16(1 + 0x1p-10)
	a := float32(1 + 0x1p-12 + 0x1p-23)
	f32le := func(v ...float32) []byte {
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		return b
	}
	gemm := func(w, x []float32) float32 {
		k := len(w)
		ws := make([]float32, gemmR*k)
		xs := make([]float32, gemmT*k)
		for r := range gemmR {
			copy(ws[r*k:], w)
		}
		for c := range gemmT {
			copy(xs[c*k:], x)
		}
		var out [gemmR * gemmT]float32
		gemmGeneric(ws, k, xs, k, k, &out, nil)
		for i, v := range out {
			if v != out[0] {
				t.Fatalf("gemmGeneric: output %d is %g, output 0 %g", i, v, out[0])
			}
		}
		return out[0]
	}
	cases := []struct {
		name string
		p, q float32 // the last product's factors, as the kernel sees them
		got  func() float32
	}{
		{"dotF32Generic", x, x, func() float32 { return dotF32Generic([]float32{-1, x}, []float32{1, x}) }},
		{"dotF32WGeneric", x, x, func() float32 { return dotF32WGeneric(f32le(-1, x), []float32{1, x}) }},
		{"gemmGeneric", x, x, func() float32 { return gemm([]float32{-1, x}, []float32{1, x}) }},
		{"axpyF16Generic", a, quant.F16ToF32(h), func() float32 {
			dst := []float32{-1}
			axpyF16Generic(dst, a, []uint16{h})
			return dst[0]
		}},
	}
	for _, c := range cases {
		prod := float32(c.p * c.q)
		want := -1 + prod
		fused := float32(math.FMA(float64(c.p), float64(c.q), -1))
		if want == fused {
			t.Fatalf("%s: the case does not tell fused from separate rounding (%g)", c.name, want)
		}
		if got := c.got(); got != want {
			t.Errorf("%s = %g (bits %#x), want the separately rounded %g (%#x); fused would be %g",
				c.name, got, math.Float32bits(got), want, math.Float32bits(want), fused)
		}
	}
}
