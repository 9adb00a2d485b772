package gomlxref

import (
	"errors"
	"math"

	"github.com/lisa-llm/lisa/gguf"
)

// Bounds on what the reference accepts: it is meant for small test models
// (its graph holds every weight as a constant and the full T×T attention).
const (
	maxWidth  = 1 << 14 // embedding, head and feed-forward widths
	maxLayers = 256
	maxVocab  = 1 << 20
	maxCtx    = 1 << 30 // context lengths (only YaRN's ramp reads one)
)

// YaRN's fixed parameters: llama.cpp sets ext_factor to 1 whenever the
// file's scaling type is yarn and uses these two betas unless the user
// overrides them; the reference has no overrides.
const (
	yarnBetaFast = 32
	yarnBetaSlow = 1
)

// Tensor requirements of a family's optional block weights.
const (
	absent   = iota // the family never reads the tensor: present is an error
	optional        // read when present
	required
)

// family is what distinguishes the supported architectures, as llama.cpp
// builds them (build_llama covers llama and granite; build_qwen2; qwen3
// is qwen2's block without biases and with per-head Q/K RMSNorm).
type family struct {
	neox      bool // RoPE pairs x[i] with x[i+RopeDim/2]
	qkvBias   int  // attn_q.bias, attn_k.bias, attn_v.bias
	outBias   int  // attn_output.bias
	ropeFreqs bool // may carry rope_freqs.weight (per-pair angle divisors)
	qkNorm    bool // attn_q_norm.weight and attn_k_norm.weight
	granite   bool // the four granite scales are required keys
}

// familyOf returns the family of a general.architecture value.
func familyOf(arch string) (family, bool) {
	switch arch {
	case "llama":
		return family{qkvBias: optional, outBias: optional, ropeFreqs: true}, true
	case "granite":
		return family{qkvBias: optional, outBias: optional, ropeFreqs: true, granite: true}, true
	case "qwen2":
		return family{neox: true, qkvBias: required}, true
	case "qwen3":
		return family{neox: true, qkNorm: true}, true
	}
	return family{}, false
}

// Config is the hyperparameters the reference reads from a GGUF file.
// It is read here from the metadata keys, not taken from package model,
// so that a wrong default or key in either shows up as a mismatch.
type Config struct {
	Arch                                                string // general.architecture: llama, qwen2, qwen3 or granite
	NEmbd, NLayer, NHead, NHeadKV, HeadDim, NFF, NVocab int
	RopeDim                                             int     // rotated values per head (even, at most HeadDim)
	RopeBase                                            float64 // frequency base
	// RopeScale is ggml's freq_scale: 1/rope.scaling.factor for linear
	// and yarn scaling, 1 without a factor or with type none.
	RopeScale float64
	// YaRN selects ggml's rope_yarn mixing (scaling type yarn): angles
	// between the interpolated and the extrapolated ones by a ramp over
	// the pairs, cos and sin scaled by 1 + 0.1·ln(factor) when the factor
	// 1/RopeScale exceeds 1 (see ropeFreqs for factors below 1).
	YaRN bool
	// NoRope turns the rotation off: granite files whose
	// granite.rope.scaling.finetuned is false (current llama.cpp uses the
	// key as granite's RoPE switch, default true).
	NoRope bool
	// YarnOrigCtx is the context length the ramp's correction dims use:
	// rope.scaling.original_context_length, else context_length.
	YarnOrigCtx int
	// RopeAttnFactor multiplies cos and sin (rope.scaling.attn_factor,
	// default 1), with or without YaRN, as llama.cpp passes it to every
	// rope op.
	RopeAttnFactor float64
	RMSEps         float64
	Tied           bool // no output.weight: the logits use token_embd.weight
	// NeoX pairs value i of a head with value i+RopeDim/2 (GPT-NeoX
	// style: qwen2, qwen3) instead of values 2i and 2i+1 (llama, granite).
	NeoX bool
	// AttnScale multiplies Q·K before the softmax: 1/sqrt(HeadDim), or
	// granite.attention.scale.
	AttnScale float64
	// EmbedScale multiplies the token embeddings, ResidualScale each
	// block's attention and feed-forward outputs before their residual
	// additions, and the logits are divided by LogitScale: all 1 except
	// in granite files.
	EmbedScale, ResidualScale, LogitScale float64
}

// meta reads keys of one file.
type meta struct {
	f    *gguf.File
	arch string
}

// key returns the architecture-prefixed key name.
func (m meta) key(s string) string { return m.arch + "." + s }

