package gomlxref

import (
	"errors"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model"
)

// This file is the explicit gate between the generator, which draws every
// family and feature of issue 18, and the engine, which may not load all
// of them yet. A configuration is skipped, by name and with the reason,
// only when it uses one of the features in pendingFeatures and the engine
// refuses its file with model.ErrUnsupported, or ignores
// rope.scaling.attn_factor (probed once, see engineAppliesAttnFactor).
// Any other refusal, and any numeric mismatch, fails. Once package model
// loads everything, no configuration is skipped and the test says so.

// pendingFeatures names, for s, the features of its file that package
// model did not implement before issue 18: the families other than
// llama, attention biases, rope_freqs.weight and YaRN scaling.
func (s spec) pendingFeatures() []string {
	var p []string
	if s.arch != "llama" {
		p = append(p, "family "+s.arch)
	}
	if s.biases != "" {
		p = append(p, "attention biases")
	}
	if s.ropeFreqs {
		p = append(p, "rope_freqs.weight")
	}
	if s.scaling == "yarn" {
		p = append(p, "yarn scaling")
	}
	return p
}

// engineGate decides, once per test, which configurations the engine is
// compared on.
type engineGate struct {
	attnFactor bool     // the engine applies rope.scaling.attn_factor
	skipped    []string // configurations skipped, with the reason
}

// newEngineGate probes the engine.
func newEngineGate(t *testing.T) *engineGate {
	t.Helper()
	g := &engineGate{attnFactor: engineAppliesAttnFactor(t)}
	if !g.attnFactor {
		t.Logf("gate: package model ignores rope.scaling.attn_factor (llama.cpp multiplies cos and sin by it): configurations with the key are skipped")
	}
	return g
}

// skip returns why s must not be compared with the engine, or "" when it
// must: s uses a pending feature and model.Load refuses f with
// ErrUnsupported, or s has attn_factor and the engine ignores it. Any
// other engine load error fails t.
func (g *engineGate) skip(t *testing.T, s spec, f *gguf.File) string {
	t.Helper()
	var why string
	_, err := model.Load(f)
	switch {
	case err == nil:
	case errors.Is(err, model.ErrUnsupported) && len(s.pendingFeatures()) > 0:
		why = "model.Load: " + err.Error() + " (pending: " + strings.Join(s.pendingFeatures(), ", ") + ")"
	default:
		t.Fatalf("model.Load: %v", err)
	}
	if why == "" && s.attnFactor != 0 && !g.attnFactor {
		why = "package model ignores rope.scaling.attn_factor"
	}
	if why != "" {
		g.skipped = append(g.skipped, s.String()+": "+why)
	}
	return why
}

// report logs every skipped configuration at the end of the test.
func (g *engineGate) report(t *testing.T, total int) {
	t.Helper()
	if len(g.skipped) == 0 {
		t.Logf("gate: the engine was compared on all %d configurations", total)
		return
	}
	t.Logf("gate: %d of %d configurations SKIPPED because package model does not load or compute them yet:\n\t%s",
		len(g.skipped), total, strings.Join(g.skipped, "\n\t"))
}

// engineAppliesAttnFactor reports whether the engine's logits change when
// a llama file gains rope.scaling.attn_factor 1.5: an engine that reads
// the key but ignores it gives identical logits.
func engineAppliesAttnFactor(t *testing.T) bool {
	t.Helper()
	s := mutationSpec
	tokens := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	plain := engineLogits(t, s.file(t), tokens, []int{len(tokens)}, false)
	s.attnFactor = 1.5
	scaled := engineLogits(t, s.file(t), tokens, []int{len(tokens)}, false)
	return maxDeviation(plain, scaled) > detectable
}

// skipUnsupported skips t when s uses a pending feature and model.Load
// refuses f with ErrUnsupported (the mutation tests' gate).
func skipUnsupported(t *testing.T, s spec, f *gguf.File) {
	t.Helper()
	if _, err := model.Load(f); err != nil {
		if errors.Is(err, model.ErrUnsupported) && len(s.pendingFeatures()) > 0 {
			t.Skipf("SKIPPED: package model does not load %s yet: %v", strings.Join(s.pendingFeatures(), ", "), err)
		}
		t.Fatalf("model.Load: %v", err)
	}
	if s.attnFactor != 0 && !engineAppliesAttnFactor(t) {
		t.Skipf("SKIPPED: package model ignores rope.scaling.attn_factor")
	}
}
