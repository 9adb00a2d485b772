package sample

import (
	"math"
	"math/bits"
	"slices"
)

// The full chain of Candidates sorts the whole vocabulary, which at
// temperature 1 without top-k (OpenAI's defaults) costs far more than a
// decode step. Sample takes the path below instead whenever top-k does not
// cut: it never sorts more than one narrow band of the logits.
//
// The idea: every stage after top-k only needs the sorted order near one
// position (top-p's cut, min-p's cut, the draw), and every stage measures
// that position by cumulative probability mass or by rank. Tokens are put
// in buckets by their distance below the top logit (a monotone function of
// the logit, so bucket order is sorted order); per-bucket mass and counts
// locate the bucket that holds the position, and only that bucket is
// sorted. The mass is summed in fixed point (each token's exp weight
// truncated to a multiple of 2^-fracBits of the top token's), which is
// exact and so independent of summation order: the same position comes
// out whatever the order the tokens are visited in. Tokens whose weight is
// below 2^-fracBits of the top one's weigh zero and are never drawn; today's
// float32 softmax gives them under one chance in 10^13 per draw.

// nBuckets is the number of buckets: the range from the top logit down to
// the lowest finite one is cut in nBuckets-1 equal parts (so a flat row of a
// random-weight model spreads as well as a trained model's), and the last
// bucket takes -Inf (and NaN) tokens.
const nBuckets = 4097

// noBucket marks a token a cut removed.
const noBucket = 0xffff

// cut is a position in the sorted order: the token with this logit and id.
// A token survives a cut when it ranks ahead of it or is it.
type cut struct {
	logit float32
	id    int32
	all   bool // no cut: every token survives
}

// keeps reports whether the token (l, id) survives c.
func (c cut) keeps(l float32, id int32) bool {
	return c.all || l > c.logit || (l == c.logit && id <= c.id)
}

// fastState holds the buffers of the bucket path, sized in New.
type fastState struct {
	mass     []uint64 // per bucket: fixed-point weight
	count    []int32  // per bucket: tokens
	bucketOf []uint16 // per token: its bucket in the last fill, noBucket when cut
	fracBits uint     // fixed-point fraction bits of a weight
	minD     float32  // below this distance a weight truncates to zero
	scale    float32  // buckets per unit of logit distance for this row
}

func newFastState(nVocab int) fastState {
	// A weight is at most 2^fracBits, so the total of nVocab weights stays
	// below 2^63.
	fb := 62 - bits.Len(uint(nVocab))
	return fastState{mass: make([]uint64, nBuckets), count: make([]int32, nBuckets),
		bucketOf: make([]uint16, nVocab), fracBits: uint(fb),
		// e^d * 2^fb < 1/2 below -(fb+1) ln 2.
		minD: -float32(fb+1) * math.Ln2}
}

// bucket returns the bucket of a token whose logit is d below the top one
// (d >= 0, or NaN for a NaN/-Inf token): a non-decreasing function of d.
func (f *fastState) bucket(d float32) int {
	x := d * f.scale
	if !(x < nBuckets-1) { // also NaN and +Inf
		return nBuckets - 1
	}
	return int(x)
}

// weight returns the fixed-point weight exp((l - top)/temp) of a logit, as
// float32 softmax computes it (scaled logits, then the difference). It is
// exp's arithmetic written out, as one call per token matters here
// (TestWeightIsExp keeps the two the same).
func (f *fastState) weight(l, top, temp float32) uint64 {
	if l == top {
		// The top token weighs 1, also where l/temp overflows (which
		// would make the difference NaN).
		return uint64(1) << f.fracBits
	}
	d32 := l - top // l/1 - top/1, without two divisions
	if temp != 1 {
		d32 = l/temp - top/temp
	}
	if !(d32 > f.minD) { // a zero weight (also NaN), no need for exp
		return 0
	}
	d := float64(d32)
	k := float64(float64(d*expScale)+expRound) - expRound
	r := float64(d - float64(k*expLn2Hi))
	r = float64(r - float64(k*expLn2Lo))
	p := float64(r+1) + float64(float64(r*r)*float64(float64(r*(1.0/6))+0.5)) // a short dependency chain
	ki := int64(k)
	e := float64(math.Float64frombits(uint64(int64(math.Float64bits(expTable[ki&255]))+(ki>>8)<<52)) * p)
	return uint64(float64(e * float64(uint64(1)<<f.fracBits)))
}

// logitAt returns the penalised logit of token i, NaN as -Inf.
func (s *Sampler) logitAt(row []float32, i int) float32 {
	l := row[i]
	if l != l {
		return float32(math.Inf(-1))
	}
	return l
}

// fill sets the buckets for the tokens that survive c: counts always, and
// mass at temperature temp when temp > 0. It returns the total mass and
// the number of survivors.
func (s *Sampler) fill(row []float32, top float32, c cut, temp float32) (uint64, int) {
	f := &s.fast
	clear(f.mass)
	clear(f.count)
	var total uint64
	n := 0
	for i := range row {
		l := s.logitAt(row, i)
		if !c.keeps(l, int32(i)) {
			f.bucketOf[i] = noBucket
			continue
		}
		n++
		b := f.bucket(top - l)
		f.bucketOf[i] = uint16(b)
		f.count[b]++
		if temp > 0 {
			w := f.weight(l, top, temp)
			f.mass[b] += w
			total += w
		}
	}
	return total, n
}

