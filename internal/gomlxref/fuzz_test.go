package gomlxref

import (
	"errors"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
)

// fuzzForwardWeights bounds the files FuzzLoad also runs Forward on: the
// graph holds every weight as a constant and compiles per call.
const fuzzForwardWeights = 1 << 14

// FuzzLoad feeds arbitrary bytes through the GGUF reader and Load, and
// small models that load through a three-token Forward: nothing may
// panic, and every error must be an *Error.
func FuzzLoad(f *testing.F) {
	gr := small
	gr.arch, gr.logitScale, gr.ropeSwitch = "granite", 2, "off"
	q2 := small
	q2.arch, q2.biases, q2.scaling, q2.factor = "qwen2", "qkv", "yarn", 4
	q3 := small
	q3.arch = "qwen3"
	ll := small
	ll.biases, ll.ropeFreqs, ll.attnFactor = "qkvo", true, 1.5
	for _, s := range []spec{ll, q2, q3, gr} {
		f.Add(encodeBytes(f, s.keys(), s.tensors()))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		gf, err := gguf.ParseBytes(b, gguf.DefaultLimits())
		if err != nil {
			return
		}
		m, err := Load(gf)
		var e *Error
		if err != nil {
			if !errors.As(err, &e) {
				t.Fatalf("Load: %v is not an *Error", err)
			}
			return
		}
		n := 0 // weights, counted up to just past the bound
		for _, ti := range gf.Tensors {
			k := 1
			for _, d := range ti.Dims {
				k *= int(min(d, fuzzForwardWeights+1))
				k = min(k, fuzzForwardWeights+1)
			}
			n = min(n+k, fuzzForwardWeights+1)
		}
		if n > fuzzForwardWeights {
			return
		}
		if _, err := m.Forward([]int32{0, int32(m.Config.NVocab - 1), 0}); err != nil && !errors.As(err, &e) {
			t.Fatalf("Forward: %v is not an *Error", err)
		}
	})
}
