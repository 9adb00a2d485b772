package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/tensor"
)

// BenchmarkMatVecStreamPair streams two weight types from DRAM as
// BenchmarkMatVecStream does (2048×5632, huge-page memory, 1 and 2
// threads), but alternates them product by product in one process, so
// that both see the same machine: on a shared host the memory bandwidth
// a VM gets moves by a quarter from one minute to the next, more than the
// differences between the types' kernels, while the ratio of two types
// taken this way held within a few percent. It reports each type's GB/s
// (lower than BenchmarkMatVecStream's: every switch between the two
// streams costs) and their ratio, the first type named over the second.
// The pairs are issue 19's goals: Q4_0 and Q5_0 against Q8_0, Q3_K, Q5_K
// and IQ4_XS against Q4_K; and MXFP4 (gpt-oss's experts) against Q8_0.
func BenchmarkMatVecStreamPair(b *testing.B) {
	pairs := [][2]tensor.Type{
		{tensor.Q8_0, tensor.MXFP4}, {tensor.Q8_0, tensor.Q4_0}, {tensor.Q8_0, tensor.Q5_0},
		{tensor.Q4_K, tensor.Q3_K}, {tensor.Q4_K, tensor.Q5_K}, {tensor.Q4_K, tensor.IQ4_XS},
	}
	for _, p := range pairs {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("%s-%s/2048x5632/t%d", p[1], p[0], threads)
			b.Run(name, func(b *testing.B) { benchStreamPair(b, p, threads) })
		}
	}
}

func benchStreamPair(b *testing.B, p [2]tensor.Type, threads int) {
	const cols, rows, total = 2048, 5632, 1 << 29
	type side struct {
		ms    []Matrix
		bytes float64
		d     time.Duration
	}
	var s [2]side
	for k, t := range p {
		w := benchMatrix(b, t, cols, rows)
		s[k].ms, s[k].bytes = streamCopies(b, w, total), float64(len(w.Data))
	}
	x := randF32(rand.New(rand.NewPCG(7, 7)), cols, 1)
	out := make([]float32, rows)
	pl := NewPool(threads)
	defer pl.Close()
	for k := range s {
		for _, m := range s[k].ms {
			if err := pl.MatMul(out, m, x, 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range s {
			m := s[k].ms[i%len(s[k].ms)]
			t0 := time.Now()
			if err := pl.MatMul(out, m, x, 1); err != nil {
				b.Fatal(err)
			}
			s[k].d += time.Since(t0)
		}
	}
	ga := s[0].bytes * float64(b.N) / s[0].d.Seconds() / 1e9
	gb := s[1].bytes * float64(b.N) / s[1].d.Seconds() / 1e9
	b.ReportMetric(ga, "GB/s-"+p[0].String())
	b.ReportMetric(gb, "GB/s-"+p[1].String())
	b.ReportMetric(gb/ga, "ratio")
}
