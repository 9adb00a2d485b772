package gomlxref

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model"
)

// detectable is the least deviation a mutation must cause for the test
// to count it as caught: ten times the tolerance, so that a caught
// mutation cannot be confused with rounding.
const detectable = 10 * tolerance

// mutationSpec is a configuration where every mutation below changes the
// result: grouped-query attention with 2 query heads per KV head,
// partial RoPE, a linear scaling and an untied output.
var mutationSpec = spec{
	arch: "llama", embd: 48, layers: 2, heads: 6, kvHeads: 3, headDim: 8, ropeDim: 6, ff: 37, vocab: 97,
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

// mutation is a change to a loaded reference model.
type mutation struct {
	name   string
	mutate func(*Model)
}

// eachLayer returns a mutation applying fn to every layer.
func eachLayer(fn func(*layer)) func(*Model) {
	return func(m *Model) {
		for i := range m.w.layers {
			fn(&m.w.layers[i])
		}
	}
}

// mutationTokens are the tokens every mutation test runs.
func mutationTokens(vocab int) []int32 {
	r := rand.New(rand.NewPCG(7, 7))
	tokens := make([]int32, 12)
	for i := range tokens {
		tokens[i] = int32(r.IntN(vocab))
	}
	return tokens
}

// checkMutations requires the unmutated reference within tolerance of
// engine, and each mutation more than detectable away from it.
func checkMutations(t *testing.T, f *gguf.File, tokens []int32, engine [][]float32, mutations []mutation) {
	t.Helper()
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
	for _, mu := range mutations {
		d := maxDeviation(engine, reference(mu.mutate))
		t.Logf("%s: max |Δlogit| %.3g", mu.name, d)
		if d <= detectable {
			t.Errorf("%s: max |Δlogit| %.3g, want > %g: the comparison cannot see this mutation", mu.name, d, detectable)
		}
	}
}

// TestMutationsDetected checks that the comparison can fail: each
// mutation of the reference, or of the engine's input file, must move the
// logits by more than detectable, while the unmutated pair stays within
// tolerance.
func TestMutationsDetected(t *testing.T) {
	s := mutationSpec
	tokens := mutationTokens(s.vocab)
	f := s.file(t)
	engine := engineLogits(t, f, tokens, []int{7, 1, 1, 3}, false)
	checkMutations(t, f, tokens, engine, []mutation{
		{"NeoX pairing", func(m *Model) { m.Config.NeoX = true }},
		{"full-width RoPE", func(m *Model) { m.Config.RopeDim = m.Config.HeadDim }},
		{"no linear scaling", func(m *Model) { m.Config.RopeScale = 1 }},
		{"freq base 500000", func(m *Model) { m.Config.RopeBase = 500000 }},
		{"interleaved GQA heads", permuteHeads},
		{"one attn_k weight", func(m *Model) { m.w.layers[1].k.data[5] += 0.25 }},
		{"one ffn_up weight", func(m *Model) { m.w.layers[0].up.data[3] += 0.25 }},
		{"tied output", func(m *Model) { m.w.output = m.w.embed }},
	})
	// The engine's side: one weight of its file changed.
	ts := s.tensors()
	for i := range ts {
		if ts[i].name == "blk.0.attn_v.weight" {
			ts[i].vals[11] += 0.25
		}
	}
	bad := engineLogits(t, encode(t, s.keys(), ts), tokens, []int{12}, true)
	ref, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Forward(tokens)
	if err != nil {
		t.Fatal(err)
	}
	d := maxDeviation(bad, want)
	t.Logf("engine file with one attn_v weight changed: max |Δlogit| %.3g", d)
	if d <= detectable {
		t.Errorf("engine with a changed attn_v weight: max |Δlogit| %.3g, want > %g", d, detectable)
	}
}

// TestFamilyMutationsDetected checks, for one file of each family with
// its particular features, that the comparison sees each feature: the
// reference with the feature removed or changed must differ by more than
// detectable from the unmutated reference and from the engine.
func TestFamilyMutationsDetected(t *testing.T) {
	base := spec{embd: 48, layers: 2, heads: 6, kvHeads: 3, headDim: 8, ropeDim: 8, ff: 37, vocab: 97,
		base: 10000, eps: 1e-5, keyLength: true, ropeKey: true, vocabKey: "vocab_size", seed: 43}
	llama, qwen2, qwen3, granite := base, base, base, base
	llama.arch, llama.biases, llama.ropeFreqs, llama.scaling, llama.factor, llama.attnFactor = "llama", "qkvo", true, "linear", 2, 1.25
	qwen2.arch, qwen2.biases, qwen2.scaling, qwen2.factor, qwen2.origCtx = "qwen2", "qkv", "yarn", 4, 4096
	qwen3.arch, qwen3.embd, qwen3.ropeDim = "qwen3", 40, 6
	granite.arch, granite.ropeFreqs = "granite", true
	granite.attnScale, granite.embedScale, granite.residScale, granite.logitScale = 0.25, 12, 0.22, 8
	graniteOff := granite
	graniteOff.ropeSwitch, graniteOff.seed, graniteOff.ropeFreqs = "off", 44, false
	graniteOffFreqs := graniteOff
	graniteOffFreqs.ropeFreqs = true
	neoxOff := mutation{"adjacent pairs instead of NeoX", func(m *Model) { m.Config.NeoX = false }}
	for _, tc := range []struct {
		s         spec
		mutations []mutation
		// gap, when set, names a known refusal of package model: the
		// engine half is skipped, saying so, while model.Load fails.
		gap string
	}{
		{s: llama, mutations: []mutation{
			{"NeoX pairs", func(m *Model) { m.Config.NeoX = true }},
			{"no rope factors", func(m *Model) { m.w.ropeFactors = nil }},
			{"no q bias", eachLayer(func(ly *layer) { ly.bq = nil })},
			{"no k bias", eachLayer(func(ly *layer) { ly.bk = nil })},
			{"no v bias", eachLayer(func(ly *layer) { ly.bv = nil })},
			{"no output bias", eachLayer(func(ly *layer) { ly.bo = nil })},
			{"attn_factor 1", func(m *Model) { m.Config.RopeAttnFactor = 1 }},
		}},
		{s: qwen2, mutations: []mutation{
			neoxOff,
			{"no q bias", eachLayer(func(ly *layer) { ly.bq = nil })},
			{"no k bias", eachLayer(func(ly *layer) { ly.bk = nil })},
			{"no v bias", eachLayer(func(ly *layer) { ly.bv = nil })},
			{"linear instead of yarn", func(m *Model) { m.Config.YaRN = false }},
			{"yarn without its magnitude", func(m *Model) { m.Config.RopeAttnFactor = 1 / (1 + 0.1*math.Log(4)) }},
			{"yarn original context 64", func(m *Model) { m.Config.YarnOrigCtx = 64 }},
		}},
		{s: qwen3, mutations: []mutation{
			neoxOff,
			{"no q norm", eachLayer(func(ly *layer) { ly.qNorm = nil })},
			{"no k norm", eachLayer(func(ly *layer) { ly.kNorm = nil })},
			{"attention scale 1/sqrt(embd/heads)", func(m *Model) { m.Config.AttnScale = 1 / math.Sqrt(40.0/6) }},
		}},
		{s: granite, mutations: []mutation{
			{"attention scale 1/sqrt(D)", func(m *Model) { m.Config.AttnScale = 1 / math.Sqrt(8) }},
			{"embedding scale 1", func(m *Model) { m.Config.EmbedScale = 1 }},
			{"residual scale 1", func(m *Model) { m.Config.ResidualScale = 1 }},
			{"logit scale 1", func(m *Model) { m.Config.LogitScale = 1 }},
			{"no rope factors", func(m *Model) { m.w.ropeFactors = nil }},
			{"RoPE off", func(m *Model) { m.Config.NoRope = true }},
		}},
		{s: graniteOff, mutations: []mutation{
			{"RoPE on", func(m *Model) { m.Config.NoRope = false }},
		}},
		{s: graniteOffFreqs, mutations: []mutation{
			{"RoPE on", func(m *Model) { m.Config.NoRope = false }},
		}, gap: "package model sizes rope_freqs.weight by a RoPE width of 0 when granite's switch is off and refuses the file; " +
			"llama.cpp sizes it by rope.dimension_count and loads it unused"},
	} {
		name := tc.s.arch
		if tc.s.ropeSwitch == "off" {
			name += "_rope_off"
			if tc.s.ropeFreqs {
				name += "_with_rope_freqs"
			}
		}
		t.Run(name, func(t *testing.T) {
			f := tc.s.file(t)
			tokens := mutationTokens(tc.s.vocab)
			// Against the unmutated reference first: every mutation
			// must matter on this file whatever the engine does.
			m, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Forward(tokens)
			if err != nil {
				t.Fatal(err)
			}
			checkMutations(t, f, tokens, want, tc.mutations)
			if _, err := model.Load(f); err != nil && tc.gap != "" {
				t.Skipf("SKIPPED, known gap: %s: %v", tc.gap, err)
			}
			checkMutations(t, f, tokens, engineLogits(t, f, tokens, []int{5, 1, 6}, true), tc.mutations)
		})
	}
}
