package llref

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// row builds a top list from alternating ids and logits.
func row(v ...float64) []Pair {
	p := make([]Pair, len(v)/2)
	for i := range p {
		p[i] = Pair{ID: int32(v[2*i]), Logit: float32(v[2*i+1])}
	}
	return p
}

func run(prompt, gen []int32, pos ...Position) Run {
	return Run{PromptIDs: prompt, GeneratedIDs: gen, Positions: pos}
}

func TestCompare(t *testing.T) {
	ref := run([]int32{1, 5}, []int32{7, 8},
		Position{Position: 1, Top: row(7, 10, 3, 9, 4, 8)},
		Position{Position: 2, Top: row(8, 20, 2, 19.5, 6, 1)},
		Position{Position: 3, Top: row(2, 5, 9, 4, 1, 3)})
	tight := Tolerance{Name: "t", TopN: 10, Abs: 1e-3}
	tests := []struct {
		name     string
		got      Run
		tol      Tolerance
		compared int
		ties     int
		mismatch []string // substrings, one per expected mismatch, in order
	}{
		{name: "identical", got: ref, tol: tight, compared: 3},
		{name: "lisa stops one position earlier", tol: tight, compared: 2,
			got: run([]int32{1, 5}, []int32{7, 8}, ref.Positions[:2]...)},
		{name: "within the absolute tolerance", tol: tight, compared: 1,
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1, Top: row(7, 10.0009, 3, 8.9991, 4, 8)})},
		{name: "prompt ids differ", tol: tight,
			got:      run([]int32{1, 6}, []int32{7, 8}),
			mismatch: []string{"prompt ids [1 6], llama.cpp [1 5]"}},
		{name: "generated ids differ", tol: tight,
			got:      run([]int32{1, 5}, []int32{7}),
			mismatch: []string{"generated ids [7], llama.cpp [7 8]"}},
		{name: "position not in the reference", tol: tight,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 9, Top: row(1, 1)}),
			mismatch: []string{"position 9: not in the reference"}},
		{name: "logit beyond the absolute tolerance", tol: tight, compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1, Top: row(7, 10, 3, 9.002, 4, 8)}),
			mismatch: []string{"position 1: id 3: logit 9.00199986, llama.cpp 9: differ by 0.002"}},
		{name: "relative tolerance allows it", compared: 1,
			tol: Tolerance{Name: "r", TopN: 10, Abs: 1e-3, Rel: 1e-3},
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1, Top: row(7, 10, 3, 9.009, 4, 8)})},
		{name: "relative tolerance has its limit", compared: 1,
			tol:      Tolerance{Name: "r", TopN: 10, Abs: 1e-3, Rel: 1e-3},
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1, Top: row(7, 10, 3, 9.02, 4, 8)}),
			mismatch: []string{"id 3: logit"}},
		{name: "top-1 swapped", tol: tight, compared: 1,
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(2, 19.5, 8, 19.4, 6, 1)}),
			mismatch: []string{"position 2: top-1 id 2 (19.5), llama.cpp 8 (20)",
				"id 8: logit 19.3999996, llama.cpp 20"}},
		{name: "near tie accepted when asked", compared: 1, ties: 1,
			tol: Tolerance{Name: "n", TopN: 10, Abs: 0.6, NearTies: true},
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(2, 19.6, 8, 19.55, 6, 1)})},
		{name: "near tie beyond the tolerance", compared: 1,
			tol:      Tolerance{Name: "n", TopN: 10, Abs: 0.4, NearTies: true},
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(2, 19.6, 8, 19.55, 6, 1)}),
			mismatch: []string{"top-1 id 2", "id 8: logit 19.5499992, llama.cpp 20: differ by 0.45"}},
		{name: "reference id missing from lisa's list, far above its cut-off", tol: tight, compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 3, Top: row(2, 5, 9, 4, 7, 0.5)}),
			mismatch: []string{"id 1 (llama.cpp 3) missing from lisa's top 3 (cut-off 0.5)"}},
		{name: "lisa id missing from the reference, far above its cut-off", tol: tight, compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 3, Top: row(2, 5, 9, 4, 11, 3.5)}),
			mismatch: []string{"id 11 (3.5) missing from llama.cpp's top 3 (cut-off 3), beyond t tolerance 0.001"}},
		{name: "ids swapped at the cut-off within the tolerance", compared: 1,
			tol: Tolerance{Name: "c", TopN: 10, Abs: 0.01},
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 3, Top: row(2, 5, 9, 4, 11, 3.005)})},
		{name: "TopN cuts the rows", compared: 1,
			tol: Tolerance{Name: "k", TopN: 1, Abs: 1e-3},
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 3, Top: row(2, 5, 12, 4.5, 13, 4)})},
		{name: "NaN against a number", tol: tight, compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1, Top: row(7, 10, 3, math.NaN(), 4, 8)}),
			mismatch: []string{"id 3: logit NaN, llama.cpp 9"}},
		{name: "positions outside the reference's report ranges are skipped", tol: tight, compared: 1,
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 0, Top: row(1, 1)}, ref.Positions[0],
				Position{Position: 2, Top: row(1, 1)}, Position{Position: 4, Top: row(1, 1)}),
			mismatch: []string{"position 2: not in the reference"}},
		{name: "F16 rejects 3e-3", tol: F16(), compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(8, 20.003, 2, 19.5, 6, 1)}),
			mismatch: []string{"id 8: logit 20.0030003, llama.cpp 20: differ by 0.003, beyond f16 tolerance 0.002"}},
		{name: "Quantized allows 1% of the largest logit", tol: Quantized(), compared: 1,
			got: run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(8, 20.19, 2, 19.4, 6, 1)})},
		{name: "Quantized rejects more", tol: Quantized(), compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 2, Top: row(8, 20.21, 2, 19.5, 6, 1)}),
			mismatch: []string{"beyond quantized tolerance 0.2"}},
		{name: "empty row against a full one", tol: tight, compared: 1,
			got:      run([]int32{1, 5}, []int32{7, 8}, Position{Position: 1}),
			mismatch: []string{"position 1: 0 top pairs, llama.cpp 3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := ref
			if strings.Contains(tc.name, "report ranges") {
				// Asked for 1-3 only, and position 2 is missing.
				want = run(ref.PromptIDs, ref.GeneratedIDs, ref.Positions[0], ref.Positions[2])
				want.Report = [][2]int{{1, 3}}
			}
			rep := Compare(tc.got, want, tc.tol)
			if rep.Compared != tc.compared || rep.NearTies != tc.ties {
				t.Errorf("compared %d positions with %d near ties, want %d and %d", rep.Compared, rep.NearTies, tc.compared, tc.ties)
			}
			if len(rep.Mismatches) != len(tc.mismatch) {
				t.Fatalf("mismatches %v, want %d like %q", rep.Mismatches, len(tc.mismatch), tc.mismatch)
			}
			for i, m := range rep.Mismatches {
				if !strings.Contains(m.String(), tc.mismatch[i]) {
					t.Errorf("mismatch %d = %q, want it to contain %q", i, m, tc.mismatch[i])
				}
			}
			if (rep.Err() == nil) != (len(tc.mismatch) == 0) {
				t.Errorf("Err() = %v with %d mismatches", rep.Err(), len(tc.mismatch))
			}
		})
	}
}

