package sample

import (
	"math"

	"github.com/lisa-llm/lisa/kernels"
)

// The cut path samples with top-p or min-p (temperature above zero, no
// top-k, one token kept at least: what OpenAI's top_p and llama.cpp's
// min_p ask for) on the vectorised weights of the plain path. The cuts
// keep a prefix of the tokens sorted by logit (lower id first on equal
// logits), so each is one position in that order: min-p's from the top
// logit alone, top-p's from the temperature-1 weights bucketed by logit
// (one pass), then the one bucket where the cumulative weight reaches
// top-p sorted to find the token. The weights at the temperature of the
// tokens past either cut are zeroed, and the draw walks them in id order
// as the plain path does. Tokens whose weight underflows float32 are never
// drawn; top-p's cut matches the sorted chain's except within float
// rounding of the threshold.

// cutPath reports whether Sample takes the cut path.
func (s *Sampler) cutPath() bool {
	return s.fastPath() && !s.plainPath() && s.p.MinKeep <= 1
}

// sampleCut draws a token after top-p and min-p from row. When scratch is
// set row is s.row with the penalties applied; otherwise row is copied
// into s.row and penalised there. s.row keeps the (penalised) logits. It
// returns ok false for a row the path does not handle (an infinite top or
// scaled top), which the caller hands to the bucket path with s.row.
func (s *Sampler) sampleCut(row []float32, scratch bool) (int32, bool) {
	lg := s.row
	if !scratch {
		copy(lg, row)
		if s.counts != nil {
			s.penaliseRow(lg)
		}
	}
	top, low := float32(math.Inf(-1)), float32(math.Inf(1))
	nan := false
	for _, l := range lg {
		if !(l <= top) { // a new top, or NaN
			if l != l {
				nan = true
				continue
			}
			top = l
		}
		if l < low && l > float32(math.Inf(-1)) {
			low = l
		}
	}
	switch {
	case math.IsInf(float64(top), -1):
		return 0, true // nothing to weigh: the lowest id, as the sorted chain does
	case math.IsInf(float64(top), 1):
		return 0, false
	}
	if nan {
		for i, l := range lg {
			if l != l {
				lg[i] = float32(math.Inf(-1))
			}
		}
	}
	w := s.cutW
	keep := cut{all: true}
	if s.p.TopP > 0 && s.p.TopP < 1 {
		total, _ := s.expWeights(w, lg, top, 1) // top is finite: cannot fail
		keep = s.topPCut(w, lg, top, low, float64(s.p.TopP)*total)
	}
	floor := float32(math.Inf(-1))
	if s.p.MinP > 0 {
		floor = top + float32(math.Log(float64(s.p.MinP)))
	}
	if s.p.Temperature != 1 || keep.all {
		if _, ok := s.expWeights(w, lg, top, s.p.Temperature); !ok {
			return 0, false
		}
	}
	// A token survives both cuts when its logit is above thr, or equal
	// to the top-p cut's (and at or above the floor) with an id not past
	// the cut's.
	thr, tieLogit, tieID := floor, float32(math.NaN()), int32(0)
	if !keep.all {
		thr, tieLogit, tieID = max(floor, keep.logit), keep.logit, keep.id
	}
	var total float64
	for b := range s.sums {
		lo, hi := b*plainBlock, min((b+1)*plainBlock, len(w))
		blk, ls := w[lo:hi], lg[lo:hi]
		cutAny := false
		for i, l := range ls {
			if l < thr || (l == tieLogit && int32(lo+i) > tieID) {
				blk[i], cutAny = 0, true
			}
		}
		if cutAny {
			s.sums[b] = blockSum(blk)
		}
		total += s.sums[b]
	}
	if total == 0 {
		return 0, false // cannot happen: the top token survives and weighs 1
	}
	return s.drawFrom(w, total), true
}

// expWeights sets w to e^((l-top)/temp) for the logits lg (NaN-free) and
// s.sums to its block sums, and returns their total. It returns ok false
// when the temperature's inverse or the scaled top overflows float32.
func (s *Sampler) expWeights(w, lg []float32, top, temp float32) (float64, bool) {
	copy(w, lg)
	return s.expInPlace(w, top, temp)
}

// expInPlace is expWeights on logits already in w.
func (s *Sampler) expInPlace(w []float32, top, temp float32) (float64, bool) {
	if temp != 1 {
		inv := 1 / temp
		top *= inv
		if math.IsInf(float64(inv), 0) || math.IsInf(float64(top), 0) {
			return 0, false
		}
		kernels.Scale(w, inv)
	}
	kernels.ExpSub(w, top)
	var total float64
	for b := range s.sums {
		s.sums[b] = blockSum(w[b*plainBlock : min((b+1)*plainBlock, len(w))])
		total += s.sums[b]
	}
	return total, true
}

// topPCut returns top-p's cut: the token, in sorted order, at which the
// cumulative weight w (at temperature 1) first reaches target. The
// weights go into buckets by logit distance from the top over the
// row's finite range, so only the bucket that holds the cut is sorted.
func (s *Sampler) topPCut(w, lg []float32, top, low float32, target float64) cut {
	f := &s.fast
	f.scale = 1
	if r := top - low; r > 0 && r < float32(math.Inf(1)) {
		f.scale = (nBuckets - 1) / r
	}
	mass := s.cutMass
	clear(mass)
	for i, l := range lg {
		mass[f.bucket(top-l)] += float64(w[i])
	}
	var cum float64
	b := 0
	for ; b < nBuckets; b++ {
		if cum+mass[b] >= target && mass[b] > 0 {
			break
		}
		cum += mass[b]
	}
	if b == nBuckets {
		return cut{all: true} // the target is the total, by rounding: keep all
	}
	band := s.cand[:0]
	for i, l := range lg {
		if f.bucket(top-l) == b {
			band = append(band, Candidate{ID: int32(i), Logit: l, P: w[i]})
		}
	}
	band = keepTop(band, len(band), before)
	for _, x := range band {
		cum += float64(x.P)
		if cum >= target {
			return cut{logit: x.Logit, id: x.ID}
		}
	}
	last := band[len(band)-1] // past the bucket's mass only by rounding
	return cut{logit: last.Logit, id: last.ID}
}
