package model

import (
	"errors"
	"math"
	"testing"

	msynth "github.com/lisa-llm/lisa/model/synth"
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
