package model

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Limits on the hyperparameters a model file may declare. They admit every
// Llama-family model published so far with a wide margin, and keep the
// arithmetic on them far from overflow.
const (
	MaxEmbd    = 1 << 16 // embedding length
	MaxLayers  = 1 << 10 // blocks
	MaxHeads   = 1 << 10 // attention heads
	MaxHeadDim = 1 << 10 // values per head
	MaxFF      = 1 << 18 // feed-forward length
	MaxCtx     = 1 << 24 // training context length
	MaxVocab   = 1 << 22 // vocabulary size
)

// RopeScaling is how a model stretches its rotary embedding past the
// context it was trained on (<arch>.rope.scaling.type).
type RopeScaling uint8

// The scaling types llama.cpp knows and this engine implements. Llama 3's
// scaling is not among them: its files carry it as per-pair frequency
// factors (rope_freqs.weight) with no scaling type.
const (
	RopeScalingNone   RopeScaling = iota // positions as they are ("none")
	RopeScalingLinear                    // positions times 1/factor ("linear", the default)
	RopeScalingYaRN                      // YaRN: interpolation ramped per dimension, magnitude scaled ("yarn")
)

// String returns the name the metadata uses.
func (s RopeScaling) String() string {
	switch s {
	case RopeScalingNone:
		return "none"
	case RopeScalingLinear:
		return "linear"
	case RopeScalingYaRN:
		return "yarn"
	}
	return fmt.Sprintf("RopeScaling(%d)", int(s))
}

// Config holds a model's hyperparameters, read from the
// general.architecture and <arch>.* metadata keys and validated. The
// fields after NVocab are set by the architecture's family (arch.go) or
// by its own optional keys; their zero values mean "not used".
type Config struct {
	Arch      string  // general.architecture ("llama", "qwen2", ...)
	NEmbd     int     // <arch>.embedding_length
	NLayer    int     // <arch>.block_count
	NHead     int     // <arch>.attention.head_count
	NHeadKV   int     // <arch>.attention.head_count_kv (default NHead)
	HeadDim   int     // <arch>.attention.key_length (default NEmbd/NHead)
	NFF       int     // <arch>.feed_forward_length
	RopeDim   int     // <arch>.rope.dimension_count (default HeadDim)
	RopeBase  float32 // <arch>.rope.freq_base (default 10000)
	RopeScale float32 // 1/<arch>.rope.scaling.factor (default 1): positions are multiplied by it
	RMSEps    float32 // <arch>.attention.layer_norm_rms_epsilon
	NCtxTrain int     // <arch>.context_length
	NVocab    int     // <arch>.vocab_size, else the token list's length, else token_embd's rows
	// TiedOutput is set by Load when output.weight is absent and the
	// logits are computed with token_embd.weight.
	TiedOutput bool

	RopeNeoX       bool        // rotate (x[i], x[i+RopeDim/2]) pairs instead of adjacent ones (the family's rope type)
	RopeOff        bool        // no rotary embedding at all (granite's rope.scaling.finetuned false); RopeDim still sizes rope_freqs.weight
	RopeScaling    RopeScaling // <arch>.rope.scaling.type (default linear, as llama.cpp)
	RopeOrigCtx    int         // <arch>.rope.scaling.original_context_length (default NCtxTrain): YaRN's correction dimensions
	RopeExtFactor  float32     // YaRN's extrapolation mix: 1 for yarn, 0 otherwise (llama.cpp's yarn_ext_factor)
	RopeAttnFactor float32     // <arch>.rope.scaling.attn_factor (default 1): multiplies cos and sin
	RopeBetaFast   float32     // YaRN's beta_fast (32, llama.cpp's default)
	RopeBetaSlow   float32     // YaRN's beta_slow (1)

	AttnScale     float32 // multiplies the attention scores (default 1/sqrt(HeadDim); granite: <arch>.attention.scale)
	EmbedScale    float32 // multiplies the token embeddings when not 0 (granite: <arch>.embedding_scale)
	ResidualScale float32 // multiplies each block's attention and FFN output when not 0 (granite: <arch>.residual_scale)
	LogitScale    float32 // divides the logits when not 0 (granite: <arch>.logit_scale)

	// QueryPreScale applies AttnScale to the rotated queries before they
	// are rounded to the cache type, the scores then taken unscaled (gemma
	// and phi3 scale Qcur in their graphs and call attention with a scale
	// of 1).
	QueryPreScale bool
	AttnSoftcap   float32 // when not 0, scores become cap·tanh(score/cap) before the softmax (gemma2's attn_logit_softcapping)
	FinalSoftcap  float32 // when not 0, logits become cap·tanh(logit/cap) (<arch>.final_logit_softcapping)
	FFNGELU       bool    // the gated FFN uses GELU (tanh approximation, ggml's F16 table) instead of SiLU

	// NSWA is the sliding window (<arch>.attention.sliding_window; 0: none):
	// on a windowed layer a query at position p sees keys at p-NSWA+1 … p,
	// as llama.cpp's LLAMA_SWA_TYPE_STANDARD masks.
	NSWA int
	// SWAPattern says which layers are windowed when NSWA > 0: layer l is
	// when l % SWAPattern < SWAPattern-1 (llama.cpp's set_swa_pattern;
	// gemma2 2, gemma3 6), every layer when it is 0 or 1.
	SWAPattern int
	// RopeBaseSWA and RopeScaleSWA, when RopeBaseSWA is not 0, are the RoPE
	// base and position multiplier of the windowed layers (gemma3's local
	// layers: 10000, 1), the global ones keeping RopeBase and RopeScale.
	RopeBaseSWA, RopeScaleSWA float32

	// NExpert, when not 0, makes every block's FFN a mixture of NExpert
	// experts (<arch>.expert_count), NExpertUsed of them per token
	// (<arch>.expert_used_count), each of NFFExp values (NFF, or qwen3moe's
	// <arch>.expert_feed_forward_length).
	NExpert, NExpertUsed, NFFExp int
	// MoEBias says the router and the experts' gate, up and down
	// projections have biases (gpt-oss: blk.N.ffn_gate_inp.bias and
	// blk.N.ffn_*_exps.bias).
	MoEBias bool
	// MoEWeightsSoftmax chooses the experts by their router logits and
	// weights them by the softmax of the chosen ones' logits, without
	// renormalisation (gpt-oss: llama.cpp's
	// LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT); otherwise the softmax
	// of all logits is taken and the chosen probabilities renormalised.
	MoEWeightsSoftmax bool
	// MoESwiGLULimit, when not 0, makes the experts' activation gpt-oss's
	// clamped SwiGLU (llama.cpp's swiglu_oai): the gate clamped above at
	// the limit, the up projection to ±limit, and
	// gate·σ(MoESwiGLUAlpha·gate)·(up+1).
	MoESwiGLULimit, MoESwiGLUAlpha float32
}

