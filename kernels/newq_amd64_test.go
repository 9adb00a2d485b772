//go:build amd64 && !purego

package kernels

import (
	"math/rand/v2"
	"testing"
)

// TestNewTypeDotsWide checks the Q8_0-partner dots at the widths where
// the avx512 row-run kernels' callers change stack arrays (the tiny one
// full, the small one full, the large one, and the widest rows the
// kernels take, beyond which the generic twin runs row by row): every row
// of a run equal to the one-token dot, and within the summation-order
// tolerance of the generic twin.
func TestNewTypeDotsWide(t *testing.T) {
	if testing.Short() {
		t.Skip("rows of 65536 values")
	}
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 65))
		for _, c := range newqTypes()[:3] { // Q4_0, Q5_0, IQ4_NL
			for _, nb := range []int{q80RowsTinyBlocks, q80RowsTinyBlocks + 1, q80RowsSmallBlocks, q80RowsSmallBlocks + 1, q80RowsMaxBlocks, q80RowsMaxBlocks + 1} {
				in := newqInputs(r, c, nb)[1]
				got, runs, want := newqDot(tab, c, in, 3)
				if abs := newqAbs(c, in); !near(got, want, float64(nb+16)*quantDotEps*abs+1e-37) {
					t.Errorf("%s nb=%d: %v, generic %v (abs terms %g)", c.typ, nb, got, want, abs)
				}
				for i, v := range runs {
					if !sameFloat(v, got) {
						t.Errorf("%s nb=%d: row-run dot row %d = %v, one-token %v", c.typ, nb, i, v, got)
					}
				}
			}
		}
	})
}
