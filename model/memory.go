package model

import (
	"math"
	"os"

	"github.com/lisa-llm/lisa/gguf"
)

// MemoryShare is the share of a memory limit that a model's private copy,
// its KV cache and its runner's scratch may take together; the rest is for
// the Go runtime, the samplers and the requests. The serving engine and
// the benchmark worker both plan with it, so a benchmark measures the
// configuration serving would choose.
const MemoryShare = 0.85

// MemoryPlan is the shape a memory estimate is made for: the KV cache
// NewCacheTypes makes and the runner NewRunner makes over it.
type MemoryPlan struct {
	TypeK, TypeV KVType  // the cache's key and value types
	Seqs         int     // the cache's sequences (slots)
	Ctx          int     // positions per sequence
	Batch        int     // tokens per forward pass at most (NewRunner's maxBatch)
	Threads      int     // the pool's threads
	Extra        float64 // bytes the caller allocates beside the runner, counted as scratch
}

// Need returns the bytes of the KV cache of p for cfg and of the scratch
// beside it (an upper bound): the runner's activations, logits rows and
// quantized activations, a mixture of experts' routing and per-slot
// outputs, the attention's per-thread tiles and partials, and p.Extra.
func (p MemoryPlan) Need(cfg Config) (cache, scratch float64) {
	cache = float64(CacheBytes(cfg, p.TypeK, p.TypeV, p.Seqs, p.Ctx))
	perToken := 3*cfg.NEmbd + 2*cfg.QDim() + 2*cfg.KVDim() + 2*cfg.NFF
	scratch = 4*float64(p.Batch)*float64(perToken) + // activations
		4*float64(p.Seqs)*float64(cfg.NVocab) + // logits rows
		float64(p.Batch)*float64(max(cfg.NEmbd, cfg.NFF))*4 + // quantized activations
		cfg.ExpertScratchBytes(p.Batch) +
		AttnScratchBytes(cfg, p.TypeK, p.TypeV, p.Ctx, p.Batch, p.Threads) +
		p.Extra
	return cache, scratch
}

// Unlimited reports whether limit sets no bound: 0 or less, or
// math.MaxInt64 (the Go runtime's "no limit").
func Unlimited(limit int64) bool { return limit <= 0 || limit == math.MaxInt64 }

// FitsShare reports whether need bytes fit in MemoryShare of limit (no
// limit: they fit).
func FitsShare(need float64, limit int64) bool {
	return Unlimited(limit) || need <= MemoryShare*float64(limit)
}

// CopyFits reports whether a private in-memory copy of f, the KV cache
// and the scratch fit in MemoryShare of limit; plan gives the plan for
// f's configuration. With no limit they fit, and f is not read. A file
// whose configuration cannot be read, or for which plan fails, does not
// fit: the caller keeps the mapping and its load then reports why.
func CopyFits(f *gguf.File, limit int64, plan func(Config) (MemoryPlan, error)) bool {
	if Unlimited(limit) {
		return true
	}
	// The configuration is metadata alone: the tensors are bound later,
	// from whichever form of the file this decides on.
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		return false
	}
	p, err := plan(cfg)
	if err != nil {
		return false
	}
	cache, scratch := p.Need(cfg)
	return FitsShare(float64(f.FileSize)+cache+scratch, limit)
}

// OpenWithinLimit opens a model from its files (one, or a split model's
// shards, the first first): mapped first, which parses and checks the
// header; then, when CopyFits(limit, plan) says a private in-memory copy
// fits, that copy instead (gguf.LoadSplit: decode streams it markedly
// faster than the page cache's mapping). Otherwise, or when the copy
// fails, the mapping serves: the page cache's pages do not count against
// a worker's RLIMIT_DATA, so a model larger than the limit's share still
// runs.
func OpenWithinLimit(fhs []*os.File, limit int64, plan func(Config) (MemoryPlan, error)) (*gguf.File, error) {
	f, err := gguf.OpenSplit(fhs, gguf.DefaultLimits())
	if err != nil {
		return nil, err
	}
	if !CopyFits(f, limit, plan) {
		return f, nil
	}
	g, err := gguf.LoadSplit(fhs, gguf.DefaultLimits())
	if err != nil {
		return f, nil // the mapping still serves
	}
	f.Close()
	return g, nil
}
