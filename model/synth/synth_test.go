package synth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/tensor"
)

// openShared opens a GGUF file of the shared test data.
func openShared(t *testing.T, rel string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(shared.Path(t, rel), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestPlanMatchesLlamaQuantize compares the Q4_K_M plan with the tensor
// tables llama-quantize wrote for the same shapes: names, order, types
// and dimensions.
func TestPlanMatchesLlamaQuantize(t *testing.T) {
	tests := []struct{ shape, file string }{
		{"mini", "models/mini-24m-q4_k_m.gguf"},
		{"small-110m", "models/small-110m-q4_k_m.gguf"},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			f := openShared(t, tc.file)
			s, ok := Lookup(tc.shape)
			if !ok {
				t.Fatalf("no shape %q", tc.shape)
			}
			plan := Plan(s, Q4_K_M)
			if len(plan) != len(f.Tensors) {
				t.Fatalf("plan has %d tensors, llama.cpp's file %d", len(plan), len(f.Tensors))
			}
			for i, p := range plan {
				ti := f.Tensors[i]
				if p.Name != ti.Name || p.Type != ti.Type || !slices.Equal(p.Dims, ti.Dims) {
					t.Errorf("tensor %d: plan %s %s %v, llama.cpp %s %s %v", i, p.Name, p.Type, p.Dims, ti.Name, ti.Type, ti.Dims)
				}
			}
		})
	}
}

// TestPlanTypes checks the type mix of each file type on the 22-layer
// TinyLlama shape and the tied Llama 3.2 shape.
func TestPlanTypes(t *testing.T) {
	count := func(p []TensorPlan) map[tensor.Type]int {
		m := map[tensor.Type]int{}
		for _, x := range p {
			m[x.Type]++
		}
		return m
	}
	tiny, _ := Lookup("tinyllama-1.1b")
	l32, _ := Lookup("llama-3.2-1b")
	// use_more_bits(i, 22): i < 2, i >= 19, (i-2)%3 == 2 → 0 1 4 7 10 13 16 19 20 21.
	tests := []struct {
		name string
		s    Shape
		ft   FileType
		want map[tensor.Type]int
	}{
		{"tinyllama q4_k_m", tiny, Q4_K_M, map[tensor.Type]int{tensor.F32: 45, tensor.Q6_K: 21, tensor.Q4_K: 22*7 - 20 + 1}},
		{"tinyllama q8_0", tiny, Q8_0, map[tensor.Type]int{tensor.F32: 45, tensor.Q8_0: 22*7 + 2}},
		{"tinyllama f16", tiny, F16, map[tensor.Type]int{tensor.F32: 45, tensor.F16: 22*7 + 2}},
		{"llama-3.2 q4_k_m (tied: token_embd Q6_K)", l32, Q4_K_M, map[tensor.Type]int{tensor.F32: 33, tensor.Q6_K: 1 + 2*8, tensor.Q4_K: 16*7 - 16}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := count(Plan(tc.s, tc.ft)); !mapsEqual(got, tc.want) {
				t.Errorf("types %v, want %v", got, tc.want)
			}
		})
	}
}

func mapsEqual(a, b map[tensor.Type]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestWriteDeterministicAndLoads writes mini models twice per type (with
// different thread counts), checks the bytes are identical, differ for
// another seed, and that model.Load accepts the file with the planned
// tensor types and the vocabulary's tokens.
func TestWriteDeterministicAndLoads(t *testing.T) {
	vocab := openShared(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	mini, _ := Lookup("mini")
	for _, ft := range []FileType{Q8_0, Q4_K_M} {
		t.Run(ft.String(), func(t *testing.T) {
			write := func(seed uint64, threads int) []byte {
				var b bytes.Buffer
				n, err := Write(&b, Options{Shape: mini, Type: ft, Seed: seed, Vocab: vocab, Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(b.Len()) {
					t.Fatalf("Write returned %d, wrote %d", n, b.Len())
				}
				return b.Bytes()
			}
			a, b, c := write(1, 1), write(1, 3), write(2, 2)
			if sha256.Sum256(a) != sha256.Sum256(b) {
				t.Fatal("same seed, different bytes")
			}
			if bytes.Equal(a, c) {
				t.Fatal("different seeds, same bytes")
			}
			f, err := gguf.ParseBytes(a, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			m, err := model.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if m.Config.NVocab != 32000 || m.Config.NLayer != 2 || m.Config.NEmbd != 256 {
				t.Errorf("config %+v", m.Config)
			}
			plan := Plan(mini, ft)
			for i, p := range plan {
				if ti := f.Tensors[i]; ti.Name != p.Name || ti.Type != p.Type {
					t.Errorf("tensor %d is %s %s, want %s %s", i, ti.Name, ti.Type, p.Name, p.Type)
				}
			}
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != 32000 || toks[1] != "<s>" {
				t.Errorf("tokens: %d, %v", len(toks), err)
			}
		})
	}
}

// TestWriteVocabErrors checks the vocabulary is required and must match.
func TestWriteVocabErrors(t *testing.T) {
	mini, _ := Lookup("mini")
	if _, err := Write(&bytes.Buffer{}, Options{Shape: mini, Type: F16}); !errors.Is(err, ErrVocab) {
		t.Errorf("no vocabulary: %v, want ErrVocab", err)
	}
	gpt2 := openShared(t, "ref/vocab/ggml-vocab-gpt-2.gguf")
	if _, err := Write(&bytes.Buffer{}, Options{Shape: mini, Type: F16, Vocab: gpt2}); !errors.Is(err, ErrVocab) {
		t.Errorf("50257-token vocabulary for a 32000-token shape: %v, want ErrVocab", err)
	}
}

// TestWriteFile checks the file lands at its path, and nothing is left
// behind when writing fails.
func TestWriteFile(t *testing.T) {
	vocab := openShared(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	mini, _ := Lookup("mini")
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	n, err := WriteFile(path, Options{Shape: mini, Type: F16, Seed: 3, Vocab: vocab})
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.FileSize != n {
		t.Errorf("file is %d bytes, WriteFile said %d", f.FileSize, n)
	}
	if _, err := WriteFile(filepath.Join(dir, "bad.gguf"), Options{Shape: mini, Type: F16}); err == nil {
		t.Error("WriteFile without a vocabulary succeeded")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	left2, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left)+len(left2) != 1 {
		t.Errorf("files left: %v %v", left, left2)
	}
}

// TestParseFileType checks names round-trip and bad names fail.
func TestParseFileType(t *testing.T) {
	for _, ft := range []FileType{F32, F16, Q8_0, Q4_K_M} {
		got, err := ParseFileType(ft.String())
		if err != nil || got != ft {
			t.Errorf("ParseFileType(%q) = %v, %v", ft.String(), got, err)
		}
	}
	if _, err := ParseFileType("q4_0"); err == nil {
		t.Error("q4_0 accepted")
	}
}
