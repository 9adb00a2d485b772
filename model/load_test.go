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
			s.tensors = append(s.tensors, &synthTensor{name: "blk.1.attn_q.weight", typ: tensor.MXFP4, dims: []uint64{32, 32}, data: make([]byte, 32*17)})
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
			s.tensors = append(s.tensors, encode(t, "rope_freqs.weight", tensor.F32, []uint64{4}, make([]float32, 4)))
		}, "", "rope_freqs.weight", ErrUnsupported},
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
				if msg := err.Error(); !strings.Contains(msg, "MXFP4") && !strings.Contains(msg, "I8") || !strings.Contains(msg, "Q4_K") {
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
