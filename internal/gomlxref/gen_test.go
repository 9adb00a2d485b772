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

// spec is one random small configuration of one family and how its
// file states it.
type spec struct {
	arch                                                      string // llama, qwen2, qwen3 or granite
	embd, layers, heads, kvHeads, headDim, ropeDim, ff, vocab int
	tied                                                      bool
	base                                                      float32 // 0: no freq_base key (default 10000)
	scaling                                                   string  // "", "none", "linear" (scaling.factor), "legacy" (scale_linear) or "yarn"
	factor                                                    float32
	origCtx                                                   int     // yarn's original_context_length; 0: absent (context_length applies)
	attnFactor                                                float32 // rope.scaling.attn_factor; 0: absent
	eps                                                       float32
	keyLength, ropeKey                                        bool // write key_length / rope.dimension_count
	vocabKey                                                  string
	biases                                                    string // "", "qkv" or "qkvo": the attention biases written
	ropeFreqs                                                 bool   // write rope_freqs.weight
	// granite's scales (written only for granite; 0 leaves the key out).
	attnScale, embedScale, residScale, logitScale float32
	// ropeSwitch is granite's rope.scaling.finetuned: "" absent, "on" or
	// "off" (no RoPE).
	ropeSwitch string
	seed       uint64
}

// ctxLen is the context_length every generated file states.
const ctxLen = 128

// String names the spec for a sub-test.
func (s spec) String() string {
	sc := "rope1"
	switch s.scaling {
	case "linear", "legacy":
		sc = fmt.Sprintf("%s%g", s.scaling, s.factor)
	case "yarn":
		sc = fmt.Sprintf("yarn%g_orig%d", s.factor, s.origCtx)
	}
	if s.attnFactor != 0 {
		sc += fmt.Sprintf("_af%g", s.attnFactor)
	}
	tied := "untied"
	if s.tied {
		tied = "tied"
	}
	extra := ""
	if s.biases != "" {
		extra += "_bias" + s.biases
	}
	if s.ropeFreqs {
		extra += "_ropefreqs"
	}
	if s.arch == "granite" {
		extra += fmt.Sprintf("_as%g_es%g_rs%g_ls%g", s.attnScale, s.embedScale, s.residScale, s.logitScale)
	}
	return fmt.Sprintf("s%d_%s_e%d_l%d_h%d_kv%d_hd%d_rd%d_ff%d_v%d_%s_b%g_%s%s", s.seed, s.arch, s.embd, s.layers, s.heads, s.kvHeads,
		s.headDim, s.ropeDim, s.ff, s.vocab, tied, s.base, sc, extra)
}

