package model

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
)

// BenchmarkAttention times one layer's attention of one decoding token,
// and of a 512-token prompt (q512 in the name), at a depth (the keys
// before it), per-head path against the tiled one (F16 and Q8_0 caches),
// on two shapes: tinyllama-1.1b (32 query heads, 4 KV heads, head
// dimension 64) and qwen2.5-1.5b (12, 2, 128). Besides ns/op it reports
// the CPU time of the process per step (cpu-us/op), the steadier figure
// on a shared machine, the multiply-adds of the scores and outputs per
// CPU-second (GFLOP/cpu-s, two flops each) and the KV bytes read per
// second of wall time. Each step takes the next of 8 layers, so that the
// keys and values come from memory, as in a model's forward pass, and not
// from the caches of the last step.
//
//	go test ./model -run '^$' -bench 'Attention/tinyllama/d4096/' -benchtime 200x
//	go test ./model -run '^$' -bench 'Attention/tinyllama/d4096/q512/tiled' -benchtime 5x
func BenchmarkAttention(b *testing.B) {
	shapes := []struct {
		name string
		cfg  Config
	}{
		{"tinyllama", Config{NHead: 32, NHeadKV: 4, HeadDim: 64, NLayer: benchLayers}},
		{"qwen2.5-1.5b", Config{NHead: 12, NHeadKV: 2, HeadDim: 128, NLayer: benchLayers}},
	}
	kinds := []struct {
		name    string
		k, v    KVType
		perHead bool
	}{
		{"perhead-f16", KVF16, KVF16, true},
		{"tiled-f16", KVF16, KVF16, false},
		{"tiled-q8_0", KVQ8_0, KVQ8_0, false},
	}
	for _, sh := range shapes {
		for _, depth := range []int{512, 4096, 16384} {
			for _, nq := range []int{1, 512} {
				for _, kd := range kinds {
					benchAttention(b, sh.name, sh.cfg, depth, nq, kd.name, kd.k, kd.v, kd.perHead)
				}
			}
		}
	}
}

// benchLayers is how many layers BenchmarkAttention's cache holds.
const benchLayers = 8

// benchAttention is one shape, depth, query count and cache kind of
// BenchmarkAttention, on 1 and 2 threads.
func benchAttention(b *testing.B, shape string, cfg Config, depth, nq int, kind string, tk, tv KVType, perHead bool) {
	var g *attnRig
	for _, threads := range []int{1, 2} {
		name := fmt.Sprintf("%s/d%d/%s/t%d", shape, depth, kind, threads)
		if nq > 1 {
			name = fmt.Sprintf("%s/d%d/q%d/%s/t%d", shape, depth, nq, kind, threads)
		}
		b.Run(name, func(b *testing.B) {
			if g == nil {
				g = newAttnRigRef(b, cfg, tk, tv, 1, depth+nq, threads, nq, 9, false)
			} else {
				g.r = g.runner(b, threads, nq)
			}
			g.r.perHead = perHead
			bt := tokens(0, depth, nq)
			ap := attnParams{scale: 1 / float32(math.Sqrt(float64(cfg.HeadDim)))}
			l := 0
			run := func() {
				var err error
				l = (l + 1) % benchLayers
				if g.r.useTiled() {
					err = g.r.tiledAttention(l, bt, nq, ap)
				} else {
					err = g.r.headAttention(l, bt, nq, ap)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			run()
			// The set-up's garbage is not collected on the clock.
			runtime.GC()
			b.ResetTimer()
			c0 := cputime.Process()
			for b.Loop() {
				run()
			}
			// Keys seen: depth+1 for the first token, one more for each next.
			seen := float64(nq)*float64(depth+1) + float64(nq*(nq-1)/2)
			flops := 4 * seen * float64(cfg.NHead*cfg.HeadDim)
			if cpu := (cputime.Process() - c0).Seconds(); cpu > 0 {
				b.ReportMetric(cpu*1e6/float64(b.N), "cpu-us/op")
				b.ReportMetric(flops*float64(b.N)/cpu/1e9, "GFLOP/cpu-s")
			}
			kvBytes := float64((depth + nq) * (tk.rowBytes(cfg.KVDim()) + tv.rowBytes(cfg.KVDim())))
			b.ReportMetric(kvBytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "KV-GB/s")
		})
	}
}
