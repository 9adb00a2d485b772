package sample

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// refSoftmax is a float64 softmax over the given logits.
func refSoftmax(l []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range l {
		m = math.Max(m, v)
	}
	var s float64
	out := make([]float64, len(l))
	for i, v := range l {
		out[i] = math.Exp(v - m)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

func logs(ps ...float64) []float32 {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(math.Log(p))
	}
	return out
}

func TestCandidates(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name    string
		p       Params
		history []int32
		logits  []float32
		wantIDs []int32
		// wantLogits are the logits the survivors have before temperature
		// (the expected probabilities are their softmax at Temperature).
		wantLogits []float64
	}{
		{"greedy", Params{}, nil, []float32{1, 3, 2, 3}, []int32{1}, []float64{3}},
		{"greedy NaN", Params{}, nil, []float32{nan, -1, -2}, []int32{1}, []float64{-1}},
		{"greedy all NaN", Params{}, nil, []float32{nan, nan}, []int32{0}, []float64{0}},
		{"no filter", Params{Temperature: 1}, nil, []float32{0, 2, 1}, []int32{1, 2, 0}, []float64{2, 1, 0}},
		{"top-k ties", Params{Temperature: 1, TopK: 2}, nil, []float32{1, 3, 2, 3}, []int32{1, 3}, []float64{3, 3}},
		{"top-k larger than vocab", Params{Temperature: 1, TopK: 10}, nil, []float32{1, 2}, []int32{1, 0}, []float64{2, 1}},
		{"top-p", Params{Temperature: 1, TopP: 0.5}, nil, logs(0.1, 0.4, 0.3, 0.2), []int32{1, 2},
			[]float64{math.Log(0.4), math.Log(0.3)}},
		{"top-p min-keep", Params{Temperature: 1, TopP: 0.1, MinKeep: 3}, nil, logs(0.1, 0.4, 0.3, 0.2), []int32{1, 2, 3},
			[]float64{math.Log(0.4), math.Log(0.3), math.Log(0.2)}},
		{"min-p", Params{Temperature: 1, MinP: 0.6}, nil, logs(0.1, 0.4, 0.3, 0.2), []int32{1, 2},
			[]float64{math.Log(0.4), math.Log(0.3)}},
		{"temperature", Params{Temperature: 2}, nil, []float32{0, 1, 4}, []int32{2, 1, 0}, []float64{4, 1, 0}},
		{"top-k then temperature", Params{Temperature: 0.5, TopK: 2}, nil, []float32{0, 1, 4}, []int32{2, 1}, []float64{4, 1}},
		{"repeat penalty", Params{Temperature: 1, RepeatPenalty: 2, PenaltyLastN: 8}, []int32{0, 1, 1},
			[]float32{4, -1, 3}, []int32{2, 0, 1}, []float64{3, 2, -2}},
		{"repeat penalty greedy", Params{RepeatPenalty: 2, PenaltyLastN: 8}, []int32{0},
			[]float32{4, -1, 3}, []int32{2}, []float64{3}},
		{"frequency and presence", Params{Temperature: 1, FrequencyPenalty: 0.5, PresencePenalty: 1, PenaltyLastN: 8},
			[]int32{0, 0, 0, 2}, []float32{4, 1, 3}, []int32{0, 2, 1}, []float64{1.5, 1.5, 1}},
		{"penalty window", Params{Temperature: 1, PresencePenalty: 10, PenaltyLastN: 2},
			[]int32{0, 1, 2}, []float32{5, 5, 5}, []int32{0, 1, 2}, []float64{5, -5, -5}},
		{"penalties off at last-n 0", Params{Temperature: 1, PresencePenalty: 10},
			[]int32{0}, []float32{5, 4}, []int32{0, 1}, []float64{5, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.p, len(tc.logits))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.history {
				if err := s.Accept(h); err != nil {
					t.Fatal(err)
				}
			}
			orig := slices.Clone(tc.logits)
			c, err := s.Candidates(tc.logits)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]int32, len(c))
			for i, x := range c {
				ids[i] = x.ID
			}
			if !slices.Equal(ids, tc.wantIDs) {
				t.Fatalf("ids %v, want %v", ids, tc.wantIDs)
			}
			temp := float64(tc.p.Temperature)
			if temp <= 0 {
				temp = 1
			}
			scaled := make([]float64, len(tc.wantLogits))
			for i, l := range tc.wantLogits {
				scaled[i] = l / temp
			}
			want := refSoftmax(scaled)
			if len(c) == 1 {
				want = []float64{1}
			}
			for i, x := range c {
				if math.Abs(float64(x.P)-want[i]) > 1e-6 {
					t.Errorf("p[%d] (id %d) = %v, want %v", i, x.ID, x.P, want[i])
				}
			}
			for i := range orig {
				if math.Float32bits(orig[i]) != math.Float32bits(tc.logits[i]) {
					t.Fatalf("logits modified at %d", i)
				}
			}
		})
	}
}

