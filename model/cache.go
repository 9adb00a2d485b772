package model

import (
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/quant"

	"github.com/lisa-llm/lisa/tensor"
)

// KVType is the element type of the key or value cache.
type KVType int

// The cache element types. F16 is llama.cpp's default and the one its
// reference outputs use; F32 keeps keys and values unrounded; Q8_0 stores
// blocks of 32 values along the head dimension, each an f16 scale and 32
// int8 codes (34 bytes for 32 values: 47% of F16), as ggml's q8_0 cache.
const (
	KVF16 KVType = iota
	KVF32
	KVQ8_0
)

// String names the type as llama.cpp's --cache-type-k/--cache-type-v do.
func (t KVType) String() string {
	switch t {
	case KVF16:
		return "f16"
	case KVF32:
		return "f32"
	case KVQ8_0:
		return "q8_0"
	}
	return fmt.Sprintf("KVType(%d)", int(t))
}

// ParseKVType returns the KVType named s ("f16", "f32" or "q8_0").
func ParseKVType(s string) (KVType, error) {
	switch s {
	case "f16":
		return KVF16, nil
	case "f32":
		return KVF32, nil
	case "q8_0":
		return KVQ8_0, nil
	}
	return 0, fmt.Errorf("model: cache type %q: %w (want f16, f32 or q8_0)", s, ErrUnsupported)
}

// rowBytes returns the bytes n values of type t take (n a multiple of 32
// for Q8_0).
func (t KVType) rowBytes(n int) int {
	switch t {
	case KVF32:
		return 4 * n
	case KVQ8_0:
		return n / quant.QK8_0 * quant.BlockQ8_0Bytes
	}
	return 2 * n
}

// MaxCacheBytes bounds the memory one Cache may take.
const MaxCacheBytes = 1 << 40

// Cache is the key/value cache of nSeq sequences of up to nCtx positions
// each, preallocated: sequence s owns its own region of every layer, so
// sequences never compete for space.
//
// Within a layer and sequence, keys are stored head-major: KV head g's
// keys are nCtx consecutive rows of HeadDim values (or Q8_0 blocks), so a
// tile of positions of one head is one contiguous run of memory that all
// the query heads sharing g read once. F16 and F32 values are stored
// transposed (one row of positions per value dimension, as llama.cpp
// stores them without flash attention), so the weights×values product is
// a set of contiguous dot products over positions; Q8_0 values cannot be
// (their blocks run along the head dimension, as in ggml), so they are
// stored like the keys, one row per position and head.
// A Cache is not safe for concurrent use.
type Cache struct {
	tk, tv  KVType
	nLayer  int
	nSeq    int
	nCtx    int
	nHeadKV int
	headDim int
	width   int // NHeadKV*HeadDim
	k16     []uint16
	v16     []uint16
	k32     []float32
	v32     []float32
	kq      []byte // Q8_0 keys
	vq      []byte // Q8_0 values
	lens    []int
	perSeq  int // elements (bytes for Q8_0) of one sequence in one layer, keys
	perSeqV int // the same for values
	kRow    int // elements (bytes for Q8_0) of one key row of one head
	vRow    int // bytes of one Q8_0 value row of one head (0 otherwise)
}

// NewCache allocates the cache for nSeq sequences of nCtx positions of a
// model with configuration cfg, keys and values both of type kv.
func NewCache(cfg Config, kv KVType, nSeq, nCtx int) (*Cache, error) {
	return NewCacheTypes(cfg, kv, kv, nSeq, nCtx)
}