// band collects the surviving tokens of bucket b (as the last fill put
// them), sorted best first, into the Sampler's candidate buffer.
func (s *Sampler) band(row []float32, b int) []Candidate {
	out := s.cand[:0]
	for i, tb := range s.fast.bucketOf {
		if int(tb) == b {
			out = append(out, Candidate{ID: int32(i), Logit: s.logitAt(row, i)})
		}
	}
	slices.SortFunc(out, func(a, b Candidate) int {
		switch {
		case before(a, b):
			return -1
		case before(b, a):
			return 1
		}
		return 0
	})
	return out
}

// atMass returns the first surviving token, in sorted order, at which the
// cumulative mass exceeds target (or reaches it, when reach is set), with
// its rank. The buckets must hold the mass of fill for temp.
func (s *Sampler) atMass(row []float32, top float32, c cut, temp float32, target uint64, reach bool) (Candidate, int) {
	f := &s.fast
	var cum uint64
	rank := 0
	passed := func(cum uint64) bool { return cum > target || (reach && cum >= target) }
	b := 0
	for ; b < nBuckets-1; b++ {
		if f.count[b] > 0 && passed(cum+f.mass[b]) {
			break
		}
		cum += f.mass[b]
		rank += int(f.count[b])
	}
	band := s.band(row, b)
	for i, x := range band {
		cum += f.weight(x.Logit, top, temp)
		if passed(cum) {
			return x, rank + i
		}
	}
	// Only reached when target is not below the total: the last survivor.
	return band[len(band)-1], rank + len(band) - 1
}

// atRank returns the surviving token of rank r (0 is the best). The
// buckets must hold the counts of fill for c.
func (s *Sampler) atRank(row []float32, top float32, c cut, r int) Candidate {
	f := &s.fast
	var n int
	for _, k := range f.count {
		n += int(k)
	}
	r = min(r, n-1) // fewer survivors than r: the last of them
	b := 0
	for ; b < nBuckets-1; b++ {
		if r < int(f.count[b]) {
			break
		}
		r -= int(f.count[b])
	}
	band := s.band(row, b)
	return band[r]
}

// later returns the cut that keeps fewer tokens.
func later(a, b cut) cut {
	switch {
	case a.all:
		return b
	case b.all:
		return a
	case before(Candidate{ID: a.id, Logit: a.logit}, Candidate{ID: b.id, Logit: b.logit}):
		return a
	}
	return b
}

// sampleFast is Sample without top-k: top-p, min-p, temperature and the
// draw on the buckets. row holds the penalised logits.
func (s *Sampler) sampleFast(row []float32) int32 {
	best := 0
	top := s.logitAt(row, 0)
	low := top // the lowest finite logit
	for i := 1; i < len(row); i++ {
		l := s.logitAt(row, i)
		if l > top {
			best, top = i, l
		}
		if l < low && l > float32(math.Inf(-1)) {
			low = l
		}
	}
	low = min(low, top)
	s.fast.scale = 1
	if r := top - low; r > 0 && r < float32(math.Inf(1)) {
		s.fast.scale = (nBuckets - 1) / r
	}
	if math.IsInf(float64(top), -1) {
		return 0 // nothing to weigh: the lowest id, as the sorted chain does
	}
	if math.IsInf(float64(top), 1) {
		return int32(best) // +Inf takes all the mass: the first of them
	}
	keep := cut{all: true}
	minKeep := s.p.MinKeep
	if s.p.TopP > 0 && s.p.TopP < 1 {
		total, _ := s.fill(row, top, keep, 1)
		target := uint64(float64(s.p.TopP) * float64(total))
		x, r := s.atMass(row, top, keep, 1, target, true)
		keep = cut{logit: x.Logit, id: x.ID}
		if r+1 < minKeep {
			s.fill(row, top, cut{all: true}, 0)
			y := s.atRank(row, top, cut{all: true}, minKeep-1)
			keep = cut{logit: y.Logit, id: y.ID}
		}
	}
	if s.p.MinP > 0 {
		floor := top + float32(math.Log(float64(s.p.MinP)))
		// The last token at or above the floor, but at least minKeep.
		n := 0
		var last cut
		for i := range row {
			l := s.logitAt(row, i)
			if l >= floor && keep.keeps(l, int32(i)) {
				n++
				if n == 1 || l < last.logit || (l == last.logit && int32(i) > last.id) {
					last = cut{logit: l, id: int32(i)}
				}
			}
		}
		if n < minKeep {
			s.fill(row, top, keep, 0)
			y := s.atRank(row, top, keep, minKeep-1)
			last = cut{logit: y.Logit, id: y.ID}
		}
		keep = later(keep, last)
	}
	total, n := s.fill(row, top, keep, s.p.Temperature)
	if n == 1 {
		return int32(best) // a single survivor needs no draw (and takes no random number)
	}
	if total == 0 {
		return int32(best) // cannot happen: the top token weighs 1
	}
	u := s.rng.Float64()
	target := min(uint64(u*float64(total)), total-1)
	x, _ := s.atMass(row, top, keep, s.p.Temperature, target, false)
	return x.ID
}
