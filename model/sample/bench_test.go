package sample

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
)

// BenchmarkSample times one token's sampling at the vocabulary sizes of
// Llama 2 (32k) and Qwen 2.5 (152k) on logits shaped like a random-weight
// model's (nearly flat, the draw lands deep in the tail) and a trained
// model's (spread out): greedy, OpenAI's defaults (temperature 1, nothing
// else) on the plain path and through the full sort, top-p with min-p on
// the cut path and (min-keep 2) the bucket path, and llama.cpp's defaults
// (top-k 40).
func BenchmarkSample(b *testing.B) {
	for _, n := range []int{32000, 152064} {
		for _, shape := range []struct {
			name string
			id   int
		}{{"flat", 0}, {"spread", 1}} {
			r := rand.New(rand.NewPCG(1, 2))
			rows := make([][]float32, 8)
			for i := range rows {
				rows[i] = randomRow(r, n, shape.id)
			}
			for _, c := range []struct {
				name string
				p    Params
				ref  bool
			}{
				{"greedy", Params{}, false},
				{"openai", Params{Temperature: 1, TopP: 1}, false},
				{"openai-fullsort", Params{Temperature: 1, TopP: 1}, true},
				{"top-p-0.9", Params{Temperature: 1, TopP: 0.9, MinP: 0.05}, false},
				{"top-p-0.9-buckets", Params{Temperature: 1, TopP: 0.9, MinP: 0.05, MinKeep: 2}, false},
				{"llama-defaults", DefaultParams(), false},
			} {
				b.Run(fmt.Sprintf("vocab=%d/%s/%s", n, shape.name, c.name), func(b *testing.B) {
					s, err := New(c.p, n)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					cpu0 := cputime.Process()
					i := 0
					for b.Loop() {
						row := rows[i%len(rows)]
						i++
						if c.ref {
							refSample(s, row)
						} else if _, err := s.Sample(row); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}
