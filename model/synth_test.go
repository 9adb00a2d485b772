package model

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// synthSpec describes a small random model for tests: llama by default,
// or another family's architecture with the features that set it apart.
type synthSpec struct {
	embd, layers, heads, kvHeads, ff, vocab, ropeDim, headDim int
	tied                                                      bool
	wtype                                                     tensor.Type // type of the matrices
	seed                                                      uint64

	arch        string  // general.architecture ("" = llama)
	qkvBias     bool    // blk.N.attn_{q,k,v}.bias
	oBias       bool    // blk.N.attn_output.bias
	qkNorm      bool    // blk.N.attn_{q,k}_norm.weight
	ropeFreqs   bool    // rope_freqs.weight
	yarn        float32 // rope.scaling.type yarn with this factor (0: none)
	yarnOrigCtx int     // rope.scaling.original_context_length for yarn
	linear      float32 // rope.scaling.factor without a type (linear)
	granite     bool    // granite's four scales
}

// Granite scales of the test models (of the size the real ones have).
const (
	testAttnScale     = 0.0078125
	testEmbedScale    = 12
	testResidualScale = 0.22
	testLogitScale    = 8
)

// synthTensor is one tensor of a synthetic model: its float values (for
// the reference) and its encoding.
type synthTensor struct {
	name string
	typ  tensor.Type
	dims []uint64
	vals []float32 // dequantized values, what the model really holds
	data []byte
}

// synth is a synthetic model before it is written.
type synth struct {
	spec    synthSpec
	keys    []gguf.KV
	tensors []*synthTensor
}

func (s *synth) setKey(k string, v gguf.Value) {
	for i := range s.keys {
		if s.keys[i].Key == k {
			s.keys[i].Value = v
			return
		}
	}
	s.keys = append(s.keys, gguf.KV{Key: k, Value: v})
}

func (s *synth) dropKey(k string) {
	s.keys = slices.DeleteFunc(s.keys, func(kv gguf.KV) bool { return kv.Key == k })
}

func (s *synth) tensor(name string) *synthTensor {
	for _, t := range s.tensors {
		if t.name == name {
			return t
		}
	}
	return nil
}

func (s *synth) dropTensor(name string) {
	s.tensors = slices.DeleteFunc(s.tensors, func(t *synthTensor) bool { return t.name == name })
}

// encode builds a tensor of the given values, rounding them through typ.
func encode(tb testing.TB, name string, typ tensor.Type, dims []uint64, vals []float32) *synthTensor {
	tb.Helper()
	n, err := tensor.Elements(dims)
	if err != nil || int(n) != len(vals) {
		tb.Fatalf("encode %s: %d values for %v", name, len(vals), dims)
	}
	size, err := typ.Bytes(dims)
	if err != nil {
		tb.Fatalf("encode %s: %v", name, err)
	}
	data := make([]byte, size)
	if err := quant.Quantize(typ, vals, data); err != nil {
		tb.Fatalf("encode %s: %v", name, err)
	}
	back := make([]float32, len(vals))
	if err := quant.Dequantize(typ, data, back); err != nil {
		tb.Fatalf("encode %s: %v", name, err)
	}
	return &synthTensor{name: name, typ: typ, dims: dims, vals: back, data: data}
}

