package model

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
)

// BenchmarkAttention times one layer's attention of one decoding token
// at a depth (the keys before it), per-head path against the tiled one
// (F16 and Q8_0 caches), on two shapes: tinyllama-1.1b (32 query heads,
// 4 KV heads, head dimension 64) and qwen2.5-1.5b (12, 2, 128). Besides
// ns/op it reports tokens per CPU-second of the process (us-per-cpu-token:
// CPU microseconds per token-layer), the steadier figure on a shared
// machine, and the KV bytes read per second of wall time. Each step takes
// the next of 8 layers, so that the keys and values come from memory, as
// in a model's forward pass, and not from the caches of the last step.
//
//	go test ./model -run '^$' -bench Attention -benchtime 200x
func BenchmarkAttention(b *testing.B) {
	const benchLayers = 8
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
			for _, kd := range kinds {
				var g *attnRig
				for _, threads := range []int{1, 2} {
					name := fmt.Sprintf("%s/d%d/%s/t%d", sh.name, depth, kd.name, threads)
					b.Run(name, func(b *testing.B) {
						if g == nil {
							g = newAttnRigRef(b, sh.cfg, kd.k, kd.v, 1, depth+1, threads, 1, 9, false)
						} else {
							g.r = g.runner(b, threads, 1)
						}
						g.r.perHead = kd.perHead
						bt := tokens(0, depth, 1)
						ap := attnParams{scale: 1 / float32(math.Sqrt(float64(sh.cfg.HeadDim)))}
						l := 0
						run := func() {
							var err error
							l = (l + 1) % benchLayers
							if g.r.useTiled() {
								err = g.r.tiledAttention(l, bt, 1, ap)
							} else {
								err = g.r.headAttention(l, bt, 1, ap)
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
						if cpu := (cputime.Process() - c0).Seconds(); cpu > 0 {
							b.ReportMetric(cpu*1e6/float64(b.N), "cpu-us/op")
						}
						kvBytes := float64((depth + 1) * (kd.k.rowBytes(sh.cfg.KVDim()) + kd.v.rowBytes(sh.cfg.KVDim())))
						b.ReportMetric(kvBytes*float64(b.N)/b.Elapsed().Seconds()/1e9, "KV-GB/s")
					})
				}
			}
		}
	}
}
