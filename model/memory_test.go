package model

import (
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/internal/gcbound"
	"github.com/lisa-llm/lisa/kernels"
	msynth "github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/tensor"
)

// TestFitsShare: a need fits in MemoryShare of a limit and no more; 0,
// negative and math.MaxInt64 limits bound nothing.
func TestFitsShare(t *testing.T) {
	for _, c := range []struct {
		need  float64
		limit int64
		want  bool
	}{
		{1e18, 0, true},
		{1e18, -1, true},
		{1e18, math.MaxInt64, true},
		{84, 100, true},
		{86, 100, false},
		{0.849 * (1 << 30), 1 << 30, true},
		{0.851 * (1 << 30), 1 << 30, false},
	} {
		if got := FitsShare(c.need, c.limit); got != c.want {
			t.Errorf("FitsShare(%g, %d) = %v, want %v", c.need, c.limit, got, c.want)
		}
	}
}

// TestCopyFits: the copy fits up to MemoryShare of the limit beside the
// plan's cache and scratch, Extra counts, a failing plan keeps the
// mapping, and without a limit neither the file nor the plan is read.
func TestCopyFits(t *testing.T) {
	if !CopyFits(nil, 0, func(Config) (MemoryPlan, error) {
		t.Error("plan asked for without a limit")
		return MemoryPlan{}, nil
	}) {
		t.Error("no limit: the copy does not fit")
	}
	f := openShape(t, "llama3-tiny", msynth.F16, 1)
	cfg, err := ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	p := MemoryPlan{TypeK: KVQ8_0, TypeV: KVF16, Seqs: 2, Ctx: 512, Batch: 64, Threads: 3}
	cache, scratch := p.Need(cfg)
	if want := float64(CacheBytes(cfg, p.TypeK, p.TypeV, p.Seqs, p.Ctx)); cache != want {
		t.Errorf("cache %.0f bytes, CacheBytes says %.0f", cache, want)
	}
	if attn := AttnScratchBytes(cfg, p.TypeK, p.TypeV, p.Ctx, p.Batch, p.Threads); attn <= 0 || scratch <= attn {
		t.Errorf("scratch %.0f does not hold the attention's %.0f and the activations", scratch, attn)
	}
	withExtra := p
	withExtra.Extra = 1 << 20
	if c2, s2 := withExtra.Need(cfg); c2 != cache || s2 != scratch+withExtra.Extra {
		t.Errorf("with 1 MiB extra: cache %.0f scratch %.0f, want %.0f and %.0f", c2, s2, cache, scratch+withExtra.Extra)
	}
	limit := int64((float64(f.FileSize) + cache + scratch) / MemoryShare)
	errPlan := errors.New("bad plan")
	for _, c := range []struct {
		name  string
		limit int64
		plan  MemoryPlan
		err   error
		want  bool
	}{
		{"room", limit + 4096, p, nil, true},
		{"short", limit - 4096, p, nil, false},
		{"short by the extra", limit + 4096, withExtra, nil, false},
		{"plan error", 1 << 40, p, errPlan, false},
	} {
		got := CopyFits(f, c.limit, func(got Config) (MemoryPlan, error) {
			if got != cfg {
				t.Errorf("%s: plan asked for %+v, want %+v", c.name, got, cfg)
			}
			return c.plan, c.err
		})
		if got != c.want {
			t.Errorf("%s: limit %d: fits %v, want %v", c.name, c.limit, got, c.want)
		}
	}
}

// workerReserve bounds what a worker process holds beside its model, its
// KV cache and the scratch Need counts: the Go runtime's own memory, the
// goroutines' stacks, the pages of the lisa binary it has run (8.5 MiB of
// RssFile in a serving worker) and the parsed metadata. Measured for the
// tinyllama-shaped Q4_K_M file, the bench worker's 764 MiB peak at depth
// 4096 less the model's copy, the cache and the runner's heap left about
// 9 MiB; 24 leaves room.
const workerReserve = 24 << 20

