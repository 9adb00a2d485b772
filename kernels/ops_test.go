package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// opTol is the relative error allowed between the float32 ops and their
// float64 formulas.
const opTol = 1e-5

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 21))
	for _, n := range []int{1, 2, 7, 64, 2048, 5000} {
		x := randF32(r, n, 4)
		w := randF32(r, n, 2)
		dst := make([]float32, n)
		RMSNorm(dst, x, w, 1e-5)
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		scale := 1 / math.Sqrt(ss/float64(n)+1e-5)
		for i := range x {
			want := float64(x[i]) * scale * float64(w[i])
			if math.Abs(float64(dst[i])-want) > opTol*(math.Abs(want)+1e-6) {
				t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want)
			}
		}
		RMSNorm(x, x, w, 1e-5) // in place
		for i := range x {
			if x[i] != dst[i] {
				t.Fatalf("n=%d: in-place result differs at %d", n, i)
			}
		}
	}
}

func TestSoftmax(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 23))
	for _, n := range []int{1, 3, 100, 4096} {
		x := randF32(r, n, 20)
		x[0] = float32(math.Inf(-1)) // a masked position
		if n == 1 {
			x[0] = 5
		}
		orig := append([]float32(nil), x...)
		Softmax(x)
		mx := math.Inf(-1)
		for _, v := range orig {
			mx = math.Max(mx, float64(v))
		}
		var sum float64
		for _, v := range orig {
			sum += math.Exp(float64(v) - mx)
		}
		for i, v := range orig {
			want := math.Exp(float64(v)-mx) / sum
			if math.Abs(float64(x[i])-want) > opTol*want+1e-12 {
				t.Fatalf("n=%d: x[%d] = %v, want %v", n, i, x[i], want)
			}
		}
	}
}

func TestSiLUMulAddScale(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 25))
	g, u := randF32(r, 999, 10), randF32(r, 999, 3)
	g[0], g[1] = -100, 100 // exp overflow and underflow
	dst := make([]float32, len(g))
	SiLUMul(dst, g, u)
	for i := range g {
		want := float64(g[i]) / (1 + math.Exp(-float64(g[i]))) * float64(u[i])
		if math.Abs(float64(dst[i])-want) > opTol*math.Abs(want)+1e-30 {
			t.Fatalf("SiLUMul[%d] = %v, want %v", i, dst[i], want)
		}
	}
	Add(dst, g, u)
	for i := range g {
		if dst[i] != g[i]+u[i] {
			t.Fatalf("Add[%d] = %v, want %v", i, dst[i], g[i]+u[i])
		}
	}
	c := append([]float32(nil), g...)
	Scale(c, -0.5)
	for i := range g {
		if c[i] != g[i]*-0.5 {
			t.Fatalf("Scale[%d] = %v, want %v", i, c[i], g[i]*-0.5)
		}
	}
}

func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 27))
	cases := []struct {
		heads, headDim, ropeDim, pos int
		base, scale                  float32
		neox                         bool
	}{
		{4, 64, 64, 0, 10000, 1, false},
		{4, 64, 64, 17, 10000, 1, false},
		{2, 128, 128, 1000, 500000, 1, true},
		{3, 64, 32, 5, 10000, 0.25, true},
		{3, 64, 32, 5, 10000, 1, false},
	}
	for _, c := range cases {
		x := randF32(r, c.heads*c.headDim, 1)
		orig := append([]float32(nil), x...)
		rope, err := NewRope(RopeParams{Dim: c.ropeDim, NeoX: c.neox, Base: c.base, FreqScale: c.scale})
		if err != nil {
			t.Fatal(err)
		}
		rope.Apply(x, c.heads, c.headDim, c.pos)
		half := c.ropeDim / 2
		for h := range c.heads {
			o, y := orig[h*c.headDim:], x[h*c.headDim:]
			for i := range half {
				theta := float64(c.scale) * float64(c.pos) * math.Pow(float64(c.base), -2*float64(i)/float64(c.ropeDim))
				a, b := 2*i, 2*i+1
				if c.neox {
					a, b = i, i+half
				}
				wa := float64(o[a])*math.Cos(theta) - float64(o[b])*math.Sin(theta)
				wb := float64(o[a])*math.Sin(theta) + float64(o[b])*math.Cos(theta)
				// The float32 recurrence for theta drifts by about one ulp per pair.
				tol := 1e-5 + 1e-6*float64(c.pos)*float64(i+1)
				if math.Abs(float64(y[a])-wa) > tol || math.Abs(float64(y[b])-wb) > tol {
					t.Fatalf("%+v head %d pair %d: got (%v, %v), want (%v, %v)", c, h, i, y[a], y[b], wa, wb)
				}
			}
			for i := c.ropeDim; i < c.headDim; i++ {
				if y[i] != o[i] {
					t.Fatalf("%+v: value %d past ropeDim changed", c, i)
				}
			}
		}
	}
}

