package sample

import (
	"math"

	"github.com/lisa-llm/lisa/kernels"
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

// plainBlock is the number of weights per block sum: small enough that
// the walk inside a block is short, large enough that the walk over the
// block sums is.
const plainBlock = 64

// plainPath reports whether Sample takes the plain path.
func (s *Sampler) plainPath() bool {
	return s.fastPath() && (s.p.TopP <= 0 || s.p.TopP >= 1) && s.p.MinP <= 0
}

// samplePlain draws a token from the softmax of row at the temperature.
// When scratch is set row is s.row with the penalties applied, and is
// overwritten; otherwise row is copied into s.row and penalised there.
// It returns ok false for a row the path does not handle (an infinite top
// logit or scaled top), which the caller hands to the bucket path.
func (s *Sampler) samplePlain(row []float32, scratch bool) (int32, bool) {
	w := s.row
	if !scratch {
		copy(w, row)
		if s.counts != nil {
			s.penaliseRow(w)
		}
	}
	top := float32(math.Inf(-1))
	best, nan := 0, false
	for i, l := range w {
		if !(l <= top) { // a new top, or NaN
			if l != l {
				nan = true
				continue
			}
			top, best = l, i
		}
	}
	switch {
	case math.IsInf(float64(top), -1):
		return 0, true // nothing to weigh: the lowest id, as the sorted chain does
	case math.IsInf(float64(top), 1):
		return 0, false
	}
	if nan {
		for i, l := range w {
			if l != l {
				w[i] = float32(math.Inf(-1))
			}
		}
	}
	if t := s.p.Temperature; t != 1 {
		inv := 1 / t
		top *= inv
		if math.IsInf(float64(inv), 0) || math.IsInf(float64(top), 0) {
			return 0, false
		}
		kernels.Scale(w, inv)
	}
	kernels.ExpSub(w, top)
	sums := s.sums
	var total float64
	for b := range sums {
		sums[b] = blockSum(w[b*plainBlock : min((b+1)*plainBlock, len(w))])
		total += sums[b]
	}
	target := s.rng.Float64() * total
	var cum float64
	for b, bs := range sums {
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
			return int32(b*plainBlock + last), true
		}
	}
	// target reached the total by rounding: the last token that weighs.
	for i := len(w) - 1; i >= 0; i-- {
		if w[i] != 0 {
			return int32(i), true
		}
	}
	return int32(best), true // cannot happen: the top token weighs 1
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
