package gomlxref

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/tensor"
)

// spec is one random small llama configuration and how its file states it.
type spec struct {
	embd, layers, heads, kvHeads, headDim, ropeDim, ff, vocab int
	tied                                                      bool
	base                                                      float32 // 0: no freq_base key (default 10000)
	scaling                                                   string  // "", "none", "linear" (scaling.factor) or "legacy" (scale_linear)
	factor                                                    float32
	eps                                                       float32
	keyLength, ropeKey                                        bool // write key_length / rope.dimension_count
	vocabKey                                                  string
	seed                                                      uint64
}

// String names the spec for a sub-test.
func (s spec) String() string {
	sc := "rope1"
	if s.scaling == "linear" || s.scaling == "legacy" {
		sc = fmt.Sprintf("%s%g", s.scaling, s.factor)
	}
	tied := "untied"
	if s.tied {
		tied = "tied"
	}
	return fmt.Sprintf("s%d_e%d_l%d_h%d_kv%d_hd%d_rd%d_ff%d_v%d_%s_b%g_%s", s.seed, s.embd, s.layers, s.heads, s.kvHeads,
		s.headDim, s.ropeDim, s.ff, s.vocab, tied, s.base, sc)
}

// pick returns one element of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// randomSpec draws a configuration: odd head counts, GQA ratios 1, 2, 4
// and 8, head widths that may not divide the embedding, partial RoPE,
// several bases and linear scalings, tied and untied output.
func randomSpec(seed uint64) spec {
	r := rand.New(rand.NewPCG(seed, 0x6d6c78))
	s := spec{seed: seed, layers: 1 + r.IntN(3), ff: 17 + 2*r.IntN(60), vocab: 64 + r.IntN(237), tied: r.IntN(2) == 0}
	ratio := pick(r, 1, 2, 4, 8)
	kvChoices := map[int][]int{1: {3, 5, 7, 9, 1}, 2: {1, 3, 5, 7}, 4: {1, 3}, 8: {1}}[ratio]
	s.kvHeads = pick(r, kvChoices...)
	s.heads = s.kvHeads * ratio
	s.headDim = pick(r, 4, 6, 8, 10, 12, 16)
	if s.heads*s.headDim < 32 || s.heads*s.headDim > 96 || r.IntN(3) == 0 {
		s.embd = 32 + r.IntN(65) // the heads need not cover the embedding
	} else {
		s.embd = s.heads * s.headDim
	}
	// The loader needs key_length whenever the heads do not split the
	// embedding evenly; sometimes it is written anyway.
	s.keyLength = s.embd != s.heads*s.headDim || r.IntN(2) == 0
	s.ropeDim = s.headDim
	if r.IntN(3) == 0 {
		s.ropeDim = 2 + 2*r.IntN(s.headDim/2) // 2 .. headDim
	}
	s.ropeKey = s.ropeDim != s.headDim || r.IntN(2) == 0
	s.base = pick[float32](r, 0, 10000, 500000, 1e6, 100)
	s.scaling = pick(r, "", "", "none", "linear", "legacy")
	if s.scaling == "linear" || s.scaling == "legacy" {
		s.factor = pick[float32](r, 2, 4, 8, 0.5)
	}
	s.eps = pick[float32](r, 1e-5, 1e-6, 1e-4)
	s.vocabKey = pick(r, "vocab_size", "tokens", "none")
	return s
}

// features reports which of the properties the random configurations
// must cover s has, each key naming one.
func (s spec) features() map[string]bool {
	r := s.heads / s.kvHeads
	return map[string]bool{
		"GQA ratio 1":                       r == 1,
		"GQA ratio 2":                       r == 2,
		"GQA ratio 4":                       r == 4,
		"GQA ratio 8":                       r == 8,
		"an odd head count":                 s.heads%2 == 1,
		"odd KV heads shared":               s.kvHeads%2 == 1 && s.kvHeads > 1 && r > 1,
		"heads not splitting the embedding": s.heads*s.headDim != s.embd,
		"partial RoPE":                      s.ropeDim < s.headDim,
		"default RoPE dimension":            !s.ropeKey,
		"default freq base":                 s.base == 0,
		"freq base 1e6":                     s.base == 1e6,
		"scaling.factor":                    s.scaling == "linear",
		"scale_linear":                      s.scaling == "legacy",
		"scaling type none":                 s.scaling == "none",
		"tied output":                       s.tied,
		"untied output":                     !s.tied,
		"several layers":                    s.layers > 1,
		"vocab_size key":                    s.vocabKey == "vocab_size",
		"token list":                        s.vocabKey == "tokens",
		"vocabulary from token_embd":        s.vocabKey == "none",
	}
}

