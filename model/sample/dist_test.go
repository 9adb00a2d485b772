package sample

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refDist is the distribution the chain documents, in float64, for
// logits after the given history: penalties, top-k, top-p, min-p (each on
// the temperature-1 softmax, as llama.cpp orders them), then the softmax
// at the temperature of what survives; allowed, when set, masks first.
func refDist(p Params, logits []float32, history []int32, allowed []bool) []float64 {
	n := len(logits)
	l := make([]float64, n)
	for i, x := range logits {
		l[i] = float64(x)
		if x != x || (allowed != nil && !allowed[i]) {
			l[i] = math.Inf(-1)
		}
	}
	if p.penalised() {
		win := history[max(0, len(history)-p.PenaltyLastN):]
		count := make([]int, n)
		for _, t := range win {
			count[t]++
		}
		rep := float64(p.RepeatPenalty)
		if rep == 0 {
			rep = 1
		}
		for i, c := range count {
			if c == 0 {
				continue
			}
			if l[i] <= 0 {
				l[i] *= rep
			} else {
				l[i] /= rep
			}
			l[i] -= float64(c)*float64(p.FrequencyPenalty) + float64(p.PresencePenalty)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case l[a] > l[b]:
			return -1
		case l[a] < l[b]:
			return 1
		}
		return 0
	})
	keep := n
	if p.TopK > 0 {
		keep = min(keep, p.TopK)
	}
	minKeep := max(p.MinKeep, 1)
	if p.TopP > 0 && p.TopP < 1 {
		w := make([]float64, keep)
		var sum float64
		for i := range w {
			w[i] = math.Exp(l[order[i]] - l[order[0]])
			sum += w[i]
		}
		var cum float64
		for i := range w {
			cum += w[i] / sum
			if cum >= float64(p.TopP) && i+1 >= minKeep {
				keep = i + 1
				break
			}
		}
	}
	if p.MinP > 0 {
		floor := l[order[0]] + math.Log(float64(p.MinP))
		for i := 1; i < keep; i++ {
			if l[order[i]] < floor && i >= minKeep {
				keep = i
				break
			}
		}
	}
	out := make([]float64, n)
	var sum float64
	for _, id := range order[:keep] {
		out[id] = math.Exp((l[id] - l[order[0]]) / float64(p.Temperature))
		sum += out[id]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// chiSquareZ returns Pearson's chi-square statistic of counts against the
// expected probabilities as a standard normal deviate (Wilson–Hilferty),
// merging bins expected below 5 draws into one. It fails t when a token
// of zero probability was drawn.
func chiSquareZ(t *testing.T, counts []int, want []float64, draws int) float64 {
	t.Helper()
	var stat, restObs, restExp float64
	bins := 0
	for i, c := range counts {
		e := want[i] * float64(draws)
		switch {
		case want[i] == 0:
			if c != 0 {
				t.Fatalf("token %d of probability 0 drawn %d times", i, c)
			}
		case e < 5:
			restObs += float64(c)
			restExp += e
		default:
			stat += (float64(c) - e) * (float64(c) - e) / e
			bins++
		}
	}
	if restExp > 0 {
		stat += (restObs - restExp) * (restObs - restExp) / restExp
		bins++
	}
	k := float64(bins - 1) // degrees of freedom
	if k < 1 {
		return 0 // one possible outcome: nothing to test beyond the zeros
	}
	return (math.Cbrt(stat/k) - (1 - 2/(9*k))) / math.Sqrt(2/(9*k))
}

// checker is maskConstraint that also answers for one token, so Sample
// picks first and masks only when the pick is refused.
type checker struct{ maskConstraint }

func (c *checker) AllowsToken(tok int32) (bool, error) { return c.allow[tok], nil }

// TestSampleChiSquare draws many tokens on small vocabularies through
// every path of Sample (the plain draw, the bucket path's top-p and
// min-p, top-k's sort, penalties, masks) and compares the frequencies with
// the documented distribution by a chi-square test.
func TestSampleChiSquare(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 14))
	normal := func(n int, sd float64) []float32 {
		row := make([]float32, n)
		for i := range row {
			row[i] = float32(r.NormFloat64() * sd)
		}
		return row
	}
	ties := make([]float32, 40) // four distinct logits: cuts fall among equal ones
	for i := range ties {
		ties[i] = float32(r.IntN(4))
	}
	wild := normal(40, 2)
	wild[3], wild[17], wild[30] = float32(math.NaN()), float32(math.Inf(-1)), float32(math.NaN())
	history := []int32{1, 2, 2, 5, 7, 7, 7, 9}
	allow := make([]bool, 40)
	for i := range allow {
		allow[i] = i%3 != 0
	}
	// Rows whose allowed tokens (i%3 != 0) lie far below the others: the
	// weights relative to the unconstrained top are small (below) or
	// underflow (far below, the exact masked path).
	below, farBelow := normal(40, 1.5), normal(40, 1.5)
	for i := range below {
		if allow[i] {
			below[i] -= 12
			farBelow[i] -= 80
		}
	}
	tests := []struct {
		name    string
		p       Params
		logits  []float32
		history []int32
		mask    int // 0 none, 1 mask only, 2 token checker
	}{
		{"plain", Params{Temperature: 1}, normal(40, 1.5), nil, 0},
		{"plain cold", Params{Temperature: 0.6}, normal(40, 1), nil, 0},
		{"plain hot", Params{Temperature: 2.5}, normal(40, 1), nil, 0},
		{"plain NaN and -Inf", Params{Temperature: 1}, wild, nil, 0},
		{"plain top-k off", Params{Temperature: 1, TopK: 40, TopP: 1}, normal(40, 1.5), nil, 0},
		{"plain over blocks", Params{Temperature: 1}, normal(300, 0.5), nil, 0},
		{"top-k", Params{Temperature: 1, TopK: 7}, normal(40, 1), nil, 0},
		{"top-k hot", Params{Temperature: 1.5, TopK: 12}, normal(40, 1), nil, 0},
		{"top-p", Params{Temperature: 1, TopP: 0.8}, normal(40, 1.5), nil, 0},
		{"top-p cold", Params{Temperature: 0.7, TopP: 0.9}, normal(40, 1.5), nil, 0},
		{"top-p ties", Params{Temperature: 1, TopP: 0.5}, ties, nil, 0},
		{"top-p ties hot", Params{Temperature: 1.4, TopP: 0.75}, ties, nil, 0},
		{"top-p NaN and -Inf", Params{Temperature: 0.9, TopP: 0.85}, wild, nil, 0},
		{"top-p over blocks", Params{Temperature: 1, TopP: 0.6}, normal(300, 0.7), nil, 0},
		{"top-p and min-p", Params{Temperature: 1.2, TopP: 0.9, MinP: 0.2}, normal(40, 1.5), nil, 0},
		{"min-p", Params{Temperature: 1, MinP: 0.1}, normal(40, 1.5), nil, 0},
		{"min-p ties", Params{Temperature: 1, MinP: 0.3}, ties, nil, 0},
		{"min-p hot", Params{Temperature: 1.8, MinP: 0.05}, normal(40, 1.5), nil, 0},
		{"llama defaults", DefaultParams(), normal(40, 1), nil, 0},
		{"repeat penalty", Params{Temperature: 1, RepeatPenalty: 1.5, PenaltyLastN: 64}, normal(40, 1.5), history, 0},
		{"frequency presence", Params{Temperature: 1, FrequencyPenalty: 0.4, PresencePenalty: 0.7, PenaltyLastN: 5}, normal(40, 1.5), history, 0},
		{"penalties top-p", Params{Temperature: 0.9, TopP: 0.85, RepeatPenalty: 1.3, PresencePenalty: 0.3, PenaltyLastN: 64}, normal(40, 1.5), history, 0},
		{"penalties top-k", Params{Temperature: 1, TopK: 9, RepeatPenalty: 1.3, PenaltyLastN: 64}, normal(40, 1), history, 0},
		{"mask plain", Params{Temperature: 1}, normal(40, 1.5), nil, 1},
		{"mask top-p", Params{Temperature: 1, TopP: 0.7}, normal(40, 1.5), nil, 1},
		{"mask penalties", Params{Temperature: 1, RepeatPenalty: 1.4, PenaltyLastN: 64}, normal(40, 1.5), history, 1},
		{"checker plain", Params{Temperature: 1.2}, normal(40, 1.5), nil, 2},
		{"mask below", Params{Temperature: 1}, below, nil, 1},
		{"checker below", Params{Temperature: 1}, below, nil, 2},
		{"mask far below", Params{Temperature: 1}, farBelow, nil, 1},
		{"checker far below hot", Params{Temperature: 1.3}, farBelow, nil, 2},
		{"mask top-k far below", Params{Temperature: 1, TopK: 20}, farBelow, nil, 1},
		{"checker penalties", Params{Temperature: 1, PresencePenalty: 1, PenaltyLastN: 64}, normal(40, 1.5), history, 2},
	}
	const draws = 60000
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Seed = uint64(100 + i)
			s, err := New(tc.p, len(tc.logits))
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range tc.history {
				if err := s.Accept(h); err != nil {
					t.Fatal(err)
				}
			}
			var allowed []bool
			switch tc.mask {
			case 1:
				allowed = allow
				s.SetConstraint(&maskConstraint{allow: allow})
			case 2:
				allowed = allow
				s.SetConstraint(&checker{maskConstraint{allow: allow}})
			}
			want := refDist(tc.p, tc.logits, tc.history, allowed)
			counts := make([]int, len(tc.logits))
			for range draws {
				id, err := s.Sample(tc.logits)
				if err != nil {
					t.Fatal(err)
				}
				counts[id]++
			}
			// 4.75 standard deviations: about one failure in a million
			// for a correct sampler; a wrong distribution gives tens.
			z := chiSquareZ(t, counts, want, draws)
			t.Logf("chi-square deviate %.2f", z)
			if z > 4.75 {
				t.Errorf("chi-square deviate %.1f: counts %v, want %v", z, counts, scaled(want, draws))
			}
		})
	}
}

