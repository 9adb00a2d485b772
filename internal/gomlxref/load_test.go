package gomlxref

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// small is a valid configuration the error cases below break.
var small = spec{embd: 24, layers: 1, heads: 3, kvHeads: 1, headDim: 8, ropeDim: 8, ff: 19, vocab: 70,
	eps: 1e-5, ropeKey: true, vocabKey: "vocab_size", seed: 9}

// withKey returns keys with k set to v (added when absent).
func withKey(keys []gguf.KV, k string, v gguf.Value) []gguf.KV {
	out := slices.Clone(keys)
	for i := range out {
		if out[i].Key == k {
			out[i].Value = v
			return out
		}
	}
	return append(out, gguf.KV{Key: k, Value: v})
}

// withoutKey returns keys without k.
func withoutKey(keys []gguf.KV, k string) []gguf.KV {
	return slices.DeleteFunc(slices.Clone(keys), func(kv gguf.KV) bool { return kv.Key == k })
}

// TestLoadErrors checks that broken files give an *Error wrapping the
// right sentinel, never a panic.
func TestLoadErrors(t *testing.T) {
	keys, ts := small.keys(), small.tensors()
	u := gguf.Uint32Value
	dropTensor := func(name string) []rawTensor {
		return slices.DeleteFunc(slices.Clone(ts), func(r rawTensor) bool { return r.name == name })
	}
	reshaped := slices.Clone(ts)
	for i := range reshaped {
		if reshaped[i].name == "blk.0.attn_k.weight" {
			reshaped[i] = rawTensor{reshaped[i].name, []uint64{24, 16}, make([]float32, 24*16)}
		}
	}
	extra := append(slices.Clone(ts), rawTensor{"rope_freqs.weight", []uint64{4}, make([]float32, 4)})
	tests := []struct {
		name string
		keys []gguf.KV
		ts   []rawTensor
		want error
	}{
		{"architecture", withKey(keys, "general.architecture", gguf.StringValue("gpt2")), ts, ErrUnsupported},
		{"no architecture", withoutKey(keys, "general.architecture"), ts, ErrMissing},
		{"no embedding length", withoutKey(keys, "llama.embedding_length"), ts, ErrMissing},
		{"embedding length type", withKey(keys, "llama.embedding_length", gguf.StringValue("24")), ts, ErrInvalid},
		{"zero layers", withKey(keys, "llama.block_count", u(0)), ts, ErrInvalid},
		{"kv heads do not divide", withKey(keys, "llama.attention.head_count_kv", u(2)), ts, ErrInvalid},
		{"more kv heads than heads", withKey(keys, "llama.attention.head_count_kv", u(4)), ts, ErrInvalid},
		{"heads do not split embedding", withKey(keys, "llama.attention.head_count", u(5)), ts, ErrMissing},
		{"value length", withKey(keys, "llama.attention.value_length", u(4)), ts, ErrUnsupported},
		{"odd rope dim", withKey(keys, "llama.rope.dimension_count", u(5)), ts, ErrInvalid},
		{"rope dim past head", withKey(keys, "llama.rope.dimension_count", u(10)), ts, ErrInvalid},
		{"yarn", withKey(keys, "llama.rope.scaling.type", gguf.StringValue("yarn")), ts, ErrUnsupported},
		{"negative base", withKey(keys, "llama.rope.freq_base", gguf.Float32Value(-1)), ts, ErrInvalid},
		{"zero factor", withKey(keys, "llama.rope.scaling.factor", gguf.Float32Value(0)), ts, ErrInvalid},
		{"no epsilon", withoutKey(keys, "llama.attention.layer_norm_rms_epsilon"), ts, ErrMissing},
		{"experts", withKey(keys, "llama.expert_count", u(8)), ts, ErrUnsupported},
		{"no token_embd", keys, dropTensor("token_embd.weight"), ErrMissing},
		{"no ffn_down", keys, dropTensor("blk.0.ffn_down.weight"), ErrMissing},
		{"attn_k shape", keys, reshaped, ErrInvalid},
		{"unused tensor", keys, extra, ErrUnsupported},
	}
	for _, tc := range tests {
		_, err := Load(encode(t, tc.keys, tc.ts))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want an *Error wrapping %v", tc.name, err, tc.want)
		}
	}
	m, err := Load(encode(t, keys, ts))
	if err != nil {
		t.Fatalf("valid file: %v", err)
	}
	for _, toks := range [][]int32{nil, {1, 70}, {-1}, make([]int32, MaxTokens+1)} {
		if _, err := m.Forward(toks); !errors.Is(err, ErrInvalid) {
			t.Errorf("Forward(%d tokens, first %v): got %v, want ErrInvalid", len(toks), toks[:min(len(toks), 2)], err)
		}
	}
}

// TestStories260K compares the engine with the reference on a real
// trained F32 model (stories260K: 8 heads over 4 KV heads, 5 blocks).
func TestStories260K(t *testing.T) {
	path := sharedModel(t, "stories260K.gguf")
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(260, 1))
	tokens := []int32{1} // BOS, then random ids
	for len(tokens) < 16 {
		tokens = append(tokens, int32(r.IntN(ref.Config.NVocab)))
	}
	want, err := ref.Forward(tokens)
	if err != nil {
		t.Fatal(err)
	}
	for _, llama := range []bool{false, true} {
		d := maxDeviation(engineLogits(t, f, tokens, []int{9, 1, 6}, llama), want)
		t.Logf("llama order %v: max |Δlogit| %.3g", llama, d)
		if d > tolerance {
			t.Errorf("llama order %v: max |Δlogit| %.3g exceeds %g", llama, d, tolerance)
		}
	}
}

// sharedModel returns the path of a model in the project's shared data.
// shared.Find resolves the folder beside the nearest go.mod, which from
// this nested module is the wrong one, so the repository root (two levels
// up) is tried first; without the data the test skips, or fails when CI
// is set.
func sharedModel(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv(shared.EnvDir)
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	p := filepath.Join(dir, "models", name)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("test data missing on CI: %s", p)
		}
		t.Skipf("test data missing: %s (clone the project beside its shared/ folder to run this test)", p)
	}
	return p
}
