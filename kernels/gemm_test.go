package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// floatTypes are the weight types of the blocked product.
var floatTypes = []tensor.Type{tensor.F32, tensor.F16, tensor.BF16}

// gemmPaths runs f as a subtest for every available path with a blocked
// product.
func gemmPaths(t *testing.T, f func(t *testing.T, tab *table)) {
	t.Helper()
	forEachPath(t, func(t *testing.T, tab *table) {
		if tab.gemm == nil {
			t.Skip("no blocked product on this path")
		}
		f(t, tab)
	})
}

// gemmLengths are the column counts the kernel tests take: every length
// up to 300 (all tails, several vector counts) and some long rows.
func gemmLengths() []int {
	var ks []int
	for k := range 301 {
		ks = append(ks, k)
	}
	return append(ks, 2048, 2063, 5632)
}

// nanBuf returns n floats set to NaN, to surround the values a kernel may
// read: a kernel that reads outside them returns NaN.
func nanBuf(n int) []float32 {
	b := make([]float32, n)
	for i := range b {
		b[i] = float32(math.NaN())
	}
	return b
}

// gemmOperands returns gemmR weight rows and gemmT tokens of k random
// values in buffers of stride ld starting off values in, with NaN in every
// value the kernel must not read.
func gemmOperands(r *rand.Rand, k, ld, off int) (w, x []float32) {
	wb, xb := nanBuf(off+(gemmR-1)*ld+k+16), nanBuf(off+(gemmT-1)*ld+k+16)
	for i := range gemmR {
		copy(wb[off+i*ld:], randF32(r, k, 4))
	}
	for i := range gemmT {
		copy(xb[off+i*ld:], randF32(r, k, 4))
	}
	return wb[off : off+(gemmR-1)*ld+k], xb[off : off+(gemmT-1)*ld+k]
}

// gemmRef returns the float64 sums of the kernel's 24 dots, rounded to
// float32 (non-finite sums stay so), and the sums of absolute products.
func gemmRef(w []float32, ldw int, x []float32, ldx, k int) (want [gemmR * gemmT]float32, abs [gemmR * gemmT]float64) {
	for r := range gemmR {
		for t := range gemmT {
			var s, a float64
			for i := range k {
				p := float64(w[r*ldw+i]) * float64(x[t*ldx+i])
				s += p
				a += math.Abs(p)
			}
			want[r*gemmT+t], abs[r*gemmT+t] = float32(s), a
		}
	}
	return want, abs
}

// checkGEMM runs tab.gemm and compares it with gemmRef.
func checkGEMM(t *testing.T, tab *table, name string, w []float32, ldw int, x []float32, ldx, k int) {
	t.Helper()
	var got [gemmR * gemmT]float32
	for i := range got {
		got[i] = -1
	}
	tab.gemm(w, ldw, x, ldx, k, &got, nil)
	want, abs := gemmRef(w, ldw, x, ldx, k)
	for i := range got {
		if !near(got[i], want[i], dotTol(k, abs[i])) {
			t.Fatalf("%s k=%d ldw=%d ldx=%d: out[%d] (row %d, token %d) = %v, want %v",
				name, k, ldw, ldx, i, i/gemmT, i%gemmT, got[i], want[i])
		}
	}
}

// TestGEMMKernel checks the micro-kernel of every path against float64
// sums at every length up to 300 and some long ones, with strides that
// leave gaps and unaligned starts; the gaps and the values around the
// operands are NaN, so a read outside them shows.
func TestGEMMKernel(t *testing.T) {
	gemmPaths(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(40, 41))
		for _, k := range gemmLengths() {
			for _, c := range []struct{ pad, off int }{{0, 0}, {1, 3}, {gemmLd(k) - k, 16}, {29, 1}} {
				ld := k + c.pad
				w, x := gemmOperands(r, k, ld, c.off)
				checkGEMM(t, tab, fmt.Sprintf("pad=%d off=%d", c.pad, c.off), w, ld, x, ld, k)
			}
		}
	})
}

