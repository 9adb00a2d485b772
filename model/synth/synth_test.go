package synth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/quant"
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
			plan, err := Plan(s, Q4_K_M)
			if err != nil {
				t.Fatal(err)
			}
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

// TestPlanTypes checks the type mix of each file type against counts
// derived by hand from llama_tensor_get_type for each real shape (the
// counts llama.cpp's loader prints as "type q4_K: N tensors").
func TestPlanTypes(t *testing.T) {
	count := func(p []TensorPlan) map[tensor.Type]int {
		m := map[tensor.Type]int{}
		for _, x := range p {
			m[x.Type]++
		}
		return m
	}
	const (
		f32, f16, q8, q5_0 = tensor.F32, tensor.F16, tensor.Q8_0, tensor.Q5_0
		q4k, q6k           = tensor.Q4_K, tensor.Q6_K
	)
	tests := []struct {
		shape string
		ft    FileType
		want  map[tensor.Type]int
	}{
		// use_more_bits(i, 22): i < 2, i >= 19, (i-2)%3 == 2 → 0 1 4 7 10 13 16 19 20 21.
		{"tinyllama-1.1b", Q4_K_M, map[tensor.Type]int{f32: 45, q6k: 21, q4k: 22*7 - 20 + 1}},
		{"tinyllama-1.1b", Q8_0, map[tensor.Type]int{f32: 45, q8: 22*7 + 2}},
		{"tinyllama-1.1b", F16, map[tensor.Type]int{f32: 45, f16: 22*7 + 2}},
		// Tied: token_embd is the output, Q6_K. 8 layers get more bits.
		{"llama-3.2-1b", Q4_K_M, map[tensor.Type]int{f32: 34, q6k: 17, q4k: 96}},
		{"llama-3.2-1b", F16, map[tensor.Type]int{f32: 34, f16: 16*7 + 1}},
		{"llama-3.1-8b", Q4_K_M, map[tensor.Type]int{f32: 66, q6k: 33, q4k: 193}},
		{"mistral-nemo-12b", Q4_K_M, map[tensor.Type]int{f32: 81, q6k: 41, q4k: 241}},
		// 896-wide rows are not whole K-quant blocks: Q4_K falls back to
		// Q5_0, Q6_K to Q8_0, the tied output to Q8_0. ffn_down's rows of
		// 4864 are whole blocks. 12 layers get more bits.
		{"qwen2.5-0.5b", Q4_K_M, map[tensor.Type]int{f32: 121, q5_0: 132, q8: 13, q4k: 12, q6k: 12}},
		{"qwen2.5-0.5b", Q8_0, map[tensor.Type]int{f32: 121, q8: 24*7 + 1}},
		{"qwen2.5-1.5b", Q4_K_M, map[tensor.Type]int{f32: 1 + 28*5, q6k: 1 + 2*14, q4k: 28*7 - 28}},
		{"qwen2.5-7b", Q4_K_M, map[tensor.Type]int{f32: 141, q6k: 29, q4k: 169}},
		{"qwen3-0.6b", Q4_K_M, map[tensor.Type]int{f32: 1 + 28*4, q6k: 1 + 2*14, q4k: 28*7 - 28}},
		{"qwen3-4b", Q4_K_M, map[tensor.Type]int{f32: 1 + 36*4, q6k: 1 + 2*18, q4k: 36*7 - 36}},
		{"granite-3.1-2b", Q4_K_M, map[tensor.Type]int{f32: 81, q6k: 41, q4k: 240}},
		// Two layers: use_more_bits(1, 2) only.
		{"qwen2-tiny-odd", Q4_K_M, map[tensor.Type]int{f32: 1 + 2*5, q8: 2, q5_0: 5 + 6, q4k: 1, q6k: 1}},
		{"qwen3-tiny", Q4_K_M, map[tensor.Type]int{f32: 1 + 2*4, q6k: 1 + 2, q4k: 2*7 - 2}},
		{"llama3-tiny", F32, map[tensor.Type]int{f32: 3 + 2*9}}, // output_norm, rope_freqs, token_embd
	}
	for _, tc := range tests {
		t.Run(tc.shape+" "+tc.ft.String(), func(t *testing.T) {
			s, ok := Lookup(tc.shape)
			if !ok {
				t.Fatalf("no shape %q", tc.shape)
			}
			plan, err := Plan(s, tc.ft)
			if err != nil {
				t.Fatal(err)
			}
			if got := count(plan); !mapsEqual(got, tc.want) {
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
			plan, err := Plan(mini, ft)
			if err != nil {
				t.Fatal(err)
			}
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
	if st, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if st.Mode().Perm() != 0o644 {
		t.Errorf("file mode %v, want 0644", st.Mode().Perm())
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

// TestParseFileType checks names round-trip, llama-quantize's aliases
// parse, and bad names fail.
func TestParseFileType(t *testing.T) {
	for i := range FileTypeNames() {
		ft := FileType(i)
		got, err := ParseFileType(strings.ToUpper(ft.String()))
		if err != nil || got != ft {
			t.Errorf("ParseFileType(%q) = %v, %v", ft.String(), got, err)
		}
	}
	for alias, want := range map[string]FileType{"q4_k": Q4_K_M, "Q3_K": Q3_K_M, "q5_k": Q5_K_M} {
		if got, err := ParseFileType(alias); err != nil || got != want {
			t.Errorf("ParseFileType(%q) = %v, %v; want %v", alias, got, err, want)
		}
	}
	for _, bad := range []string{"", "q4", "iq2_xs", "q6_k_m", "tq1_0"} {
		if _, err := ParseFileType(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestWritePool checks the benchmark mode: the same bytes for any thread
// count, other bytes for another seed, the planned tensor table, vectors
// and the F32 router as without the pool, and every pooled matrix made of
// at most PoolRows distinct rows (more than one) that hold weights of
// the right spread.
func TestWritePool(t *testing.T) {
	const poolRows = 16
	s, ok := Lookup("qwen3moe-tiny")
	if !ok {
		t.Fatal("no shape qwen3moe-tiny")
	}
	write := func(seed uint64, threads, pool int) []byte {
		var b bytes.Buffer
		if _, err := Write(&b, Options{Shape: s, Type: Q4_K_M, Seed: seed, Threads: threads, PoolRows: pool}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	ab := write(1, 1, poolRows)
	if sha256.Sum256(ab) != sha256.Sum256(write(1, 3, poolRows)) {
		t.Fatal("same seed and pool, different bytes for another thread count")
	}
	if bytes.Equal(ab, write(2, 2, poolRows)) {
		t.Fatal("different seeds, same bytes")
	}
	a, err := gguf.ParseBytes(ab, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	exact, err := gguf.ParseBytes(write(1, 2, 0), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if d, err := a.String("general.description"); err != nil || !strings.Contains(d, "pool of 16") {
		t.Errorf("general.description %q, %v: does not name the pool", d, err)
	}
	if _, err := model.Load(a); err != nil {
		t.Fatal(err)
	}
	plan, err := Plan(s, Q4_K_M)
	if err != nil {
		t.Fatal(err)
	}
	pooled := 0
	for i, p := range plan {
		ti := &a.Tensors[i]
		if ti.Name != p.Name || ti.Type != p.Type || !slices.Equal(ti.Dims, p.Dims) {
			t.Fatalf("tensor %d is %s %s %v, want %s %s %v", i, ti.Name, ti.Type, ti.Dims, p.Name, p.Type, p.Dims)
		}
		data, err := a.TensorData(&a.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		want, err := exact.TensorData(&exact.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		if p.init != initWeight || p.Type == tensor.F32 {
			if !bytes.Equal(data, want) {
				t.Errorf("%s: not pooled, but differs from the file without a pool", p.Name)
			}
			continue
		}
		pooled++
		rb, err := p.Type.Bytes(p.Dims[:1])
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]bool{}
		for o := 0; o < len(data); o += int(rb) {
			rows[string(data[o:o+int(rb)])] = true
		}
		if n := len(data) / int(rb); len(rows) > poolRows || n > 2*poolRows && len(rows) < 2 {
			t.Errorf("%s: %d distinct rows of %d, want at most %d and more than one", p.Name, len(rows), n, poolRows)
		}
		vals := make([]float32, int(p.Dims[0]))
		if err := quant.Dequantize(p.Type, data[:rb], vals); err != nil {
			t.Fatal(err)
		}
		var ss float64
		for _, v := range vals {
			ss += float64(v) * float64(v)
		}
		if sd := math.Sqrt(ss / float64(len(vals))); sd < 0.015 || sd > 0.025 {
			t.Errorf("%s: first row's spread %.4f, want about 0.02", p.Name, sd)
		}
	}
	if pooled == 0 {
		t.Fatal("no tensor came from the pool")
	}
	for _, n := range []int{-1, maxPoolRows + 1} {
		if _, err := Write(io.Discard, Options{Shape: s, Type: Q4_K_M, PoolRows: n}); err == nil {
			t.Errorf("PoolRows %d accepted", n)
		}
	}
}
