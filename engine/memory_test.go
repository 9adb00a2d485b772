package engine

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model"
)

// TestMemoryNeedCountsScratch: the estimate covers what New really
// allocates on the heap besides the model's metadata (measured: the
// cache, the runner's activations, the attention's per-thread tiles and
// partials, which at a long context outweigh the rest of the scratch of a
// small model), and it reserves the grammar cache's masks, which grow
// while serving.
func TestMemoryNeedCountsScratch(t *testing.T) {
	f, err := gguf.Open(filepath.Join(shared.Dir(t), stories), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, o := range []Options{
		{Threads: 1, Parallel: 1, CtxSize: 128},
		{Threads: 2, Parallel: 1, CtxSize: 4096},
		{Threads: 4, Parallel: 4, CtxSize: 2048, BatchSize: 64},
		{Threads: 3, Parallel: 2, CtxSize: 1024, KV: model.KVF32, KVV: model.KVF32},
	} {
		r := o
		if err := r.resolve(m.Config); err != nil {
			t.Fatal(err)
		}
		cache, scratch := r.memoryNeed(m.Config)
		attn := model.AttnScratchBytes(m.Config, r.KV, r.KVV, r.CtxSize, r.BatchSize, r.Threads)
		if attn <= 0 || scratch < attn+grammarMaskBytes {
			t.Errorf("%+v: scratch %.0f does not hold the attention's %.0f and the grammar masks' %d", o, scratch, attn, grammarMaskBytes)
		}
		// New reopens the file itself: give it its own handle.
		g, err := gguf.Open(filepath.Join(shared.Dir(t), stories), gguf.DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		before := heap()
		e, err := New(g, o)
		if err != nil {
			g.Close()
			t.Fatal(err)
		}
		grown := float64(heap()) - float64(before)
		e.Close()
		// The grammar masks are not allocated yet: New's heap is the
		// rest of the estimate, plus the tokenizer and the model's
		// metadata (well under a MiB for this model).
		if need := cache + scratch - grammarMaskBytes + 1<<20; grown > need {
			t.Errorf("%+v: New grew the heap by %.0f bytes, the estimate is %.0f (without the grammar masks, plus 1 MiB)", o, grown, need)
		}
		t.Logf("%+v: heap +%.0f, cache %.0f, scratch %.0f of which attention %.0f", o, grown, cache, scratch, attn)
	}
}