// TestGEMMKernelSpecial checks non-finite and extreme values: NaN and
// infinities in the vector body and the tail, Inf times zero, and
// products of the largest half-precision values.
func TestGEMMKernelSpecial(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	cases := []struct {
		name   string
		k      int
		set    func(w, x []float32, ld int)
		finite bool
	}{
		{"nan-w-body", 40, func(w, x []float32, ld int) { w[2*ld+5] = nan }, false},
		{"nan-x-tail", 37, func(w, x []float32, ld int) { x[3*ld+36] = nan }, false},
		{"inf-w-tail", 21, func(w, x []float32, ld int) { w[5*ld+20] = -inf }, false},
		{"inf-x-body", 300, func(w, x []float32, ld int) { x[1*ld+100] = inf }, false},
		{"inf-times-zero", 18, func(w, x []float32, ld int) { w[0] = inf; x[0] = 0 }, false},
		{"inf-minus-inf", 50, func(w, x []float32, ld int) { w[4*ld+1], w[4*ld+49] = inf, -inf }, false},
		{"max-f16", 2048, func(w, x []float32, ld int) {
			for i := range w {
				if w[i] == w[i] {
					w[i] = float32(65504 * (1 - 2*float32(i%2)))
				}
			}
			for i := range x {
				if x[i] == x[i] {
					x[i] = float32(65504 * (1 - 2*float32(i/7%2)))
				}
			}
		}, true},
	}
	gemmPaths(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(42, 43))
		for _, c := range cases {
			ld := c.k + 3
			w, x := gemmOperands(r, c.k, ld, 5)
			c.set(w, x, ld)
			checkGEMM(t, tab, c.name, w, ld, x, ld, c.k)
		}
	})
}

// TestWiden checks the weight conversions of every path bit for bit
// against quant's (any NaN for a NaN) on every half and bfloat16 value,
// random float32 bits, all short lengths and unaligned slices, and that
// nothing past len(dst) is written.
func TestWiden(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		if tab.widenF16 == nil {
			t.Skip("no blocked product on this path")
		}
		all := make([]byte, 2*65536+1)
		for i := range 65536 {
			all[1+2*i], all[2+2*i] = byte(i), byte(i>>8)
		}
		r := rand.New(rand.NewPCG(44, 45))
		f32 := make([]byte, 4*1000+3)
		for i := range f32 {
			f32[i] = byte(r.Uint32())
		}
		convs := []struct {
			name  string
			f     func(dst []float32, w []byte)
			size  int
			src   []byte
			value func(b []byte) float32
		}{
			{"f16", tab.widenF16, 2, all[1:], func(b []byte) float32 { return quant.F16ToF32(uint16(b[0]) | uint16(b[1])<<8) }},
			{"bf16", tab.widenBF16, 2, all[1:], func(b []byte) float32 { return quant.BF16ToF32(uint16(b[0]) | uint16(b[1])<<8) }},
			{"f32", tab.widenF32, 4, f32[3:], func(b []byte) float32 {
				return math.Float32frombits(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
			}},
		}
		for _, c := range convs {
			total := len(c.src) / c.size
			lengths := []int{total}
			for n := range 70 {
				lengths = append(lengths, n)
			}
			for _, n := range lengths {
				start := min(total-n, 7*n)
				src := c.src[c.size*start : c.size*(start+n)]
				buf := make([]float32, n+2)
				buf[0], buf[n+1] = 42, 42
				c.f(buf[1:n+1], src)
				if buf[0] != 42 || buf[n+1] != 42 {
					t.Fatalf("%s n=%d: wrote outside dst", c.name, n)
				}
				for i, got := range buf[1 : n+1] {
					if want := c.value(src[c.size*i:]); !sameFloat(got, want) {
						t.Fatalf("%s n=%d: dst[%d] = %v, want %v", c.name, n, i, got, want)
					}
				}
			}
		}
	})
}

