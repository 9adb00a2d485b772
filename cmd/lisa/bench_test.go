package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// TestBenchSynthetic runs `lisa bench --synthetic mini:q8_0` in process
// (the sandboxed path is tested in package bench, whose test binary is
// its own worker) and checks the JSON.
func TestBenchSynthetic(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	var so, se bytes.Buffer
	code := run([]string{"bench", "--synthetic", "mini:q8_0", "--vocab", vocab, "-p", "8", "-n", "2", "-r", "2", "-t", "1",
		"--no-sandbox", "-o", "json"}, &so, &se)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal(so.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, so.String())
	}
	if len(rs) != 2 || rs[0]["n_prompt"] != 8.0 || rs[1]["n_gen"] != 2.0 || rs[0]["sandbox"] != false ||
		!strings.Contains(rs[0]["model_type"].(string), "Q8_0") || rs[0]["model_filename"] != "synthetic:mini:q8_0" {
		t.Errorf("results: %v", rs)
	}
}

// TestBenchUsage checks bad arguments are usage errors.
func TestBenchUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no model", []string{"bench"}, "exactly one of -m and --synthetic"},
		{"both", []string{"bench", "-m", "x", "--synthetic", "mini"}, "exactly one"},
		{"bad threads", []string{"bench", "-m", "x", "-t", "1,0"}, "thread count"},
		{"bad format", []string{"bench", "-m", "x", "-o", "xml"}, "-o"},
		{"bad kernels", []string{"bench", "-m", "x", "--kernels", "sse"}, "--kernels"},
		{"no reps", []string{"bench", "-m", "x", "-r", "0"}, "repetitions"},
		{"bad key cache type", []string{"bench", "-m", "x", "-ctk", "q4_0"}, "type_k"},
		{"bad value cache type", []string{"bench", "-m", "x", "-ctv", "bf16"}, "type_v"},
		{"stray", []string{"bench", "-m", "x", "y"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var so, se bytes.Buffer
			if code := run(tc.args, &so, &se); code != 2 || !strings.Contains(se.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, se.String(), tc.msg)
			}
		})
	}
}
