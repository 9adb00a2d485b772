package sample

import (
	"fmt"
	"math"
)

// The plain path samples when nothing cuts the distribution (temperature
// above zero; no top-k, top-p or min-p: OpenAI's defaults). A draw from
// the whole softmax needs no order among the tokens, so there is no sort
// and no bucketing: one pass for the top logit, the weights
// e^((l-top)/T) in place by the vectorised exponential of package
// kernels, sums of blocks of weights, and an inverse-CDF walk in token id
// order, first over the block sums, then inside one block.
//
// Weights are expf's float32 values (bit-identical on every kernel path);
// block sums are taken in a fixed order in Go, not the kernel's total
// (whose order depends on the CPU), so a seed draws the same tokens on
// every platform. A token whose weight underflows float32 (logit more than
// 86.9 T below the top one, probability below 1.7e-38 of the top's) is
// never drawn.
//
// Measured (December 2026, a 2-core shared VM, "Turin-like" AMD with
// AVX-512, other users' jobs running, so CPU time rather than wall time
// and runs of each kind interleaved; the load inflates both sides alike):
//
//   - engine.BenchmarkSamplingCost, 64-token generations on mini-24m
//     (Q4_K_M, 32k vocabulary, one thread), greedy and OpenAI's defaults
//     in turn, runs of 20 generations each: at load average 8 to 9,
//     +4.1%, +3.6% and +4.6% CPU time per token over greedy (greedy 445
//     to 497 µs a token); at load average 24, +5.0%, +1.3% and +0.3%
//     (greedy 571 to 680 µs). The bucket path this replaces measured
//     +81% twice the same way. For comparison at load 8 to 9: top_k 40
//     +15% to +22%, top_p 0.9 on the cut path +49% to +54%.
//   - BenchmarkSample, one token (CPU ns, load average 25): 32k
//     vocabulary, greedy 51k to 71k, OpenAI's defaults 61k to 76k (the
//     bucket path: 334k to 341k); 152k vocabulary, greedy 239k to 396k,
//     OpenAI's defaults 303k to 411k (the bucket path: 1.8M). No
//     allocation per token.
//
// Under a constraint the plain path weighs the row once and reuses the
// weights for the draw under the mask (see samplePlainConstrained).

// plainBlock is the number of weights per block sum: small enough that
// the walk inside a block is short, large enough that the walk over the
// block sums is.
const plainBlock = 64

// plainPath reports whether Sample takes the plain path.
func (s *Sampler) plainPath() bool {
	return s.fastPath() && (s.p.TopP <= 0 || s.p.TopP >= 1) && s.p.MinP <= 0
}

// What weigh found in a row.
const (
	plainWeighed = iota // s.row holds the weights, s.sums their block sums
	plainNone           // no finite logit: the lowest id wins, as in the sorted chain
	plainOther          // an infinite top or scaled top: s.row holds the penalised logits for the bucket path
)

// samplePlain draws a token from the softmax of row at the temperature
// (see weigh for row and scratch). It returns ok false for a row the path
// does not handle (an infinite top logit or scaled top), which the caller
// hands to the bucket path with s.row.
func (s *Sampler) samplePlain(row []float32, scratch bool) (int32, bool) {
	switch total, kind := s.weigh(row, scratch); kind {
	case plainWeighed:
		return s.drawPlain(total), true
	case plainNone:
		return 0, true
	}
	return 0, false
}

// weigh sets s.row to the weights e^((l-top)/T) of the (penalised) logits
// of row and s.sums to their block sums, and returns their total. When
// scratch is set row is s.row with the penalties applied, and is
// overwritten; otherwise row is copied into s.row and penalised there.
func (s *Sampler) weigh(row []float32, scratch bool) (float64, int) {
	w := s.row
	if !scratch {
		copy(w, row)
		if s.counts != nil {
			s.penaliseRow(w)
		}
	}
	top := float32(math.Inf(-1))
	nan := false
	for _, l := range w {
		if !(l <= top) { // a new top, or NaN
			if l != l {
				nan = true
				continue
			}
			top = l
		}
	}
	switch {
	case math.IsInf(float64(top), -1):
		return 0, plainNone
	case math.IsInf(float64(top), 1):
		return 0, plainOther
	}
	if nan {
		for i, l := range w {
			if l != l {
				w[i] = float32(math.Inf(-1))
			}
		}
	}
	total, ok := s.expInPlace(w, top, s.p.Temperature)
	if !ok {
		return 0, plainOther
	}
	return total, plainWeighed
}

