package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/kernels"
)

// TestHiddenIsDecodeWithoutOutput checks that Hidden's rows are the
// states the output matrix turns into Decode's logits: for every token of
// a batch, output·hidden equals the logits row, and a state is the RMS
// norm's output (mean square of hidden/weight is one).
func TestHiddenIsDecodeWithoutOutput(t *testing.T) {
	for _, sp := range []synthSpec{
		{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 31},
		{embd: 64, layers: 1, heads: 8, kvHeads: 2, ff: 24, vocab: 33, seed: 32, tied: true},
		{embd: 32, layers: 2, heads: 4, kvHeads: 1, ff: 40, vocab: 50, seed: 33, arch: "qwen3", qkNorm: true, headDim: 16},
	} {
		s := newSynth(t, sp)
		m, err := s.load(t)
		if err != nil {
			t.Fatal(err)
		}
		toks := randomTokens(rand.New(rand.NewPCG(sp.seed, 1)), 9, sp.vocab)
		b := Batch{Tokens: toks, Pos: make([]int32, len(toks)), Seq: make([]int32, len(toks)), Logits: make([]bool, len(toks))}
		for i := range toks {
			b.Pos[i], b.Logits[i] = int32(i), true
		}
		pool := kernels.NewPool(1)
		run := func(f func(r *Runner) ([][]float32, error)) [][]float32 {
			c, err := NewCache(m.Config, KVF32, 1, 16)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := f(NewRunner(m, c, pool, 16))
			if err != nil {
				t.Fatal(err)
			}
			out := make([][]float32, len(rows))
			for i, r := range rows {
				out[i] = append([]float32(nil), r...)
			}
			return out
		}
		hidden := run(func(r *Runner) ([][]float32, error) { return r.Hidden(b) })
		logits := run(func(r *Runner) ([][]float32, error) { return r.Decode(b) })
		pool.Close()
		if len(hidden) != len(toks) || len(hidden[0]) != sp.embd {
			t.Fatalf("%d hidden rows of %d values", len(hidden), len(hidden[0]))
		}
		ow := "output.weight"
		if sp.tied {
			ow = "token_embd.weight"
		}
		w := s.tensor(ow).vals
		norm := s.tensor("output_norm.weight").vals
		var worst float64
		for i, h := range hidden {
			var ms float64
			for k, v := range h {
				x := float64(v) / float64(norm[k])
				ms += x * x
			}
			if ms /= float64(len(h)); math.Abs(ms-1) > 1e-3 {
				t.Errorf("row %d: mean square of the unscaled state %v, want 1", i, ms)
			}
			for v := range sp.vocab {
				var dot float64
				for k, x := range h {
					dot += float64(x) * float64(w[v*sp.embd+k])
				}
				worst = math.Max(worst, math.Abs(dot-float64(logits[i][v])))
			}
		}
		if worst > 1e-4 {
			t.Errorf("seed %d: output·hidden differs from the logits by %.3g", sp.seed, worst)
		}
	}
}
