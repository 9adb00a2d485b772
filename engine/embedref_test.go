package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model/synth"
)

// embedSynthEnv names where TestEmbedSynthFile leaves the synthetic
// pooling-last model for llembed (see writeEmbedSynth).
const embedSynthEnv = "LISA_EMBED_SYNTH"

// writeEmbedSynth writes qwen3-tiny (F32, seed 7) with
// qwen3.pooling_type = 3 (last) added, as Qwen3-Embedding files carry
// it, to path. The synthesis is deterministic, so the file is the one
// llembed computed the references of.
func writeEmbedSynth(t *testing.T, path string) { writeSynthPooling(t, path, PoolingLast) }

// writeSynthPooling writes qwen3-tiny with qwen3.pooling_type = pool.
func writeSynthPooling(t *testing.T, path string, pool Pooling) {
	t.Helper()
	shape, ok := synth.Lookup("qwen3-tiny")
	if !ok {
		t.Fatal("no qwen3-tiny shape")
	}
	base := filepath.Join(t.TempDir(), "base.gguf")
	if _, err := synth.WriteFile(base, synth.Options{Shape: shape, Type: synth.FileType(0), Seed: 7}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(base, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	for _, kv := range f.KV {
		if kv.Key == "general.alignment" {
			continue
		}
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add("qwen3.pooling_type", gguf.Uint32Value(uint32(pool))); err != nil {
		t.Fatal(err)
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, data); err != nil {
			t.Fatal(err)
		}
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(out); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEmbedSynthFile writes the synthetic pooling-last model where
// $LISA_EMBED_SYNTH says, for regenerating the reference; it is skipped
// otherwise.
func TestEmbedSynthFile(t *testing.T) {
	path := os.Getenv(embedSynthEnv)
	if path == "" {
		t.Skip("set " + embedSynthEnv + " to write the synthetic pooling-last model")
	}
	writeEmbedSynth(t, path)
}

// embedRef is llembed's output (bench/llamacpp/llembed.c).
type embedRef struct {
	ModelFile string `json:"model_file"`
	NEmbd     int    `json:"n_embd"`
	Inputs    []struct {
		Text      string    `json:"text"`
		Pooling   int       `json:"pooling"`
		IDs       []int32   `json:"ids"`
		Embedding []float32 `json:"embedding"`
	} `json:"inputs"`
}

// TestEmbedMatchesLlamaCpp compares the engine's embeddings with
// llama.cpp's (testdata/embed-*.json, made by bench/llamacpp/embed.sh):
// the same token ids, the pooling llama.cpp applied, and cosine ≥ 0.9999.
func TestEmbedMatchesLlamaCpp(t *testing.T) {
	cases := []struct {
		ref   string
		model func(t *testing.T) string
	}{
		{"embed-stories260K-mean.json", func(t *testing.T) string { return filepath.Join(shared.Dir(t), stories) }},
		{"embed-mini-24m-f16-mean.json", func(t *testing.T) string { return shared.Path(t, "models/mini-24m-f16.gguf") }},
		{"embed-qwen3-tiny-last.json", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "qwen3-tiny-last.gguf")
			writeEmbedSynth(t, p)
			return p
		}},
	}
	for _, c := range cases {
		t.Run(c.ref, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", c.ref))
			if err != nil {
				t.Fatal(err)
			}
			var ref embedRef
			if err := json.Unmarshal(data, &ref); err != nil {
				t.Fatal(err)
			}
			if len(ref.Inputs) < 3 {
				t.Fatalf("%d reference inputs", len(ref.Inputs))
			}
			f, err := gguf.Open(c.model(t), gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(f, Options{CtxSize: 512})
			if err != nil {
				f.Close()
				t.Fatal(err)
			}
			defer e.Close()
			pool, err := e.Pooling()
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range ref.Inputs {
				if int(pool) != in.Pooling {
					t.Errorf("%q: pooling %s, llama.cpp used %d", in.Text, pool, in.Pooling)
				}
				if ids := e.tok.Encode(in.Text, true, false); !equalIDs(ids, in.IDs) {
					t.Errorf("%q: ids %v, llama.cpp %v", in.Text, ids, in.IDs)
				}
				v, n, err := e.Embed(context.Background(), in.Text, nil)
				if err != nil {
					t.Fatal(err)
				}
				if n != len(in.IDs) || len(v) != ref.NEmbd {
					t.Fatalf("%q: %d tokens, %d values; llama.cpp %d, %d", in.Text, n, len(v), len(in.IDs), ref.NEmbd)
				}
				if c := cosine(v, in.Embedding); c < 0.9999 {
					t.Errorf("%q: cosine %v with llama.cpp's embedding", in.Text, c)
				} else {
					t.Logf("%q: cosine %.9f", in.Text, c)
				}
			}
		})
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEmbedRefusesPooling checks that a model whose pooling makes no
// single vector (none: one per token; rank: a reranker's score) is
// refused with unsupported_for_model.
func TestEmbedRefusesPooling(t *testing.T) {
	for _, pool := range []Pooling{PoolingNone, PoolingRank, 9} {
		t.Run(pool.String(), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "m.gguf")
			writeSynthPooling(t, p, pool)
			f, err := gguf.Open(p, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			e, err := New(f, Options{CtxSize: 64})
			if err != nil {
				f.Close()
				t.Fatal(err)
			}
			defer e.Close()
			_, _, err = e.Embed(context.Background(), "hello", nil)
			if ge := gen.AsError(err); ge == nil || ge.Code != gen.CodeUnsupported {
				t.Fatalf("got %v, want unsupported_for_model", err)
			}
		})
	}
}