// u32 reads an unsigned key into [lo, hi]; def < 0 makes it required.
func (m meta) u32(key string, lo, hi, def int) (int, error) {
	v, err := m.f.Uint32(key)
	switch {
	case errors.Is(err, gguf.ErrNotFound) && def >= 0:
		return def, nil
	case errors.Is(err, gguf.ErrNotFound):
		return 0, fail(ErrMissing, key, "required key is absent")
	case err != nil:
		return 0, fail(ErrInvalid, key, "%v", err)
	case int64(v) < int64(lo) || int64(v) > int64(hi):
		return 0, fail(ErrInvalid, key, "%d outside [%d, %d]", v, lo, hi)
	}
	return int(v), nil
}

// f32 reads a float key that must be finite and positive; ok reports
// whether it was present.
func (m meta) f32(key string) (v float64, ok bool, err error) {
	x, err := m.f.Float32(key)
	switch {
	case errors.Is(err, gguf.ErrNotFound):
		return 0, false, nil
	case err != nil:
		return 0, false, fail(ErrInvalid, key, "%v", err)
	case !(x > 0) || math.IsInf(float64(x), 0):
		return 0, false, fail(ErrInvalid, key, "%g is not a positive finite number", x)
	}
	return float64(x), true, nil
}

// ReadConfig reads and checks the hyperparameters of a llama, qwen2,
// qwen3 or granite file. The vocabulary size is the row count of
// token_embd.weight.
func ReadConfig(f *gguf.File) (Config, error) {
	c, _, err := readConfig(f)
	return c, err
}