// TestNeedWithinGoal: issue 22's memory goal, a worker's peak at a
// context of 4096 within the model file plus the KV cache plus 10%, in
// the plan's terms for the tinyllama-1.1b shape in Q4_K_M (its tensors'
// bytes for the file): `lisa bench -p 512 -n 128 -d 4096 -t 2` (one
// sequence of 4608 positions, 512-token forward passes) and lisa serve's
// default of 4 slots of 4096 tokens with 512-token batches. The plan's
// scratch plus workerReserve stays within the 10%; TestNeedCoversRunner
// holds the plan to what a runner really keeps. Whole-batch activations
// (28 MiB of them at 512 tokens) or logits for every prompt token (62
// MiB) would fail it.
func TestNeedWithinGoal(t *testing.T) {
	sh, ok := msynth.Lookup("tinyllama-1.1b")
	if !ok {
		t.Fatal("no tinyllama-1.1b shape")
	}
	tensors, err := msynth.Plan(sh, msynth.Q4_K_M)
	if err != nil {
		t.Fatal(err)
	}
	var file float64
	for _, tp := range tensors {
		n, err := tp.Type.Bytes(tp.Dims)
		if err != nil {
			t.Fatal(err)
		}
		file += float64(n)
	}
	if file < 600<<20 || file > 700<<20 {
		t.Fatalf("tinyllama's Q4_K_M tensors take %.1f MiB, want about 636", file/(1<<20))
	}
	cfg := Config{Arch: "llama", NEmbd: sh.NEmbd, NLayer: sh.NLayer, NHead: sh.NHead, NHeadKV: sh.NHeadKV,
		HeadDim: sh.NEmbd / sh.NHead, NFF: sh.NFF, NVocab: sh.NVocab}
	for _, tc := range []struct {
		name string
		p    MemoryPlan
	}{
		{"bench -d 4096 -p 512 -n 128", MemoryPlan{Seqs: 1, Ctx: 4096 + 512, Batch: 512, Threads: 2}},
		{"serve ctx 4096 parallel 4", MemoryPlan{Seqs: 4, Ctx: 4096, Batch: 512, Threads: 2}},
	} {
		cache, scratch := tc.p.Need(cfg)
		over := (scratch + workerReserve) / (file + cache)
		t.Logf("%s: file %.1f MiB, cache %.1f MiB, scratch %.1f MiB + reserve %d MiB: %.1f%% over",
			tc.name, file/(1<<20), cache/(1<<20), scratch/(1<<20), workerReserve>>20, 100*over)
		if over > 0.10 {
			t.Errorf("%s: the plan's scratch %.1f MiB and the worker's reserve %d MiB are %.1f%% of file + cache, want at most 10%%",
				tc.name, scratch/(1<<20), workerReserve>>20, 100*over)
		}
	}
}

// liveHeap returns the bytes of the heap still reachable after a
// collection.
func liveHeap() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc)
}

// TestNeedCoversRunner: what a runner really holds once it has run
// 512-token prompt steps at a depth and a decoding step (its residual
// stream and chunk scratch, the cache, the pool's product scratch grown
// to the widest product, the attention's tiles and partials, a logits
// row) is within the plan without its garbage bound, and the plan counts
// at most half as much again, for a model with tinyllama's 8 query heads per
// KV head in each kind of product kernel. A prompt step in the steady
// state allocates (almost) nothing: garbage per step is what a worker's
// collector lets grow beside the live heap.
func TestNeedCoversRunner(t *testing.T) {
	for _, wt := range []tensor.Type{tensor.Q4_K, tensor.Q8_0, tensor.F16} {
		t.Run(wt.String(), func(t *testing.T) {
			m, err := newSynth(t, synthSpec{embd: 512, layers: 2, heads: 8, kvHeads: 1, ff: 1536, vocab: 1000, seed: 4, wtype: wt}).load(t)
			if err != nil {
				t.Fatal(err)
			}
			const batch, depth, threads = 512, 512, 2
			plan := MemoryPlan{Seqs: 1, Ctx: depth + batch + 1, Batch: batch, Threads: threads}
			cache, scratch := plan.Need(m.Config)
			need := cache + scratch - gcbound.Garbage
			pool := kernels.NewPool(threads)
			defer pool.Close()
			fill, step, one := tokens(0, 0, depth), tokens(0, depth, batch), tokens(0, depth+batch, 1)
			before := liveHeap()
			c, err := NewCacheTypes(m.Config, plan.TypeK, plan.TypeV, plan.Seqs, plan.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(m, c, pool, batch)
			decode := func(b Batch) {
				t.Helper()
				if _, err := r.Decode(b); err != nil {
					t.Fatal(err)
				}
			}
			decode(fill)
			decode(step)
			if err := c.Truncate(0, depth); err != nil {
				t.Fatal(err)
			}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			decode(step)
			runtime.ReadMemStats(&ms1)
			decode(one)
			held := liveHeap() - before
			runtime.KeepAlive(r)
			if garbage := ms1.TotalAlloc - ms0.TotalAlloc; garbage > 64<<10 {
				t.Errorf("a %d-token prompt step at depth %d allocated %d bytes", batch, depth, garbage)
			}
			t.Logf("held %.0f bytes, plan %.0f (cache %.0f)", held, need, cache)
			if held > need {
				t.Errorf("the runner and cache hold %.0f bytes, the plan counts %.0f", held, need)
			}
			if need > 1.5*held {
				t.Errorf("the plan counts %.0f bytes, more than half as much again as the %.0f held", need, held)
			}
		})
	}
}
