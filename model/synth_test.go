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

// synthSpec describes a small random llama model for tests.
type synthSpec struct {
	embd, layers, heads, kvHeads, ff, vocab, ropeDim, headDim int
	tied                                                      bool
	wtype                                                     tensor.Type // type of the matrices
	seed                                                      uint64
}

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
	s.setKey("general.architecture", gguf.StringValue("llama"))
	u("llama.embedding_length", uint32(sp.embd))
	u("llama.block_count", uint32(sp.layers))
	u("llama.attention.head_count", uint32(sp.heads))
	u("llama.attention.head_count_kv", uint32(sp.kvHeads))
	u("llama.feed_forward_length", uint32(sp.ff))
	u("llama.context_length", 256)
	u("llama.rope.dimension_count", uint32(sp.ropeDim))
	u("llama.vocab_size", uint32(sp.vocab))
	if sp.headDim*sp.heads != sp.embd {
		u("llama.attention.key_length", uint32(sp.headDim))
		u("llama.attention.value_length", uint32(sp.headDim))
	}
	s.setKey("llama.attention.layer_norm_rms_epsilon", gguf.Float32Value(1e-5))
	s.setKey("llama.rope.freq_base", gguf.Float32Value(10000))
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
	mat("token_embd.weight", sp.embd, sp.vocab, sp.wtype)
	qd, kd := sp.heads*sp.headDim, sp.kvHeads*sp.headDim
	for l := range sp.layers {
		p := fmt.Sprintf("blk.%d.", l)
		vec(p+"attn_norm.weight", sp.embd)
		mat(p+"attn_q.weight", sp.embd, qd, sp.wtype)
		mat(p+"attn_k.weight", sp.embd, kd, sp.wtype)
		mat(p+"attn_v.weight", sp.embd, kd, sp.wtype)
		mat(p+"attn_output.weight", qd, sp.embd, sp.wtype)
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
