package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
)

var errFakeNotFound = errors.New("fake: not found")

// fakeMeta is a metadata map for config tests: values are uint32,
// float32 or string, and a wrong-typed read fails as the GGUF reader's does.
type fakeMeta map[string]any

func (m fakeMeta) get(key string) (any, error) {
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("key %s: %w", key, errFakeNotFound)
	}
	return v, nil
}

func (m fakeMeta) Uint32(key string) (uint32, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	u, ok := v.(uint32)
	if !ok {
		return 0, fmt.Errorf("key %s holds %T", key, v)
	}
	return u, nil
}

func (m fakeMeta) Float32(key string) (float32, error) {
	v, err := m.get(key)
	if err != nil {
		return 0, err
	}
	f, ok := v.(float32)
	if !ok {
		return 0, fmt.Errorf("key %s holds %T", key, v)
	}
	return f, nil
}

func (m fakeMeta) Bool(key string) (bool, error) {
	v, err := m.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("key %s holds %T", key, v)
	}
	return b, nil
}

func (m fakeMeta) String(key string) (string, error) {
	v, err := m.get(key)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("key %s holds %T", key, v)
	}
	return s, nil
}

// baseMeta is a complete, valid llama configuration.
func baseMeta() fakeMeta {
	return fakeMeta{
		"general.architecture":                   "llama",
		"llama.embedding_length":                 uint32(64),
		"llama.block_count":                      uint32(5),
		"llama.attention.head_count":             uint32(8),
		"llama.attention.head_count_kv":          uint32(4),
		"llama.feed_forward_length":              uint32(172),
		"llama.context_length":                   uint32(128),
		"llama.attention.layer_norm_rms_epsilon": float32(1e-5),
		"llama.rope.dimension_count":             uint32(8),
	}
}

// renameArch moves every llama.* key of the metadata to arch.*.
func renameArch(arch string) func(fakeMeta) {
	return func(m fakeMeta) {
		m["general.architecture"] = arch
		for k, v := range m {
			if rest, ok := strings.CutPrefix(k, "llama."); ok {
				delete(m, k)
				m[arch+"."+rest] = v
			}
		}
	}
}

