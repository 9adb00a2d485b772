package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// modelFacts are the facts shared/models/README.md states about a model.
type modelFacts struct {
	file                        string
	embd, blocks, heads, kv, ff uint32
	ctx                         uint32 // 0: not checked
	vocab                       int
	types                       map[tensor.Type]int // tensor count per type; -1: at least one
	sha256                      string
	check                       func(t *testing.T, f *File) // the README's other facts
}

// mini24m checks the facts README.md gives for the mini-24m models.
func mini24m(t *testing.T, f *File) {
	if n, err := f.Uint32("llama.rope.dimension_count"); err != nil || n != 64 {
		t.Errorf("llama.rope.dimension_count %d, %v; want 64", n, err)
	}
	if x, err := f.Float32("llama.rope.freq_base"); err != nil || x != 10000 {
		t.Errorf("llama.rope.freq_base %g, %v; want 10000", x, err)
	}
}

var readmeFacts = []modelFacts{
	{"stories260K.gguf", 64, 5, 8, 4, 172, 128, 512, map[tensor.Type]int{tensor.F32: -1},
		"047bf46455a544931cff6fef14d7910154c56afbc23ab1c5e56a72e69912c04b", func(t *testing.T, f *File) {
			// Written without these keys: the defaults apply.
			for _, k := range []string{"llama.rope.freq_base", "tokenizer.ggml.add_bos_token"} {
				if _, ok := f.Lookup(k); ok {
					t.Errorf("%s present; the README says it is absent", k)
				}
			}
		}},
	{"llama-2-tiny-random.gguf", 8, 1, 2, 2, 32, 0, 32000, map[tensor.Type]int{tensor.F16: -1, tensor.F32: -1},
		"81f226c62d28ed4a1a9b9fa080fcd9f0cc40e0f9d5680036583ff98fbcd035cb", nil},
	{"mini-24m-f16.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.F16: -1, tensor.F32: -1},
		"37575cfcf1700b82d1279ff4c022618390e10ecee88ce9643637de953f08b366", mini24m},
	{"mini-24m-q8_0.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.Q8_0: -1, tensor.F32: -1},
		"e70e483284ce5f875e3420312b2704f5c50e56087274fa111a0eaeaafeb64517", mini24m},
	{"mini-24m-q4_k_m.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.Q4_K: 13, tensor.Q6_K: 3, tensor.F32: 5},
		"de8a4743efdc3704fbe99845ae8b2fd44f99a0a136eb5e714482110be6503679", mini24m},
	{"small-110m-q4_k_m.gguf", 768, 12, 12, 12, 2048, 1024, 32000, map[tensor.Type]int{tensor.Q4_K: -1, tensor.Q6_K: -1, tensor.F32: -1},
		"fe97dd09697f12e2fe0e7b0f24b51d52f42d4d15fe9a598509e463e4c1afd472", func(t *testing.T, f *File) {
			if out, ok := f.Tensor("output.weight"); !ok || out.Type != tensor.Q6_K {
				t.Errorf("output.weight: %v; the README says Q6_K", out)
			}
		}},
}

func TestModels(t *testing.T) {
	for _, m := range readmeFacts {
		t.Run(m.file, func(t *testing.T) {
			f, err := Open(shared.Model(t, m.file), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Architecture() != "llama" {
				t.Errorf("architecture %q", f.Architecture())
			}
			for key, want := range map[string]uint32{
				"llama.embedding_length": m.embd, "llama.block_count": m.blocks,
				"llama.attention.head_count": m.heads, "llama.attention.head_count_kv": m.kv,
				"llama.feed_forward_length": m.ff, "llama.context_length": m.ctx,
			} {
				got, err := f.Uint32(key)
				if err != nil {
					t.Errorf("%s: %v", key, err)
				} else if want != 0 && got != want {
					t.Errorf("%s = %d, want %d", key, got, want)
				}
			}
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != m.vocab {
				t.Errorf("tokens: %d, %v; want %d", len(toks), err, m.vocab)
			}
			if sc, err := f.Float32s("tokenizer.ggml.scores"); err == nil && len(sc) != m.vocab {
				t.Errorf("scores: %d entries", len(sc))
			}
			checkTypes(t, f, m.types)
			checkData(t, f, m)
			if m.check != nil {
				m.check(t, f)
			}
			// The bytes parsed are the file the README describes.
			fh, err := os.Open(shared.Model(t, m.file))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			h := sha256.New()
			if _, err := io.Copy(h, fh); err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != m.sha256 {
				t.Errorf("sha256 %s, the README says %s", got, m.sha256)
			}
		})
	}
}

func checkTypes(t *testing.T, f *File, want map[tensor.Type]int) {
	t.Helper()
	got := map[tensor.Type]int{}
	for _, ti := range f.Tensors {
		got[ti.Type]++
	}
	for typ, n := range want {
		if (n < 0 && got[typ] == 0) || (n >= 0 && got[typ] != n) {
			t.Errorf("%d tensors of type %s, want %d", got[typ], typ, n)
		}
	}
	for typ := range got {
		if _, ok := want[typ]; !ok {
			t.Errorf("unexpected tensor type %s", typ)
		}
	}
}

// checkData checks the token embedding's shape and that the mapped data
// equals the same bytes read through the fallback path.
func checkData(t *testing.T, f *File, m modelFacts) {
	t.Helper()
	if !f.Mapped() {
		t.Error("Open did not map the file")
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok {
		t.Fatal("no token_embd.weight")
	}
	if len(emb.Dims) != 2 || emb.Dims[0] != uint64(m.embd) || emb.Dims[1] != uint64(m.vocab) {
		t.Errorf("token_embd.weight dims %v", emb.Dims)
	}
	fh, err := os.Open(shared.Model(t, m.file))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	g, err := Parse(fh, st.Size(), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i := range f.Tensors {
		a, err := f.TensorData(&f.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(a))
		if i%4 != 0 && f.FileSize > 32<<20 {
			continue // a sample is enough for the large file
		}
		b, err := g.TensorData(&g.Tensors[i])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) || int64(len(a)) != f.Tensors[i].Size {
			t.Fatalf("tensor %s: mapped and read data differ", f.Tensors[i].Name)
		}
	}
	if total > f.FileSize-f.DataOffset {
		t.Errorf("tensor bytes %d exceed the data section %d", total, f.FileSize-f.DataOffset)
	}
}

// TestVocabFiles parses the tokenizer-only files and checks the vocabulary
// sizes ref/README.md gives.
func TestVocabFiles(t *testing.T) {
	dir := shared.Path(t, "ref/vocab")
	for name, want := range map[string]struct {
		model string
		n     int
	}{
		"llama-spm": {"llama", 32000}, "gpt-2": {"gpt2", 50257}, "deepseek-llm": {"gpt2", 102400},
		"starcoder": {"gpt2", 49152}, "falcon": {"gpt2", 65024},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := Open(filepath.Join(dir, "ggml-vocab-"+name+".gguf"), DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			toks, err := f.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != want.n {
				t.Fatalf("tokens: %d, %v; want %d", len(toks), err, want.n)
			}
			if model, _ := f.String("tokenizer.ggml.model"); model != want.model {
				t.Errorf("tokenizer.ggml.model %q, want %q", model, want.model)
			}
			if want.model == "gpt2" {
				if merges, err := f.Strings("tokenizer.ggml.merges"); err != nil || len(merges) == 0 {
					t.Errorf("merges: %d, %v", len(merges), err)
				}
			}
			if len(f.Tensors) != 0 {
				t.Errorf("%d tensors in a vocabulary file", len(f.Tensors))
			}
		})
	}
}
