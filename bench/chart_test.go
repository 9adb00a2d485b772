package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"maps"
	"math"
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
	f.Add(`[{"n_threads":1,"n_gen":1,"n_depth":4096,"avg_ts":3},{"n_threads":1,"n_gen":1,"avg_ts":5,"stddev_ts":0.5}]`)
	f.Fuzz(func(t *testing.T, in string) {
		rs, err := ReadResults(strings.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := WriteComparisonSVG(&b, "x", []Series{{Label: "a", Results: rs}}); err != nil && len(rs) > 0 {
			t.Fatalf("%d valid results did not draw: %v", len(rs), err)
		}
		if err := WriteDepthSVG(&b, "x", []Series{{Label: "a", Results: rs}}); err != nil && len(rs) > 0 {
			t.Fatalf("%d valid results did not draw by depth: %v", len(rs), err)
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

// TestDepthSVG draws two engines' pp and tg at three depths: one line per
// engine, test and thread count with its points left to right by depth
// (whatever order the results come in), lower rates drawn lower, and
// legends escaped.
func TestDepthSVG(t *testing.T) {
	mk := func(np, ng, d int, ts float64) Result {
		return Result{ModelType: "llama 1.1B Q4_K - Medium", NThreads: 2, NPrompt: np, NGen: ng, NDepth: d, AvgTs: ts, StddevTs: 1}
	}
	ss := []Series{
		{Label: "lisa", Results: []Result{mk(512, 0, 4096, 60), mk(512, 0, 0, 120), mk(512, 0, 1024, 100),
			mk(0, 128, 0, 50), mk(0, 128, 1024, 40), mk(0, 128, 4096, 30), mk(0, 128, 4096, 99)}}, // a duplicate: left out
		{Label: "llama.cpp <b>", Results: []Result{mk(512, 0, 0, 110), mk(512, 0, 1024, 90), mk(512, 0, 4096, 50),
			mk(0, 128, 0, 45), mk(0, 128, 4096, 25)}},
	}
	if !HasDepths(ss) || HasDepths([]Series{{Results: []Result{mk(512, 0, 0, 1), mk(0, 128, 0, 1)}}}) {
		t.Error("HasDepths")
	}
	var b bytes.Buffer
	if err := WriteDepthSVG(&b, "depth & speed", ss); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	d := xml.NewDecoder(strings.NewReader(svg))
	type line struct{ points, stroke string }
	var lines []line
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed: %v\n%s", err, svg)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			var l line
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "points":
					l.points = a.Value
				case "stroke":
					l.stroke = a.Value
				}
			}
			lines = append(lines, l)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4\n%s", len(lines), svg)
	}
	wantPoints := []int{3, 3, 3, 2}
	for i, l := range lines {
		pts := strings.Fields(l.points)
		if len(pts) != wantPoints[i] {
			t.Errorf("line %d: %d points, want %d", i, len(pts), wantPoints[i])
		}
		var prevX, prevY float64 = -1, -1
		for _, p := range pts {
			var px, py float64
			if _, err := fmt.Sscanf(p, "%g,%g", &px, &py); err != nil {
				t.Fatal(err)
			}
			// Rates fall with depth in this data: y (down) grows.
			if px <= prevX || py <= prevY {
				t.Errorf("line %d: point %s after (%g,%g)", i, p, prevX, prevY)
			}
			prevX, prevY = px, py
		}
	}
	if lines[0].stroke != lines[1].stroke || lines[0].stroke == lines[2].stroke {
		t.Errorf("colours by engine: %v", lines)
	}
	for _, want := range []string{"lisa: Q4_K - Medium pp512, 2 threads", "llama.cpp &lt;b&gt;: Q4_K - Medium tg128, 2 threads",
		"depth &amp; speed", ">4096<", ">1024<", "stroke-dasharray"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	if strings.Contains(svg, ">99.0 t/s<") {
		t.Error("the duplicate result was drawn")
	}
	if err := WriteDepthSVG(&b, "x", nil); err == nil {
		t.Error("a chart of nothing was drawn")
	}
}

func TestNiceCeil(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{1.05, 2}, {99, 100}, {101, 200}, {126, 200}, {250, 500}, {0.3, 0.5}, {5000, 5000}} {
		if got := niceCeil(c.in); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("niceCeil(%g) = %g, want %g", c.in, got, c.want)
		}
	}
}
