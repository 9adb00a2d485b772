package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotTile checks DotTile on every path against float64 dot products,
// and that a result's bits do not depend on which rows and columns share
// its register tile (the property attention's determinism rests on).
func TestDotTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range Available() {
		tab := tableFor(p)
		for _, sh := range []struct{ rows, cols, k int }{{1, 1, 1}, {6, 4, 64}, {7, 5, 80}, {256, 8, 64}, {64, 6, 256}, {13, 3, 17}} {
			lda, ldb := sh.k+3, sh.k+1
			a := make([]float32, RoundTile(sh.rows, TileRows)*lda)
			b := make([]float32, RoundTile(sh.cols, TileCols)*ldb)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, sh.cols*sh.rows)
			dotTile(tab, out, sh.rows, a, lda, sh.rows, b, ldb, sh.cols, sh.k)
			for r := range sh.rows {
				for c := range sh.cols {
					var want float64
					for i := range sh.k {
						want += float64(a[r*lda+i]) * float64(b[c*ldb+i])
					}
					if d := math.Abs(float64(out[c*sh.rows+r]) - want); d > 1e-4*float64(sh.k) {
						t.Fatalf("%s %v: out[%d][%d] = %g, want %g", p, sh, c, r, out[c*sh.rows+r], want)
					}
				}
			}
			// The last row and column alone, at the start of a tile.
			if sh.rows > 1 && sh.cols > 1 {
				r, c := sh.rows-1, sh.cols-1
				a1 := make([]float32, TileRows*lda)
				b1 := make([]float32, TileCols*ldb)
				copy(a1, a[r*lda:(r+1)*lda])
				copy(b1, b[c*ldb:(c+1)*ldb])
				var one [1]float32
				dotTile(tab, one[:], 1, a1, lda, 1, b1, ldb, 1, sh.k)
				if math.Float32bits(one[0]) != math.Float32bits(out[c*sh.rows+r]) {
					t.Errorf("%s %v: alone %g, in the tile %g", p, sh, one[0], out[c*sh.rows+r])
				}
			}
		}
	}
}

// TestTileGEMMMatchesTable checks that tileGEMM, DotTile's direct call
// of the blocked product kernel, runs the kernel each path's table holds:
// the same bits on a tile whose sums round differently in each order.
func TestTileGEMMMatchesTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, ld = 77, 80
	w := make([]float32, TileRows*ld)
	x := make([]float32, TileCols*ld)
	for i := range w {
		w[i] = float32(rng.NormFloat64()) * 1e3
	}
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, p := range Available() {
		tab := tableFor(p)
		gemm := tab.gemm
		if gemm == nil {
			gemm = gemmGeneric
		}
		var want, got [gemmR * gemmT]float32
		gemm(w, ld, x, ld, k, &want, nil)
		tileGEMM(tab, w, ld, x, ld, k, &got)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: tileGEMM out[%d] = %g, the table's kernel %g", p, i, got[i], want[i])
			}
		}
	}
}

// TestDotTileNoAllocs checks that DotTile allocates nothing (attention
// calls it for every tile of keys and values).
func TestDotTileNoAllocs(t *testing.T) {
	const rows, cols, k = 13, 5, 64
	a := make([]float32, RoundTile(rows, TileRows)*k)
	b := make([]float32, RoundTile(cols, TileCols)*k)
	out := make([]float32, rows*cols)
	for _, p := range Available() {
		tab := tableFor(p)
		if allocs := testing.AllocsPerRun(50, func() { dotTile(tab, out, rows, a, k, rows, b, k, cols, k) }); allocs != 0 {
			t.Errorf("%s: %v allocations per DotTile", p, allocs)
		}
	}
}