// lengths returns every length 1..300 and some larger ones up to 4099.
func lengths() []int {
	var ns []int
	for n := 1; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 511, 512, 513, 1000, 2047, 2048, 4099)
}

// dotTol returns the error allowed for a float32 dot of n terms whose
// absolute products sum to abs.
func dotTol(n int, abs float64) float64 { return float64(n+8) * 6e-8 * abs }

func TestDotF32(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(28, 29))
		for _, n := range lengths() {
			a := randF32(r, n+1, 3)[1:] // unaligned sub-slices
			b := randF32(r, n+3, 3)[3:]
			var want, abs float64
			for i := range a {
				p := float64(a[i]) * float64(b[i])
				want += p
				abs += math.Abs(p)
			}
			if got := tab.dotF32(a, b); math.Abs(float64(got)-want) > dotTol(n, abs) {
				t.Fatalf("n=%d: got %v, want %v", n, got, want)
			}
			wb := make([]byte, 4*n+1)
			for i, v := range a {
				f32Put(wb[1+4*i:], v)
			}
			if got := tab.dotF32W(wb[1:], b); math.Abs(float64(got)-want) > dotTol(n, abs) {
				t.Fatalf("weights n=%d: got %v, want %v", n, got, want)
			}
		}
	})
}

func TestDotF32NonFinite(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		name string
		v    float32
		at   int
		want float32
	}{
		{"nan", nan, 0, nan},
		{"nan-tail", nan, 36, nan},
		{"inf", inf, 5, inf},
		{"neg-inf-tail", -inf, 38, -inf},
	}
	for _, p := range Available() {
		tab := tableFor(p)
		for _, c := range cases {
			a, b := make([]float32, 39), make([]float32, 39)
			for i := range a {
				a[i], b[i] = 1, 1
			}
			a[c.at] = c.v
			if got := tab.dotF32(a, b); !sameFloat(got, c.want) {
				t.Errorf("%s %s: got %v, want %v", p, c.name, got, c.want)
			}
		}
		a := []float32{inf, 1}
		if got := tab.dotF32(a, []float32{0, 1}); !math.IsNaN(float64(got)) {
			t.Errorf("%s: Inf*0 gave %v, want NaN", p, got)
		}
	}
}

func TestDotF16(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(30, 31))
		for _, n := range lengths() {
			a := randF16(r, n+1, 4)[1:]
			b := randF16(r, n+2, 4)[2:]
			var want, abs float64
			for i := range a {
				p := float64(quant.F16ToF32(a[i])) * float64(quant.F16ToF32(b[i]))
				want += p
				abs += math.Abs(p)
			}
			if got := tab.dotF16(a, b); math.Abs(float64(got)-want) > dotTol(n, abs) {
				t.Fatalf("n=%d: got %v, want %v", n, got, want)
			}
			wb := make([]byte, 2*n+1)
			for i, h := range a {
				wb[1+2*i], wb[2+2*i] = byte(h), byte(h>>8)
			}
			if got := tab.dotF16W(wb[1:], b); math.Abs(float64(got)-want) > dotTol(n, abs) {
				t.Fatalf("weights n=%d: got %v, want %v", n, got, want)
			}
		}
	})
}

// TestF16Conversions checks both conversions of every path against
// quant's scalar ones: F16→F32 on all 65536 values, bit-exact; F32→F16 on
// edge cases and random values, bit-exact except NaN payloads.
func TestF16Conversions(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		all := make([]uint16, 1<<16+3)
		for i := range 1 << 16 {
			all[i+3] = uint16(i)
		}
		src := all[3:]
		dst := make([]float32, len(src))
		tab.f16ToF32(dst, src)
		for i, h := range src {
			if w := quant.F16ToF32(h); math.Float32bits(dst[i]) != math.Float32bits(w) {
				t.Fatalf("f16 %#04x: got %#08x, want %#08x", h, math.Float32bits(dst[i]), math.Float32bits(w))
			}
		}
		r := rand.New(rand.NewPCG(32, 33))
		f := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519, 65520, -65520, 1e-8, 5.96e-8, 2.98e-8,
			2.9802322e-08, 6.1e-5, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e38}
		for range 5000 {
			f = append(f, math.Float32frombits(r.Uint32()))
		}
		for _, n := range []int{1, 7, 8, 9, 31, 33, len(f)} {
			h := make([]uint16, n)
			tab.f32ToF16(h, f[:n])
			for i, v := range f[:n] {
				w := quant.F32ToF16(v)
				if v != v {
					if h[i]&0x7c00 != 0x7c00 || h[i]&0x3ff == 0 {
						t.Fatalf("NaN %#08x gave %#04x", math.Float32bits(v), h[i])
					}
					continue
				}
				if h[i] != w {
					t.Fatalf("%v (%#08x): got %#04x, want %#04x", v, math.Float32bits(v), h[i], w)
				}
			}
		}
	})
}

