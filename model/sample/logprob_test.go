package sample

import (
	"math"
	"testing"
)

func TestLogprobs(t *testing.T) {
	nan := float32(math.NaN())
	ninf := float32(math.Inf(-1))
	tests := []struct {
		name    string
		logits  []float32
		chosen  int32
		topN    int
		wantTop []int32
	}{
		{"simple", []float32{1, 2, 3, 0}, 1, 2, []int32{2, 1}},
		{"ties by id", []float32{2, 5, 5, 5}, 0, 3, []int32{1, 2, 3}},
		{"all", []float32{0.5, -1, 0.25}, 2, 10, []int32{0, 2, 1}},
		{"none", []float32{0.5, -1}, 0, 0, []int32{}},
		{"NaN and -Inf", []float32{nan, 1, ninf, 0}, 3, 4, []int32{1, 3, 0, 2}},
		{"large", []float32{1000, 999, -1000}, 1, 1, []int32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ref := make([]float64, len(tc.logits))
			for i, l := range tc.logits {
				if l != l {
					l = ninf
				}
				ref[i] = float64(l)
			}
			p := refSoftmax(ref)
			lp, top, err := Logprobs(tc.logits, tc.chosen, tc.topN, make([]TokenLogprob, 0, 4))
			if err != nil {
				t.Fatal(err)
			}
			want := math.Log(p[tc.chosen])
			if math.Abs(float64(lp)-want) > 1e-5 {
				t.Errorf("chosen logprob %v, want %v", lp, want)
			}
			if len(top) != len(tc.wantTop) {
				t.Fatalf("top %v, want ids %v", top, tc.wantTop)
			}
			for i, x := range top {
				if x.ID != tc.wantTop[i] {
					t.Errorf("top[%d] id %d, want %d", i, x.ID, tc.wantTop[i])
				}
				w := math.Log(p[x.ID])
				if math.IsInf(w, -1) != math.IsInf(float64(x.Logprob), -1) || (!math.IsInf(w, -1) && math.Abs(float64(x.Logprob)-w) > 1e-5) {
					t.Errorf("top[%d] logprob %v, want %v", i, x.Logprob, w)
				}
			}
		})
	}
}

func TestLogprobsAllImpossible(t *testing.T) {
	ninf := float32(math.Inf(-1))
	lp, top, err := Logprobs([]float32{ninf, ninf, ninf, ninf}, 2, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := float32(-math.Log(4))
	if lp != want || len(top) != 2 || top[0].ID != 0 || top[1].ID != 1 || top[0].Logprob != want {
		t.Fatalf("got %v %v, want %v for all and ids 0,1", lp, top, want)
	}
}