// newSynth returns a random model of spec sp.
func newSynth(tb testing.TB, sp synthSpec) *synth {
	tb.Helper()
	if sp.headDim == 0 {
		sp.headDim = sp.embd / sp.heads
	}
	if sp.ropeDim == 0 {
		sp.ropeDim = sp.headDim
	}
	r := rand.New(rand.NewPCG(sp.seed, 99))
	s := &synth{spec: sp}
	u := func(k string, v uint32) { s.setKey(k, gguf.Uint32Value(v)) }
	if sp.arch == "" {
		sp.arch = "llama"
		s.spec.arch = "llama"
	}
	a := sp.arch + "."
	f := func(k string, v float32) { s.setKey(a+k, gguf.Float32Value(v)) }
	s.setKey("general.architecture", gguf.StringValue(sp.arch))
	u(a+"embedding_length", uint32(sp.embd))
	u(a+"block_count", uint32(sp.layers))
	u(a+"attention.head_count", uint32(sp.heads))
	u(a+"attention.head_count_kv", uint32(sp.kvHeads))
	u(a+"feed_forward_length", uint32(sp.ff))
	u(a+"context_length", 256)
	u(a+"rope.dimension_count", uint32(sp.ropeDim))
	u(a+"vocab_size", uint32(sp.vocab))
	if sp.headDim*sp.heads != sp.embd {
		u(a+"attention.key_length", uint32(sp.headDim))
		u(a+"attention.value_length", uint32(sp.headDim))
	}
	f("attention.layer_norm_rms_epsilon", 1e-5)
	f("rope.freq_base", 10000)
	if sp.yarn != 0 {
		s.setKey(a+"rope.scaling.type", gguf.StringValue("yarn"))
		f("rope.scaling.factor", sp.yarn)
		u(a+"rope.scaling.original_context_length", uint32(sp.yarnOrigCtx))
	}
	if sp.linear != 0 {
		f("rope.scaling.factor", sp.linear)
	}
	if sp.granite {
		f("attention.scale", testAttnScale)
		f("embedding_scale", testEmbedScale)
		f("residual_scale", testResidualScale)
		f("logit_scale", testLogitScale)
	}
	rnd := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	norm := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(1 + 0.1*r.NormFloat64())
		}
		return v
	}
	mat := func(name string, cols, rows int, typ tensor.Type) {
		s.tensors = append(s.tensors, encode(tb, name, typ, []uint64{uint64(cols), uint64(rows)}, rnd(cols*rows, 1/math.Sqrt(float64(cols)))))
	}
	vec := func(name string, n int) {
		s.tensors = append(s.tensors, encode(tb, name, tensor.F32, []uint64{uint64(n)}, norm(n)))
	}
	bias := func(name string, n int) {
		s.tensors = append(s.tensors, encode(tb, name, tensor.F32, []uint64{uint64(n)}, rnd(n, 0.3)))
	}
	mat("token_embd.weight", sp.embd, sp.vocab, sp.wtype)
	if sp.ropeFreqs {
		// Llama 3's factors run from 1 (high frequencies) to the scaling
		// factor (low ones); random ones in that range test the same.
		v := make([]float32, sp.ropeDim/2)
		for i := range v {
			v[i] = float32(1 + 7*r.Float64())
		}
		s.tensors = append(s.tensors, encode(tb, "rope_freqs.weight", tensor.F32, []uint64{uint64(len(v))}, v))
	}
	qd, kd := sp.heads*sp.headDim, sp.kvHeads*sp.headDim
	for l := range sp.layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", sp.embd)
		mat(p+"attn_q.weight", sp.embd, qd, sp.wtype)
		mat(p+"attn_k.weight", sp.embd, kd, sp.wtype)
		mat(p+"attn_v.weight", sp.embd, kd, sp.wtype)
		mat(p+"attn_output.weight", qd, sp.embd, sp.wtype)
		if sp.qkvBias {
			bias(p+"attn_q.bias", qd)
			bias(p+"attn_k.bias", kd)
			bias(p+"attn_v.bias", kd)
		}
		if sp.oBias {
			bias(p+"attn_output.bias", sp.embd)
		}
		if sp.qkNorm {
			vec(p+"attn_q_norm.weight", sp.headDim)
			vec(p+"attn_k_norm.weight", sp.headDim)
		}
		vec(p+"ffn_norm.weight", sp.embd)
		mat(p+"ffn_gate.weight", sp.embd, sp.ff, sp.wtype)
		mat(p+"ffn_up.weight", sp.embd, sp.ff, sp.wtype)
		mat(p+"ffn_down.weight", sp.ff, sp.embd, sp.wtype)
	}
	vec("output_norm.weight", sp.embd)
	if !sp.tied {
		mat("output.weight", sp.embd, sp.vocab, sp.wtype)
	}
	return s
}

// bytes writes the model as a GGUF file.
func (s *synth) bytes(tb testing.TB) []byte {
	tb.Helper()
	w := gguf.NewWriter()
	for _, kv := range s.keys {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			tb.Fatal(err)
		}
	}
	for _, t := range s.tensors {
		if err := w.AddTensor(t.name, t.typ, t.dims, t.data); err != nil {
			tb.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// load parses and loads the model.
func (s *synth) load(tb testing.TB) (*Model, error) {
	tb.Helper()
	f, err := gguf.ParseBytes(s.bytes(tb), gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return Load(f)
}
