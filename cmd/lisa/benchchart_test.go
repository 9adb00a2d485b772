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
	} {
		stderr.Reset()
		if code := runBench(c.args, &stdout, &stderr); code != c.code || !strings.Contains(stderr.String(), c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), c.code, c.msg)
		}
	}
}
