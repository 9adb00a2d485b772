package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/tensor"
)

var smallSpec = synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 48, vocab: 40, seed: 1}

func TestLoadSynthetic(t *testing.T) {
	for _, tied := range []bool{false, true} {
		sp := smallSpec
		sp.tied = tied
		m, err := newSynth(t, sp).load(t)
		if err != nil {
			t.Fatalf("tied=%v: %v", tied, err)
		}
		c := m.Config
		if c.NEmbd != 32 || c.NLayer != 2 || c.NHead != 4 || c.NHeadKV != 2 || c.NFF != 48 || c.NVocab != 40 || c.HeadDim != 8 || c.TiedOutput != tied {
			t.Errorf("tied=%v: config %+v", tied, c)
		}
		if m.Output.Rows != 40 || m.Output.Cols != 32 || len(m.Layers) != 2 || m.Layers[1].Down.Cols != 48 {
			t.Errorf("tied=%v: bound shapes wrong: output %dx%d", tied, m.Output.Rows, m.Output.Cols)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*synth)
		key     string // want a KeyError for this key
		tensor  string // or a TensorError for this tensor
		wantErr error
	}{
		{"missing tensor", func(s *synth) { s.dropTensor("blk.1.attn_k.weight") }, "", "blk.1.attn_k.weight", ErrMissing},
		{"missing norm", func(s *synth) { s.dropTensor("output_norm.weight") }, "", "output_norm.weight", ErrMissing},
		{"missing embedding", func(s *synth) { s.dropTensor("token_embd.weight") }, "", "token_embd.weight", ErrMissing},
		{"wrong shape", func(s *synth) {
			s.dropTensor("blk.0.ffn_up.weight")
			s.tensors = append(s.tensors, encode(t, "blk.0.ffn_up.weight", tensor.F32, []uint64{32, 47}, make([]float32, 32*47)))
		}, "", "blk.0.ffn_up.weight", ErrInvalid},
		{"transposed", func(s *synth) {
			s.dropTensor("blk.0.ffn_down.weight")
			s.tensors = append(s.tensors, encode(t, "blk.0.ffn_down.weight", tensor.F32, []uint64{32, 48}, make([]float32, 32*48)))
		}, "", "blk.0.ffn_down.weight", ErrInvalid},
		{"extra dimension", func(s *synth) {
			s.dropTensor("blk.0.attn_norm.weight")
			s.tensors = append(s.tensors, encode(t, "blk.0.attn_norm.weight", tensor.F32, []uint64{32, 2}, make([]float32, 64)))
		}, "", "blk.0.attn_norm.weight", ErrInvalid},
		{"wrong matrix type", func(s *synth) {
			s.dropTensor("blk.1.attn_q.weight")
			// MXFP4 is a weight type now; I8 matrices never are.
			s.tensors = append(s.tensors, &synthTensor{name: "blk.1.attn_q.weight", typ: tensor.I8, dims: []uint64{32, 32}, data: make([]byte, 32*32)})
		}, "", "blk.1.attn_q.weight", ErrUnsupported},
		{"wrong norm type", func(s *synth) {
			s.dropTensor("blk.0.ffn_norm.weight")
			s.tensors = append(s.tensors, &synthTensor{name: "blk.0.ffn_norm.weight", typ: tensor.I32, dims: []uint64{32}, data: make([]byte, 128)})
		}, "", "blk.0.ffn_norm.weight", ErrUnsupported},
		{"wrong embedding type", func(s *synth) {
			s.dropTensor("token_embd.weight")
			s.tensors = append(s.tensors, &synthTensor{name: "token_embd.weight", typ: tensor.I8, dims: []uint64{32, 40}, data: make([]byte, 32*40)})
		}, "", "token_embd.weight", ErrUnsupported},
		{"unexpected tensor", func(s *synth) {
			s.tensors = append(s.tensors, encode(t, "blk.0.attn_q_norm.weight", tensor.F32, []uint64{8}, make([]float32, 8)))
		}, "", "blk.0.attn_q_norm.weight", ErrUnsupported},
		{"zero rope factor", func(s *synth) {
			s.tensors = append(s.tensors, encode(t, "rope_freqs.weight", tensor.F32, []uint64{4}, []float32{1, 2, 0, 4}))
		}, "", "rope_freqs.weight", ErrInvalid},
		{"rope factors of the wrong length", func(s *synth) {
			s.tensors = append(s.tensors, encode(t, "rope_freqs.weight", tensor.F32, []uint64{8}, make([]float32, 8)))
		}, "", "rope_freqs.weight", ErrInvalid},
		{"bias of the wrong length", func(s *synth) {
			s.tensors = append(s.tensors, encode(t, "blk.1.attn_k.bias", tensor.F32, []uint64{32}, make([]float32, 32)))
		}, "", "blk.1.attn_k.bias", ErrInvalid},
		{"missing key", func(s *synth) { s.dropKey("llama.block_count") }, "llama.block_count", "", ErrMissing},
		{"missing eps", func(s *synth) { s.dropKey("llama.attention.layer_norm_rms_epsilon") }, "llama.attention.layer_norm_rms_epsilon", "", ErrMissing},
		{"key type", func(s *synth) { s.setKey("llama.embedding_length", gguf.StringValue("32")) }, "llama.embedding_length", "", ErrInvalid},
		{"vocabulary mismatch", func(s *synth) { s.setKey("llama.vocab_size", gguf.Uint32Value(41)) }, "", "token_embd.weight", ErrInvalid},
		{"more layers than tensors", func(s *synth) { s.setKey("llama.block_count", gguf.Uint32Value(3)) }, "", "blk.2.attn_norm.weight", ErrMissing},
		{"fewer layers than tensors", func(s *synth) { s.setKey("llama.block_count", gguf.Uint32Value(1)) }, "", "blk.1.attn_norm.weight", ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSynth(t, smallSpec)
			tc.edit(s)
			_, err := s.load(t)
			if err == nil {
				t.Fatal("loaded")
			}
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tc.wantErr)
			}
			if tc.key != "" {
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Key != tc.key {
					t.Errorf("error %v, want a KeyError for %s", err, tc.key)
				}
				return
			}
			var te *TensorError
			if !errors.As(err, &te) || te.Name != tc.tensor {
				t.Errorf("error %v, want a TensorError for %s", err, tc.tensor)
			}
			if strings.HasPrefix(tc.name, "wrong matrix") || strings.HasPrefix(tc.name, "wrong embedding") {
				// Name the type and what would have been accepted.
				if msg := err.Error(); !strings.Contains(msg, "I8") || !strings.Contains(msg, "Q4_K") {
					t.Errorf("error %q names neither the type nor the supported ones", msg)
				}
			}
		})
	}
}