func TestSampleDistribution(t *testing.T) {
	tests := []struct {
		name   string
		p      Params
		logits []float32
		want   []float64 // expected frequency of each id
	}{
		{"plain", Params{Temperature: 1, Seed: 1}, logs(0.1, 0.2, 0.3, 0.4), []float64{0.1, 0.2, 0.3, 0.4}},
		{"top-k 2", Params{Temperature: 1, TopK: 2, Seed: 2}, logs(0.1, 0.2, 0.3, 0.4), []float64{0, 0, 3.0 / 7, 4.0 / 7}},
		{"hot", Params{Temperature: 2, Seed: 3}, []float32{0, 0, 2}, []float64{1 / (2 + math.E), 1 / (2 + math.E), math.E / (2 + math.E)}},
		{"greedy", Params{Seed: 4}, logs(0.1, 0.2, 0.3, 0.4), []float64{0, 0, 0, 1}},
	}
	const n = 40000
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.p, len(tc.logits))
			if err != nil {
				t.Fatal(err)
			}
			counts := make([]float64, len(tc.logits))
			for range n {
				id, err := s.Sample(tc.logits)
				if err != nil {
					t.Fatal(err)
				}
				counts[id]++
			}
			for i := range counts {
				got := counts[i] / n
				// Four standard deviations of a binomial frequency.
				tol := 4*math.Sqrt(tc.want[i]*(1-tc.want[i])/n) + 1e-9
				if math.Abs(got-tc.want[i]) > tol {
					t.Errorf("id %d frequency %.4f, want %.4f ± %.4f", i, got, tc.want[i], tol)
				}
			}
		})
	}
}

func TestSeedDeterminism(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	logits := make([]float32, 300)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	for _, p := range []Params{
		{Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PenaltyLastN: 64}, // top-k
		{Temperature: 0.8, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, PenaltyLastN: 64},           // buckets
		{Temperature: 1, RepeatPenalty: 1.1, PenaltyLastN: 64},                                     // plain
		{Temperature: 0.7},
	} {
		testSeedDeterminism(t, p, logits)
	}
}

