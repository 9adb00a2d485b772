package model

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	msynth "github.com/lisa-llm/lisa/model/synth"
)

// TestConfigSecondWave checks what the gemma2, gemma3 and phi3 families
// read from their keys and what llama.cpp's defaults give them.
func TestConfigSecondWave(t *testing.T) {
	type edit = func(fakeMeta)
	set := func(k string, v any) edit { return func(m fakeMeta) { m[k] = v } }
	tests := []struct {
		name    string
		arch    string
		edits   []edit
		wantKey string // "" = success
		check   func(Config) error
	}{
		{name: "gemma2 defaults", arch: "gemma2", check: func(c Config) error {
			if c.AttnSoftcap != 50 || c.FinalSoftcap != 30 || c.NSWA != 4096 || c.SWAPattern != 2 ||
				c.EmbedScale != 8 || !c.QueryPreScale || !c.FFNGELU || c.AttnScale != float32(1/math.Sqrt(8)) || !c.RopeNeoX {
				return fmt.Errorf("%+v", c)
			}
			return nil
		}},
		{name: "gemma2 keys", arch: "gemma2", edits: []edit{set("gemma2.attn_logit_softcapping", float32(20)),
			set("gemma2.final_logit_softcapping", float32(10)), set("gemma2.attention.sliding_window", uint32(7))},
			check: func(c Config) error {
				if c.AttnSoftcap != 20 || c.FinalSoftcap != 10 || c.NSWA != 7 {
					return fmt.Errorf("%+v", c)
				}
				return nil
			}},
		{name: "gemma2 27B scale", arch: "gemma2", edits: []edit{set("gemma2.block_count", uint32(46)), set("gemma2.attention.key_length", uint32(16)),
			set("gemma2.attention.value_length", uint32(16)), set("gemma2.rope.dimension_count", uint32(16))},
			check: func(c Config) error {
				// query_pre_attn_scalar is NEmbd/NHead = 8, not the head's 16.
				if c.HeadDim != 16 || c.AttnScale != float32(1/math.Sqrt(8)) {
					return fmt.Errorf("%+v", c)
				}
				return nil
			}},
		{name: "gemma2 negative soft cap", arch: "gemma2", edits: []edit{set("gemma2.attn_logit_softcapping", float32(-1))},
			wantKey: "gemma2.attn_logit_softcapping"},
		{name: "gemma2 window too large", arch: "gemma2", edits: []edit{set("gemma2.attention.sliding_window", uint32(MaxCtx+1))},
			wantKey: "gemma2.attention.sliding_window"},
		{name: "gemma3 windowed", arch: "gemma3", edits: []edit{set("gemma3.attention.sliding_window", uint32(512))},
			check: func(c Config) error {
				if c.NSWA != 512 || c.SWAPattern != 6 || c.RopeBaseSWA != 10000 || c.RopeScaleSWA != 1 ||
					c.AttnSoftcap != 0 || c.FinalSoftcap != 0 || !c.FFNGELU {
					return fmt.Errorf("%+v", c)
				}
				return nil
			}},
		{name: "gemma3 without a window", arch: "gemma3", check: func(c Config) error {
			if c.NSWA != 0 || c.RopeBaseSWA != 0 || c.LayerSWA(0) {
				return fmt.Errorf("%+v", c)
			}
			return nil
		}},
		{name: "phi3 window not applied", arch: "phi3", edits: []edit{set("phi3.attention.sliding_window", uint32(2047))},
			check: func(c Config) error {
				if c.NSWA != 0 || !c.QueryPreScale || c.FFNGELU || !c.RopeNeoX {
					return fmt.Errorf("%+v", c)
				}
				return nil
			}},
		{name: "phi3 window of the wrong type", arch: "phi3", edits: []edit{set("phi3.attention.sliding_window", "x")},
			wantKey: "phi3.attention.sliding_window"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := baseMeta()
			renameArch(tc.arch)(m)
			for _, e := range tc.edits {
				e(m)
			}
			c, err := configFrom(m, errFakeNotFound)
			if tc.wantKey != "" {
				var ke *KeyError
				if !errors.As(err, &ke) || ke.Key != tc.wantKey {
					t.Fatalf("got %v, want a KeyError for %s", err, tc.wantKey)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.check(c); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestLayerSWA checks llama.cpp's layer patterns: gemma2's even layers,
// gemma3's five of six, every layer for a pattern of 0 or 1.
func TestLayerSWA(t *testing.T) {
	for _, tc := range []struct {
		nswa, pattern int
		want          string // one character per layer 0..11
	}{
		{0, 2, "gggggggggggg"},
		{16, 2, "wgwgwgwgwgwg"},
		{16, 6, "wwwwwgwwwwwg"},
		{16, 0, "wwwwwwwwwwww"},
		{16, 1, "wwwwwwwwwwww"},
	} {
		c := Config{NSWA: tc.nswa, SWAPattern: tc.pattern}
		got := ""
		for l := range 12 {
			if c.LayerSWA(l) {
				got += "w"
			} else {
				got += "g"
			}
		}
		if got != tc.want {
			t.Errorf("window %d pattern %d: %s, want %s", tc.nswa, tc.pattern, got, tc.want)
		}
	}
}

// loadShape synthesizes a tiny shape (F16) and loads it.
func loadShape(t *testing.T, name string) *Model {
	t.Helper()
	m, err := Load(openShape(t, name, msynth.F16, 1))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// openShape synthesizes the shape name as file type ft from seed and
// opens the file, which is closed when the test ends.
func openShape(t *testing.T, name string, ft msynth.FileType, seed uint64) *gguf.File {
	t.Helper()
	sh, ok := msynth.Lookup(name)
	if !ok {
		t.Fatalf("no shape %s", name)
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if _, err := msynth.WriteFile(path, msynth.Options{Shape: sh, Type: ft, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestRopeForSecondWave checks which rotary embedding each layer gets:
// gemma3's windowed layers their own base, phi3 the long factors only
// for a context past the original one.
func TestRopeForSecondWave(t *testing.T) {
	g := loadShape(t, "gemma3-tiny")
	if g.RopeSWA == nil || g.RopeSWA.Params().Base != 10000 || g.RopeSWA.Params().FreqScale != 1 {
		t.Fatalf("gemma3 windowed rope %+v", g.RopeSWA)
	}
	if p := g.Rope.Params(); p.Base != 1e6 || p.FreqScale != 0.125 {
		t.Errorf("gemma3 global rope base %g scale %g, want 1e6 and 1/8", p.Base, p.FreqScale)
	}
	for l := range g.Config.NLayer {
		want := g.RopeSWA
		if l == 5 {
			want = g.Rope
		}
		if got := g.RopeFor(l, 512); got != want {
			t.Errorf("gemma3 layer %d: wrong rope", l)
		}
	}
	p := loadShape(t, "phi4mini-tiny")
	if p.RopeLong == nil || p.RopeFreqs == nil || p.Config.RopeOrigCtx != 4096 || p.Config.RopeDim != 48 {
		t.Fatalf("phi3 long rope %v, short factors %v, original context %d, rope dim %d",
			p.RopeLong != nil, p.RopeFreqs != nil, p.Config.RopeOrigCtx, p.Config.RopeDim)
	}
	if p.RopeFor(0, 4096) != p.Rope || p.RopeFor(1, 4097) != p.RopeLong {
		t.Error("phi3: the long factors are not chosen past the original context only")
	}
	if af := p.Rope.Params().AttnFactor; math.Abs(float64(af)-math.Sqrt(1+math.Log(32)/math.Log(4096))) > 1e-6 {
		t.Errorf("phi3 attention factor %g", af)
	}
	if p.Layers[0].QKV.Rows != 256+2*128 || p.Layers[0].GateUp.Rows != 2*768 || !p.Config.TiedOutput {
		t.Errorf("phi3 fused rows %d/%d, tied %v", p.Layers[0].QKV.Rows, p.Layers[0].GateUp.Rows, p.Config.TiedOutput)
	}
}