// keys returns the metadata of s.
func (s spec) keys() []gguf.KV {
	u := func(k string, v int) gguf.KV { return gguf.KV{Key: k, Value: gguf.Uint32Value(uint32(v))} }
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue("llama")},
		u("llama.context_length", 128),
		u("llama.embedding_length", s.embd),
		u("llama.block_count", s.layers),
		u("llama.feed_forward_length", s.ff),
		u("llama.attention.head_count", s.heads),
		u("llama.attention.head_count_kv", s.kvHeads),
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32Value(s.eps)},
	}
	if s.keyLength {
		kv = append(kv, u("llama.attention.key_length", s.headDim), u("llama.attention.value_length", s.headDim))
	}
	if s.ropeKey {
		kv = append(kv, u("llama.rope.dimension_count", s.ropeDim))
	}
	if s.base != 0 {
		kv = append(kv, gguf.KV{Key: "llama.rope.freq_base", Value: gguf.Float32Value(s.base)})
	}
	switch s.scaling {
	case "none":
		kv = append(kv, gguf.KV{Key: "llama.rope.scaling.type", Value: gguf.StringValue("none")})
	case "linear":
		kv = append(kv, gguf.KV{Key: "llama.rope.scaling.type", Value: gguf.StringValue("linear")},
			gguf.KV{Key: "llama.rope.scaling.factor", Value: gguf.Float32Value(s.factor)})
	case "legacy":
		kv = append(kv, gguf.KV{Key: "llama.rope.scale_linear", Value: gguf.Float32Value(s.factor)})
	}
	switch s.vocabKey {
	case "vocab_size":
		kv = append(kv, u("llama.vocab_size", s.vocab))
	case "tokens": // a minimal token list: the loader counts it
		toks := make([]string, s.vocab)
		for i := range toks {
			toks[i] = fmt.Sprintf("<t%d>", i)
		}
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.model", Value: gguf.StringValue("llama")},
			gguf.KV{Key: "tokenizer.ggml.tokens", Value: gguf.StringsValue(toks)})
	}
	return kv
}

// rawTensor is one F32 tensor to write.
type rawTensor struct {
	name string
	dims []uint64 // GGUF order: row length first
	vals []float32
}

// tensors returns random weights for s: matrices N(0, 1/cols), norm gains
// 1 + N(0, 0.1²).
func (s spec) tensors() []rawTensor {
	r := rand.New(rand.NewPCG(s.seed, 0x77))
	var out []rawTensor
	mat := func(name string, rows, cols int) {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = float32(r.NormFloat64() / math.Sqrt(float64(cols)))
		}
		out = append(out, rawTensor{name, []uint64{uint64(cols), uint64(rows)}, v})
	}
	vec := func(name string, n int) {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(1 + 0.1*r.NormFloat64())
		}
		out = append(out, rawTensor{name, []uint64{uint64(n)}, v})
	}
	qd, kd := s.heads*s.headDim, s.kvHeads*s.headDim
	mat("token_embd.weight", s.vocab, s.embd)
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.embd)
		mat(p+"attn_q.weight", qd, s.embd)
		mat(p+"attn_k.weight", kd, s.embd)
		mat(p+"attn_v.weight", kd, s.embd)
		mat(p+"attn_output.weight", s.embd, qd)
		vec(p+"ffn_norm.weight", s.embd)
		mat(p+"ffn_gate.weight", s.ff, s.embd)
		mat(p+"ffn_up.weight", s.ff, s.embd)
		mat(p+"ffn_down.weight", s.embd, s.ff)
	}
	vec("output_norm.weight", s.embd)
	if !s.tied {
		mat("output.weight", s.vocab, s.embd)
	}
	return out
}

// encode writes keys and F32 tensors as a GGUF file with the project's
// writer and parses it back.
func encode(tb testing.TB, keys []gguf.KV, ts []rawTensor) *gguf.File {
	tb.Helper()
	w := gguf.NewWriter()
	for _, kv := range keys {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			tb.Fatal(err)
		}
	}
	for _, t := range ts {
		data := make([]byte, 4*len(t.vals))
		for i, v := range t.vals {
			bits := math.Float32bits(v)
			data[4*i], data[4*i+1], data[4*i+2], data[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
		if err := w.AddTensor(t.name, tensor.F32, t.dims, data); err != nil {
			tb.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	f, err := gguf.ParseBytes(buf.Bytes(), gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// file writes s as a GGUF file.
func (s spec) file(tb testing.TB) *gguf.File { return encode(tb, s.keys(), s.tensors()) }
