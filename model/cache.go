package model

import (
	"fmt"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/quant"

	"github.com/lisa-llm/lisa/tensor"
)

// KVType is the element type of the key/value cache.
type KVType int

// The cache element types. F16 is llama.cpp's default and the one its
// reference outputs use; F32 keeps keys and values unrounded.
const (
	KVF16 KVType = iota
	KVF32
)

// String names the type as llama.cpp's --cache-type does.
func (t KVType) String() string {
	switch t {
	case KVF16:
		return "f16"
	case KVF32:
		return "f32"
	}
	return fmt.Sprintf("KVType(%d)", int(t))
}

// ParseKVType returns the KVType named s ("f16" or "f32").
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "f16":
		return KVF16, nil
	case "f32":
		return KVF32, nil
	}
	return 0, fmt.Errorf("model: cache type %q: %w (want f16 or f32)", s, ErrUnsupported)
}

// MaxCacheBytes bounds the memory one Cache may take.
const MaxCacheBytes = 1 << 40

// Cache is the key/value cache of nSeq sequences of up to nCtx positions
// each, preallocated: sequence s owns its own region of every layer, so
// sequences never compete for space. Keys are stored position-major (one
// row of NHeadKV*HeadDim values per position) and values transposed (one
// row of positions per value dimension, as llama.cpp stores them without
// flash attention), so both attention products are contiguous dot products.
// A Cache is not safe for concurrent use.
type Cache struct {
	kv      KVType
	nLayer  int
	nSeq    int
	nCtx    int
	width   int // NHeadKV*HeadDim
	k16     []uint16
	v16     []uint16
	k32     []float32
	v32     []float32
	lens    []int
	perSeq  int // elements of one sequence in one layer: nCtx*width
	perLyr  int // elements of one layer: nSeq*perSeq
	elemLen int // bytes per element
}

// NewCache allocates the cache for nSeq sequences of nCtx positions of a
// model with configuration cfg.
func NewCache(cfg Config, kv KVType, nSeq, nCtx int) (*Cache, error) {
	if kv != KVF16 && kv != KVF32 {
		return nil, fmt.Errorf("model: cache type %v: %w", kv, ErrUnsupported)
	}
	if nSeq < 1 || nSeq > 1<<16 {
		return nil, fmt.Errorf("model: cache of %d sequences: %w", nSeq, ErrInvalid)
	}
	if nCtx < 1 || nCtx > MaxCtx {
		return nil, fmt.Errorf("model: cache of %d positions: %w", nCtx, ErrInvalid)
	}
	if cfg.NLayer < 1 || cfg.KVDim() < 1 {
		return nil, fmt.Errorf("model: cache for %d layers of width %d: %w", cfg.NLayer, cfg.KVDim(), ErrInvalid)
	}
	elem := int64(2)
	if kv == KVF32 {
		elem = 4
	}
	perSeq, err := tensor.MulInt64(int64(nCtx), int64(cfg.KVDim()))
	if err != nil {
		return nil, fmt.Errorf("model: cache size: %w", err)
	}
	perLyr, err := tensor.MulInt64(perSeq, int64(nSeq))
	if err != nil {
		return nil, fmt.Errorf("model: cache size: %w", err)
	}
	total, err := tensor.MulInt64(perLyr, int64(cfg.NLayer))
	if err != nil {
		return nil, fmt.Errorf("model: cache size: %w", err)
	}
	bytes, err := tensor.MulInt64(total, 2*elem)
	if err != nil || bytes > MaxCacheBytes {
		return nil, fmt.Errorf("model: cache of %d sequences × %d positions × %d layers × %d values: %w (limit %d bytes)",
			nSeq, nCtx, cfg.NLayer, cfg.KVDim(), ErrInvalid, int64(MaxCacheBytes))
	}
	c := &Cache{kv: kv, nLayer: cfg.NLayer, nSeq: nSeq, nCtx: nCtx, width: cfg.KVDim(),
		lens: make([]int, nSeq), perSeq: int(perSeq), perLyr: int(perLyr), elemLen: int(elem)}
	if kv == KVF16 {
		c.k16 = make([]uint16, total)
		c.v16 = make([]uint16, total)
	} else {
		c.k32 = make([]float32, total)
		c.v32 = make([]float32, total)
	}
	return c, nil
}

// Type returns the cache's element type.
func (c *Cache) Type() KVType { return c.kv }

// NSeq returns how many sequences the cache holds.
func (c *Cache) NSeq() int { return c.nSeq }

// NCtx returns how many positions each sequence may hold.
func (c *Cache) NCtx() int { return c.nCtx }

// Bytes returns the memory the cache's keys and values take.
func (c *Cache) Bytes() int64 { return 2 * int64(c.nLayer) * int64(c.perLyr) * int64(c.elemLen) }

// Len returns how many positions sequence seq holds (0 for a sequence
// out of range).
func (c *Cache) Len(seq int) int {
	if seq < 0 || seq >= c.nSeq {
		return 0
	}
	return c.lens[seq]
}

// checkSeq validates a sequence index.
func (c *Cache) checkSeq(seq int) error {
	if seq < 0 || seq >= c.nSeq {
		return fmt.Errorf("model: cache sequence %d of %d: %w", seq, c.nSeq, ErrInvalid)
	}
	return nil
}

// Clear empties sequence seq.
func (c *Cache) Clear(seq int) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	c.lens[seq] = 0
	return nil
}

// Truncate keeps the first n positions of sequence seq and drops the rest
// (for reusing a common prompt prefix). It leaves a sequence shorter than
// n unchanged.
func (c *Cache) Truncate(seq, n int) error {
	if err := c.checkSeq(seq); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("model: truncate sequence %d to %d positions: %w", seq, n, ErrInvalid)
	}
	c.lens[seq] = min(c.lens[seq], n)
	return nil
}

// keyOff returns the offset of the key row of (layer, seq, pos).
func (c *Cache) keyOff(layer, seq, pos int) int {
	return layer*c.perLyr + seq*c.perSeq + pos*c.width
}

// valOff returns the offset of value dimension d's row of positions of
// (layer, seq).
func (c *Cache) valOff(layer, seq, d int) int {
	return layer*c.perLyr + seq*c.perSeq + d*c.nCtx
}

// store writes the key and value rows of one position, rounding them to
// the cache's type.
func (c *Cache) store(layer, seq, pos int, k, v []float32) {
	ko := c.keyOff(layer, seq, pos)
	if c.kv == KVF16 {
		kernels.F32ToF16Row(c.k16[ko:ko+c.width], k)
		vo := c.valOff(layer, seq, 0) + pos
		for d, x := range v {
			c.v16[vo+d*c.nCtx] = quant.F32ToF16(x)
		}
		return
	}
	copy(c.k32[ko:ko+c.width], k)
	vo := c.valOff(layer, seq, 0) + pos
	for d, x := range v {
		c.v32[vo+d*c.nCtx] = x
	}
}
