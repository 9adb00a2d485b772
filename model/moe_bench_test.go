package model

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/kernels"
	msynth "github.com/lisa-llm/lisa/model/synth"
)

// moeBenchCut returns, for a real-size mixture of experts BenchmarkMoE
// cuts to two layers (LISA_MOE_SHAPE), the tiny shape whose vocabulary
// the cut takes and the file type of the real file.
func moeBenchCut(shape string) (tiny string, typ msynth.FileType, ok bool) {
	switch shape {
	case "qwen3moe-30b-a3b":
		return "qwen3moe-tiny", msynth.Q4_K_M, true
	case "gpt-oss-20b":
		return "gpt-oss-tiny", msynth.MXFP4_MOE, true
	}
	return "", 0, false
}

// moeBenchShape returns LISA_MOE_SHAPE, or qwen3moe-30b-a3b when unset.
func moeBenchShape(b *testing.B) string {
	name := os.Getenv("LISA_MOE_SHAPE")
	if name == "" {
		name = "qwen3moe-30b-a3b"
	}
	if _, _, ok := moeBenchCut(name); !ok {
		b.Fatalf("LISA_MOE_SHAPE %q: want qwen3moe-30b-a3b or gpt-oss-20b", name)
	}
	return name
}

// moeBenchModel returns a real-size mixture of experts cut to two layers
// and a 4096-token vocabulary (moeBenchShape): by default Qwen3-30B-A3B
// at Q4_K_M (one layer of Q4_K experts' down products, one of Q6_K, as
// llama-quantize's mix alternates them; the real file's per-layer work,
// 128 experts of 768, eight per token, 2048 wide, in a file of about 600
// MiB instead of 17 GiB), or gpt-oss-20b at MXFP4_MOE (32 experts of
// 2880, four per token, MXFP4, the attention Q8_0, one windowed layer and
// one global: about 900 MiB instead of 11.3 GiB). It is mapped, as the
// real file is when it does not fit beside the KV cache in memory.
// LISA_MOE_MODEL names a file to use instead (the real one, say), or
// where to write this one when it does not exist, for later runs.
func moeBenchModel(b *testing.B, shape string) *Model {
	path := os.Getenv("LISA_MOE_MODEL")
	if _, err := os.Stat(path); path == "" || err != nil {
		tinyName, typ, _ := moeBenchCut(shape)
		big, ok1 := msynth.Lookup(shape)
		tiny, ok2 := msynth.Lookup(tinyName)
		if !ok1 || !ok2 {
			b.Fatalf("no %s or %s shape", shape, tinyName)
		}
		sh := big
		sh.Name, sh.NLayer, sh.NVocab, sh.Vocab = shape+"-2l", 2, tiny.NVocab, tiny.Vocab
		if path == "" {
			path = filepath.Join(b.TempDir(), "moe.gguf")
		}
		if _, err := msynth.WriteFile(path, msynth.Options{Shape: sh, Type: typ, Seed: 1, PoolRows: 4096}); err != nil {
			b.Fatal(err)
		}
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	m, err := Load(f)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMoE measures a real-size mixture of experts' layer pair
// (moeBenchModel: Qwen3-30B-A3B, or LISA_MOE_SHAPE's)
// generating one token at a time (decode, after a 64-token prompt) and
// processing a 512-token prompt, on LISA_STEP_THREADS threads (2 when
// unset). It reports CPU time per token beside the wall time: on a shared
// machine CPU time moves less.
func BenchmarkMoE(b *testing.B) {
	shape := moeBenchShape(b)
	m := moeBenchModel(b, shape)
	threads := 2
	if s := os.Getenv("LISA_STEP_THREADS"); s != "" {
		if _, err := fmt.Sscan(s, &threads); err != nil {
			b.Fatal(err)
		}
	}
	pool := kernels.NewPool(threads)
	defer pool.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 512} {
		b.Run(fmt.Sprintf("%s/batch%d_threads%d", shape, n, threads), func(b *testing.B) {
			c, err := NewCache(m.Config, KVF16, 1, 1024)
			if err != nil {
				b.Fatal(err)
			}
			r := NewRunner(m, c, pool, 512)
			warm := randomTokens(rng, 64, m.Config.NVocab)
			wb := Batch{Tokens: warm, Pos: make([]int32, len(warm)), Seq: make([]int32, len(warm))}
			for i := range wb.Pos {
				wb.Pos[i] = int32(i)
			}
			if _, err := r.Decode(wb); err != nil {
				b.Fatal(err)
			}
			toks := randomTokens(rng, n, m.Config.NVocab)
			bt := Batch{Tokens: toks, Pos: make([]int32, n), Seq: make([]int32, n)}
			start := c.Len(0)
			b.ResetTimer()
			cpu0 := cputime.Process()
			for i := 0; i < b.N; i++ {
				if n > 1 || c.Len(0)+n > c.NCtx() {
					// Every prompt starts after the warm-up tokens.
					c.lens[0] = start
				}
				for j := range bt.Pos {
					bt.Pos[j] = int32(c.Len(0) + j)
				}
				// A different token each step: different experts.
				bt.Tokens[0] = int32(rng.IntN(m.Config.NVocab))
				if _, err := r.Decode(bt); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cputime.Process() - cpu0
			b.ReportMetric(float64(cpu)/float64(n*b.N)/float64(time.Millisecond), "cpu-ms/token")
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
