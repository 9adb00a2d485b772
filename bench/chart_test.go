package bench

import (
	"bytes"
	"encoding/xml"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadResults(t *testing.T) {
	cases := []struct {
		name, in, err string
	}{
		{"ok", `[{"model_type":"llama 1B Q8_0","n_threads":2,"n_prompt":512,"n_gen":0,"avg_ts":10,"stddev_ts":1,"build_commit":"x"}]`, ""},
		{"not an array", `{"a":1}`, "cannot unmarshal"},
		{"pg test", `[{"n_threads":1,"n_prompt":1,"n_gen":1,"avg_ts":1}]`, ""},
		{"at depth", `[{"n_threads":1,"n_gen":1,"n_depth":4096,"avg_ts":1}]`, ""},
		{"no test", `[{"n_threads":1,"avg_ts":1}]`, "want one positive"},
		{"negative prompt", `[{"n_threads":1,"n_prompt":-5,"n_gen":3,"avg_ts":1}]`, "neither negative"},
		{"negative depth", `[{"n_threads":1,"n_gen":3,"n_depth":-1,"avg_ts":1}]`, "n_depth -1"},
		{"deep", `[{"n_threads":1,"n_gen":3,"n_depth":1000000000,"avg_ts":1}]`, "n_depth 1000000000"},
		{"no threads", `[{"n_prompt":1,"avg_ts":1}]`, "n_threads 0"},
		{"negative rate", `[{"n_threads":1,"n_gen":1,"avg_ts":-1}]`, "avg_ts -1"},
		{"huge stddev", `[{"n_threads":1,"n_gen":1,"avg_ts":1,"stddev_ts":1e300}]`, "stddev_ts"},
		{"truncated", `[{"n_threads":1`, "unexpected EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs, err := ReadResults(strings.NewReader(c.in))
			if c.err == "" {
				if err != nil || len(rs) != 1 {
					t.Fatalf("got %v, %v", rs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("error %v, want one containing %q", err, c.err)
			}
		})
	}
	many := "[" + strings.Repeat(`{"n_threads":1,"n_gen":1,"avg_ts":1},`, maxChartRows) + `{"n_threads":1,"n_gen":1,"avg_ts":1}]`
	if _, err := ReadResults(strings.NewReader(many)); err == nil {
		t.Error("more rows than the bound were accepted")
	}
}

// TestComparisonSVG checks the chart against the committed llama.cpp
// reference files: it is well-formed XML, has one bar per matching
// series, draws nothing for a result no series shares, and escapes
// labels.
func TestComparisonSVG(t *testing.T) {
	var refs []Series
	for _, f := range []struct{ label, path string }{{"llama.cpp native", "reference/llamacpp-native.json"}, {"llama.cpp <no AMX>", "reference/llamacpp-no-amx.json"}} {
		fh, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ReadResults(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		refs = append(refs, Series{Label: f.label, Results: rs})
	}
	ours := Series{Label: "lisa", Results: []Result{
		{ModelType: "llama 1.1B Q4_K - Medium", NThreads: 2, NGen: 128, AvgTs: 20, StddevTs: 1}, // in both references
		{ModelType: "llama 1.1B Q8_0", NThreads: 2, NPrompt: 512, AvgTs: 100},                   // native only
		{ModelType: "llama 1.1B Q8_0", NThreads: 7, NPrompt: 512, AvgTs: 50},                    // no reference
	}}
	var b bytes.Buffer
	if err := WriteComparisonSVG(&b, "t & t", append([]Series{ours}, refs...)); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, svg)
			}
			break
		}
	}
	// 3 legend squares + background + bars: 3 + 2 + 1.
	if got := strings.Count(svg, "<rect"); got != 1+3+6 {
		t.Errorf("%d rects, want 10\n%s", got, svg)
	}
	for _, want := range []string{">25.6<", ">16.0<", ">179.0<", ">20.0<", "&lt;no AMX&gt;", "t &amp; t", "Q8_0 pp512, 7 threads"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if err := WriteComparisonSVG(&b, "x", nil); err == nil {
		t.Error("a chart of nothing was drawn")
	}
}

// FuzzReadResults checks that any input either decodes to results that
// pass the checks and draw, or is refused with an error; never a panic.
func FuzzReadResults(f *testing.F) {
	f.Add(`[{"model_type":"llama 1B Q8_0","n_threads":2,"n_prompt":512,"avg_ts":10,"stddev_ts":1}]`)
	f.Add(`[{"n_threads":1,"n_gen":1,"avg_ts":1e308}]`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		rs, err := ReadResults(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := WriteComparisonSVG(&b, "x", []Series{{Label: "a", Results: rs}}); err != nil && len(rs) > 0 {
			t.Fatalf("%d valid results did not draw: %v", len(rs), err)
		}
	})
}

// TestReferenceFiles checks every committed results file: each parses as
// ReadResults reads it, and the side-by-side pair of one machine measures
// the same weight types, tests and thread counts, so that the chart draws
// a bar of each engine for every group.
func TestReferenceFiles(t *testing.T) {
	paths, err := filepath.Glob("reference/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no reference files: %v", err)
	}
	keys := map[string]map[chartKey]bool{}
	for _, p := range paths {
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := ReadResults(fh)
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		keys[p] = map[chartKey]bool{}
		for _, r := range rs {
			keys[p][chartKey{quantName(r.ModelType), r.Test(), r.NThreads}] = true
		}
	}
	ours, theirs := keys["reference/lisa-2026-12-04-zen5.json"], keys["reference/llamacpp-2026-12-04-zen5.json"]
	if len(ours) != 12 || !maps.Equal(ours, theirs) {
		t.Errorf("the Zen 5 pair measures different things:\nlisa      %v\nllama.cpp %v", ours, theirs)
	}
}
