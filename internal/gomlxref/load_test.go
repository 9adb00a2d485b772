package gomlxref

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// small is a valid configuration the error cases below break.
var small = spec{arch: "llama", embd: 24, layers: 1, heads: 3, kvHeads: 1, headDim: 8, ropeDim: 8, ff: 19, vocab: 70,
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

// withTensor returns ts with r added, or replacing the tensor of its name.
func withTensor(ts []rawTensor, r rawTensor) []rawTensor {
	out := slices.Clone(ts)
	for i := range out {
		if out[i].name == r.name {
			out[i] = r
			return out
		}
	}
	return append(out, r)
}

// withoutTensor returns ts without the named tensor.
func withoutTensor(ts []rawTensor, name string) []rawTensor {
	return slices.DeleteFunc(slices.Clone(ts), func(r rawTensor) bool { return r.name == name })
}

// vecTensor is an n-value vector of v.
func vecTensor(name string, n int, v float32) rawTensor {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = v
	}
	return rawTensor{name, []uint64{uint64(n)}, vals}
}

// TestLoadErrors checks that broken files give an *Error wrapping the
// right sentinel, never a panic: the llama keys and tensors, then what
// each other family requires or refuses.
func TestLoadErrors(t *testing.T) {
	keys, ts := small.keys(), small.tensors()
	u := gguf.Uint32Value
	f32 := gguf.Float32Value
	reshaped := withTensor(ts, rawTensor{"blk.0.attn_k.weight", []uint64{24, 16}, make([]float32, 24*16)})
	yarn := withKey(keys, "llama.rope.scaling.type", gguf.StringValue("yarn"))
	q2, q3, gr := small, small, small
	q2.arch, q2.biases = "qwen2", "qkv"
	q3.arch = "qwen3"
	gr.arch, gr.attnScale, gr.embedScale, gr.residScale, gr.logitScale = "granite", 0.125, 12, 0.22, 8
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
		{"longrope", withKey(keys, "llama.rope.scaling.type", gguf.StringValue("longrope")), ts, ErrUnsupported},
		{"negative base", withKey(keys, "llama.rope.freq_base", f32(-1)), ts, ErrInvalid},
		{"zero factor", withKey(keys, "llama.rope.scaling.factor", f32(0)), ts, ErrInvalid},
		{"zero attn_factor", withKey(keys, "llama.rope.scaling.attn_factor", f32(0)), ts, ErrInvalid},
		{"yarn without context length", withoutKey(yarn, "llama.context_length"), ts, ErrMissing},
		{"yarn with base 1", withKey(yarn, "llama.rope.freq_base", f32(1)), ts, ErrInvalid},
		{"yarn original context 2^31", withKey(yarn, "llama.rope.scaling.original_context_length", u(1<<31)), ts, ErrInvalid},
		{"no epsilon", withoutKey(keys, "llama.attention.layer_norm_rms_epsilon"), ts, ErrMissing},
		{"experts", withKey(keys, "llama.expert_count", u(8)), ts, ErrUnsupported},
		{"no token_embd", keys, withoutTensor(ts, "token_embd.weight"), ErrMissing},
		{"no ffn_down", keys, withoutTensor(ts, "blk.0.ffn_down.weight"), ErrMissing},
		{"attn_k shape", keys, reshaped, ErrInvalid},
		{"unused tensor", keys, withTensor(ts, vecTensor("blk.0.ffn_up.bias", 19, 0)), ErrUnsupported},
		{"q bias length", keys, withTensor(ts, vecTensor("blk.0.attn_q.bias", 23, 0)), ErrInvalid},
		{"rope_freqs length", keys, withTensor(ts, vecTensor("rope_freqs.weight", 8, 1)), ErrInvalid},
		{"rope_freqs zero", keys, withTensor(ts, vecTensor("rope_freqs.weight", 4, 0)), ErrInvalid},
		{"rope_freqs infinite", keys, withTensor(ts, vecTensor("rope_freqs.weight", 4, float32(math.Inf(1)))), ErrInvalid},
		{"qwen2 without k bias", q2.keys(), withoutTensor(q2.tensors(), "blk.0.attn_k.bias"), ErrMissing},
		{"qwen2 output bias", q2.keys(), withTensor(q2.tensors(), vecTensor("blk.0.attn_output.bias", 24, 0)), ErrUnsupported},
		{"qwen2 rope_freqs", q2.keys(), withTensor(q2.tensors(), vecTensor("rope_freqs.weight", 4, 1)), ErrUnsupported},
		{"qwen3 without k norm", q3.keys(), withoutTensor(q3.tensors(), "blk.0.attn_k_norm.weight"), ErrMissing},
		{"qwen3 q norm length", q3.keys(), withTensor(q3.tensors(), vecTensor("blk.0.attn_q_norm.weight", 24, 1)), ErrInvalid},
		{"qwen3 q bias", q3.keys(), withTensor(q3.tensors(), vecTensor("blk.0.attn_q.bias", 24, 0)), ErrUnsupported},
		{"granite without logit scale", withoutKey(gr.keys(), "granite.logit_scale"), gr.tensors(), ErrMissing},
		{"granite rope switch type", withKey(gr.keys(), "granite.rope.scaling.finetuned", u(1)), gr.tensors(), ErrInvalid},
		{"yarn_log_multiplier", withKey(yarn, "llama.rope.scaling.yarn_log_multiplier", f32(0.1)), ts, ErrUnsupported},
		{"yarn_beta_fast", withKey(keys, "llama.rope.scaling.yarn_beta_fast", f32(16)), ts, ErrUnsupported},
		{"granite zero logit scale", withKey(gr.keys(), "granite.logit_scale", f32(0)), gr.tensors(), ErrInvalid},
		{"granite NaN attention scale", withKey(gr.keys(), "granite.attention.scale", f32(float32(math.NaN()))), gr.tensors(), ErrInvalid},
	}
	for _, tc := range tests {
		_, err := Load(encode(t, tc.keys, tc.ts))
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want an *Error wrapping %v", tc.name, err, tc.want)
		}
	}
	for _, sp := range []spec{small, q2, q3, gr} {
		if _, err := Load(sp.file(t)); err != nil {
			t.Errorf("valid %s file: %v", sp.arch, err)
		}
	}
	grKeys := gr.keys()
	for _, k := range []string{"granite.attention.scale", "granite.embedding_scale", "granite.residual_scale"} {
		grKeys = withoutKey(grKeys, k)
	}
	if _, err := Load(encode(t, grKeys, gr.tensors())); err != nil {
		t.Errorf("granite without its optional scales: %v", err)
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

// TestReadConfigFamilies checks what ReadConfig derives for each family
// and scaling: pairing, scales, RoPE scale, YaRN's original context and
// attn_factor, against values stated here.
func TestReadConfigFamilies(t *testing.T) {
	q2, q3, gr := small, small, small
	q2.arch, q2.biases, q2.scaling, q2.factor, q2.origCtx = "qwen2", "qkv", "yarn", 4, 32768
	q3.arch, q3.scaling, q3.factor, q3.attnFactor = "qwen3", "yarn", 8, 1.5
	gr.arch, gr.attnScale, gr.embedScale, gr.residScale, gr.logitScale = "granite", 0.0078125, 12, 0.22, 8
	gr.scaling, gr.factor = "none", 4
	ll := small
	ll.scaling, ll.factor, ll.attnFactor = "legacy", 2, 0.8
	grNoRope, grBare := gr, gr
	grNoRope.ropeSwitch = "off"
	grBare.attnScale, grBare.embedScale, grBare.residScale = 0, 0, 0 // keys left out
	for _, tc := range []struct {
		s    spec
		want Config
	}{
		{grNoRope, Config{Arch: "granite", RopeScale: 1, RopeAttnFactor: 1, NoRope: true,
			AttnScale: 0.0078125, EmbedScale: 12, ResidualScale: float64(float32(0.22)), LogitScale: 8}},
		{grBare, Config{Arch: "granite", RopeScale: 1, RopeAttnFactor: 1,
			AttnScale: 1 / math.Sqrt(8), EmbedScale: 1, ResidualScale: 1, LogitScale: 8}},
		{q2, Config{Arch: "qwen2", NeoX: true, RopeScale: 0.25, YaRN: true, YarnOrigCtx: 32768, RopeAttnFactor: 1,
			AttnScale: 1 / math.Sqrt(8), EmbedScale: 1, ResidualScale: 1, LogitScale: 1}},
		{q3, Config{Arch: "qwen3", NeoX: true, RopeScale: 0.125, YaRN: true, YarnOrigCtx: ctxLen, RopeAttnFactor: 1.5,
			AttnScale: 1 / math.Sqrt(8), EmbedScale: 1, ResidualScale: 1, LogitScale: 1}},
		{gr, Config{Arch: "granite", RopeScale: 1, RopeAttnFactor: 1,
			AttnScale: 0.0078125, EmbedScale: 12, ResidualScale: float64(float32(0.22)), LogitScale: 8}},
		{ll, Config{Arch: "llama", RopeScale: 0.5, RopeAttnFactor: float64(float32(0.8)),
			AttnScale: 1 / math.Sqrt(8), EmbedScale: 1, ResidualScale: 1, LogitScale: 1}},
	} {
		got, err := ReadConfig(tc.s.file(t))
		if err != nil {
			t.Errorf("%s: %v", tc.s.arch, err)
			continue
		}
		w := tc.want
		if got.Arch != w.Arch || got.NeoX != w.NeoX || got.RopeScale != w.RopeScale || got.YaRN != w.YaRN ||
			got.YarnOrigCtx != w.YarnOrigCtx || got.RopeAttnFactor != w.RopeAttnFactor || got.AttnScale != w.AttnScale ||
			got.EmbedScale != w.EmbedScale || got.ResidualScale != w.ResidualScale || got.LogitScale != w.LogitScale ||
			got.NoRope != w.NoRope {
			t.Errorf("%s: got %+v, want %+v in the fields compared", tc.s.arch, got, w)
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

// TestGraniteRopeSwitch checks granite.rope.scaling.finetuned false by a
// property of one attention layer without positions: the last position's
// logits do not depend on the order of the tokens before it (its keys
// and values are functions of each token alone). With the switch on (or
// absent) they do.
func TestGraniteRopeSwitch(t *testing.T) {
	gr := small
	gr.arch, gr.layers, gr.attnScale, gr.embedScale, gr.residScale, gr.logitScale = "granite", 1, 0.125, 4, 0.5, 2
	tokens, swapped := []int32{5, 17, 3, 9, 40}, []int32{17, 5, 9, 3, 40}
	for _, sw := range []string{"off", "on", ""} {
		gr.ropeSwitch = sw
		m, err := Load(gr.file(t))
		if err != nil {
			t.Fatal(err)
		}
		a, err := m.Forward(tokens)
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.Forward(swapped)
		if err != nil {
			t.Fatal(err)
		}
		d := maxDeviation(a[len(a)-1:], b[len(b)-1:])
		t.Logf("switch %q: last row moves %.3g when the earlier tokens are reordered", sw, d)
		if off := sw == "off"; off && d > 1e-5 || !off && d <= detectable {
			t.Errorf("switch %q: last row moves %.3g when the earlier tokens are reordered", sw, d)
		}
	}
}