// specialMatrix returns a rows×cols matrix of type typ whose values are
// random of magnitude below scale, with NaN and Inf planted when special.
func specialMatrix(t *testing.T, r *rand.Rand, typ tensor.Type, rows, cols int, scale float32, special bool) Matrix {
	t.Helper()
	vals := randF32(r, rows*cols, scale)
	if special && rows*cols > 3 {
		vals[rows*cols/2] = float32(math.NaN())
		vals[rows*cols-1] = float32(math.Inf(-1))
	}
	rb, err := typ.RowBytes(int64(cols))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, int(rb)*rows)
	if err := quant.Quantize(typ, vals, data); err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// floatRef returns MatMul's exact result for float weights in float64
// (rounded to float32), from the products the one-row dots form, and the
// sums of absolute products.
func floatRef(w Matrix, x []float32, n int) (want []float32, abs []float64) {
	c, rb := w.Cols, w.rowBytes()
	wf, xf := make([]float32, c), make([]float32, n*c)
	for i, v := range x {
		switch w.Type {
		case tensor.F16:
			v = quant.F16ToF32(quant.F32ToF16(v))
		case tensor.BF16:
			v = quant.BF16ToF32(quant.F32ToBF16(v))
		}
		xf[i] = v
	}
	want, abs = make([]float32, n*w.Rows), make([]float64, n*w.Rows)
	for r := range w.Rows {
		switch w.Type {
		case tensor.F16:
			widenF16Generic(wf, w.Data[r*rb:])
		case tensor.BF16:
			widenBF16Generic(wf, w.Data[r*rb:])
		default:
			widenF32Generic(wf, w.Data[r*rb:])
		}
		for t := range n {
			var s, a float64
			for i, v := range wf {
				p := float64(v) * float64(xf[t*c+i])
				s += p
				a += math.Abs(p)
			}
			want[t*w.Rows+r], abs[t*w.Rows+r] = float32(s), a
		}
	}
	return want, abs
}

// TestMatMulBlocked checks MatMul of float weights on every path, with the
// blocked product and with the one-row dots (gemmMin above n), against
// float64 sums and each other: rows and tokens not multiples of the
// register tile, rows not multiples of the tile or the thread count,
// column counts with tails and above gemmChunk, and NaN, Inf and the
// largest half-precision values.
func TestMatMulBlocked(t *testing.T) {
	shapes := [][2]int{{1, 1}, {5, 15}, {6, 16}, {7, 17}, {13, 100}, {31, 300}, {50, 33}, {9, 2048}, {8, 4200}}
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(46, 47))
		for _, typ := range floatTypes {
			for _, s := range shapes {
				for _, special := range []bool{false, true} {
					scale := float32(2)
					if special && typ == tensor.F16 {
						scale = 65504
					}
					w := specialMatrix(t, r, typ, s[0], s[1], scale, special)
					for _, n := range []int{3, 4, 5, 9} {
						x := randF32(r, n*s[1], scale)
						if special {
							x[len(x)/3] = float32(math.Inf(1))
						}
						checkBlocked(t, tab, w, x, n, fmt.Sprintf("%s %dx%d special=%v n=%d", typ, s[0], s[1], special, n))
					}
				}
			}
		}
	})
}

// checkBlocked runs MatMul on threads 1-3 with the blocked product and
// with the dots and compares both with floatRef.
func checkBlocked(t *testing.T, tab *table, w Matrix, x []float32, n int, name string) {
	t.Helper()
	want, abs := floatRef(w, x, n)
	dots := make([]float32, n*w.Rows)
	for threads := 1; threads <= 3; threads++ {
		for _, gm := range []int{n + 1, gemmMinTokens} {
			p := newPool(threads, tab)
			p.serial, p.job.gemmMin = 0, gm
			out := make([]float32, n*w.Rows)
			if err := p.MatMul(out, w, x, n); err != nil {
				t.Fatal(err)
			}
			p.Close()
			if gm > n {
				copy(dots, out)
			}
			for i := range out {
				tol := dotTol(w.Cols, abs[i])
				if !near(out[i], want[i], tol) || !near(out[i], dots[i], 2*tol) {
					t.Fatalf("%s threads=%d gemmMin=%d: out[%d] = %v, want %v (dots %v)",
						name, threads, gm, i, out[i], want[i], dots[i])
				}
			}
		}
	}
}

