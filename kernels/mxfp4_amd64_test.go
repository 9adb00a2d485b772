//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
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

// BenchmarkMXFP4Rows measures the AVX-512 row-run kernel on gpt-oss's
// expert rows (2880 values) in pieces of 48 rows, as kernels.Products
// hands a decode step's expert products out, with the activation work in
// every call and prepared once: from cache, and streamed from about 1
// GiB of copies (DRAM), in GB of weights per CPU-second.
func BenchmarkMXFP4Rows(b *testing.B) {
	if !detect().avx512 {
		b.Skip("no AVX-512")
	}
	const cols, rows = 2880, 48
	nb := cols / 32
	m := benchMatrix(b, tensor.MXFP4, cols, rows)
	x := randF32(rand.New(rand.NewPCG(7, 7)), cols, 1)
	q := make([]quant.BlockQ8_0, nb)
	quant.QuantizeRowQ8_0Act(x, q)
	out := make([]float32, rows)
	scr := make([]byte, q80ScrBytes(nb))
	mxfp4PrepAVX512(&q[0], nb, &scr[0])
	copies := [][]byte{m.Data}
	for n := len(m.Data); n < 1<<30; n += len(m.Data) {
		copies = append(copies, append([]byte(nil), m.Data...))
	}
	kernels := []struct {
		name string
		run  func(w []byte)
	}{
		// The activation work in every call, as the one-token dot does,
		// and once per product, as the pool's prep does.
		{"one-row", func(w []byte) { q80MXFP4.rows(w, q, out) }},
		{"prepared", func(w []byte) { dotMXFP4RowsAVX512(&w[0], &q[0], nb, rows, &out[0], &scr[0]) }},
	}
	for _, from := range []string{"cache", "dram"} {
		for _, k := range kernels {
			b.Run(from+"/"+k.name, func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				c0 := cputime.Process()
				for i := range b.N {
					w := m.Data
					if from == "dram" {
						w = copies[1+i%(len(copies)-1)]
					}
					k.run(w)
				}
				reportCPU(b, c0, float64(len(m.Data)), 0, false)
			})
		}
	}
}