func TestAxpyF16(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(34, 35))
		for _, n := range lengths() {
			v := randF16(r, n+1, 2)[1:]
			dst := randF32(r, n+1, 1)[1:]
			want := append([]float32(nil), dst...)
			a := r.Float32() - 0.5
			axpyF16Generic(want, a, v)
			tab.axpyF16(dst, a, v)
			for i := range dst {
				if math.Abs(float64(dst[i]-want[i])) > 1e-6*(1+math.Abs(float64(want[i]))) {
					t.Fatalf("n=%d: dst[%d] = %v, want %v", n, i, dst[i], want[i])
				}
			}
		}
	})
}

// TestExportedOps checks that the exported wrappers reach the selected
// path and reject mismatched lengths.
func TestExportedOps(t *testing.T) {
	a := []float32{1, 2, 3}
	if got := DotF32(a, a); got != 14 {
		t.Fatalf("DotF32 = %v, want 14", got)
	}
	h := []uint16{quant.F32ToF16(2), quant.F32ToF16(-1)}
	if got := DotF16(h, h); got != 5 {
		t.Fatalf("DotF16 = %v, want 5", got)
	}
	f := make([]float32, 2)
	F16ToF32Row(f, h)
	if f[0] != 2 || f[1] != -1 {
		t.Fatalf("F16ToF32Row = %v", f)
	}
	back := make([]uint16, 2)
	F32ToF16Row(back, f)
	if back[0] != h[0] || back[1] != h[1] {
		t.Fatalf("F32ToF16Row = %v, want %v", back, h)
	}
	AxpyF16(f, 2, h)
	if f[0] != 6 || f[1] != -3 {
		t.Fatalf("AxpyF16 = %v", f)
	}
	for name, fn := range map[string]func(){
		"DotF32":  func() { DotF32(a, a[:2]) },
		"Add":     func() { Add(a, a, a[:1]) },
		"RoPE":    func() { ropeFor(t, 2).Apply(a, 2, 3, 0) },
		"RoPEdim": func() { ropeFor(t, 4).Apply(a[:2], 1, 2, 0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with bad lengths did not panic", name)
				}
			}()
			fn()
		}()
	}
}

func TestDotBF16(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(36, 37))
		for _, n := range lengths() {
			x := make([]uint16, n+1)[1:]
			wb := make([]byte, 2*n+1)
			var want, abs float64
			for i := range x {
				x[i] = quant.F32ToBF16(r.Float32()*8 - 4)
				h := quant.F32ToBF16(r.Float32()*8 - 4)
				wb[1+2*i], wb[2+2*i] = byte(h), byte(h>>8)
				p := float64(quant.BF16ToF32(h)) * float64(quant.BF16ToF32(x[i]))
				want += p
				abs += math.Abs(p)
			}
			if got := tab.dotBF16(wb[1:], x); math.Abs(float64(got)-want) > dotTol(n, abs) {
				t.Fatalf("n=%d: got %v, want %v", n, got, want)
			}
		}
	})
}

// ropeFor is a plain RoPE of dim rotated values.
func ropeFor(t *testing.T, dim int) *Rope {
	t.Helper()
	r, err := NewRope(RopeParams{Dim: dim, Base: 1e4})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRopeRefuses(t *testing.T) {
	for _, p := range []RopeParams{
		{Dim: 3, Base: 1e4},
		{Dim: -2, Base: 1e4},
		{Dim: 8, Base: 0},
		{Dim: 8, Base: 1e4, FreqScale: -1},
		{Dim: 8, Base: 1e4, Factors: []float32{1, 2}},
	} {
		if _, err := NewRope(p); !errors.Is(err, ErrRope) {
			t.Errorf("%+v: %v, want ErrRope", p, err)
		}
	}
}