// blockedNear reports whether output i of an n-token MatMul of w by x, got,
// is within twice dotTol of want, on a path whose blocked product sums
// float weights in another order than its dots; elsewhere it is false.
func blockedNear(tab *table, w Matrix, x []float32, n, i int, got, want float32) bool {
	switch w.Type {
	case tensor.F32, tensor.F16, tensor.BF16:
		if tab.gemm == nil || tab.path == Generic || n < gemmMinTokens {
			return false
		}
		r, t, c := i%w.Rows, i/w.Rows, w.Cols
		row := Matrix{Type: w.Type, Rows: 1, Cols: c, Data: w.Data[r*w.rowBytes() : (r+1)*w.rowBytes()]}
		_, abs := floatRef(row, x[t*c:(t+1)*c], 1)
		return near(got, want, 2*dotTol(c, abs[0]))
	}
	return false
}

// TestMatMulBlockedNoAllocs checks that the blocked product allocates
// nothing once its scratch has grown, serial and split.
func TestMatMulBlockedNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(48, 49))
	for _, threads := range []int{1, 2} {
		p := NewPool(threads)
		p.serial = 0
		for _, typ := range floatTypes {
			w := testMatrix(t, r, typ, 70, 300)
			for _, n := range []int{gemmMinTokens, 33} {
				x := randF32(r, n*300, 1)
				out := make([]float32, n*70)
				allocs := testing.AllocsPerRun(20, func() {
					if err := p.MatMul(out, w, x, n); err != nil {
						t.Fatal(err)
					}
				})
				if allocs != 0 {
					t.Errorf("%s threads=%d n=%d: %v allocations per call", typ, threads, n, allocs)
				}
			}
		}
		p.Close()
	}
}

// BenchmarkMatMulTokens compares the blocked product with the one-row
// dots for F16 weights at small token counts, to place gemmMinTokens.
func BenchmarkMatMulTokens(b *testing.B) {
	w := benchMatrix(b, tensor.F16, 2048, 2048)
	for _, n := range []int{2, 3, 4, 6, 8} {
		for _, blocked := range []bool{false, true} {
			b.Run(fmt.Sprintf("n%d/blocked=%v", n, blocked), func(b *testing.B) {
				x := randF32(rand.New(rand.NewPCG(7, 7)), n*2048, 1)
				out := make([]float32, n*2048)
				p := NewPool(1)
				defer p.Close()
				p.job.gemmMin = 1 << 30
				if blocked {
					p.job.gemmMin = 1
				}
				b.ReportAllocs()
				c0 := cputime.Process()
				for range b.N {
					if err := p.MatMul(out, w, x, n); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, c0, float64(len(w.Data)), 2*2048*2048*float64(n), true)
			})
		}
	}
}

// BenchmarkGEMMKernel measures the micro-kernel of every path with its
// operands in cache, in GFLOP per CPU-second.
func BenchmarkGEMMKernel(b *testing.B) {
	for _, p := range Available() {
		tab := tableFor(p)
		if tab.gemm == nil {
			continue
		}
		for _, k := range []int{512, 2048} {
			b.Run(fmt.Sprintf("%s/k%d", p, k), func(b *testing.B) {
				w, x := gemmOperands(rand.New(rand.NewPCG(1, 2)), k, k, 0)
				var out [gemmR * gemmT]float32
				c0 := cputime.Process()
				for range b.N {
					tab.gemm(w, k, x, k, k, &out, nil)
				}
				reportCPU(b, c0, 0, 2*gemmR*gemmT*float64(k), true)
			})
		}
	}
}
