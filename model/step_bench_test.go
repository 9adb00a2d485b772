package model

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/kernels"
)

// BenchmarkDecodeStep measures one decode step of a serving batch: n
// sequences (1, 2 or 4) each decode one token, at different depths
// (256, 384, 512 and 640 positions), as a scheduler's step does when n
// clients stream at once. It reports the CPU time per step beside the
// wall time (CPU time moves less on a shared machine), so that the cost
// of a four-token step can be compared with a one-token step's. The
// model is LISA_STEP_MODEL (a GGUF path, e.g. a tinyllama-shaped file)
// or the shared small-110m; the threads are LISA_STEP_THREADS or 2.
func BenchmarkDecodeStep(b *testing.B) {
	var m *Model
	if path := os.Getenv("LISA_STEP_MODEL"); path != "" {
		f, err := gguf.Open(path, gguf.DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		if m, err = Load(f); err != nil {
			b.Fatal(err)
		}
	} else {
		m = loadModel(b, "small-110m-q4_k_m.gguf")
	}
	threads := 2
	if s := os.Getenv("LISA_STEP_THREADS"); s != "" {
		if _, err := fmt.Sscan(s, &threads); err != nil {
			b.Fatal(err)
		}
	}
	pool := kernels.NewPool(threads)
	defer pool.Close()
	depth := []int{256, 384, 512, 640}
	c, err := NewCache(m.Config, KVF16, len(depth), 1024)
	if err != nil {
		b.Fatal(err)
	}
	r := NewRunner(m, c, pool, 64)
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("seqs%d_threads%d", n, threads), func(b *testing.B) {
			bt := Batch{Tokens: make([]int32, n), Pos: make([]int32, n), Seq: make([]int32, n), Logits: make([]bool, n)}
			for s := range n {
				bt.Tokens[s], bt.Pos[s], bt.Seq[s], bt.Logits[s] = int32(100+s), int32(depth[s]), int32(s), true
			}
			b.ResetTimer()
			cpu0 := cputime.Process()
			for range b.N {
				// The cache's contents do not change the work: each step
				// overwrites the same positions.
				for s := range n {
					c.lens[s] = depth[s]
				}
				if _, err := r.Decode(bt); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cputime.Process() - cpu0
			b.ReportMetric(float64(cpu)/float64(b.N)/float64(time.Millisecond), "cpu-ms/step")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