// NewCacheTypes allocates the cache for nSeq sequences of nCtx positions
// of a model with configuration cfg, keys of type tk and values of type
// tv. Q8_0 needs a head dimension that is a multiple of 32 and does not
// mix with F32.
func NewCacheTypes(cfg Config, tk, tv KVType, nSeq, nCtx int) (*Cache, error) {
	for _, t := range []KVType{tk, tv} {
		if t != KVF16 && t != KVF32 && t != KVQ8_0 {
			return nil, fmt.Errorf("model: cache type %v: %w", t, ErrUnsupported)
		}
		if t == KVQ8_0 && cfg.HeadDim%quant.QK8_0 != 0 {
			return nil, fmt.Errorf("model: cache type q8_0 with head dimension %d (not a multiple of %d): %w", cfg.HeadDim, quant.QK8_0, ErrUnsupported)
		}
	}
	if (tk == KVF32) != (tv == KVF32) && (tk == KVQ8_0 || tv == KVQ8_0) {
		return nil, fmt.Errorf("model: cache types %v and %v: %w (f32 does not mix with q8_0)", tk, tv, ErrUnsupported)
	}
	if nSeq < 1 || nSeq > 1<<16 {
		return nil, fmt.Errorf("model: cache of %d sequences: %w", nSeq, ErrInvalid)
	}
	if nCtx < 1 || nCtx > MaxCtx {
		return nil, fmt.Errorf("model: cache of %d positions: %w", nCtx, ErrInvalid)
	}
	if cfg.NLayer < 1 || cfg.KVDim() < 1 || cfg.HeadDim < 1 || cfg.NHeadKV < 1 || cfg.NHeadKV*cfg.HeadDim != cfg.KVDim() {
		return nil, fmt.Errorf("model: cache for %d layers of width %d: %w", cfg.NLayer, cfg.KVDim(), ErrInvalid)
	}
	var total [2]int64 // elements (bytes for Q8_0) of keys and values
	var bytes int64
	for i, t := range []KVType{tk, tv} {
		perPos := int64(cfg.KVDim())
		if t == KVQ8_0 {
			perPos = int64(t.rowBytes(cfg.KVDim()))
		}
		n, err := tensor.MulInt64(int64(nCtx), perPos)
		if err == nil {
			n, err = tensor.MulInt64(n, int64(nSeq))
		}
		if err == nil {
			n, err = tensor.MulInt64(n, int64(cfg.NLayer))
		}
		b := n // Q8_0 counts bytes already
		if err == nil && t != KVQ8_0 {
			b, err = tensor.MulInt64(n, int64(t.rowBytes(1)))
		}
		if err != nil || b > MaxCacheBytes || bytes+b > MaxCacheBytes {
			return nil, fmt.Errorf("model: cache of %d sequences × %d positions × %d layers × %d values: %w (limit %d bytes)",
				nSeq, nCtx, cfg.NLayer, cfg.KVDim(), ErrInvalid, int64(MaxCacheBytes))
		}
		total[i] = n
		bytes += b
	}
	hd := cfg.HeadDim
	c := &Cache{tk: tk, tv: tv, nLayer: cfg.NLayer, nSeq: nSeq, nCtx: nCtx, nHeadKV: cfg.NHeadKV, headDim: hd,
		width: cfg.KVDim(), lens: make([]int, nSeq),
		perSeq: int(total[0]) / cfg.NLayer / nSeq, perSeqV: int(total[1]) / cfg.NLayer / nSeq}
	c.kRow = hd
	switch tk {
	case KVF16:
		c.k16 = make([]uint16, total[0])
	case KVF32:
		c.k32 = make([]float32, total[0])
	case KVQ8_0:
		c.kRow = tk.rowBytes(hd)
		c.kq = make([]byte, total[0])
	}
	switch tv {
	case KVF16:
		c.v16 = make([]uint16, total[1])
	case KVF32:
		c.v32 = make([]float32, total[1])
	case KVQ8_0:
		c.vRow = tv.rowBytes(hd)
		c.vq = make([]byte, total[1])
	}
	return c, nil
}

// Type returns the cache's key type (the value type may differ: TypeV).
func (c *Cache) Type() KVType { return c.tk }

// TypeK returns the element type of the keys.
func (c *Cache) TypeK() KVType { return c.tk }

// TypeV returns the element type of the values.
func (c *Cache) TypeV() KVType { return c.tv }

// NSeq returns how many sequences the cache holds.
func (c *Cache) NSeq() int { return c.nSeq }

// NCtx returns how many positions each sequence may hold.
func (c *Cache) NCtx() int { return c.nCtx }

// Bytes returns the memory the cache's keys and values take.
func (c *Cache) Bytes() int64 {
	return 2*int64(len(c.k16)+len(c.v16)) + 4*int64(len(c.k32)+len(c.v32)) + int64(len(c.kq)+len(c.vq))
}

// CacheBytes returns what NewCacheTypes(cfg, tk, tv, nSeq, nCtx) would
// allocate, for memory planning before the allocation (0 for a shape it
// would refuse).
func CacheBytes(cfg Config, tk, tv KVType, nSeq, nCtx int) int64 {
	if nSeq < 1 || nCtx < 1 || cfg.NLayer < 1 || cfg.KVDim() < 1 {
		return 0
	}
	per := func(t KVType) int64 {
		if t == KVQ8_0 && cfg.KVDim()%quant.QK8_0 != 0 {
			return 0
		}
		return int64(t.rowBytes(cfg.KVDim()))
	}
	n, err := tensor.MulInt64(per(tk)+per(tv), int64(nCtx))
	if err == nil {
		n, err = tensor.MulInt64(n, int64(nSeq))
	}
	if err == nil {
		n, err = tensor.MulInt64(n, int64(cfg.NLayer))
	}
	if err != nil {
		return math.MaxInt64 // beyond any limit, as it should read
	}
	return n
}

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