func TestReportErrLists(t *testing.T) {
	var r Report
	for i := range 12 {
		r.Mismatches = append(r.Mismatches, Mismatch{Position: i, What: "x"})
	}
	r.Compared = 12
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "12 mismatches over 12 positions") ||
		!strings.Contains(err.Error(), "position 9: x") || strings.Contains(err.Error(), "position 10: x") ||
		!strings.Contains(err.Error(), "... 2 more") {
		t.Errorf("Err() = %v", err)
	}
}

const goodRef = `{"tool": "llref", "mode": "logits", "llama_cpp": "0.5.0-dev", "model_file": "m.gguf",
 "n_vocab": 16, "bos_id": 1, "eos_id": 2, "add_bos": true,
 "settings": {"n_ctx": 64, "n_batch": 64, "top_k": 2, "kv_cache_type": "f16"},
 "results": [{"prompt": "hi\n", "report": [[0, 2]], "teacher_forced": false, "prompt_ids": [1, 3], "generated_ids": [4],
  "text": "x", "positions": [{"position": 0, "top": [[3, 1.5], [4, null]]}, {"position": 2, "top": [[5, -2e3]]}]}]}`

func TestParse(t *testing.T) {
	r, err := Parse([]byte(goodRef))
	if err != nil {
		t.Fatal(err)
	}
	res := r.Results[0]
	if r.NVocab != 16 || r.Settings.NCtx != 64 || res.Prompt == nil || *res.Prompt != "hi\n" ||
		!slices.Equal(res.PromptIDs, []int32{1, 3}) || len(res.Positions) != 2 ||
		res.Positions[0].Top[0] != (Pair{3, 1.5}) || !math.IsNaN(float64(res.Positions[0].Top[1].Logit)) ||
		res.Positions[1].Top[0] != (Pair{5, -2000}) || !slices.Equal(res.Report, [][2]int{{0, 2}}) {
		t.Errorf("parsed %+v", r)
	}
	bad := []struct{ name, old, new, want string }{
		{"other tool", `"tool": "llref"`, `"tool": "x"`, "want llref logits"},
		{"other mode", `"mode": "logits"`, `"mode": "chat"`, "want llref logits"},
		{"prompt id outside the vocabulary", `[1, 3]`, `[1, 16]`, "prompt_ids[1] = 16 outside the vocabulary of 16"},
		{"generated id outside the vocabulary", `"generated_ids": [4]`, `"generated_ids": [99]`, "generated_ids[0] = 99"},
		{"top id outside the vocabulary", `[[5, -2e3]]`, `[[17, -2e3]]`, "positions[1].top[0]: id 17"},
		{"negative top id", `[[5, -2e3]]`, `[[-5, -2e3]]`, "is not a token id"},
		{"positions out of order", `"position": 2`, `"position": 0`, "positions[1]: position 0 after 0"},
		{"pair of three", `[3, 1.5]`, `[3, 1.5, 2]`, "3 elements"},
		{"logit not a number", `[3, 1.5]`, `[3, "a"]`, `logit "a"`},
		{"not JSON", `{"tool"`, `{tool`, "invalid character"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(goodRef, tc.old, tc.new, 1)
			if doc == goodRef {
				t.Fatalf("%q not in the document", tc.old)
			}
			_, err := Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseRun(t *testing.T) {
	doc := `{"prompt_ids":[1,3],"generated_ids":[4],"text":"x","positions":[{"position":1,"top":[[4,2.25],[3,1]]}]}`
	r, err := ParseRun([]byte(doc), 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Prompt != nil || len(r.Positions) != 1 || r.Positions[0].Top[0] != (Pair{4, 2.25}) {
		t.Errorf("parsed %+v", r)
	}
	if _, err := ParseRun([]byte(doc), 4); err == nil || !strings.Contains(err.Error(), "generated_ids[0] = 4") {
		t.Errorf("ParseRun with 4 tokens: %v", err)
	}
}

func TestLisaArgs(t *testing.T) {
	p := ""
	tests := []struct {
		name string
		run  Run
		want string
	}{
		{"teacher-forced", Run{Prompt: &p, GeneratedIDs: []int32{5, 6}},
			"-m m.gguf -p  --json --threads 1 --top-logits 10 --temp 0 --teacher-force 5,6"},
		{"nothing generated", Run{Prompt: &p},
			"-m m.gguf -p  --json --threads 1 --top-logits 10 --temp 0 -n 0"},
	}
	for _, tc := range tests {
		args, err := LisaArgs("m.gguf", tc.run, 10)
		if err != nil || strings.Join(args, " ") != tc.want {
			t.Errorf("%s: LisaArgs = %q, %v, want %q", tc.name, args, err, tc.want)
		}
	}
	if _, err := LisaArgs("m.gguf", Run{PromptIDs: []int32{1}}, 10); err == nil {
		t.Error("LisaArgs accepted a case given as ids")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodRef))
	f.Add([]byte(`{"tool":"llref","mode":"logits","n_vocab":1,"results":[{"positions":[{"position":0,"top":[[0,null]]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses compares against itself without a mismatch
		// unless it holds NaN logits at top-1 or duplicate ids.
		for _, res := range r.Results {
			rep := Compare(res, res, F16())
			if rep.Compared != len(res.Positions) {
				t.Fatalf("compared %d of %d positions", rep.Compared, len(res.Positions))
			}
		}
	})
}
