package sample

import (
	"fmt"
	"math"
)

// MaxPenaltyLastN bounds Params.PenaltyLastN, so the history a Sampler
// keeps stays small whatever a request asks for.
const MaxPenaltyLastN = 1 << 16

// Params configures a Sampler. The zero value is greedy decoding with no
// penalties; DefaultParams gives llama.cpp's defaults.
type Params struct {
	// Temperature divides the logits before the draw; zero or less means
	// greedy decoding.
	Temperature float32
	// TopK keeps the K most likely tokens; zero or less disables it.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probabilities
	// sum to at least TopP; 1 (or more) disables it, and so does 0.
	TopP float32
	// MinP drops tokens whose probability is below MinP times the most
	// likely one's; zero disables it.
	MinP float32
	// MinKeep is the fewest candidates top-p and min-p may leave (at least 1).
	MinKeep int
	// RepeatPenalty divides positive logits and multiplies negative ones of
	// tokens seen in the last PenaltyLastN tokens; 1 (or 0) disables it.
	RepeatPenalty float32
	// PresencePenalty is subtracted once from the logit of every token seen
	// in the last PenaltyLastN tokens.
	PresencePenalty float32
	// FrequencyPenalty is subtracted from a token's logit once per
	// occurrence in the last PenaltyLastN tokens.
	FrequencyPenalty float32
	// PenaltyLastN is how many of the most recent accepted tokens the
	// penalties look at; zero disables the penalties.
	PenaltyLastN int
	// Seed seeds the pseudo-random generator of the draw.
	Seed uint64
}

// DefaultParams returns llama.cpp's default sampling settings: temperature
// 0.8, top-k 40, top-p 0.95, min-p 0.05, penalties off over the last 64
// tokens.
func DefaultParams() Params {
	return Params{
		Temperature:   0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		MinKeep:       1,
		RepeatPenalty: 1,
		PenaltyLastN:  64,
	}
}

// ParamError reports a sampling parameter out of its range.
type ParamError struct {
	Field string  // the Params field
	Value float64 // the value given
	Want  string  // the accepted range
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("sample: %s = %g out of range (want %s)", e.Field, e.Value, e.Want)
}

// finite reports whether f is neither NaN nor infinite.
func finite(f float32) bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// Validate checks every field of p and returns a *ParamError naming the
// first one out of range.
func (p Params) Validate() error {
	type check struct {
		field string
		v     float32
		ok    bool
		want  string
	}
	checks := []check{
		{"Temperature", p.Temperature, finite(p.Temperature) && p.Temperature <= 1e6, "finite, at most 1e6"},
		{"TopP", p.TopP, finite(p.TopP) && p.TopP >= 0, "finite, at least 0"},
		{"MinP", p.MinP, finite(p.MinP) && p.MinP >= 0 && p.MinP <= 1, "0..1"},
		{"RepeatPenalty", p.RepeatPenalty, finite(p.RepeatPenalty) && p.RepeatPenalty >= 0 && p.RepeatPenalty <= 1e6, "0..1e6"},
		{"PresencePenalty", p.PresencePenalty, finite(p.PresencePenalty) && math.Abs(float64(p.PresencePenalty)) <= 1e6, "finite, |v| at most 1e6"},
		{"FrequencyPenalty", p.FrequencyPenalty, finite(p.FrequencyPenalty) && math.Abs(float64(p.FrequencyPenalty)) <= 1e6, "finite, |v| at most 1e6"},
	}
	for _, c := range checks {
		if !c.ok {
			return &ParamError{Field: c.field, Value: float64(c.v), Want: c.want}
		}
	}
	if p.TopK < 0 {
		return &ParamError{Field: "TopK", Value: float64(p.TopK), Want: "at least 0"}
	}
	if p.MinKeep < 0 {
		return &ParamError{Field: "MinKeep", Value: float64(p.MinKeep), Want: "at least 0"}
	}
	if p.PenaltyLastN < 0 || p.PenaltyLastN > MaxPenaltyLastN {
		return &ParamError{Field: "PenaltyLastN", Value: float64(p.PenaltyLastN), Want: fmt.Sprintf("0..%d", MaxPenaltyLastN)}
	}
	return nil
}

// penalised reports whether the penalty stage changes anything.
func (p Params) penalised() bool {
	if p.PenaltyLastN == 0 {
		return false
	}
	return (p.RepeatPenalty != 1 && p.RepeatPenalty != 0) || p.PresencePenalty != 0 || p.FrequencyPenalty != 0
}
