package model

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/kernels"
)

// TestFFNChunkInvariance: the dense feed-forward half taken ffnSpan rows
// at a time gives every token's logits bit for bit as one product over
// the whole batch does, on each weight type's kernels (quantized: 8- and
// 4-token groups; F16: the blocked product from three tokens; F32: ggml's
// orders, in llama order too), for batches cut into chunks in each way
// (a whole chunk and a tail, two chunks and a short rest, one chunk
// within its tail). Every row's logits are asked for, so that the last
// block's products run over the whole batch too.
func TestFFNChunkInvariance(t *testing.T) {
	for _, name := range []string{"mini-24m-q4_k_m.gguf", "mini-24m-q8_0.gguf", "mini-24m-f16.gguf", "stories260K.gguf"} {
		m := loadModel(t, name)
		pool := kernels.NewPool(2)
		t.Cleanup(pool.Close)
		for _, llama := range []bool{false, true} {
			for _, n := range []int{133, 137, 263, 300} {
				t.Run(fmt.Sprintf("%s/llama%v/n%d", name, llama, n), func(t *testing.T) {
					run := func(whole bool) [][]float32 {
						c, err := NewCache(m.Config, KVF16, 1, 320)
						if err != nil {
							t.Fatal(err)
						}
						r := NewRunner(m, c, pool, n)
						r.SetLlamaOrder(llama)
						if whole {
							// One product over the batch, as before chunking.
							r.ffnChunk = n
							r.gate, r.up = make([]float32, n*m.Config.NFF), make([]float32, n*m.Config.NFF)
						} else if n > ffnChunk+ffnTail && len(r.gate) >= n*m.Config.NFF {
							t.Fatalf("the scratch holds %d rows, want fewer than %d", len(r.gate)/m.Config.NFF, n)
						}
						b := Batch{Logits: make([]bool, n)}
						for i := range n {
							b.Tokens = append(b.Tokens, int32(1+(i*37)%(m.Config.NVocab-1)))
							b.Pos, b.Seq, b.Logits[i] = append(b.Pos, int32(i)), append(b.Seq, 0), true
						}
						rows, err := r.Decode(b)
						if err != nil {
							t.Fatal(err)
						}
						out := make([][]float32, len(rows))
						for i, row := range rows {
							out[i] = slices.Clone(row)
						}
						return out
					}
					want, got := run(true), run(false)
					for i := range want {
						if !slices.Equal(got[i], want[i]) {
							t.Errorf("logits row %d differs by %.3g", i, maxDiff(got[i], want[i]))
						}
					}
				})
			}
		}
	}
}
