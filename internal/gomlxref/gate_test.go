package gomlxref

import (
	"errors"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model"
)

// This file is the explicit gate between the generator, which draws what
// current llama.cpp computes, and package model, which has two known gaps
// (after the merge of its architecture layer):
//
//   - rope_freqs.weight in a granite file: llama.cpp loads and applies it
//     (granite's loader is llama's); model.Load refuses the tensor with
//     ErrUnsupported.
//   - granite.rope.scaling.finetuned false: current llama.cpp turns RoPE
//     off for the file; package model ignores the key (found by a probe
//     comparing the engine's logits with the switch on and off).
//
// A configuration is skipped, by name and with the reason, only for one
// of these; the test logs the list. Any other load error and any numeric
// mismatch fails. When the engine closes a gap the probe, or the absent
// ErrUnsupported, lets those configurations run without a change here.

// gapUnsupported reports whether err is model.Load's refusal of a known
// gap that s has.
func (s spec) gapUnsupported(err error) bool {
	return errors.Is(err, model.ErrUnsupported) && s.arch == "granite" && s.ropeFreqs
}

// engineGate decides, once per test, which configurations the engine is
// compared on.
type engineGate struct {
	ropeSwitch string   // "" when the engine honours granite's RoPE switch, else why not
	skipped    []string // configurations skipped, with the reason
}

// newEngineGate probes the engine.
func newEngineGate(t *testing.T) *engineGate {
	t.Helper()
	g := &engineGate{ropeSwitch: engineRopeSwitchGap(t)}
	if g.ropeSwitch != "" {
		t.Logf("gate: %s: granite configurations with the switch off are skipped", g.ropeSwitch)
	}
	return g
}

// skip returns why s must not be compared with the engine, or "" when it
// must. An engine load error other than a known gap fails t.
func (g *engineGate) skip(t *testing.T, s spec, f *gguf.File) string {
	t.Helper()
	why := knownGap(t, s, f)
	if why == "" && s.ropeSwitch == "off" {
		why = g.ropeSwitch
	}
	if why != "" {
		g.skipped = append(g.skipped, s.String()+": "+why)
	}
	return why
}

// knownGap returns model.Load's error when it is the refusal of a known
// gap of s, "" when the engine loads f; any other error fails t.
func knownGap(t *testing.T, s spec, f *gguf.File) string {
	t.Helper()
	_, err := model.Load(f)
	switch {
	case err == nil:
		return ""
	case s.gapUnsupported(err):
		return "package model refuses rope_freqs.weight in a granite file, which llama.cpp applies: " + err.Error()
	}
	t.Fatalf("model.Load: %v", err)
	return ""
}

// report logs every skipped configuration at the end of the test.
func (g *engineGate) report(t *testing.T, total int) {
	t.Helper()
	if len(g.skipped) == 0 {
		t.Logf("gate: the engine was compared on all %d configurations", total)
		return
	}
	t.Logf("gate: %d of %d configurations SKIPPED for a known gap of package model:\n\t%s",
		len(g.skipped), total, strings.Join(g.skipped, "\n\t"))
}

// engineRopeSwitchGap returns "" when the engine's logits for a granite
// file change when granite.rope.scaling.finetuned goes from true to
// false, and the reason to skip otherwise (the engine ignores the key,
// or refuses the file).
func engineRopeSwitchGap(t *testing.T) string {
	t.Helper()
	s := small
	s.arch, s.logitScale = "granite", 2
	tokens := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	var rows [2][][]float32
	for i, sw := range []string{"on", "off"} {
		s.ropeSwitch = sw
		f := s.file(t)
		if _, err := model.Load(f); err != nil {
			return "package model refuses granite.rope.scaling.finetuned " + sw + ": " + err.Error()
		}
		rows[i] = engineLogits(t, f, tokens, []int{len(tokens)}, false)
	}
	if maxDeviation(rows[0], rows[1]) <= detectable {
		return "package model ignores granite.rope.scaling.finetuned false (current llama.cpp turns RoPE off)"
	}
	return ""
}

// skipGap skips t when s has a known gap of the engine (the mutation
// tests' gate).
func skipGap(t *testing.T, s spec, f *gguf.File) {
	t.Helper()
	if why := knownGap(t, s, f); why != "" {
		t.Skipf("SKIPPED: %s", why)
	}
	if s.ropeSwitch == "off" {
		if why := engineRopeSwitchGap(t); why != "" {
			t.Skipf("SKIPPED: %s", why)
		}
	}
}
