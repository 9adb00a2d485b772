package model

import (
	"errors"
	"fmt"
	"math"
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

// Config holds a Llama-family model's hyperparameters, read from the
// general.architecture and <arch>.* metadata keys and validated.
type Config struct {
	Arch      string  // general.architecture ("llama")
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
	if arch != "llama" {
		return Config{}, &KeyError{Key: "general.architecture", Reason: fmt.Sprintf("architecture %q is not supported (want llama)", arch), Err: ErrUnsupported}
	}
	c := Config{Arch: arch}
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
	if n, err := r.count(k("expert_count"), 0, math.MaxUint32, 0); err != nil {
		return Config{}, err
	} else if n > 0 {
		return Config{}, &KeyError{Key: k("expert_count"), Reason: fmt.Sprintf("%d experts: mixture-of-experts models are not supported", n), Err: ErrUnsupported}
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
	if t, err := r.md.String(k("rope.scaling.type")); err == nil {
		if t != "none" && t != "linear" {
			return &KeyError{Key: k("rope.scaling.type"), Reason: fmt.Sprintf("scaling %q is not supported (want none or linear)", t), Err: ErrUnsupported}
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
	case factor > 0:
		c.RopeScale = 1 / factor
	}
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
	}
	return nil
}