// LayerSWA reports whether layer l attends through the sliding window.
func (c Config) LayerSWA(l int) bool {
	if c.NSWA <= 0 {
		return false
	}
	return c.SWAPattern <= 1 || l%c.SWAPattern < c.SWAPattern-1
}

// QDim returns the width of the query projection, NHead*HeadDim.
func (c Config) QDim() int { return c.NHead * c.HeadDim }

// KVDim returns the width of the key and value projections,
// NHeadKV*HeadDim.
func (c Config) KVDim() int { return c.NHeadKV * c.HeadDim }

// metadata is the part of a GGUF file's metadata the config reads. Each
// accessor returns an error wrapping gguf.ErrNotFound for an absent key
// and another error for a value of the wrong type.
type metadata interface {
	Uint32(key string) (uint32, error)
	Float32(key string) (float32, error)
	String(key string) (string, error)
	Bool(key string) (bool, error)
}

// reader reads keys of one file, remembering the first failure.
type reader struct {
	md       metadata
	notFound error // the sentinel md wraps for an absent key
}

// str reads a required string key.
func (r reader) str(key string) (string, error) {
	s, err := r.md.String(key)
	if err != nil {
		return "", r.keyErr(key, "string", err)
	}
	return s, nil
}

// keyErr turns an accessor error into a *KeyError.
func (r reader) keyErr(key, typ string, err error) error {
	if errors.Is(err, r.notFound) {
		return &KeyError{Key: key, Reason: "required key is missing", Err: ErrMissing}
	}
	return &KeyError{Key: key, Reason: fmt.Sprintf("want a %s: %v", typ, err), Err: ErrInvalid}
}