// readConfig is ReadConfig that also returns the file's family.
func readConfig(f *gguf.File) (Config, family, error) {
	arch, err := f.String("general.architecture")
	if err != nil {
		return Config{}, family{}, fail(ErrMissing, "general.architecture", "%v", err)
	}
	fam, ok := familyOf(arch)
	if !ok {
		return Config{}, family{}, fail(ErrUnsupported, "general.architecture", "%q, want llama, qwen2, qwen3 or granite", arch)
	}
	m := meta{f: f, arch: arch}
	c := Config{Arch: arch, NeoX: fam.neox, EmbedScale: 1, ResidualScale: 1, LogitScale: 1}
	if err := m.shape(&c); err != nil {
		return Config{}, family{}, err
	}
	if err := m.rope(&c); err != nil {
		return Config{}, family{}, err
	}
	eps, ok, err := m.f32(m.key("attention.layer_norm_rms_epsilon"))
	if err != nil {
		return Config{}, family{}, err
	}
	if !ok || eps > 1 {
		return Config{}, family{}, fail(ErrMissing, m.key("attention.layer_norm_rms_epsilon"), "required, in (0, 1]")
	}
	c.RMSEps = eps
	c.AttnScale = 1 / math.Sqrt(float64(c.HeadDim))
	if fam.granite {
		if err := m.graniteScales(&c); err != nil {
			return Config{}, family{}, err
		}
	}
	if n, err := m.u32(m.key("expert_count"), 0, math.MaxInt32, 0); err != nil {
		return Config{}, family{}, err
	} else if n > 0 {
		return Config{}, family{}, fail(ErrUnsupported, m.key("expert_count"), "%d experts", n)
	}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok || len(ti.Dims) != 2 || ti.Dims[1] < 1 || ti.Dims[1] > maxVocab {
		return Config{}, family{}, fail(ErrMissing, "token_embd.weight", "absent, or not a matrix of 1 to %d rows", maxVocab)
	}
	c.NVocab = int(ti.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.Tied = !hasOut
	return c, fam, nil
}

// graniteScales reads granite's scalars as current llama.cpp does:
// logit_scale is required; attention.scale, embedding_scale and
// residual_scale are optional (the February 2025 code required them) and
// their absence leaves the default computation; rope.scaling.finetuned
// false turns RoPE off.
func (m meta) graniteScales(c *Config) error {
	for _, s := range []struct {
		key      string
		dst      *float64
		required bool
	}{
		{"attention.scale", &c.AttnScale, false}, {"embedding_scale", &c.EmbedScale, false},
		{"residual_scale", &c.ResidualScale, false}, {"logit_scale", &c.LogitScale, true},
	} {
		v, ok, err := m.f32(m.key(s.key))
		if err != nil {
			return err
		}
		if !ok && s.required {
			return fail(ErrMissing, m.key(s.key), "required key is absent")
		}
		if ok {
			*s.dst = v
		}
	}
	key := m.key("rope.scaling.finetuned")
	on, err := m.f.Bool(key)
	switch {
	case errors.Is(err, gguf.ErrNotFound):
	case err != nil:
		return fail(ErrInvalid, key, "%v", err)
	default:
		c.NoRope = !on
	}
	return nil
}

// shape reads the widths and counts.
func (m meta) shape(c *Config) error {
	var err error
	if c.NEmbd, err = m.u32(m.key("embedding_length"), 1, maxWidth, -1); err != nil {
		return err
	}
	if c.NLayer, err = m.u32(m.key("block_count"), 1, maxLayers, -1); err != nil {
		return err
	}
	if c.NHead, err = m.u32(m.key("attention.head_count"), 1, maxWidth, -1); err != nil {
		return err
	}
	if c.NHeadKV, err = m.u32(m.key("attention.head_count_kv"), 1, c.NHead, c.NHead); err != nil {
		return err
	}
	if c.NHead%c.NHeadKV != 0 {
		return fail(ErrInvalid, m.key("attention.head_count_kv"), "%d does not divide %d heads", c.NHeadKV, c.NHead)
	}
	def := -1
	if c.NEmbd%c.NHead == 0 {
		def = c.NEmbd / c.NHead
	}
	if c.HeadDim, err = m.u32(m.key("attention.key_length"), 1, maxWidth, def); err != nil {
		return err
	}
	if c.NHead*c.HeadDim > maxWidth {
		return fail(ErrInvalid, m.key("attention.key_length"), "%d heads of %d values is too wide", c.NHead, c.HeadDim)
	}
	if v, err := m.u32(m.key("attention.value_length"), 1, maxWidth, c.HeadDim); err != nil {
		return err
	} else if v != c.HeadDim {
		return fail(ErrUnsupported, m.key("attention.value_length"), "%d differs from key length %d", v, c.HeadDim)
	}
	c.NFF, err = m.u32(m.key("feed_forward_length"), 1, maxWidth, -1)
	return err
}

// rope reads the rotary embedding settings the way llama.cpp's loader
// and context setup combine them: the factor comes from
// rope.scaling.factor or the older rope.scale_linear whatever the type,
// type none discards it, yarn adds the ramp and its magnitude scale.
func (m meta) rope(c *Config) error {
	var err error
	if c.RopeDim, err = m.u32(m.key("rope.dimension_count"), 0, c.HeadDim, c.HeadDim); err != nil {
		return err
	}
	if c.RopeDim%2 != 0 {
		return fail(ErrInvalid, m.key("rope.dimension_count"), "%d is odd", c.RopeDim)
	}
	c.RopeBase = 10000
	if b, ok, err := m.f32(m.key("rope.freq_base")); err != nil {
		return err
	} else if ok {
		c.RopeBase = b
	}
	typ := "linear" // llama.cpp's default when the key is absent
	if t, err := m.f.String(m.key("rope.scaling.type")); err == nil {
		typ = t
	} else if !errors.Is(err, gguf.ErrNotFound) {
		return fail(ErrInvalid, m.key("rope.scaling.type"), "%v", err)
	}
	if typ != "none" && typ != "linear" && typ != "yarn" {
		return fail(ErrUnsupported, m.key("rope.scaling.type"), "%q, want none, linear or yarn", typ)
	}
	// Current llama.cpp reads these YaRN overrides; the reference does
	// not compute them, so a file that has one is refused rather than
	// computed differently.
	for _, k := range []string{"yarn_log_multiplier", "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast", "yarn_beta_slow"} {
		if _, ok := m.f.Lookup(m.key("rope.scaling." + k)); ok {
			return fail(ErrUnsupported, m.key("rope.scaling."+k), "YaRN override the reference does not compute")
		}
	}
	c.RopeScale = 1
	factor, ok, err := m.f32(m.key("rope.scaling.factor"))
	if err != nil {
		return err
	}
	if !ok {
		if factor, ok, err = m.f32(m.key("rope.scale_linear")); err != nil {
			return err
		}
	}
	if ok && typ != "none" {
		c.RopeScale = 1 / factor
	}
	c.RopeAttnFactor = 1
	if a, ok, err := m.f32(m.key("rope.scaling.attn_factor")); err != nil {
		return err
	} else if ok {
		c.RopeAttnFactor = a
	}
	if typ != "yarn" {
		return nil
	}
	c.YaRN = true
	if c.RopeBase == 1 {
		// YaRN's correction dims divide by ln(base).
		return fail(ErrInvalid, m.key("rope.freq_base"), "1 with yarn scaling: the correction dims divide by ln(base)")
	}
	// llama.cpp falls back on the training context when the original
	// length is absent (or 0).
	if c.YarnOrigCtx, err = m.u32(m.key("rope.scaling.original_context_length"), 0, maxCtx, 0); err != nil {
		return err
	}
	if c.YarnOrigCtx == 0 {
		c.YarnOrigCtx, err = m.u32(m.key("context_length"), 1, maxCtx, -1)
	}
	return err
}
