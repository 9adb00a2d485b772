package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Candidate is one token still in the running, with its (penalised,
// temperature-scaled) logit and, once normalised, its probability.
type Candidate struct {
	ID    int32
	Logit float32
	P     float32
}

// ErrVocab is returned (wrapped) for a logits row or a token id that does
// not fit the vocabulary size the Sampler was made for.
var ErrVocab = errors.New("does not fit the vocabulary")

// Sampler picks tokens from logits rows with one request's Params. It keeps
// the history the penalties need and the generator state, so one Sampler
// serves one sequence; it is not safe for concurrent use. After New it does
// not allocate.
type Sampler struct {
	p       Params
	nVocab  int
	cand    []Candidate
	row     []float32 // penalised (and masked) logits
	con     Constraint
	mask    []uint64
	fast    fastState
	sums    []float64 // the plain and cut paths' block sums
	cutW    []float32 // the cut path's weights
	cutMass []float64 // the cut path's weight per bucket
	hist    []int32   // ring of the last PenaltyLastN accepted tokens
	head    int       // next slot of hist to write
	filled  int       // how many slots of hist hold tokens
	counts  []int32   // occurrences of each token in hist (nil without penalties)
	rng     *rand.Rand
}

// New returns a Sampler for logits rows of nVocab values. It validates p.
func New(p Params, nVocab int) (*Sampler, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if nVocab <= 0 || nVocab > math.MaxInt32 {
		return nil, fmt.Errorf("sample: vocabulary size %d: %w", nVocab, ErrVocab)
	}
	if p.MinKeep < 1 {
		p.MinKeep = 1
	}
	s := &Sampler{p: p, nVocab: nVocab, cand: make([]Candidate, nVocab), fast: newFastState(nVocab)}
	if s.plainPath() || s.cutPath() {
		s.row = make([]float32, nVocab)
		s.sums = make([]float64, (nVocab+plainBlock-1)/plainBlock)
	}
	if s.cutPath() {
		s.cutW = make([]float32, nVocab)
		s.cutMass = make([]float64, nBuckets)
	}
	if p.penalised() {
		if s.row == nil {
			s.row = make([]float32, nVocab)
		}
		s.hist = make([]int32, p.PenaltyLastN)
		s.counts = make([]int32, nVocab)
	}
	s.rng = rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
	return s, nil
}

// Constraint restricts the tokens a Sampler may pick, such as a grammar
// (package grammar's Constraint). Allowed sets bit i%64 of mask[i/64] for
// every token i that may come next and clears the others; Accept advances
// the constraint over the token chosen.
type Constraint interface {
	Allowed(mask []uint64) error
	Accept(tok int32) error
}

// TokenChecker is a Constraint that can also tell cheaply whether one
// token is allowed. Sample then first picks without the constraint and
// computes the whole mask only when that token is not allowed, as
// llama.cpp's sampler does (for plain temperature sampling the result has
// the same distribution as masking first; greedy picks the same token).
type TokenChecker interface {
	AllowsToken(tok int32) (bool, error)
}

// ErrNoAllowedToken is returned (wrapped) when a constraint allows no token.
var ErrNoAllowedToken = errors.New("the constraint allows no token")

// SetConstraint makes Sample pick only tokens c allows, applied before the
// chain (disallowed tokens get a logit of -Inf); nil removes it. Sample
// does not advance c: the caller calls c.Accept with the token it keeps,
// as it calls Sampler.Accept. SetConstraint allocates the mask once; Sample
// still allocates nothing.
func (s *Sampler) SetConstraint(c Constraint) {
	s.con = c
	if c != nil && s.mask == nil {
		s.mask = make([]uint64, (s.nVocab+63)/64)
		if s.row == nil {
			s.row = make([]float32, s.nVocab)
		}
	}
}

// Params returns the parameters the Sampler was made with.
func (s *Sampler) Params() Params { return s.p }

// Reset forgets the accepted tokens and reseeds the generator, so the
// Sampler repeats its choices from the start.
func (s *Sampler) Reset() {
	s.head, s.filled = 0, 0
	clear(s.counts)
	s.rng = rand.New(rand.NewPCG(s.p.Seed, s.p.Seed^0x9e3779b97f4a7c15))
}

// Accept records tok as the latest token of the sequence (prompt tokens
// and generated ones alike) for the penalties.
func (s *Sampler) Accept(tok int32) error {
	if tok < 0 || int(tok) >= s.nVocab {
		return fmt.Errorf("sample: accept token %d: %w", tok, ErrVocab)
	}
	if s.counts == nil {
		return nil
	}
	if s.filled == len(s.hist) {
		s.counts[s.hist[s.head]]--
	} else {
		s.filled++
	}
	s.hist[s.head] = tok
	s.counts[tok]++
	s.head = (s.head + 1) % len(s.hist)
	return nil
}

// before ranks candidates: higher logit first, lower id on equal logits.
func before(a, b Candidate) bool {
	if a.Logit != b.Logit {
		return a.Logit > b.Logit
	}
	return a.ID < b.ID
}

// load copies logits into the candidate buffer, NaN becoming -Inf so the
// ranking stays a total order, and applies the penalties.
func (s *Sampler) load(logits []float32) ([]Candidate, error) {
	if len(logits) != s.nVocab {
		return nil, fmt.Errorf("sample: logits row of %d values for %d tokens: %w", len(logits), s.nVocab, ErrVocab)
	}
	c := s.cand[:s.nVocab]
	for i, l := range logits {
		if l != l {
			l = float32(math.Inf(-1))
		}
		c[i] = Candidate{ID: int32(i), Logit: l}
	}
	if s.counts != nil {
		s.penalise(c)
	}
	return c, nil
}

// penalise applies the repetition, frequency and presence penalties to c,
// which is indexed by token id, as llama.cpp's penalties sampler does.
func (s *Sampler) penalise(c []Candidate) {
	for id, n := range s.counts {
		if n != 0 {
			c[id].Logit = s.penalty(c[id].Logit, n)
		}
	}
}

// penaliseRow is penalise on a logits row.
func (s *Sampler) penaliseRow(row []float32) {
	for id, n := range s.counts {
		if n != 0 {
			l := row[id]
			if l != l {
				l = float32(math.Inf(-1))
			}
			row[id] = s.penalty(l, n)
		}
	}
}

// penalty returns logit l of a token seen n times in the window, penalised.
func (s *Sampler) penalty(l float32, n int32) float32 {
	rep := s.p.RepeatPenalty
	if rep == 0 {
		rep = 1
	}
	if l <= 0 {
		l *= rep
	} else {
		l /= rep
	}
	// The inner conversion rounds the product before the addition, so
	// that Go does not fuse them into one multiply-add (it would on arm64,
	// never on amd64): the penalised logits are the same everywhere.
	return l - (float32(float32(n)*s.p.FrequencyPenalty) + s.p.PresencePenalty)
}

// Candidates runs the chain on logits up to, but not including, the draw:
// it returns the surviving tokens, best first, with probabilities that sum
// to 1. At temperature zero or less that is the single greedy token. The
// slice is the Sampler's own and is valid until its next call; logits is
// not modified.
func (s *Sampler) Candidates(logits []float32) ([]Candidate, error) {
	c, err := s.load(logits)
	if err != nil {
		return nil, err
	}
	if s.p.Temperature <= 0 {
		best := 0
		for i := 1; i < len(c); i++ {
			if c[i].Logit > c[best].Logit {
				best = i
			}
		}
		c[0] = c[best]
		c[0].P = 1
		return c[:1], nil
	}
	k := len(c)
	if s.p.TopK > 0 && s.p.TopK < k {
		k = s.p.TopK
	}
	c = keepTop(c, k, before)
	if math.IsInf(float64(c[0].Logit), -1) {
		// Every logit is -Inf (or NaN): nothing to weigh, take the lowest id.
		c[0].P = 1
		return c[:1], nil
	}
	c = s.topP(c)
	c = s.minP(c)
	for i := range c {
		c[i].Logit /= s.p.Temperature
	}
	softmax(c)
	return c, nil
}

// softmax sets the probabilities of c, sorted best first, in float32 as
// llama.cpp does.
func softmax(c []Candidate) {
	maxL := c[0].Logit
	var sum float32
	for i := range c {
		p := float32(math.Exp(float64(c[i].Logit - maxL)))
		c[i].P = p
		sum += p
	}
	for i := range c {
		c[i].P /= sum
	}
}

// topP keeps the shortest prefix of c whose probabilities sum to TopP.
func (s *Sampler) topP(c []Candidate) []Candidate {
	if s.p.TopP <= 0 || s.p.TopP >= 1 {
		return c
	}
	softmax(c)
	var cum float32
	for i := range c {
		cum += c[i].P
		if cum >= s.p.TopP && i+1 >= s.p.MinKeep {
			return c[:i+1]
		}
	}
	return c
}

// minP keeps the tokens whose logit is at least the top one's plus ln(MinP).
func (s *Sampler) minP(c []Candidate) []Candidate {
	if s.p.MinP <= 0 {
		return c
	}
	floor := c[0].Logit + float32(math.Log(float64(s.p.MinP)))
	for i := 1; i < len(c); i++ {
		if c[i].Logit < floor && i >= s.p.MinKeep {
			return c[:i]
		}
	}
	return c
}

// Sample picks the next token from logits: the chain of Candidates, then a
// draw with the seeded generator (greedy needs no draw). It does not record
// the token; call Accept with it.
func (s *Sampler) Sample(logits []float32) (int32, error) {
	if len(logits) != s.nVocab {
		return 0, fmt.Errorf("sample: logits row of %d values for %d tokens: %w", len(logits), s.nVocab, ErrVocab)
	}
	if s.con != nil {
		if s.plainPath() {
			return s.samplePlainConstrained(logits)
		}
		if ch, ok := s.con.(TokenChecker); ok {
			tok, err := s.sampleFree(logits)
			if err != nil {
				return 0, err
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
		return s.sampleMasked(logits)
	}
	return s.sampleFree(logits)
}

// sampleMasked samples from logits with the tokens s.mask does not allow
// removed (the mask already set by the constraint).
func (s *Sampler) sampleMasked(logits []float32) (int32, error) {
	row, some := s.row, false
	for i, l := range logits {
		switch {
		case s.mask[i/64]&(1<<(i%64)) == 0:
			l = float32(math.Inf(-1))
		case l != l || l < -math.MaxFloat32:
			// Allowed with no weight (NaN, -Inf): ranked after every
			// other allowed token but before the disallowed ones, so
			// a row of such tokens still yields an allowed one.
			l, some = -math.MaxFloat32, true
		default:
			some = true
		}
		row[i] = l
	}
	if !some {
		return 0, fmt.Errorf("sample: %w", ErrNoAllowedToken)
	}
	if s.counts != nil {
		s.penaliseRow(row)
	}
	return s.sampleRow(row, true)
}

// sampleFree is Sample without the constraint.
func (s *Sampler) sampleFree(logits []float32) (int32, error) {
	if s.plainPath() {
		if tok, ok := s.samplePlain(logits, false); ok {
			return tok, nil
		}
		return s.sampleFast(s.row), nil // s.row holds the penalised logits
	}
	if s.cutPath() {
		if tok, ok := s.sampleCut(logits, false); ok {
			return tok, nil
		}
		return s.sampleFast(s.row), nil // s.row holds the penalised logits
	}
	row := logits
	if s.counts != nil && s.fastPath() {
		row = s.row
		copy(row, logits)
		s.penaliseRow(row)
		return s.sampleRow(row, true)
	}
	return s.sampleRow(row, false)
}

// fastPath reports whether Sample takes the bucket path.
func (s *Sampler) fastPath() bool {
	return s.p.Temperature > 0 && (s.p.TopK <= 0 || s.p.TopK >= s.nVocab)
}

// sampleRow samples from row, whose penalties are applied when penalised;
// a penalised row is s.row, which the plain path may overwrite.
func (s *Sampler) sampleRow(row []float32, penalised bool) (int32, error) {
	if s.plainPath() && penalised { // row is s.row, the Sampler's scratch
		if tok, ok := s.samplePlain(row, true); ok {
			return tok, nil
		}
	}
	if s.cutPath() && penalised {
		if tok, ok := s.sampleCut(row, true); ok {
			return tok, nil
		}
	}
	if s.fastPath() {
		return s.sampleFast(row), nil
	}
	saved := s.counts
	if penalised {
		s.counts = nil // already applied
	}
	c, err := s.Candidates(row)
	s.counts = saved
	if err != nil {
		return 0, err
	}
	if len(c) == 1 {
		return c[0].ID, nil
	}
	return draw(c, s.rng.Float64()), nil
}

// draw picks from c by the uniform value u in [0, 1): the first candidate
// whose cumulative probability exceeds u times the total.
func draw(c []Candidate, u float64) int32 {
	var total float64
	for _, x := range c {
		total += float64(x.P)
	}
	u *= total
	var cum float64
	for _, x := range c {
		cum += float64(x.P)
		if u < cum {
			return x.ID
		}
	}
	return c[len(c)-1].ID
}

// Greedy returns the index of the highest logit, the lowest on ties (NaN
// never wins). It returns -1 for an empty row.
func Greedy(logits []float32) int32 {
	best := -1
	for i, l := range logits {
		if l != l {
			continue
		}
		if best < 0 || l > logits[best] {
			best = i
		}
	}
	if best < 0 && len(logits) > 0 {
		return 0
	}
	return int32(best)
}
