package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotF16Rows checks that every path's row dots equal its one-row dot
// bit for bit, at every length, row count and stride, without touching
// the halves between rows or past the last one.
func TestDotF16Rows(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(21, 22))
		const nan = 0x7e00 // a half-precision NaN
		for n := 0; n <= 130; n++ {
			for _, rows := range []int{0, 1, 2, 7} {
				for _, gap := range []int{0, 3, 64} {
					stride := n + gap
					q := randF16(r, n, 2)
					m := make([]uint16, rows*stride+5)
					for i := range m {
						m[i] = nan // poison: any stray read shows
					}
					for j := range rows {
						copy(m[j*stride:], randF16(r, n, 2))
					}
					if n == 7 && rows > 0 {
						m[0], q[0] = 0x7c00, 0x3c00 // +Inf times 1
					}
					out := make([]float32, rows+1)
					out[rows] = 42
					tab.dotF16Rows(out[:rows], m[:max(0, (rows-1)*stride+n)], stride, q)
					for j := range rows {
						want := tab.dotF16(m[j*stride:j*stride+n], q)
						if !sameFloat(out[j], want) {
							t.Fatalf("n=%d rows=%d stride=%d row %d: got %v, one-row dot %v", n, rows, stride, j, out[j], want)
						}
					}
					if out[rows] != 42 {
						t.Fatalf("n=%d rows=%d: wrote past out", n, rows)
					}
				}
			}
		}
	})
}

// TestDotF16RowsPanics checks the exported op's bounds checks.
func TestDotF16RowsPanics(t *testing.T) {
	for _, c := range []struct {
		name   string
		out, m int
		stride int
		q      int
	}{
		{"short m", 3, 10, 4, 4},
		{"negative stride", 2, 10, -1, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			DotF16Rows(make([]float32, c.out), make([]uint16, c.m), c.stride, make([]uint16, c.q))
		})
	}
	out := []float32{float32(math.NaN())}
	DotF16Rows(out, []uint16{0x3c00, 0x4000}, 0, []uint16{0x3c00, 0x3c00})
	if out[0] != 3 {
		t.Fatalf("got %v, want 3", out[0])
	}
}