// drawPlain draws a token from the weights of weigh (and maskWeights) in
// s.row, whose block sums add up to total (above zero).
func (s *Sampler) drawPlain(total float64) int32 { return s.drawFrom(s.row, total) }

// drawFrom draws a token from the weights w, whose block sums in s.sums
// add up to total (above zero).
func (s *Sampler) drawFrom(w []float32, total float64) int32 {
	target := s.rng.Float64() * total
	var cum float64
	for b, bs := range s.sums {
		if cum+bs <= target {
			cum += bs
			continue
		}
		blk := w[b*plainBlock : min((b+1)*plainBlock, len(w))]
		last := -1
		for i, x := range blk {
			if x == 0 {
				continue
			}
			cum += float64(x)
			last = i
			if cum > target {
				break
			}
		}
		if last >= 0 {
			// Past the block's end only by the rounding of its sum.
			return int32(b*plainBlock + last)
		}
	}
	// target reached the total by rounding: the last token that weighs.
	for i := len(w) - 1; i >= 0; i-- {
		if w[i] != 0 {
			return int32(i)
		}
	}
	return 0 // cannot happen: total is above zero
}

// minMaskedTotal is the least total weight maskWeights leaves for the
// draw to use the weights relative to the unconstrained top: the most
// likely allowed token then weighs at least 2^-30/2^18 (vocabularies up
// to 2^18 tokens), so an allowed token that underflows to zero is below
// 1e-23 of its probability. A smaller total goes to the exact path.
const minMaskedTotal = 0x1p-30

// maskWeights zeroes the weights of weigh that mask (one bit per token)
// does not allow, updates the block sums (a block is one mask word) and
// returns the new total.
func (s *Sampler) maskWeights(mask []uint64) float64 {
	w := s.row
	var total float64
	for b := range s.sums {
		blk := w[b*plainBlock : min((b+1)*plainBlock, len(w))]
		switch m := mask[b]; m {
		case ^uint64(0):
		case 0:
			clear(blk)
			s.sums[b] = 0
		default:
			for i := range blk {
				if m&(1<<i) == 0 {
					blk[i] = 0
				}
			}
			s.sums[b] = blockSum(blk)
		}
		total += s.sums[b]
	}
	return total
}

// samplePlainConstrained is Sample under a constraint on the plain path:
// the weights of the whole row once, a draw checked by a TokenChecker,
// and when it refuses (or there is no checker) the same weights masked,
// without a second exponential pass. Rows the plain path does not weigh,
// and masks that leave too little weight, take sampleMasked.
func (s *Sampler) samplePlainConstrained(logits []float32) (int32, error) {
	total, kind := s.weigh(logits, false)
	if ch, ok := s.con.(TokenChecker); ok {
		var tok int32
		switch kind {
		case plainWeighed:
			tok = s.drawPlain(total)
		case plainOther:
			tok = s.sampleFast(s.row)
		}
		if ok, err := ch.AllowsToken(tok); err != nil {
			return 0, fmt.Errorf("sample: constraint: %w", err)
		} else if ok {
			return tok, nil
		}
	}
	if err := s.con.Allowed(s.mask); err != nil {
		return 0, fmt.Errorf("sample: constraint: %w", err)
	}
	if kind == plainWeighed {
		if total := s.maskWeights(s.mask); total >= minMaskedTotal {
			return s.drawPlain(total), nil
		}
	}
	return s.sampleMasked(logits)
}

// blockSum adds the weights of one block (at most plainBlock) in a fixed
// order: eight float32 lanes, then the lanes pairwise. Eight independent
// sums keep the adds from waiting on one another.
func blockSum(x []float32) float64 {
	var a0, a1, a2, a3, a4, a5, a6, a7 float32
	for len(x) >= 8 {
		v := x[:8:8]
		a0 += v[0]
		a1 += v[1]
		a2 += v[2]
		a3 += v[3]
		a4 += v[4]
		a5 += v[5]
		a6 += v[6]
		a7 += v[7]
		x = x[8:]
	}
	for _, v := range x {
		a0 += v
	}
	return float64((a0+a1)+(a2+a3)) + float64((a4+a5)+(a6+a7))
}
