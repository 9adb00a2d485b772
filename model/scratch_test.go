package model

import (
	"fmt"
	"reflect"
	"testing"
)

// capBytes returns the bytes of the backing arrays of the slices in vs.
func capBytes(vs ...any) float64 {
	n := 0.0
	for _, v := range vs {
		rv := reflect.ValueOf(v)
		n += float64(rv.Cap()) * float64(rv.Type().Elem().Size())
	}
	return n
}

// TestAttnScratchBytes: the estimate equals the attention scratch a
// Runner holds (the per-head and tiled paths' buffers of every worker,
// the partials and the jobs), for both forms of a tiled job (4 or more
// query heads per KV head take the matrix-product form), each cache
// type, thread counts and batch sizes.
func TestAttnScratchBytes(t *testing.T) {
	for _, cfg := range []Config{
		{NHead: 8, NHeadKV: 4, HeadDim: 32, NLayer: 1},  // F16 dot products
		{NHead: 8, NHeadKV: 2, HeadDim: 64, NLayer: 1},  // matrix products
		{NHead: 32, NHeadKV: 4, HeadDim: 64, NLayer: 1}, // tinyllama's shape
	} {
		for _, tc := range []struct {
			kv                   KVType
			nCtx, batch, threads int
		}{{KVF16, 128, 64, 1}, {KVF16, 1000, 512, 3}, {KVQ8_0, 300, 16, 2}, {KVF32, 64, 8, 2}, {KVF16, 4096, 512, 2}} {
			t.Run(fmt.Sprintf("h%d_kv%d/%v/ctx%d/b%d/t%d", cfg.NHead, cfg.NHeadKV, tc.kv, tc.nCtx, tc.batch, tc.threads), func(t *testing.T) {
				c, err := NewCache(cfg, tc.kv, 2, tc.nCtx)
				if err != nil {
					t.Fatal(err)
				}
				rig := &attnRig{c: c, cfg: cfg}
				r := rig.runner(t, tc.threads, tc.batch) // NewRunner's attention scratch
				if r.at.gemm != (cfg.NHead/cfg.NHeadKV >= gemmGroup) {
					t.Fatalf("matrix-product form %v", r.at.gemm)
				}
				at := &r.at
				got := capBytes(at.tok, at.part, at.jobs)
				for _, h := range r.heads {
					got += capBytes(h.scores, h.q16, h.p16)
				}
				for _, s := range at.scr {
					got += capBytes(s.q16, s.m, s.l, s.o, s.sc, s.p16, s.oc, s.kt, s.vt, s.f, s.t, s.qf, s.kf, s.vf, s.s, s.of, s.ms)
				}
				if want := AttnScratchBytes(cfg, tc.kv, tc.kv, tc.nCtx, tc.batch, tc.threads); want != got {
					t.Errorf("AttnScratchBytes %.0f, the runner holds %.0f", want, got)
				}
			})
		}
	}
}
