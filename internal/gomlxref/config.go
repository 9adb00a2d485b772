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
)

// Config is the hyperparameters the reference reads from a llama GGUF
// file. It is read here from the metadata keys, not taken from package
// model, so that a wrong default or key in either shows up as a mismatch.
type Config struct {
	NEmbd, NLayer, NHead, NHeadKV, HeadDim, NFF, NVocab int
	RopeDim                                             int     // rotated values per head (even, at most HeadDim)
	RopeBase                                            float64 // frequency base
	RopeScale                                           float64 // positions are multiplied by it (1/linear factor)
	RMSEps                                              float64
	Tied                                                bool // no output.weight: the logits use token_embd.weight
	// NeoX pairs value i of a head with value i+RopeDim/2 (GPT-NeoX
	// style) instead of values 2i and 2i+1. GGUF llama files always use
	// adjacent pairs; the flag exists for other layouts and for mutation
	// tests.
	NeoX bool
}

// meta reads keys of one file.
type meta struct{ f *gguf.File }

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

// ReadConfig reads and checks the hyperparameters of a llama file. The
// vocabulary size is the row count of token_embd.weight.
func ReadConfig(f *gguf.File) (Config, error) {
	m := meta{f}
	arch, err := f.String("general.architecture")
	if err != nil {
		return Config{}, fail(ErrMissing, "general.architecture", "%v", err)
	}
	if arch != "llama" {
		return Config{}, fail(ErrUnsupported, "general.architecture", "%q, want llama", arch)
	}
	var c Config
	if err := m.shape(&c); err != nil {
		return Config{}, err
	}
	if err := m.rope(&c); err != nil {
		return Config{}, err
	}
	eps, ok, err := m.f32("llama.attention.layer_norm_rms_epsilon")
	if err != nil {
		return Config{}, err
	}
	if !ok || eps > 1 {
		return Config{}, fail(ErrMissing, "llama.attention.layer_norm_rms_epsilon", "required, in (0, 1]")
	}
	c.RMSEps = eps
	if n, err := m.u32("llama.expert_count", 0, math.MaxInt32, 0); err != nil {
		return Config{}, err
	} else if n > 0 {
		return Config{}, fail(ErrUnsupported, "llama.expert_count", "%d experts", n)
	}
	ti, ok := f.Tensor("token_embd.weight")
	if !ok || len(ti.Dims) != 2 || ti.Dims[1] < 1 || ti.Dims[1] > maxVocab {
		return Config{}, fail(ErrMissing, "token_embd.weight", "absent, or not a matrix of 1 to %d rows", maxVocab)
	}
	c.NVocab = int(ti.Dims[1])
	_, hasOut := f.Tensor("output.weight")
	c.Tied = !hasOut
	return c, nil
}

// shape reads the widths and counts.
func (m meta) shape(c *Config) error {
	var err error
	if c.NEmbd, err = m.u32("llama.embedding_length", 1, maxWidth, -1); err != nil {
		return err
	}
	if c.NLayer, err = m.u32("llama.block_count", 1, maxLayers, -1); err != nil {
		return err
	}
	if c.NHead, err = m.u32("llama.attention.head_count", 1, maxWidth, -1); err != nil {
		return err
	}
	if c.NHeadKV, err = m.u32("llama.attention.head_count_kv", 1, c.NHead, c.NHead); err != nil {
		return err
	}
	if c.NHead%c.NHeadKV != 0 {
		return fail(ErrInvalid, "llama.attention.head_count_kv", "%d does not divide %d heads", c.NHeadKV, c.NHead)
	}
	def := -1
	if c.NEmbd%c.NHead == 0 {
		def = c.NEmbd / c.NHead
	}
	if c.HeadDim, err = m.u32("llama.attention.key_length", 1, maxWidth, def); err != nil {
		return err
	}
	if c.NHead*c.HeadDim > maxWidth {
		return fail(ErrInvalid, "llama.attention.key_length", "%d heads of %d values is too wide", c.NHead, c.HeadDim)
	}
	if v, err := m.u32("llama.attention.value_length", 1, maxWidth, c.HeadDim); err != nil {
		return err
	} else if v != c.HeadDim {
		return fail(ErrUnsupported, "llama.attention.value_length", "%d differs from key length %d", v, c.HeadDim)
	}
	c.NFF, err = m.u32("llama.feed_forward_length", 1, maxWidth, -1)
	return err
}

// rope reads the rotary embedding settings.
func (m meta) rope(c *Config) error {
	var err error
	if c.RopeDim, err = m.u32("llama.rope.dimension_count", 0, c.HeadDim, c.HeadDim); err != nil {
		return err
	}
	if c.RopeDim%2 != 0 {
		return fail(ErrInvalid, "llama.rope.dimension_count", "%d is odd", c.RopeDim)
	}
	c.RopeBase = 10000
	if b, ok, err := m.f32("llama.rope.freq_base"); err != nil {
		return err
	} else if ok {
		c.RopeBase = b
	}
	if t, err := m.f.String("llama.rope.scaling.type"); err == nil && t != "none" && t != "linear" {
		return fail(ErrUnsupported, "llama.rope.scaling.type", "%q, want none or linear", t)
	} else if err != nil && !errors.Is(err, gguf.ErrNotFound) {
		return fail(ErrInvalid, "llama.rope.scaling.type", "%v", err)
	}
	c.RopeScale = 1
	factor, ok, err := m.f32("llama.rope.scaling.factor")
	if err != nil {
		return err
	}
	if !ok {
		if factor, ok, err = m.f32("llama.rope.scale_linear"); err != nil {
			return err
		}
	}
	if ok {
		c.RopeScale = 1 / factor
	}
	return nil
}