// flag reads an optional bool key, def when it is absent.
func (r reader) flag(key string, def bool) (bool, error) {
	v, err := r.md.Bool(key)
	if err != nil {
		if errors.Is(err, r.notFound) {
			return def, nil
		}
		return false, r.keyErr(key, "bool", err)
	}
	return v, nil
}

// count reads an unsigned key into an int in [lo, hi]. With def >= 0 the
// key is optional and def is returned when it is absent.
func (r reader) count(key string, lo, hi, def int) (int, error) {
	v, err := r.md.Uint32(key)
	if err != nil {
		if def >= 0 && errors.Is(err, r.notFound) {
			return def, nil
		}
		return 0, r.keyErr(key, "uint32", err)
	}
	if int64(v) < int64(lo) || int64(v) > int64(hi) {
		return 0, &KeyError{Key: key, Reason: fmt.Sprintf("value %d out of range [%d, %d]", v, lo, hi), Err: ErrInvalid}
	}
	return int(v), nil
}

// float reads a float32 key that must be finite and in (lo, hi]. With
// optional set, def is returned when the key is absent.
func (r reader) float(key string, lo, hi float32, optional bool, def float32) (float32, error) {
	v, err := r.md.Float32(key)
	if err != nil {
		if optional && errors.Is(err, r.notFound) {
			return def, nil
		}
		return 0, r.keyErr(key, "float32", err)
	}
	if math.IsNaN(float64(v)) || v <= lo || v > hi {
		return 0, &KeyError{Key: key, Reason: fmt.Sprintf("value %g out of range (%g, %g]", v, lo, hi), Err: ErrInvalid}
	}
	return v, nil
}

// configFrom reads and validates a Config from md. notFound is the
// sentinel md's accessors wrap for absent keys. NVocab is left 0 when the
// file has no <arch>.vocab_size key; the caller fills it.
func configFrom(md metadata, notFound error) (Config, error) {
	r := reader{md: md, notFound: notFound}
	arch, err := r.str("general.architecture")
	if err != nil {
		return Config{}, err
	}
	fam, ok := lookupFamily(arch)
	if !ok {
		return Config{}, &KeyError{Key: "general.architecture", Reason: fmt.Sprintf("architecture %q is not supported (want one of %s)", arch, strings.Join(familyNames(), ", ")), Err: ErrUnsupported}
	}
	c := Config{Arch: arch, RopeNeoX: fam.RopeNeoX}
	k := func(s string) string { return arch + "." + s }
	if err := r.readShape(&c, k); err != nil {
		return Config{}, err
	}
	if err := r.readRope(&c, k); err != nil {
		return Config{}, err
	}
	if c.RMSEps, err = r.float(k("attention.layer_norm_rms_epsilon"), 0, 1, false, 0); err != nil {
		return Config{}, err
	}
	if c.NCtxTrain, err = r.count(k("context_length"), 1, MaxCtx, -1); err != nil {
		return Config{}, err
	}
	if c.NVocab, err = r.count(k("vocab_size"), 1, MaxVocab, 0); err != nil {
		return Config{}, err
	}
	if err := readExperts(r, &c, k, fam); err != nil {
		return Config{}, err
	}
	if c.RopeOrigCtx, err = r.count(k("rope.scaling.original_context_length"), 1, MaxCtx, c.NCtxTrain); err != nil {
		return Config{}, err
	}
	c.AttnScale = 1 / float32(math.Sqrt(float64(c.HeadDim)))
	if fam.Hyper != nil {
		if err := fam.Hyper(r, &c, k); err != nil {
			return Config{}, err
		}
	}
	return c, nil
}