func TestConfigFromGGUFVocab(t *testing.T) {
	s := newSynth(t, smallSpec)
	s.dropKey("llama.vocab_size")
	m, err := s.load(t)
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.NVocab != 40 {
		t.Errorf("NVocab from token_embd: %d", m.Config.NVocab)
	}
	tokens := make([]string, 40)
	for i := range tokens {
		tokens[i] = string(rune('a' + i))
	}
	s.setKey("tokenizer.ggml.tokens", gguf.StringsValue(tokens))
	s.setKey("tokenizer.ggml.model", gguf.StringValue("llama"))
	f, err := gguf.ParseBytes(s.bytes(t), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ConfigFromGGUF(f)
	if err != nil || c.NVocab != 40 {
		t.Errorf("NVocab from the token list: %d, %v", c.NVocab, err)
	}
}

// TestLoadFamilies checks each family's own tensor rules: what it
// requires, what it allows, and what it refuses as unexpected.
func TestLoadFamilies(t *testing.T) {
	base := synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 48, vocab: 40, seed: 1}
	with := func(f func(*synthSpec)) synthSpec { sp := base; f(&sp); return sp }
	tests := []struct {
		name    string
		sp      synthSpec
		edit    func(*synth)
		tensor  string // "" = loads
		wantErr error
	}{
		{name: "llama with rope factors", sp: with(func(s *synthSpec) { s.ropeFreqs = true })},
		{name: "llama with biases", sp: with(func(s *synthSpec) { s.qkvBias, s.oBias = true, true })},
		{name: "qwen2", sp: with(func(s *synthSpec) { s.arch, s.qkvBias = "qwen2", true })},
		{name: "qwen2 without a bias", sp: with(func(s *synthSpec) { s.arch, s.qkvBias = "qwen2", true }),
			edit: func(s *synth) { s.dropTensor("blk.1.attn_v.bias") }, tensor: "blk.1.attn_v.bias", wantErr: ErrMissing},
		{name: "qwen2 refuses rope factors", sp: with(func(s *synthSpec) { s.arch, s.qkvBias, s.ropeFreqs = "qwen2", true, true }),
			tensor: "rope_freqs.weight", wantErr: ErrUnsupported},
		{name: "qwen2 refuses an output bias", sp: with(func(s *synthSpec) { s.arch, s.qkvBias, s.oBias = "qwen2", true, true }),
			tensor: "blk.0.attn_output.bias", wantErr: ErrUnsupported},
		{name: "qwen3", sp: with(func(s *synthSpec) { s.arch, s.qkNorm, s.headDim = "qwen3", true, 16 })},
		{name: "qwen3 without a k norm", sp: with(func(s *synthSpec) { s.arch, s.qkNorm = "qwen3", true }),
			edit: func(s *synth) { s.dropTensor("blk.0.attn_k_norm.weight") }, tensor: "blk.0.attn_k_norm.weight", wantErr: ErrMissing},
		{name: "qwen3 refuses biases", sp: with(func(s *synthSpec) { s.arch, s.qkNorm, s.qkvBias = "qwen3", true, true }),
			tensor: "blk.0.attn_q.bias", wantErr: ErrUnsupported},
		{name: "llama refuses q/k norms", sp: with(func(s *synthSpec) { s.qkNorm = true }),
			tensor: "blk.0.attn_q_norm.weight", wantErr: ErrUnsupported},
		{name: "granite", sp: with(func(s *synthSpec) { s.arch, s.granite = "granite", true })},
		{name: "granite with rope factors", sp: with(func(s *synthSpec) { s.arch, s.granite, s.ropeFreqs = "granite", true, true })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSynth(t, tc.sp)
			if tc.edit != nil {
				tc.edit(s)
			}
			m, err := s.load(t)
			if tc.tensor == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m.Config.Arch != s.spec.arch {
					t.Errorf("arch %q, want %q", m.Config.Arch, s.spec.arch)
				}
				if (m.RopeFreqs != nil) != tc.sp.ropeFreqs || (m.Layers[1].QBias != nil) != tc.sp.qkvBias ||
					(m.Layers[1].OBias != nil) != tc.sp.oBias || (m.Layers[1].KNorm != nil) != tc.sp.qkNorm {
					t.Errorf("optional weights bound wrongly: factors %v, q bias %v, o bias %v, k norm %v",
						m.RopeFreqs != nil, m.Layers[1].QBias != nil, m.Layers[1].OBias != nil, m.Layers[1].KNorm != nil)
				}
				return
			}
			var te *TensorError
			if !errors.As(err, &te) || te.Name != tc.tensor || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want a TensorError for %s wrapping %v", err, tc.tensor, tc.wantErr)
			}
		})
	}
}

func TestFamiliesWellFormed(t *testing.T) {
	if err := checkFamilies(); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"llama", "qwen2", "qwen3", "granite", "gemma2", "gemma3", "phi3"} {
		if _, ok := lookupFamily(arch); !ok {
			t.Errorf("family %s is not registered", arch)
		}
	}
}
