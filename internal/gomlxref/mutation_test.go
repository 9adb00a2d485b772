package gomlxref

import (
	"math/rand/v2"
	"testing"
)

// detectable is the least deviation a mutation must cause for the test
// to count it as caught: ten times the tolerance, so that a caught
// mutation cannot be confused with rounding.
const detectable = 10 * tolerance

// mutationSpec is a configuration where every mutation below changes the
// result: grouped-query attention with 2 query heads per KV head,
// partial RoPE, a linear scaling and an untied output.
var mutationSpec = spec{
	embd: 48, layers: 2, heads: 6, kvHeads: 3, headDim: 8, ropeDim: 6, ff: 37, vocab: 97,
	base: 10000, scaling: "linear", factor: 4, eps: 1e-5, keyLength: true, ropeKey: true,
	vocabKey: "vocab_size", seed: 42,
}

// permuteHeads rearranges the query heads of every layer so that the
// reference's grouped mapping (query head j reads KV head j/group)
// computes what an interleaved mapping (head h reads KV head h%NHeadKV)
// computes on the original weights: the rows of attn_q and the columns
// of attn_output move together.
func permuteHeads(m *Model) {
	c := m.Config
	g, hd := c.NHead/c.NHeadKV, c.HeadDim
	for i := range m.w.layers {
		ly := &m.w.layers[i]
		q := append([]float32(nil), ly.q.data...)
		o := append([]float32(nil), ly.o.data...)
		for j := range c.NHead {
			h := (j%g)*c.NHeadKV + j/g // the original head reference head j computes
			copy(ly.q.data[j*hd*ly.q.cols:(j+1)*hd*ly.q.cols], q[h*hd*ly.q.cols:(h+1)*hd*ly.q.cols])
			for r := range ly.o.rows {
				copy(ly.o.data[r*ly.o.cols+j*hd:r*ly.o.cols+(j+1)*hd], o[r*ly.o.cols+h*hd:r*ly.o.cols+(h+1)*hd])
			}
		}
	}
}

// TestMutationsDetected checks that the comparison can fail: each
// mutation of the reference, or of the engine's input file, must move the
// logits by more than detectable, while the unmutated pair stays within
// tolerance.
func TestMutationsDetected(t *testing.T) {
	s := mutationSpec
	r := rand.New(rand.NewPCG(7, 7))
	tokens := make([]int32, 12)
	for i := range tokens {
		tokens[i] = int32(r.IntN(s.vocab))
	}
	f := s.file(t)
	engine := engineLogits(t, f, tokens, []int{7, 1, 1, 3}, false)
	reference := func(mutate func(*Model)) [][]float32 {
		t.Helper()
		m, err := Load(f)
		if err != nil {
			t.Fatal(err)
		}
		mutate(m)
		out, err := m.Forward(tokens)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if d := maxDeviation(engine, reference(func(*Model) {})); d > tolerance {
		t.Fatalf("unmutated: max |Δlogit| %.3g exceeds %g", d, tolerance)
	}
	mutations := []struct {
		name   string
		mutate func(*Model)
	}{
		{"NeoX pairing", func(m *Model) { m.Config.NeoX = true }},
		{"full-width RoPE", func(m *Model) { m.Config.RopeDim = m.Config.HeadDim }},
		{"no linear scaling", func(m *Model) { m.Config.RopeScale = 1 }},
		{"freq base 500000", func(m *Model) { m.Config.RopeBase = 500000 }},
		{"interleaved GQA heads", permuteHeads},
		{"one attn_k weight", func(m *Model) { m.w.layers[1].k.data[5] += 0.25 }},
		{"one ffn_up weight", func(m *Model) { m.w.layers[0].up.data[3] += 0.25 }},
		{"tied output", func(m *Model) { m.w.output = m.w.embed }},
	}
	for _, mu := range mutations {
		d := maxDeviation(engine, reference(mu.mutate))
		t.Logf("%s: max |Δlogit| %.3g", mu.name, d)
		if d <= detectable {
			t.Errorf("%s: max |Δlogit| %.3g, want > %g: the comparison cannot see this mutation", mu.name, d, detectable)
		}
	}
	// The engine's side: one weight of its file changed.
	ts := s.tensors()
	for i := range ts {
		if ts[i].name == "blk.0.attn_v.weight" {
			ts[i].vals[11] += 0.25
		}
	}
	bad := engineLogits(t, encode(t, s.keys(), ts), tokens, []int{12}, true)
	d := maxDeviation(bad, reference(func(*Model) {}))
	t.Logf("engine file with one attn_v weight changed: max |Δlogit| %.3g", d)
	if d <= detectable {
		t.Errorf("engine with a changed attn_v weight: max |Δlogit| %.3g, want > %g", d, detectable)
	}
}