// readShape reads the layer and head counts and widths.
func (r reader) readShape(c *Config, k func(string) string) error {
	var err error
	if c.NEmbd, err = r.count(k("embedding_length"), 1, MaxEmbd, -1); err != nil {
		return err
	}
	if c.NLayer, err = r.count(k("block_count"), 1, MaxLayers, -1); err != nil {
		return err
	}
	if c.NHead, err = r.count(k("attention.head_count"), 1, MaxHeads, -1); err != nil {
		return err
	}
	if c.NHeadKV, err = r.count(k("attention.head_count_kv"), 1, c.NHead, c.NHead); err != nil {
		return err
	}
	if c.NHead%c.NHeadKV != 0 {
		return &KeyError{Key: k("attention.head_count_kv"), Reason: fmt.Sprintf("%d KV heads do not divide %d heads", c.NHeadKV, c.NHead), Err: ErrInvalid}
	}
	def := -1
	if c.NEmbd%c.NHead == 0 {
		def = c.NEmbd / c.NHead
	}
	if c.HeadDim, err = r.count(k("attention.key_length"), 2, MaxHeadDim, def); err != nil {
		if def < 0 && errors.Is(err, ErrMissing) {
			return &KeyError{Key: k("attention.key_length"), Reason: fmt.Sprintf("required when %d heads do not divide embedding length %d", c.NHead, c.NEmbd), Err: ErrMissing}
		}
		return err
	}
	vlen, err := r.count(k("attention.value_length"), 1, MaxHeadDim, c.HeadDim)
	if err != nil {
		return err
	}
	if vlen != c.HeadDim {
		return &KeyError{Key: k("attention.value_length"), Reason: fmt.Sprintf("%d differs from key length %d", vlen, c.HeadDim), Err: ErrUnsupported}
	}
	if c.NFF, err = r.count(k("feed_forward_length"), 1, MaxFF, -1); err != nil {
		return err
	}
	return nil
}

// readRope reads the rotary embedding settings.
func (r reader) readRope(c *Config, k func(string) string) error {
	var err error
	if c.RopeDim, err = r.count(k("rope.dimension_count"), 2, c.HeadDim, c.HeadDim); err != nil {
		return err
	}
	if c.RopeDim%2 != 0 {
		return &KeyError{Key: k("rope.dimension_count"), Reason: fmt.Sprintf("%d is odd", c.RopeDim), Err: ErrInvalid}
	}
	if c.RopeBase, err = r.float(k("rope.freq_base"), 0, 1e12, true, 10000); err != nil {
		return err
	}
	c.RopeScaling = RopeScalingLinear
	if t, err := r.md.String(k("rope.scaling.type")); err == nil {
		switch t {
		case "none":
			c.RopeScaling = RopeScalingNone
		case "linear":
		case "yarn":
			c.RopeScaling = RopeScalingYaRN
		default:
			return &KeyError{Key: k("rope.scaling.type"), Reason: fmt.Sprintf("scaling %q is not supported (want none, linear or yarn)", t), Err: ErrUnsupported}
		}
	} else if !errors.Is(err, r.notFound) {
		return r.keyErr(k("rope.scaling.type"), "string", err)
	}
	factor, err := r.float(k("rope.scaling.factor"), -1, 1e6, true, 0)
	if err != nil {
		return err
	}
	if factor == 0 {
		if factor, err = r.float(k("rope.scale_linear"), -1, 1e6, true, 0); err != nil {
			return err
		}
	}
	c.RopeScale = 1
	switch {
	case factor < 0:
		return &KeyError{Key: k("rope.scaling.factor"), Reason: fmt.Sprintf("negative factor %g", factor), Err: ErrInvalid}
	case factor > 0 && c.RopeScaling != RopeScalingNone:
		// llama.cpp never scales when the type is "none", whatever the factor.
		c.RopeScale = 1 / factor
	}
	if c.RopeAttnFactor, err = r.float(k("rope.scaling.attn_factor"), 0, 1e3, true, 1); err != nil {
		return err
	}
	if c.RopeScaling == RopeScalingYaRN {
		c.RopeExtFactor = 1
		// Current llama.cpp (since December 2025) divides the attention
		// factor by ggml's YaRN magnitude 1 + 0.1·ln(factor) and multiplies
		// it by the larger of that and 1: above a factor of 1 nothing
		// changes, at or below it cos and sin keep magnitude attn_factor.
		if factor > 0 && factor <= 1 {
			// float32(…) rounds the product before the addition, so
			// that Go does not fuse them (it would on arm64, never on
			// amd64) and the factor is the same on every architecture.
			c.RopeAttnFactor /= 1 + float32(0.1*float32(math.Log(float64(factor))))
		}
	}
	c.RopeBetaFast, c.RopeBetaSlow = 32, 1
	return nil
}