// scaled returns the expected counts, rounded, for a failure message.
func scaled(p []float64, n int) string {
	out := make([]int, len(p))
	for i, x := range p {
		out[i] = int(math.Round(x * float64(n)))
	}
	return fmt.Sprint(out)
}

// TestChiSquareDetects checks that the chi-square test above can fail: a
// sampler at a slightly wrong temperature, and one with a single token's
// probability moved by a tenth, are caught.
func TestChiSquareDetects(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	row := make([]float32, 40)
	for i := range row {
		row[i] = float32(r.NormFloat64() * 1.5)
	}
	want := refDist(Params{Temperature: 1}, row, nil, nil)
	top := int32(slices.Index(want, slices.Max(want)))
	const draws = 60000
	for _, tc := range []struct {
		name string
		draw func(s *Sampler) int32
	}{
		{"temperature 1.05", func(s *Sampler) int32 { id, _ := s.Sample(row); return id }},
		{"top token boosted", func(s *Sampler) int32 {
			if s.rng.Float64() < want[top]*0.15 {
				return top
			}
			id, _ := s.Sample(row)
			return id
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			temp := float32(1)
			if tc.name == "temperature 1.05" {
				temp = 1.05
			}
			s, err := New(Params{Temperature: temp, Seed: 5}, len(row))
			if err != nil {
				t.Fatal(err)
			}
			counts := make([]int, len(row))
			for range draws {
				counts[tc.draw(s)]++
			}
			z := chiSquareZ(t, counts, want, draws)
			t.Logf("chi-square deviate %.2f", z)
			if z <= 4.75 {
				t.Errorf("a wrong sampler passed: chi-square deviate %.1f", z)
			}
		})
	}
}

// TestPlainEdges covers the rows the plain path hands back or answers
// without a draw: nothing finite, an infinite top, a temperature whose
// inverse or scaled top overflows float32.
func TestPlainEdges(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	tests := []struct {
		name string
		temp float32
		row  []float32
		want int32
	}{
		{"all -Inf", 1, []float32{-inf, -inf, -inf}, 0},
		{"all NaN", 1, []float32{nan, nan}, 0},
		{"one token", 1, []float32{2}, 0},
		{"+Inf wins", 1, []float32{1, inf, 3, inf}, 1},
		{"inverse temperature overflows", 1e-39, []float32{1, 3, 2}, 1},
		{"scaled top overflows", 1e-30, []float32{1e10, 3e10, -2e10}, 1},
		{"only one weighs", 1, []float32{-200, 0, -300, -100}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Params{Temperature: tc.temp, Seed: 3}, len(tc.row))
			if err != nil {
				t.Fatal(err)
			}
			if !s.plainPath() {
				t.Fatal("not on the plain path")
			}
			for range 20 {
				if got, err := s.Sample(tc.row); err != nil || got != tc.want {
					t.Fatalf("Sample = %d, %v; want %d", got, err, tc.want)
				}
			}
		})
	}
}
