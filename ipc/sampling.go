package ipc

import (
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/model/sample"
)

// The ranges of the sampling parameters, in one place: the broker refuses
// a request outside them (400 naming the field), Generate.validate refuses
// a frame outside them, and the worker's sampler accepts every value inside
// them (a test in package engine checks each bound), so no value the
// broker lets through can fail later as an internal error.
const (
	MaxTemperature = 2                      // temperature: 0..2
	MaxTopK        = 1 << 20                // top_k: 0..MaxTopK (0 disables)
	MaxRepeatLastN = sample.MaxPenaltyLastN // repeat_last_n: 0..MaxRepeatLastN
	MaxRepeatPen   = 10                     // repeat_penalty: above 0, at most 10
	MaxPenalty     = 2                      // presence and frequency penalties: -2..2
)

// validate checks every parameter against the ranges above; NaN and the
// infinities fail every range.
func validateSampling(typ string, s gen.Sampling) error {
	in := func(v float32, lo, hi float64) bool {
		f := float64(v)
		return !math.IsNaN(f) && f >= lo && f <= hi
	}
	floats := []struct {
		field  string
		v      float32
		lo, hi float64
	}{
		{"temperature", s.Temperature, 0, MaxTemperature},
		{"top_p", s.TopP, 0, 1},
		{"min_p", s.MinP, 0, 1},
		{"repeat_penalty", s.RepeatPenalty, 0, MaxRepeatPen},
		{"presence_penalty", s.PresencePenalty, -MaxPenalty, MaxPenalty},
		{"frequency_penalty", s.FrequencyPenalty, -MaxPenalty, MaxPenalty},
	}
	for _, f := range floats {
		if !in(f.v, f.lo, f.hi) {
			return bad(typ, "request.sampling."+f.field, "%g outside %g..%g", f.v, f.lo, f.hi)
		}
	}
	switch {
	case s.TopK < 0 || s.TopK > MaxTopK:
		return bad(typ, "request.sampling.top_k", "%d outside 0..%d", s.TopK, MaxTopK)
	case s.RepeatLastN < 0 || s.RepeatLastN > MaxRepeatLastN:
		return bad(typ, "request.sampling.repeat_last_n", "%d outside 0..%d", s.RepeatLastN, MaxRepeatLastN)
	case len(s.LogitBias) > gen.MaxLogitBias:
		return bad(typ, "request.sampling.logit_bias", "%d entries, at most %d", len(s.LogitBias), gen.MaxLogitBias)
	}
	// Token ids are checked against MaxTokens here and against the
	// vocabulary by the engine (the broker checks both).
	seen := make(map[int32]bool, len(s.LogitBias))
	for i, b := range s.LogitBias {
		field := fmt.Sprintf("request.sampling.logit_bias[%d]", i)
		switch {
		case b.Token < 0 || b.Token >= MaxTokens:
			return bad(typ, field+".token", "token id %d out of range", b.Token)
		case seen[b.Token]:
			return bad(typ, field+".token", "token id %d given twice", b.Token)
		case !in(b.Bias, -gen.MaxBias, gen.MaxBias):
			return bad(typ, field+".bias", "%g outside %d..%d", b.Bias, -gen.MaxBias, gen.MaxBias)
		}
		seen[b.Token] = true
	}
	return nil
}
