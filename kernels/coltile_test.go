package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// TestColTile checks ColTile on every path bit for bit against its Go
// twin, and the twin against float64 sums, on the shapes attention uses
// (keys × query rows over a head dimension, dimensions × rows over a
// tile of keys, the latter also with a read transposed) and odd ones:
// rows not a multiple of ColTileRows, column counts not a multiple of 64,
// empty sums, strides wider than the rows.
func TestColTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := []struct{ m, n, k int }{
		{1, 16, 1}, {6, 64, 64}, {256, 64, 64}, {64, 64, 256}, {7, 16, 33},
		{13, 80, 17}, {5, 48, 0}, {66, 128, 100}, {4, 32, 255},
		{43, 8, 64}, {11, 24, 256}, {3, 72, 5}, {66, 8, 256},
	}
	for _, sh := range shapes {
		for _, transposed := range []bool{false, true} {
			mr := RoundTile(sh.m, ColTileRows)
			lda, ak := sh.k+3, 1
			if transposed {
				lda, ak = 1, mr+2 // a holds k rows of mr+2 values
			}
			ldb, ldc := sh.n+16, sh.n+32
			a := make([]float32, (mr-1)*lda+max(sh.k-1, 0)*ak+1)
			b := make([]float32, max(0, (sh.k-1)*ldb+sh.n))
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			want := make([]float32, (mr-1)*ldc+sh.n)
			for i := range want {
				want[i] = 7 // overwritten in the rows and columns, kept between
			}
			colTileGeneric(want, ldc, a, lda, ak, mr, b, ldb, sh.n, sh.k)
			for i := range mr {
				for j := range sh.n {
					var s float64
					for t := range sh.k {
						s += float64(a[i*lda+t*ak]) * float64(b[t*ldb+j])
					}
					if d := math.Abs(float64(want[i*ldc+j]) - s); d > 1e-5*float64(sh.k+1) {
						t.Fatalf("%v transposed %v: generic [%d][%d] = %g, want %g", sh, transposed, i, j, want[i*ldc+j], s)
					}
				}
				for j := sh.n; j < ldc && i < mr-1; j++ {
					if want[i*ldc+j] != 7 {
						t.Fatalf("%v: generic wrote [%d][%d] past the columns", sh, i, j)
					}
				}
			}
			for _, p := range Available() {
				tab := tableFor(p)
				got := make([]float32, len(want))
				for i := range got {
					got[i] = 7
				}
				colTile(tab, got, ldc, a, lda, ak, sh.m, b, ldb, sh.n, sh.k)
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("%s %v transposed %v: [%d][%d] = %g, generic %g", p, sh, transposed, i/ldc, i%ldc, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestFoldCols checks FoldCols on every path bit for bit against its Go
// twin and against the products rounded one by one, for column counts of
// whole vectors and a half one.
func TestFoldCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range []struct{ rows, n, ld int }{{1, 8, 8}, {64, 64, 64}, {66, 24, 40}, {3, 16, 16}, {5, 136, 140}} {
		o := make([]float32, (sh.rows-1)*sh.ld+sh.n)
		u := make([]float32, len(o))
		a, b := make([]float32, sh.n), make([]float32, sh.n)
		for _, x := range [][]float32{o, u, a, b} {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
		}
		want := append([]float32(nil), o...)
		foldColsGeneric(want, sh.ld, u, sh.ld, sh.rows, a, b)
		for i := range sh.rows {
			for j := range sh.n {
				k := i*sh.ld + j
				if w := float32(o[k]*a[j]) + float32(u[k]*b[j]); w != want[k] {
					t.Fatalf("%v: generic [%d][%d] = %g, want %g", sh, i, j, want[k], w)
				}
			}
		}
		for _, p := range Available() {
			tab := tableFor(p)
			got := append([]float32(nil), o...)
			if tab.foldCols != nil {
				tab.foldCols(got, sh.ld, u, sh.ld, sh.rows, a, b)
			} else {
				FoldCols(got, sh.ld, u, sh.ld, sh.rows, a, b)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s %v: [%d] = %g, generic %g", p, sh, i, got[i], want[i])
				}
			}
		}
	}
}

// TestWidenQ8_0 checks WidenQ8_0 on every path bit for bit against
// quant.DequantizeQ8_0, on blocks of random codes and scales (extreme
// codes, a zero scale, a subnormal one).
func TestWidenQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, nb := range []int{1, 2, 8, 17} {
		src := make([]byte, nb*quant.BlockQ8_0Bytes+5)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		for b := range nb {
			o := b * quant.BlockQ8_0Bytes
			sc := quant.F32ToF16(float32(rng.NormFloat64() * 0.01))
			switch b {
			case 1:
				sc = 0
			case 2:
				sc = 3 // subnormal
			}
			src[o], src[o+1] = byte(sc), byte(sc>>8)
			src[o+2], src[o+3] = 0x80, 0x7f // -128 and 127
		}
		want := make([]float32, nb*quant.QK8_0)
		quant.DequantizeQ8_0(src, want)
		for _, p := range Available() {
			tab := tableFor(p)
			got := make([]float32, len(want))
			if tab.widenQ8_0 != nil {
				tab.widenQ8_0(got, src[:nb*quant.BlockQ8_0Bytes])
			} else {
				WidenQ8_0(got, src)
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: %d blocks: [%d] = %g, want %g", p, nb, i, got[i], want[i])
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("WidenQ8_0 of 31 values: no panic")
		}
	}()
	WidenQ8_0(make([]float32, 31), make([]byte, 34))
}

// TestColTileShapes checks that ColTile refuses shapes it cannot compute.
func TestColTileShapes(t *testing.T) {
	a := make([]float32, 6*8)
	b := make([]float32, 8*16)
	c := make([]float32, 6*16)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"columns not a multiple of 8", func() { ColTile(c, 16, a, 8, 1, 6, b, 16, 15, 8) }},
		{"a short", func() { ColTile(c, 16, a[:40], 8, 1, 6, b, 16, 16, 8) }},
		{"a's rows not padded", func() { ColTile(c, 16, a[:5*8], 8, 1, 5, b, 16, 16, 8) }},
		{"a short, transposed", func() { ColTile(c, 16, a, 1, 7, 6, b, 16, 16, 8) }},
		{"b short", func() { ColTile(c, 16, a, 8, 1, 6, b[:100], 16, 16, 8) }},
		{"c short", func() { ColTile(c[:90], 16, a, 8, 1, 6, b, 16, 16, 8) }},
		{"negative stride", func() { ColTile(c, 16, a, -8, 1, 6, b, 16, 16, 8) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			tc.f()
		}()
	}
}

// TestSoftmaxCols checks SoftmaxCols on every path bit for bit against
// its Go twin, and the twin against float64 exponentials, with masked
// (-Inf) scores, a column masked whole (NaN), large and tiny scores.
func TestSoftmaxCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	inf := float32(math.Inf(-1))
	for _, sh := range []struct{ rows, n, ld int }{{1, 16, 16}, {256, 64, 64}, {37, 48, 80}, {0, 16, 16}, {9, 128, 128}, {256, 8, 8}, {20, 24, 40}} {
		x := make([]float32, max(0, (sh.rows-1)*sh.ld+sh.n))
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 8)
		}
		for i := range sh.rows {
			row := x[i*sh.ld:]
			row[3] = inf // column 3 masked whole
			if i%3 == 0 {
				row[5] = inf
			}
			if i == sh.rows/2 {
				row[7] = 200 // the others underflow
				row[6] = -300
			}
		}
		wantX := append([]float32(nil), x...)
		wantM, wantS := make([]float32, sh.n), make([]float32, sh.n)
		softmaxColsGeneric(wantX, sh.ld, sh.rows, sh.n, wantM, wantS)
		for j := range sh.n {
			var mx float64 = math.Inf(-1)
			for i := range sh.rows {
				mx = math.Max(mx, float64(x[i*sh.ld+j]))
			}
			if j != 3 && sh.rows > 0 && float64(wantM[j]) != mx {
				t.Fatalf("%v: generic max[%d] = %g, want %g", sh, j, wantM[j], mx)
			}
			var s float64
			for i := range sh.rows {
				e := math.Exp(float64(x[i*sh.ld+j]) - mx)
				s += e
				if j != 3 && math.Abs(float64(wantX[i*sh.ld+j])-e) > 1e-5*e+1e-37 {
					t.Fatalf("%v: generic exp [%d][%d] = %g, want %g", sh, i, j, wantX[i*sh.ld+j], e)
				}
			}
			if j != 3 && sh.rows > 0 && math.Abs(float64(wantS[j])-s) > 4e-5*s {
				t.Fatalf("%v: generic sum[%d] = %g, want %g", sh, j, wantS[j], s)
			}
		}
		for _, p := range Available() {
			tab := tableFor(p)
			gotX := append([]float32(nil), x...)
			gotM, gotS := make([]float32, sh.n), make([]float32, sh.n)
			softmaxCols(tab, gotX, sh.ld, sh.rows, sh.n, gotM, gotS)
			for name, pair := range map[string][2][]float32{"x": {gotX, wantX}, "max": {gotM, wantM}, "sum": {gotS, wantS}} {
				for i := range pair[0] {
					if !sameFloat(pair[0][i], pair[1][i]) {
						t.Fatalf("%s %v: %s[%d] = %g, generic %g", p, sh, name, i, pair[0][i], pair[1][i])
					}
				}
			}
		}
	}
}

// BenchmarkColTile times the two products of one attention tile of
// tinyllama's shape (64 query rows, 256 keys, head dimension 64) in
// GFLOP per second.
func BenchmarkColTile(b *testing.B) {
	const rows, keys, hd = 64, 256, 64
	for _, sh := range []struct {
		name       string
		m, lda, k  int
		bRows, out int
	}{
		{"qk", keys, hd, hd, hd, keys},
		{"pv", hd, keys, keys, keys, hd},
	} {
		for _, n := range []int{rows, 16, 8} {
			b.Run(fmt.Sprintf("%s/n%d", sh.name, n), func(b *testing.B) {
				mr := RoundTile(sh.m, ColTileRows)
				a := make([]float32, mr*sh.lda)
				x := make([]float32, sh.bRows*n)
				c := make([]float32, mr*n)
				for i := range a {
					a[i] = 0.5
				}
				for i := range x {
					x[i] = 0.25
				}
				for b.Loop() {
					ColTile(c, n, a, sh.lda, 1, sh.m, x, n, n, sh.k)
				}
				b.ReportMetric(2*float64(sh.m*n*sh.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