// Validate checks the relations between c's fields that configFrom
// establishes; Load calls it after filling NVocab.
func (c Config) Validate() error {
	switch {
	case c.NEmbd < 1 || c.NEmbd > MaxEmbd:
		return fmt.Errorf("model: config NEmbd %d: %w", c.NEmbd, ErrInvalid)
	case c.NLayer < 1 || c.NLayer > MaxLayers:
		return fmt.Errorf("model: config NLayer %d: %w", c.NLayer, ErrInvalid)
	case c.NHead < 1 || c.NHead > MaxHeads || c.NHeadKV < 1 || c.NHead%c.NHeadKV != 0:
		return fmt.Errorf("model: config heads %d/%d: %w", c.NHead, c.NHeadKV, ErrInvalid)
	case c.HeadDim < 2 || c.HeadDim > MaxHeadDim:
		return fmt.Errorf("model: config HeadDim %d: %w", c.HeadDim, ErrInvalid)
	case c.RopeDim < 0 || c.RopeDim > c.HeadDim || c.RopeDim%2 != 0:
		return fmt.Errorf("model: config RopeDim %d: %w", c.RopeDim, ErrInvalid)
	case c.NFF < 1 || c.NFF > MaxFF:
		return fmt.Errorf("model: config NFF %d: %w", c.NFF, ErrInvalid)
	case c.NVocab < 1 || c.NVocab > MaxVocab:
		return fmt.Errorf("model: config NVocab %d: %w", c.NVocab, ErrInvalid)
	case c.NCtxTrain < 1 || c.NCtxTrain > MaxCtx:
		return fmt.Errorf("model: config NCtxTrain %d: %w", c.NCtxTrain, ErrInvalid)
	case !(c.RMSEps > 0 && c.RMSEps <= 1):
		return fmt.Errorf("model: config RMSEps %g: %w", c.RMSEps, ErrInvalid)
	case !(c.RopeBase > 0) || math.IsInf(float64(c.RopeBase), 0):
		return fmt.Errorf("model: config RopeBase %g: %w", c.RopeBase, ErrInvalid)
	case !(c.RopeScale > 0) || math.IsInf(float64(c.RopeScale), 0):
		return fmt.Errorf("model: config RopeScale %g: %w", c.RopeScale, ErrInvalid)
	case c.RopeScaling == RopeScalingYaRN && (c.RopeOrigCtx < 1 || c.RopeOrigCtx > MaxCtx):
		return fmt.Errorf("model: config RopeOrigCtx %d: %w", c.RopeOrigCtx, ErrInvalid)
	case !finite(c.RopeAttnFactor) || !finite(c.RopeExtFactor) || !finite(c.AttnScale) ||
		!finite(c.EmbedScale) || !finite(c.ResidualScale) || !finite(c.LogitScale):
		return fmt.Errorf("model: config scales %g/%g/%g/%g/%g/%g: %w", c.RopeAttnFactor, c.RopeExtFactor, c.AttnScale, c.EmbedScale, c.ResidualScale, c.LogitScale, ErrInvalid)
	case !(c.AttnSoftcap >= 0) || !(c.FinalSoftcap >= 0) || !finite(c.AttnSoftcap) || !finite(c.FinalSoftcap):
		return fmt.Errorf("model: config soft caps %g/%g: %w", c.AttnSoftcap, c.FinalSoftcap, ErrInvalid)
	case c.NSWA < 0 || c.NSWA > MaxCtx || c.SWAPattern < 0 || c.SWAPattern > MaxLayers:
		return fmt.Errorf("model: config sliding window %d/%d: %w", c.NSWA, c.SWAPattern, ErrInvalid)
	case !(c.MoESwiGLULimit >= 0) || !finite(c.MoESwiGLULimit) || !finite(c.MoESwiGLUAlpha):
		return fmt.Errorf("model: config expert SwiGLU limit %g, alpha %g: %w", c.MoESwiGLULimit, c.MoESwiGLUAlpha, ErrInvalid)
	case c.validExperts() != nil:
		return c.validExperts()
	case c.RopeBaseSWA != 0 && (!(c.RopeBaseSWA > 0) || !finite(c.RopeBaseSWA) || !(c.RopeScaleSWA > 0) || !finite(c.RopeScaleSWA)):
		return fmt.Errorf("model: config windowed RoPE %g/%g: %w", c.RopeBaseSWA, c.RopeScaleSWA, ErrInvalid)
	}
	return nil
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