func TestConfigFrom(t *testing.T) {
	type edit = func(fakeMeta)
	set := func(k string, v any) edit { return func(m fakeMeta) { m[k] = v } }
	del := func(k string) edit { return func(m fakeMeta) { delete(m, k) } }
	tests := []struct {
		name    string
		edits   []edit
		wantKey string // "" = success
		wantErr error
		check   func(Config) error
	}{
		{name: "base", check: func(c Config) error {
			want := Config{Arch: "llama", NEmbd: 64, NLayer: 5, NHead: 8, NHeadKV: 4, HeadDim: 8, NFF: 172,
				RopeDim: 8, RopeBase: 10000, RopeScale: 1, RMSEps: 1e-5, NCtxTrain: 128,
				RopeScaling: RopeScalingLinear, RopeOrigCtx: 128, RopeAttnFactor: 1, RopeBetaFast: 32, RopeBetaSlow: 1,
				AttnScale: float32(1 / math.Sqrt(8))}
			if c != want {
				return fmt.Errorf("got %+v, want %+v", c, want)
			}
			return nil
		}},
		{name: "defaults", edits: []edit{del("llama.attention.head_count_kv"), del("llama.rope.dimension_count")},
			check: func(c Config) error {
				if c.NHeadKV != 8 || c.RopeDim != 8 || c.HeadDim != 8 {
					return fmt.Errorf("defaults: %+v", c)
				}
				return nil
			}},
		{name: "scaling", edits: []edit{set("llama.rope.scaling.type", "linear"), set("llama.rope.scaling.factor", float32(4)),
			set("llama.rope.freq_base", float32(500000)), set("llama.vocab_size", uint32(512))},
			check: func(c Config) error {
				if c.RopeScale != 0.25 || c.RopeBase != 500000 || c.NVocab != 512 {
					return fmt.Errorf("scaling: %+v", c)
				}
				return nil
			}},
		{name: "legacy linear scale", edits: []edit{set("llama.rope.scale_linear", float32(2))},
			check: func(c Config) error {
				if c.RopeScale != 0.5 {
					return fmt.Errorf("RopeScale %g", c.RopeScale)
				}
				return nil
			}},
		{name: "explicit key length", edits: []edit{set("llama.embedding_length", uint32(60)), set("llama.attention.key_length", uint32(16)),
			set("llama.rope.dimension_count", uint32(16))},
			check: func(c Config) error {
				if c.HeadDim != 16 || c.QDim() != 128 || c.KVDim() != 64 {
					return fmt.Errorf("head dim: %+v", c)
				}
				return nil
			}},
		{name: "no arch", edits: []edit{del("general.architecture")}, wantKey: "general.architecture", wantErr: ErrMissing},
		{name: "other arch", edits: []edit{set("general.architecture", "gpt2")}, wantKey: "general.architecture", wantErr: ErrUnsupported},
		{name: "arch type", edits: []edit{set("general.architecture", uint32(1))}, wantKey: "general.architecture", wantErr: ErrInvalid},
		{name: "no embd", edits: []edit{del("llama.embedding_length")}, wantKey: "llama.embedding_length", wantErr: ErrMissing},
		{name: "embd zero", edits: []edit{set("llama.embedding_length", uint32(0))}, wantKey: "llama.embedding_length", wantErr: ErrInvalid},
		{name: "embd huge", edits: []edit{set("llama.embedding_length", uint32(1<<30))}, wantKey: "llama.embedding_length", wantErr: ErrInvalid},
		{name: "embd type", edits: []edit{set("llama.embedding_length", float32(64))}, wantKey: "llama.embedding_length", wantErr: ErrInvalid},
		{name: "no blocks", edits: []edit{del("llama.block_count")}, wantKey: "llama.block_count", wantErr: ErrMissing},
		{name: "no heads", edits: []edit{del("llama.attention.head_count")}, wantKey: "llama.attention.head_count", wantErr: ErrMissing},
		{name: "kv heads above heads", edits: []edit{set("llama.attention.head_count_kv", uint32(16))}, wantKey: "llama.attention.head_count_kv", wantErr: ErrInvalid},
		{name: "kv heads not dividing", edits: []edit{set("llama.attention.head_count_kv", uint32(3))}, wantKey: "llama.attention.head_count_kv", wantErr: ErrInvalid},
		{name: "heads not dividing embd", edits: []edit{set("llama.attention.head_count", uint32(7)), del("llama.attention.head_count_kv")},
			wantKey: "llama.attention.key_length", wantErr: ErrMissing},
		{name: "value length differs", edits: []edit{set("llama.attention.value_length", uint32(4))}, wantKey: "llama.attention.value_length", wantErr: ErrUnsupported},
		{name: "no ff", edits: []edit{del("llama.feed_forward_length")}, wantKey: "llama.feed_forward_length", wantErr: ErrMissing},
		{name: "no ctx", edits: []edit{del("llama.context_length")}, wantKey: "llama.context_length", wantErr: ErrMissing},
		{name: "no eps", edits: []edit{del("llama.attention.layer_norm_rms_epsilon")}, wantKey: "llama.attention.layer_norm_rms_epsilon", wantErr: ErrMissing},
		{name: "eps zero", edits: []edit{set("llama.attention.layer_norm_rms_epsilon", float32(0))}, wantKey: "llama.attention.layer_norm_rms_epsilon", wantErr: ErrInvalid},
		{name: "eps type", edits: []edit{set("llama.attention.layer_norm_rms_epsilon", "1e-5")}, wantKey: "llama.attention.layer_norm_rms_epsilon", wantErr: ErrInvalid},
		{name: "rope dim odd", edits: []edit{set("llama.rope.dimension_count", uint32(7))}, wantKey: "llama.rope.dimension_count", wantErr: ErrInvalid},
		{name: "rope dim above head", edits: []edit{set("llama.rope.dimension_count", uint32(10))}, wantKey: "llama.rope.dimension_count", wantErr: ErrInvalid},
		{name: "rope base negative", edits: []edit{set("llama.rope.freq_base", float32(-1))}, wantKey: "llama.rope.freq_base", wantErr: ErrInvalid},
		{name: "yarn", edits: []edit{set("llama.rope.scaling.type", "yarn"), set("llama.rope.scaling.factor", float32(4)),
			set("llama.rope.scaling.original_context_length", uint32(32768))},
			check: func(c Config) error {
				if c.RopeScaling != RopeScalingYaRN || c.RopeScale != 0.25 || c.RopeExtFactor != 1 || c.RopeOrigCtx != 32768 {
					return fmt.Errorf("yarn: %+v", c)
				}
				return nil
			}},
		{name: "none ignores the factor", edits: []edit{set("llama.rope.scaling.type", "none"), set("llama.rope.scaling.factor", float32(4))},
			check: func(c Config) error {
				if c.RopeScaling != RopeScalingNone || c.RopeScale != 1 || c.RopeExtFactor != 0 {
					return fmt.Errorf("none: %+v", c)
				}
				return nil
			}},
		{name: "longrope", edits: []edit{set("llama.rope.scaling.type", "longrope")}, wantKey: "llama.rope.scaling.type", wantErr: ErrUnsupported},
		{name: "attn factor zero", edits: []edit{set("llama.rope.scaling.attn_factor", float32(0))}, wantKey: "llama.rope.scaling.attn_factor", wantErr: ErrInvalid},
		{name: "orig ctx zero", edits: []edit{set("llama.rope.scaling.original_context_length", uint32(0))}, wantKey: "llama.rope.scaling.original_context_length", wantErr: ErrInvalid},
		{name: "unknown architecture", edits: []edit{set("general.architecture", "mamba")}, wantKey: "general.architecture", wantErr: ErrUnsupported},
		{name: "qwen2 is neox", edits: []edit{renameArch("qwen2")},
			check: func(c Config) error {
				if c.Arch != "qwen2" || !c.RopeNeoX || c.NEmbd != 64 {
					return fmt.Errorf("qwen2: %+v", c)
				}
				return nil
			}},
		{name: "qwen3 is neox", edits: []edit{renameArch("qwen3")},
			check: func(c Config) error {
				if c.Arch != "qwen3" || !c.RopeNeoX {
					return fmt.Errorf("qwen3: %+v", c)
				}
				return nil
			}},
		{name: "granite scales", edits: []edit{renameArch("granite"), set("granite.attention.scale", float32(0.0078125)),
			set("granite.embedding_scale", float32(12)), set("granite.residual_scale", float32(0.22)), set("granite.logit_scale", float32(8))},
			check: func(c Config) error {
				if c.RopeNeoX || c.AttnScale != 0.0078125 || c.EmbedScale != 12 || c.ResidualScale != 0.22 || c.LogitScale != 8 {
					return fmt.Errorf("granite: %+v", c)
				}
				return nil
			}},
		{name: "granite without scales", edits: []edit{renameArch("granite")},
			check: func(c Config) error {
				if c.AttnScale != float32(1/math.Sqrt(8)) || c.EmbedScale != 0 || c.ResidualScale != 0 || c.LogitScale != 0 {
					return fmt.Errorf("granite defaults: %+v", c)
				}
				return nil
			}},
		{name: "granite without rope", edits: []edit{renameArch("granite"), set("granite.rope.scaling.finetuned", false)},
			check: func(c Config) error {
				if !c.RopeOff || c.RopeDim != 8 {
					return fmt.Errorf("granite rope switched off: RopeOff %v, RopeDim %d", c.RopeOff, c.RopeDim)
				}
				return nil
			}},
		{name: "granite with rope", edits: []edit{renameArch("granite"), set("granite.rope.scaling.finetuned", true)},
			check: func(c Config) error {
				if c.RopeOff || c.RopeDim != 8 {
					return fmt.Errorf("granite rope on: RopeOff %v, RopeDim %d", c.RopeOff, c.RopeDim)
				}
				return nil
			}},
		{name: "granite rope switch type", edits: []edit{renameArch("granite"), set("granite.rope.scaling.finetuned", "no")}, wantKey: "granite.rope.scaling.finetuned", wantErr: ErrInvalid},
		{name: "yarn factor below one keeps the magnitude", edits: []edit{set("llama.rope.scaling.type", "yarn"), set("llama.rope.scaling.factor", float32(0.5))},
			check: func(c Config) error {
				// ggml multiplies by 1 + 0.1·ln(0.5) again: the product is 1.
				if m := float64(c.RopeAttnFactor) * (1 + 0.1*math.Log(0.5)); c.RopeScale != 2 || c.RopeExtFactor != 1 || math.Abs(m-1) > 1e-6 {
					return fmt.Errorf("yarn 0.5: magnitude %g, %+v", m, c)
				}
				return nil
			}},
		{name: "granite negative scale", edits: []edit{renameArch("granite"), set("granite.residual_scale", float32(-1))}, wantKey: "granite.residual_scale", wantErr: ErrInvalid},
		{name: "granite scale type", edits: []edit{renameArch("granite"), set("granite.logit_scale", "8")}, wantKey: "granite.logit_scale", wantErr: ErrInvalid},
		{name: "negative factor", edits: []edit{set("llama.rope.scaling.factor", float32(-2))}, wantKey: "llama.rope.scaling.factor", wantErr: ErrInvalid},
		{name: "vocab zero", edits: []edit{set("llama.vocab_size", uint32(0))}, wantKey: "llama.vocab_size", wantErr: ErrInvalid},
		{name: "experts without a count used", edits: []edit{set("llama.expert_count", uint32(8))}, wantKey: "llama.expert_used_count", wantErr: ErrMissing},
		{name: "experts in a dense family", edits: []edit{renameArch("qwen2"), set("qwen2.expert_count", uint32(8))}, wantKey: "qwen2.expert_count", wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := maps.Clone(baseMeta())
			for _, e := range tc.edits {
				e(m)
			}
			c, err := configFrom(m, errFakeNotFound)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := tc.check(c); err != nil {
					t.Fatal(err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tc.wantKey || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want a KeyError for %s wrapping %v", err, tc.wantKey, tc.wantErr)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Arch: "llama", NEmbd: 64, NLayer: 1, NHead: 8, NHeadKV: 4, HeadDim: 8, NFF: 16,
		RopeDim: 8, RopeBase: 10000, RopeScale: 1, RMSEps: 1e-5, NCtxTrain: 128, NVocab: 32}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.NEmbd = 0 },
		func(c *Config) { c.NVocab = 0 },
		func(c *Config) { c.NHeadKV = 3 },
		func(c *Config) { c.RopeDim = 9 },
		func(c *Config) { c.RMSEps = 0 },
		func(c *Config) { c.RopeScale = 0 },
		func(c *Config) { c.NCtxTrain = 0 },
	}
	for i, b := range bad {
		c := good
		b(&c)
		if err := c.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: %+v: got %v", i, c, err)
		}
	}
}
