//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMXFP4DotsWide checks the avx512 row-run dot where its caller
// changes stack arrays and, past the widest rows it takes, falls back to
// the twin row by row.
func TestMXFP4DotsWide(t *testing.T) {
	if testing.Short() {
		t.Skip("rows of 65536 values")
	}
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(39, 65))
		for _, nb := range []int{q80RowsSmallBlocks, q80RowsSmallBlocks + 1, q80RowsMaxBlocks, q80RowsMaxBlocks + 1} {
			checkMXFP4(t, tab, fmt.Sprintf("nb=%d", nb), mxfp4Inputs(r, nb)[1], nb, r)
		}
	})
}
