package gguf

import (
	"bytes"
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
}

var readmeFacts = []modelFacts{
	{"stories260K.gguf", 64, 5, 8, 4, 172, 128, 512, map[tensor.Type]int{tensor.F32: -1}},
	{"llama-2-tiny-random.gguf", 8, 1, 2, 2, 32, 0, 32000, map[tensor.Type]int{tensor.F16: -1, tensor.F32: -1}},
	{"mini-24m-f16.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.F16: -1, tensor.F32: -1}},
	{"mini-24m-q8_0.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.Q8_0: -1, tensor.F32: -1}},
	{"mini-24m-q4_k_m.gguf", 256, 2, 4, 2, 768, 512, 32000, map[tensor.Type]int{tensor.Q4_K: 13, tensor.Q6_K: 3, tensor.F32: 5}},
	{"small-110m-q4_k_m.gguf", 768, 12, 12, 12, 2048, 1024, 32000, map[tensor.Type]int{tensor.Q4_K: -1, tensor.Q6_K: -1, tensor.F32: -1}},
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
