package gomlxref

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
)

// tolerance is the largest |Δlogit| allowed between the engine and the
// reference for F32 models with an F32 cache.
const tolerance = 1e-4

// propertyConfigs is how many random configurations the property test
// draws.
const propertyConfigs = 80

// engineLogits runs tokens through package model's Runner with an F32
// cache, in batches of the sizes split gives (summing to len(tokens)),
// asking for every row's logits, with the llama.cpp summation order on or
// off.
func engineLogits(tb testing.TB, f *gguf.File, tokens []int32, split []int, llamaOrder bool) [][]float32 {
	tb.Helper()
	m, err := model.Load(f)
	if err != nil {
		tb.Fatalf("model.Load: %v", err)
	}
	c, err := model.NewCache(m.Config, model.KVF32, 1, len(tokens))
	if err != nil {
		tb.Fatalf("model.NewCache: %v", err)
	}
	pool := kernels.NewPool(2)
	defer pool.Close()
	r := model.NewRunner(m, c, pool, len(tokens))
	r.SetLlamaOrder(llamaOrder)
	var out [][]float32
	at := 0
	for _, n := range split {
		b := model.Batch{Tokens: tokens[at : at+n], Pos: make([]int32, n), Seq: make([]int32, n), Logits: make([]bool, n)}
		for i := range n {
			b.Pos[i], b.Logits[i] = int32(at+i), true
		}
		rows, err := r.Decode(b)
		if err != nil {
			tb.Fatalf("Decode at %d: %v", at, err)
		}
		for _, row := range rows {
			out = append(out, append([]float32(nil), row...))
		}
		at += n
	}
	return out
}

// randomSplit cuts n tokens into batches: a prompt of 1 to n tokens, then
// random pieces.
func randomSplit(r *rand.Rand, n int) []int {
	first := 1 + r.IntN(n)
	split := []int{first}
	for left := n - first; left > 0; {
		k := 1 + r.IntN(min(left, 4))
		split = append(split, k)
		left -= k
	}
	return split
}

// maxDeviation returns max |got - want| over all rows, and +Inf when the
// shapes differ or a value is not finite.
func maxDeviation(got, want [][]float32) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var worst float64
	for i := range got {
		if len(got[i]) != len(want[i]) {
			return math.Inf(1)
		}
		for j := range got[i] {
			d := math.Abs(float64(got[i][j]) - float64(want[i][j]))
			if math.IsNaN(d) {
				return math.Inf(1)
			}
			worst = math.Max(worst, d)
		}
	}
	return worst
}

// TestEngineMatchesGomlx is the property test: random small
// configurations of every family written as F32 GGUF files must give the
// engine's logits within tolerance of the gomlx graph at every position,
// in both of the engine's summation orders and however the sequence is
// split in batches.
func TestEngineMatchesGomlx(t *testing.T) {
	var worst float64
	seen := map[string]bool{}
	for seed := range uint64(propertyConfigs) {
		s := randomSpec(seed + 1)
		for k, v := range s.features() {
			seen[k] = seen[k] || v
		}
		t.Run(s.String(), func(t *testing.T) {
			f := s.file(t)
			ref, err := Load(f)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			r := rand.New(rand.NewPCG(s.seed, 3))
			tokens := make([]int32, 8+r.IntN(9))
			for i := range tokens {
				tokens[i] = int32(r.IntN(s.vocab))
			}
			want, err := ref.Forward(tokens)
			if err != nil {
				t.Fatalf("Forward: %v", err)
			}
			for _, llama := range []bool{false, true} {
				split := randomSplit(r, len(tokens))
				d := maxDeviation(engineLogits(t, f, tokens, split, llama), want)
				t.Logf("llama order %v, batches %v: max |Δlogit| %.3g", llama, split, d)
				if d > tolerance {
					t.Errorf("llama order %v, batches %v: max |Δlogit| %.3g exceeds %g", llama, split, d, tolerance)
				}
				worst = math.Max(worst, d)
			}
		})
	}
	t.Logf("max |Δlogit| over %d configurations: %.3g", propertyConfigs, worst)
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		if !seen[k] {
			t.Errorf("no configuration has %s: the generator lost coverage", k)
		}
	}
}
