package sample

import (
	"fmt"
	"math"
)

// TokenLogprob is a token with its natural-log probability.
type TokenLogprob struct {
	ID      int32
	Logprob float32
}

// MaxTopLogprobs bounds the alternatives Logprobs reports.
const MaxTopLogprobs = 1024

// Logprobs returns the log-probability of chosen under the softmax of the
// raw logits row, and the topN most likely tokens (best first, lower id on
// ties) appended to dst[:0]. The sums are done in float64. NaN logits count
// as -Inf. topN is capped at MaxTopLogprobs and at the row length.
func Logprobs(logits []float32, chosen int32, topN int, dst []TokenLogprob) (float32, []TokenLogprob, error) {
	if chosen < 0 || int(chosen) >= len(logits) {
		return 0, dst[:0], fmt.Errorf("sample: logprob of token %d in a row of %d: %w", chosen, len(logits), ErrVocab)
	}
	maxL := math.Inf(-1)
	for _, l := range logits {
		if float64(l) > maxL {
			maxL = float64(l)
		}
	}
	uniform := math.IsInf(maxL, -1) // no finite logit: all equally (im)possible
	var lse float64                 // log of the softmax denominator
	if !uniform {
		var sum float64
		for _, l := range logits {
			if l == l {
				sum += math.Exp(float64(l) - maxL)
			}
		}
		lse = maxL + math.Log(sum)
	}
	lp := func(l float32) float32 {
		if uniform {
			return float32(-math.Log(float64(len(logits))))
		}
		if l != l {
			return float32(math.Inf(-1))
		}
		return float32(float64(l) - lse)
	}
	topN = min(topN, MaxTopLogprobs, len(logits))
	h := dst[:0]
	rank := func(a, b TokenLogprob) bool { // Logprob holds the raw logit here
		if a.Logprob != b.Logprob {
			return a.Logprob > b.Logprob
		}
		return a.ID < b.ID
	}
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		h = offer(h, topN, TokenLogprob{ID: int32(i), Logprob: l}, rank)
	}
	h = keepTop(h, len(h), rank)
	for i := range h {
		h[i].Logprob = lp(h[i].Logprob)
	}
	return lp(logits[chosen]), h, nil
}
