package model

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/kernels"
)

// BenchmarkDecode measures prompt processing (a batch of 64 tokens) and
// generation (one token at a time) on the shared small-110m model.
func BenchmarkDecode(b *testing.B) {
	m := loadModel(b, "small-110m-q4_k_m.gguf")
	threads := runtime.NumCPU()
	pool := kernels.NewPool(threads)
	defer pool.Close()
	for _, n := range []int{64, 1} {
		b.Run(fmt.Sprintf("batch%d_threads%d", n, threads), func(b *testing.B) {
			c, err := NewCache(m.Config, KVF16, 1, 512)
			if err != nil {
				b.Fatal(err)
			}
			r := NewRunner(m, c, pool, 64)
			toks := make([]int32, n)
			for i := range toks {
				toks[i] = int32(100 + i)
			}
			bt := Batch{Tokens: toks, Pos: make([]int32, n), Seq: make([]int32, n)}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if c.Len(0)+n > c.NCtx() {
					b.StopTimer()
					_ = c.Clear(0)
					b.StartTimer()
				}
				for j := range bt.Pos {
					bt.Pos[j] = int32(c.Len(0) + j)
				}
				if _, err := r.Decode(bt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
