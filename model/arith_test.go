package model

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestArithmetic checks the named summation orders: auto is ggml's for an
// all-F32 model and kernels' for a quantized one, bit for bit, and the
// other choice gives different but close logits.
func TestArithmetic(t *testing.T) {
	for _, tc := range []struct {
		wtype   tensor.Type
		auto    Arithmetic // what auto must equal
		other   Arithmetic
		differs bool // other must change the logits
	}{
		{tensor.F32, ArithGGML, ArithKernels, true},
		{tensor.F16, ArithKernels, ArithGGML, false},
	} {
		t.Run(tc.wtype.String(), func(t *testing.T) {
			sp := synthSpec{embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 64, vocab: 50, seed: 31, wtype: tc.wtype}
			m, err := newSynth(t, sp).load(t)
			if err != nil {
				t.Fatal(err)
			}
			toks := randomTokens(rand.New(rand.NewPCG(1, 2)), 40, sp.vocab)
			logits := func(a Arithmetic) []float32 {
				s := newSession(t, m, 64)
				s.r.SetArithmetic(a)
				if s.r.Arithmetic() != a {
					t.Fatalf("Arithmetic() %v after SetArithmetic(%v)", s.r.Arithmetic(), a)
				}
				var all []float32
				for _, row := range s.feed(t, toks, true) {
					all = append(all, row...)
				}
				return all
			}
			auto, same, other := logits(ArithAuto), logits(tc.auto), logits(tc.other)
			if !slices.Equal(auto, same) {
				t.Errorf("auto differs from %v (max %g)", tc.auto, maxDiff(auto, same))
			}
			d := maxDiff(auto, other)
			if (tc.differs && d == 0) || d > 1e-2 {
				t.Errorf("%v against %v: max |Δ| %g, want within 1e-2 (and different: %v)", tc.other, tc.auto, d, tc.differs)
			}
		})
	}
}

func TestParseArithmetic(t *testing.T) {
	for _, a := range []Arithmetic{ArithAuto, ArithGGML, ArithKernels} {
		if got, err := ParseArithmetic(a.String()); err != nil || got != a {
			t.Errorf("%v: %v, %v", a, got, err)
		}
	}
	if _, err := ParseArithmetic("fast"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("fast: %v", err)
	}
}