// CopyPrefix makes sequence dst hold the first n positions of sequence
// src (every layer's keys and values, whatever the cache types), dropping
// what dst held: for sharing a prompt's cache between sequences that
// continue it differently. n must not exceed src's length; dst may not be
// src.
func (c *Cache) CopyPrefix(dst, src, n int) error {
	if err := c.checkSeq(dst); err != nil {
		return err
	}
	if err := c.checkSeq(src); err != nil {
		return err
	}
	if dst == src || n < 0 || n > c.lens[src] {
		return fmt.Errorf("model: copy %d positions of sequence %d (of %d) to sequence %d: %w", n, src, c.lens[src], dst, ErrInvalid)
	}
	for l := range c.nLayer {
		for g := range c.nHeadKV {
			so, do := c.keyOff(l, src, g, 0), c.keyOff(l, dst, g, 0)
			m := n * c.kRow
			switch c.tk {
			case KVF16:
				copy(c.k16[do:do+m], c.k16[so:so+m])
			case KVF32:
				copy(c.k32[do:do+m], c.k32[so:so+m])
			case KVQ8_0:
				copy(c.kq[do:do+m], c.kq[so:so+m])
			}
			if c.tv == KVQ8_0 {
				so, do = c.valRowOff(l, src, g, 0), c.valRowOff(l, dst, g, 0)
				copy(c.vq[do:do+n*c.vRow], c.vq[so:so+n*c.vRow])
			}
		}
		if c.tv == KVQ8_0 {
			continue
		}
		for d := range c.width {
			so, do := c.valOff(l, src, d), c.valOff(l, dst, d)
			if c.tv == KVF16 {
				copy(c.v16[do:do+n], c.v16[so:so+n])
			} else {
				copy(c.v32[do:do+n], c.v32[so:so+n])
			}
		}
	}
	c.lens[dst] = n
	return nil
}

// keyOff returns the offset (in elements, bytes for Q8_0) of the key row
// of KV head g at (layer, seq, pos).
func (c *Cache) keyOff(layer, seq, g, pos int) int {
	return (layer*c.nSeq+seq)*c.perSeq + (g*c.nCtx+pos)*c.kRow
}

// valOff returns the offset of value dimension d's row of positions of
// (layer, seq), for F16 and F32 values.
func (c *Cache) valOff(layer, seq, d int) int {
	return (layer*c.nSeq+seq)*c.perSeqV + d*c.nCtx
}

// valRowOff returns the byte offset of the Q8_0 value row of KV head g at
// (layer, seq, pos).
func (c *Cache) valRowOff(layer, seq, g, pos int) int {
	return (layer*c.nSeq+seq)*c.perSeqV + (g*c.nCtx+pos)*c.vRow
}

// store writes the key and value rows of one position, rounding them to
// the cache's types.
func (c *Cache) store(layer, seq, pos int, k, v []float32) {
	hd := c.headDim
	for g := range c.nHeadKV {
		ko := c.keyOff(layer, seq, g, pos)
		kh := k[g*hd : (g+1)*hd]
		switch c.tk {
		case KVF16:
			kernels.F32ToF16Row(c.k16[ko:ko+hd], kh)
		case KVF32:
			copy(c.k32[ko:ko+hd], kh)
		case KVQ8_0:
			quant.QuantizeQ8_0(kh, c.kq[ko:ko+c.kRow])
		}
		if c.tv == KVQ8_0 {
			vo := c.valRowOff(layer, seq, g, pos)
			quant.QuantizeQ8_0(v[g*hd:(g+1)*hd], c.vq[vo:vo+c.vRow])
		}
	}
	if c.tv == KVQ8_0 {
		return
	}
	vo := c.valOff(layer, seq, 0) + pos
	if c.tv == KVF16 {
		for d, x := range v {
			c.v16[vo+d*c.nCtx] = quant.F32ToF16(x)
		}
		return
	}
	for d, x := range v {
		c.v32[vo+d*c.nCtx] = x
	}
}