// pick returns one element of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// randomSpec draws a configuration: every fourth seed a classic llama
// file (none of the features issue 18 added: biases, rope_freqs, YaRN,
// attn_factor), otherwise a family (llama twice as often as each of
// qwen2, qwen3 and granite); odd head counts, GQA ratios 1, 2, 4
// and 8, head widths that may not divide the embedding (qwen2's loader in
// llama.cpp wants square attention matrices, so not there), partial RoPE,
// several bases, linear and YaRN scalings, attn_factor, tied and untied
// output, optional attention biases and rope_freqs.weight (llama,
// granite) and granite's scales.
func randomSpec(seed uint64) spec {
	r := rand.New(rand.NewPCG(seed, 0x6d6c78))
	s := spec{seed: seed, layers: 1 + r.IntN(3), ff: 17 + 2*r.IntN(60), vocab: 64 + r.IntN(237), tied: r.IntN(2) == 0}
	classic := seed%4 == 0
	s.arch = pick(r, "llama", "llama", "qwen2", "qwen3", "granite")
	if classic {
		s.arch = "llama"
	}
	ratio := pick(r, 1, 2, 4, 8)
	kvChoices := map[int][]int{1: {3, 5, 7, 9, 1}, 2: {1, 3, 5, 7}, 4: {1, 3}, 8: {1}}[ratio]
	s.kvHeads = pick(r, kvChoices...)
	s.heads = s.kvHeads * ratio
	s.headDim = pick(r, 4, 6, 8, 10, 12, 16)
	if s.arch != "qwen2" && (s.heads*s.headDim < 32 || s.heads*s.headDim > 96 || r.IntN(3) == 0) {
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
	s.scaling = pick(r, "", "", "none", "linear", "legacy", "yarn", "yarn")
	if classic && s.scaling == "yarn" {
		s.scaling = "linear"
	}
	switch s.scaling {
	case "linear", "legacy":
		s.factor = pick[float32](r, 2, 4, 8, 0.5)
	case "yarn":
		// Factors above 1 only: for a factor below 1, llama.cpp since its
		// December 2025 YaRN change cancels the magnitude term that ggml's
		// rope op (and the February 2025 code this reference follows)
		// applies.
		s.factor = pick[float32](r, 2, 4, 8, 32)
		// The ramp covers part of the pairs for these lengths at the head
		// widths above; 0 leaves the key out (context_length applies).
		s.origCtx = pick(r, 0, 64, 4096, 32768, 1<<20)
	case "none":
		if r.IntN(2) == 0 {
			s.factor = 4 // a factor the type none must discard
		}
	}
	if r.IntN(4) == 0 && !classic {
		s.attnFactor = pick[float32](r, 0.8, 1.25, 1.5)
	}
	s.eps = pick[float32](r, 1e-5, 1e-6, 1e-4)
	s.vocabKey = pick(r, "vocab_size", "tokens", "none")
	switch s.arch {
	case "qwen2":
		s.biases = "qkv"
	case "llama", "granite":
		s.biases = pick(r, "", "", "qkv", "qkvo")
		s.ropeFreqs = r.IntN(3) == 0
		if classic {
			s.biases, s.ropeFreqs = "", false
		}
	}
	if s.arch == "granite" {
		s.attnScale = pick[float32](r, 0.0078125, 0.03125, 0.125, 0.5)
		s.embedScale = pick[float32](r, 12, 1, 4)
		s.residScale = pick[float32](r, 0.22, 0.5, 1.5)
		s.logitScale = pick[float32](r, 8, 16, 2, 0.5)
		s.ropeSwitch = pick(r, "", "", "on", "off")
		// Current llama.cpp reads the first three as optional.
		if r.IntN(4) == 0 {
			s.attnScale = 0
		}
		if r.IntN(4) == 0 {
			s.embedScale = 0
		}
		if r.IntN(4) == 0 {
			s.residScale = 0
		}
	}
	return s
}

// features reports which of the properties the random configurations
// must cover s has, each key naming one.
func (s spec) features() map[string]bool {
	r := s.heads / s.kvHeads
	neox := s.arch == "qwen2" || s.arch == "qwen3"
	return map[string]bool{
		"family llama":                      s.arch == "llama",
		"family qwen2":                      s.arch == "qwen2",
		"family qwen3":                      s.arch == "qwen3",
		"family granite":                    s.arch == "granite",
		"GQA ratio 1":                       r == 1,
		"GQA ratio 2":                       r == 2,
		"GQA ratio 4":                       r == 4,
		"GQA ratio 8":                       r == 8,
		"an odd head count":                 s.heads%2 == 1,
		"odd KV heads shared":               s.kvHeads%2 == 1 && s.kvHeads > 1 && r > 1,
		"heads not splitting the embedding": s.heads*s.headDim != s.embd,
		"qwen3 heads not splitting the embedding": s.arch == "qwen3" && s.heads*s.headDim != s.embd,
		"partial RoPE":                              s.ropeDim < s.headDim,
		"partial NeoX RoPE":                         neox && s.ropeDim < s.headDim,
		"default RoPE dimension":                    !s.ropeKey,
		"default freq base":                         s.base == 0,
		"freq base 1e6":                             s.base == 1e6,
		"scaling.factor":                            s.scaling == "linear",
		"scale_linear":                              s.scaling == "legacy",
		"scaling type none":                         s.scaling == "none",
		"scaling type none with a factor":           s.scaling == "none" && s.factor != 0,
		"yarn":                                      s.scaling == "yarn",
		"yarn with original_context_length":         s.scaling == "yarn" && s.origCtx != 0,
		"yarn from context_length":                  s.scaling == "yarn" && s.origCtx == 0,
		"yarn with rope_freqs":                      s.scaling == "yarn" && s.ropeFreqs,
		"attn_factor":                               s.attnFactor != 0,
		"attn_factor without yarn":                  s.attnFactor != 0 && s.scaling != "yarn",
		"q/k/v biases":                              s.biases != "",
		"optional q/k/v biases without output bias": (s.arch == "llama" || s.arch == "granite") && s.biases == "qkv",
		"output bias":                               s.biases == "qkvo",
		"rope_freqs (llama)":                        s.ropeFreqs && s.arch == "llama",
		"rope_freqs (granite)":                      s.ropeFreqs && s.arch == "granite",
		"granite attention.scale 1/128":             s.arch == "granite" && s.attnScale == 0.0078125,
		"granite logit_scale below 1":               s.arch == "granite" && s.logitScale < 1,
		"granite rope switch written on":            s.ropeSwitch == "on",
		"granite rope switch off":                   s.ropeSwitch == "off",
		"granite without attention.scale":           s.arch == "granite" && s.attnScale == 0,
		"granite without embedding_scale":           s.arch == "granite" && s.embedScale == 0,
		"granite without residual_scale":            s.arch == "granite" && s.residScale == 0,
		"tied output":                               s.tied,
		"untied output":                             !s.tied,
		"several layers":                            s.layers > 1,
		"vocab_size key":                            s.vocabKey == "vocab_size",
		"token list":                                s.vocabKey == "tokens",
		"vocabulary from token_embd":                s.vocabKey == "none",
	}
}

// keys returns the metadata of s.
func (s spec) keys() []gguf.KV {
	k := func(name string) string { return s.arch + "." + name }
	u := func(name string, v int) gguf.KV { return gguf.KV{Key: k(name), Value: gguf.Uint32Value(uint32(v))} }
	f := func(name string, v float32) gguf.KV { return gguf.KV{Key: k(name), Value: gguf.Float32Value(v)} }
	str := func(name, v string) gguf.KV { return gguf.KV{Key: k(name), Value: gguf.StringValue(v)} }
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue(s.arch)},
		u("context_length", ctxLen),
		u("embedding_length", s.embd),
		u("block_count", s.layers),
		u("feed_forward_length", s.ff),
		u("attention.head_count", s.heads),
		u("attention.head_count_kv", s.kvHeads),
		f("attention.layer_norm_rms_epsilon", s.eps),
	}
	if s.keyLength {
		kv = append(kv, u("attention.key_length", s.headDim), u("attention.value_length", s.headDim))
	}
	if s.ropeKey {
		kv = append(kv, u("rope.dimension_count", s.ropeDim))
	}
	if s.base != 0 {
		kv = append(kv, f("rope.freq_base", s.base))
	}
	switch s.scaling {
	case "none":
		kv = append(kv, str("rope.scaling.type", "none"))
		if s.factor != 0 {
			kv = append(kv, f("rope.scaling.factor", s.factor))
		}
	case "linear":
		kv = append(kv, str("rope.scaling.type", "linear"), f("rope.scaling.factor", s.factor))
	case "legacy":
		kv = append(kv, f("rope.scale_linear", s.factor))
	case "yarn":
		kv = append(kv, str("rope.scaling.type", "yarn"), f("rope.scaling.factor", s.factor))
		if s.origCtx != 0 {
			kv = append(kv, u("rope.scaling.original_context_length", s.origCtx))
		}
	}
	if s.attnFactor != 0 {
		kv = append(kv, f("rope.scaling.attn_factor", s.attnFactor))
	}
	if s.arch == "granite" {
		for _, g := range []struct {
			name string
			v    float32
		}{{"attention.scale", s.attnScale}, {"embedding_scale", s.embedScale}, {"residual_scale", s.residScale}, {"logit_scale", s.logitScale}} {
			if g.v != 0 {
				kv = append(kv, f(g.name, g.v))
			}
		}
		if s.ropeSwitch != "" {
			kv = append(kv, gguf.KV{Key: k("rope.scaling.finetuned"), Value: gguf.BoolValue(s.ropeSwitch == "on")})
		}
	}
	switch s.vocabKey {
	case "vocab_size":
		kv = append(kv, u("vocab_size", s.vocab))
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
// 1 + N(0, 0.1²), Q/K norm gains 1 + N(0, 0.3²), biases N(0, 0.3²) and
// rope factors 1 or uniform in [1, 8).
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
	vec := func(name string, n int, mean, sd float64) {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(mean + sd*r.NormFloat64())
		}
		out = append(out, rawTensor{name, []uint64{uint64(n)}, v})
	}
	qd, kd := s.heads*s.headDim, s.kvHeads*s.headDim
	mat("token_embd.weight", s.vocab, s.embd)
	if s.ropeFreqs {
		v := make([]float32, s.ropeDim/2)
		for i := range v {
			v[i] = pick(r, 1, float32(1+7*r.Float64()))
		}
		out = append(out, rawTensor{"rope_freqs.weight", []uint64{uint64(len(v))}, v})
	}
	for l := range s.layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", s.embd, 1, 0.1)
		mat(p+"attn_q.weight", qd, s.embd)
		mat(p+"attn_k.weight", kd, s.embd)
		mat(p+"attn_v.weight", kd, s.embd)
		mat(p+"attn_output.weight", s.embd, qd)
		if s.biases != "" {
			vec(p+"attn_q.bias", qd, 0, 0.3)
			vec(p+"attn_k.bias", kd, 0, 0.3)
			vec(p+"attn_v.bias", kd, 0, 0.3)
		}
		if s.biases == "qkvo" {
			vec(p+"attn_output.bias", s.embd, 0, 0.3)
		}
		if s.arch == "qwen3" {
			vec(p+"attn_q_norm.weight", s.headDim, 1, 0.3)
			vec(p+"attn_k_norm.weight", s.headDim, 1, 0.3)
		}
		vec(p+"ffn_norm.weight", s.embd, 1, 0.1)
		mat(p+"ffn_gate.weight", s.ff, s.embd)
		mat(p+"ffn_up.weight", s.ff, s.embd)
		mat(p+"ffn_down.weight", s.embd, s.ff)
	}
	vec("output_norm.weight", s.embd, 1, 0.1)
	if !s.tied {
		mat("output.weight", s.vocab, s.embd)
	}
	return out
}

// encode writes keys and F32 tensors as a GGUF file with the project's
// writer and parses it back.
func encode(tb testing.TB, keys []gguf.KV, ts []rawTensor) *gguf.File {
	tb.Helper()
	f, err := gguf.ParseBytes(encodeBytes(tb, keys, ts), gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return f
}

// encodeBytes writes keys and F32 tensors as GGUF bytes.
func encodeBytes(tb testing.TB, keys []gguf.KV, ts []rawTensor) []byte {
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
	return buf.Bytes()
}

// file writes s as a GGUF file.
func (s spec) file(tb testing.TB) *gguf.File { return encode(tb, s.keys(), s.tensors()) }
