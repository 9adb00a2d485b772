package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchChart(t *testing.T) {
	native := filepath.Join("..", "..", "bench", "reference", "llamacpp-native.json")
	ours := filepath.Join("..", "..", "bench", "reference", "lisa-2026-12-03.json")
	out := filepath.Join(t.TempDir(), "c.svg")
	var stdout, stderr bytes.Buffer
	if code := runBench([]string{"chart", "-o", out, "lisa=" + ours, "llama.cpp=" + native}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	svg, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(svg), "<svg") || !strings.Contains(string(svg), ">25.6<") {
		t.Errorf("chart lacks llama.cpp's Q4_K_M tg128 bar:\n%s", svg)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"n_threads":0,"n_gen":1}]`), 0o600)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"chart"}, 2, "at least one"},
		{[]string{"chart", "nolabel.json"}, 2, "want LABEL=RESULTS.json"},
		{[]string{"chart", "x=" + filepath.Join(t.TempDir(), "missing.json")}, 1, "no such file"},
		{[]string{"chart", "x=" + bad}, 1, "n_threads 0"},
		{[]string{"chart", "--kind", "pie", "x=" + ours}, 2, "--kind"},
	} {
		stderr.Reset()
		if code := runBench(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
}

// TestBenchChartDepth draws results at two depths: by default as depth
// series (one line per file, test and thread count), with --kind bars as
// bars.
func TestBenchChartDepth(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lisa := write("lisa.json", `[{"model_type":"llama 1B Q8_0","n_threads":2,"n_prompt":512,"n_depth":0,"avg_ts":100},
		{"model_type":"llama 1B Q8_0","n_threads":2,"n_prompt":512,"n_depth":1024,"avg_ts":80},
		{"model_type":"llama 1B Q8_0","n_threads":2,"n_gen":128,"n_depth":0,"avg_ts":30},
		{"model_type":"llama 1B Q8_0","n_threads":2,"n_gen":128,"n_depth":1024,"avg_ts":25}]`)
	ll := write("ll.json", `[{"model_type":"llama ?B Q8_0","n_threads":2,"n_prompt":512,"n_depth":0,"avg_ts":90},
		{"model_type":"llama ?B Q8_0","n_threads":2,"n_prompt":512,"n_depth":1024,"avg_ts":70}]`)
	for _, c := range []struct {
		args     []string
		polyline int
		bars     bool
	}{
		{[]string{"chart", "lisa=" + lisa, "llama.cpp=" + ll}, 3, false},
		{[]string{"chart", "--kind", "depth", "lisa=" + lisa}, 2, false},
		{[]string{"chart", "--kind", "bars", "lisa=" + lisa, "llama.cpp=" + ll}, 0, true},
	} {
		var stdout, stderr bytes.Buffer
		if code := runBench(c.args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr.String())
		}
		svg := stdout.String()
		if n := strings.Count(svg, "<polyline"); n != c.polyline || strings.Contains(svg, "pp512 @ d1024, 2 threads") != c.bars {
			t.Errorf("%v: %d lines, want %d; bars %v:\n%s", c.args, n, c.polyline, c.bars, svg)
		}
	}
}