func testSeedDeterminism(t *testing.T, p Params, logits []float32) {
	run := func(seed uint64) []int32 {
		p.Seed = seed
		s, err := New(p, len(logits))
		if err != nil {
			t.Fatal(err)
		}
		var out []int32
		for range 50 {
			id, err := s.Sample(logits)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Accept(id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		s.Reset()
		for i := range 50 {
			id, _ := s.Sample(logits)
			_ = s.Accept(id)
			if id != out[i] {
				t.Fatalf("%+v: after Reset step %d gave %d, first run %d", p, i, id, out[i])
			}
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Fatalf("%+v: same seed, different tokens:\n%v\n%v", p, a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("%+v: seeds 42 and 43 gave the same 50 tokens %v", p, a)
	}
}

func TestValidate(t *testing.T) {
	inf := float32(math.Inf(1))
	tests := []struct {
		field string
		p     Params
	}{
		{"Temperature", Params{Temperature: float32(math.NaN())}},
		{"Temperature", Params{Temperature: inf}},
		{"TopK", Params{TopK: -1}},
		{"TopP", Params{TopP: -0.5}},
		{"MinP", Params{MinP: 1.5}},
		{"MinKeep", Params{MinKeep: -2}},
		{"RepeatPenalty", Params{RepeatPenalty: -1}},
		{"PresencePenalty", Params{PresencePenalty: inf}},
		{"FrequencyPenalty", Params{FrequencyPenalty: -inf}},
		{"PenaltyLastN", Params{PenaltyLastN: -1}},
		{"PenaltyLastN", Params{PenaltyLastN: MaxPenaltyLastN + 1}},
		{"", DefaultParams()},
		{"", Params{}},
	}
	for _, tc := range tests {
		err := tc.p.Validate()
		var pe *ParamError
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v: unexpected %v", tc.p, err)
			}
			continue
		}
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("%+v: got %v, want a ParamError for %s", tc.p, err, tc.field)
		}
		if _, err := New(tc.p, 4); err == nil {
			t.Errorf("New accepted %+v", tc.p)
		}
	}
}

func TestVocabErrors(t *testing.T) {
	s, err := New(Params{Temperature: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sample([]float32{1, 2}); !errors.Is(err, ErrVocab) {
		t.Errorf("short row: %v", err)
	}
	for _, tok := range []int32{-1, 3} {
		if err := s.Accept(tok); !errors.Is(err, ErrVocab) {
			t.Errorf("Accept(%d): %v", tok, err)
		}
	}
	if _, err := New(Params{}, 0); !errors.Is(err, ErrVocab) {
		t.Errorf("New with vocab 0: %v", err)
	}
	if _, _, err := Logprobs([]float32{1}, 1, 1, nil); !errors.Is(err, ErrVocab) {
		t.Errorf("Logprobs out of range: %v", err)
	}
}

func TestGreedy(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		logits []float32
		want   int32
	}{
		{[]float32{1, 5, 5, 2}, 1},
		{[]float32{nan, 0, nan}, 1},
		{[]float32{float32(math.Inf(-1)), float32(math.Inf(-1))}, 0},
		{[]float32{nan}, 0},
		{nil, -1},
		{[]float32{-3, -2, -1}, 2},
	}
	for _, tc := range tests {
		if got := Greedy(tc.logits); got != tc.want {
			t.Errorf("Greedy(%v) = %d, want %d", tc.logits, got, tc.want)
		}
	}
}

func TestKeepTopMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		c := make([]Candidate, n)
		for i := range c {
			// Few distinct values, so ties are common.
			c[i] = Candidate{ID: int32(i), Logit: float32(r.IntN(20))}
		}
		want := slices.Clone(c)
		sort.SliceStable(want, func(i, j int) bool { return want[i].Logit > want[j].Logit })
		k := r.IntN(n + 2)
		got := keepTop(slices.Clone(c), k, before)
		wantK := want[:min(k, n)]
		if !slices.Equal(got, wantK) {
			t.Fatalf("trial %d n %d k %d: got %v want %v", trial, n, k, got, wantK)
		}
	}
}

func TestSampleAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	for _, p := range []Params{DefaultParams(), {}, {Temperature: 1, RepeatPenalty: 1.3, PenaltyLastN: 8}, {Temperature: 0.9, TopP: 0.9, MinP: 0.05}} {
		s, err := New(p, len(logits))
		if err != nil {
			t.Fatal(err)
		}
		n := testing.AllocsPerRun(20, func() {
			id, err := s.Sample(logits)
			if err != nil {
				t.Fatal(err)
			}
			_ = s.Accept(id)
		})
		if n != 0 {
			t.Errorf("%+v: %v allocations per step", p, n)
		}
	}
}

// refSample is the full-sort chain Sample ran before the bucket path: sort
// the whole vocabulary (Candidates), then draw. It is the reference the
// bucket path must agree with token for token.
func refSample(s *Sampler, logits []float32) int32 {
	c, err := s.Candidates(logits)
	if err != nil {
		panic(err)
	}
	if len(c) == 1 {
		return c[0].ID
	}
	return draw(c, s.rng.Float64())
}

// randomRow returns a logits row of one of several shapes: near uniform (a
// random-weight model), peaked, quantised (many ties), with -Inf and NaN.
func randomRow(r *rand.Rand, n, shape int) []float32 {
	row := make([]float32, n)
	for i := range row {
		switch shape {
		case 0:
			row[i] = float32(r.NormFloat64() * 0.05)
		case 1:
			row[i] = float32(r.NormFloat64() * 3)
		case 2:
			row[i] = float32(r.IntN(6))
		case 3:
			row[i] = float32(r.NormFloat64() * 30)
		default:
			row[i] = float32(r.NormFloat64() * 2)
			switch r.IntN(10) {
			case 0:
				row[i] = float32(math.Inf(-1))
			case 1:
				row[i] = float32(math.NaN())
			}
		}
	}
	if shape == 1 && n > 0 {
		row[r.IntN(n)] += 15 // one dominant token
	}
	return row
}

func TestSampleMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	temps := []float32{0.3, 0.8, 1, 1.7}
	topPs := []float32{0, 0.3, 0.9, 0.95, 1}
	minPs := []float32{0, 0.05, 0.5, 1}
	draws, differ := 0, 0
	for trial := range 600 {
		n := []int{1, 2, 3, 17, 300, 2000}[trial%6]
		p := Params{
			Temperature: temps[r.IntN(len(temps))],
			TopP:        topPs[r.IntN(len(topPs))],
			MinP:        minPs[r.IntN(len(minPs))],
			MinKeep:     2 + r.IntN(3), // min-keep 0 or 1 takes the cut path (TestSampleChiSquare)
			Seed:        r.Uint64(),
		}
		if r.IntN(3) == 0 {
			p.RepeatPenalty, p.PresencePenalty, p.FrequencyPenalty, p.PenaltyLastN = 1.3, 0.5, 0.2, 16
		}
		if r.IntN(5) == 0 {
			p.TopK = n + r.IntN(3) // top-k that does not cut
		}
		if (p.TopP <= 0 || p.TopP >= 1) && p.MinP <= 0 {
			// Without a cut Sample takes the plain path, whose draw walks
			// the tokens in id order (TestSampleChiSquare checks it): a
			// top-p cut keeps this test on the bucket path.
			p.TopP = 0.95
		}
		fast, err := New(p, n)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := New(p, n)
		if err != nil {
			t.Fatal(err)
		}
		shape := r.IntN(5)
		for step := range 20 {
			row := randomRow(r, n, shape)
			orig := slices.Clone(row)
			got, err := fast.Sample(row)
			if err != nil {
				t.Fatal(err)
			}
			want := refSample(ref, row)
			draws++
			if got != want {
				differ++
				t.Errorf("trial %d step %d (n %d shape %d %+v): token %d, full sort %d", trial, step, n, shape, p, got, want)
			}
			for i := range orig {
				if math.Float32bits(orig[i]) != math.Float32bits(row[i]) {
					t.Fatalf("logits modified at %d", i)
				}
			}
			for _, s := range []*Sampler{fast, ref} {
				if err := s.Accept(want); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Logf("%d draws, %d differ", draws, differ)
}

// maskConstraint allows a fixed set of tokens.
type maskConstraint struct {
	allow    []bool
	accepted []int32
}

func (m *maskConstraint) Allowed(mask []uint64) error {
	clear(mask)
	for i, ok := range m.allow {
		if ok {
			mask[i/64] |= 1 << (i % 64)
		}
	}
	return nil
}

func (m *maskConstraint) Accept(tok int32) error {
	m.accepted = append(m.accepted, tok)
	return nil
}

func TestConstraint(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n = 300
	for _, p := range []Params{{}, {Temperature: 1}, DefaultParams(), {Temperature: 0.7, TopP: 0.9, MinP: 0.1, RepeatPenalty: 1.2, PenaltyLastN: 8}} {
		c := &maskConstraint{allow: make([]bool, n)}
		for i := range c.allow {
			c.allow[i] = r.IntN(7) == 0
		}
		s, err := New(p, n)
		if err != nil {
			t.Fatal(err)
		}
		s.SetConstraint(c)
		rows := [][]float32{randomRow(r, n, 1), randomRow(r, n, 4)}
		allInf := make([]float32, n)
		for i := range allInf {
			allInf[i] = float32(math.Inf(-1))
		}
		rows = append(rows, allInf)
		for _, row := range rows {
			for range 50 {
				tok, err := s.Sample(row)
				if err != nil {
					t.Fatal(err)
				}
				if !c.allow[tok] {
					t.Fatalf("%+v: token %d not allowed", p, tok)
				}
			}
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := s.Sample(rows[0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%+v: %v allocations per Sample", p, allocs)
		}
	}
	s, _ := New(Params{Temperature: 1}, 4)
	s.SetConstraint(&maskConstraint{allow: make([]bool, 4)})
	if _, err := s.Sample([]float32{1, 2, 3, 4}); !errors.Is(err, ErrNoAllowedToken) {
		t.Fatalf("nothing allowed: %v", err)
	}
}
