package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/bench"
	"github.com/lisa-llm/lisa/internal/shared"
)

// TestBenchSynthetic runs `lisa bench --synthetic mini:q8_0` in process
// (the sandboxed path is tested in package bench, whose test binary is
// its own worker) and checks the JSON.
func TestBenchSynthetic(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	var so, se bytes.Buffer
	code := run([]string{"bench", "--synthetic", "mini:q8_0", "--vocab", vocab, "-p", "8", "-n", "2", "-r", "2", "-t", "1",
		"-d", "0,16", "-pg", "4,2", "-b", "4", "-ub", "2", "--no-sandbox", "-o", "json"}, &so, &se)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var rs []map[string]any
	if err := json.Unmarshal(so.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, so.String())
	}
	if len(rs) != 6 || rs[0]["n_prompt"] != 8.0 || rs[1]["n_gen"] != 2.0 || rs[0]["sandbox"] != false ||
		!strings.Contains(rs[0]["model_type"].(string), "Q8_0") || rs[0]["model_filename"] != "synthetic:mini:q8_0" {
		t.Fatalf("results: %v", rs)
	}
	for i, want := range []struct{ np, ng, d float64 }{{8, 0, 0}, {0, 2, 0}, {4, 2, 0}, {8, 0, 16}, {0, 2, 16}, {4, 2, 16}} {
		r := rs[i]
		if r["n_prompt"] != want.np || r["n_gen"] != want.ng || r["n_depth"] != want.d || r["n_batch"] != 4.0 || r["n_ubatch"] != 2.0 {
			t.Errorf("result %d: %v, want %+v", i, r, want)
		}
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
		{"bad depth", []string{"bench", "-m", "x", "-d", "0,-4"}, `-d: depth "-4"`},
		{"depth range backwards", []string{"bench", "-m", "x", "-d", "4096-0"}, "ends before it starts"},
		{"too deep", []string{"bench", "-m", "x", "-d", "0,1048577"}, "depth 1048577 is not in"},
		{"deep plus test", []string{"bench", "-m", "x", "-d", "1048576"}, "the deepest depth plus the longest test"},
		{"bad pg", []string{"bench", "-m", "x", "-pg", "512"}, "want PP,TG"},
		{"zero pg", []string{"bench", "-m", "x", "-pg", "0,128"}, "want PP,TG"},
		{"bad batch", []string{"bench", "-m", "x", "-b", "0"}, "-b 0"},
		{"bad ubatch", []string{"bench", "-m", "x", "-ub", "100000"}, "-ub 100000"},
		{"only nothing", []string{"bench", "-m", "x", "-p", "0", "-n", "0"}, "nothing to measure"},
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

// TestBenchFlags checks that the llama-bench flags reach the parameters.
func TestBenchFlags(t *testing.T) {
	tests := []struct {
		args          []string
		depths        []int
		pg            []bench.PG
		nb, nub       int
		threads       []int
		nPrompt, nGen int
	}{
		{[]string{"-m", "x"}, []int{0}, nil, 2048, 512, []int{1, 2}, 512, 128},
		{[]string{"-m", "x", "-d", "0,4096", "-pg", "512,128", "-pg", "64,16", "-b", "1024", "-ub", "256", "-t", "1-4*2"},
			[]int{0, 4096}, []bench.PG{{NPrompt: 512, NGen: 128}, {NPrompt: 64, NGen: 16}}, 1024, 256, []int{1, 2, 4}, 512, 128},
		{[]string{"-m", "x", "--n-depth", "1024", "--batch-size", "64", "--ubatch-size", "32", "-p", "0", "-n", "0", "-pg", "8,8"},
			[]int{1024}, []bench.PG{{NPrompt: 8, NGen: 8}}, 64, 32, []int{1, 2}, 0, 0},
	}
	for _, tc := range tests {
		var so, se bytes.Buffer
		o, code, done := parseBenchFlags(tc.args, &so, &se)
		if done {
			t.Errorf("%v: exit %d: %s", tc.args, code, se.String())
			continue
		}
		p := o.p
		if !slices.Equal(p.Depths, tc.depths) || !slices.Equal(p.PG, tc.pg) || p.NBatch != tc.nb || p.NUBatch != tc.nub ||
			!slices.Equal(p.Threads, tc.threads) || p.NPrompt != tc.nPrompt || p.NGen != tc.nGen {
			t.Errorf("%v: %+v", tc.args, p)
		}
	}
}

// TestParseIntList checks llama-bench's list syntax for -d and -t: plain
// values, ranges by step and by factor, and the errors of bad lists.
func TestParseIntList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"0", []int{0}, ""},
		{"0,1024, 4096", []int{0, 1024, 4096}, ""},
		{"0-4096+1024", []int{0, 1024, 2048, 3072, 4096}, ""},
		{"512-4096*2", []int{512, 1024, 2048, 4096}, ""},
		{"1-3", []int{1, 2, 3}, ""},
		{"0,1-2,8", []int{0, 1, 2, 8}, ""},
		{"", nil, `depth "": want a number`},
		{"0,,4", nil, `depth "": want a number`},
		{"-1", nil, `depth "-1": want a number`},
		{"abc", nil, `depth "abc": want a number`},
		{"1.5", nil, `want a number`},
		{"+5", nil, `want a number`},
		{"2000000", nil, "depth 2000000 is not in [0, 1048576]"},
		{"8-4", nil, "ends before it starts"},
		{"0-8*2", nil, "factor of 2 or more and a first value above 0"},
		{"1-8*1", nil, "factor of 2 or more"},
		{"0-8+0", nil, `the step "0" is not a number`},
		{"0-8+x", nil, `the step "x"`},
		{"0-8+99999999999999999999", nil, "the step"},
		{"0-", nil, `want a number`},
		{"0-1000", nil, "more than 64 values"},
		{"0-64", nil, "more than 64 values"},
	}
	for _, tc := range tests {
		got, err := parseIntList(tc.in, "depth", 0, 1<<20)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if got, err := parseIntList("0-63", "depth", 0, 1<<20); err != nil || len(got) != 64 {
		t.Errorf("64 values: %d, %v", len(got), err)
	}
}

// TestBenchStartupUsage checks bad `lisa bench startup` arguments are
// usage errors.
func TestBenchStartupUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no model", []string{"bench", "startup"}, "exactly one of -m and --synthetic"},
		{"no runs", []string{"bench", "startup", "-m", "x", "-r", "0"}, "-r 0"},
		{"bad format", []string{"bench", "startup", "-m", "x", "-o", "csv"}, `-o "csv"`},
		{"bad timeout", []string{"bench", "startup", "-m", "x", "--timeout", "-1s"}, "--timeout"},
		{"own address", []string{"bench", "startup", "-m", "x", "--", "--port", "80"}, "no --port"},
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
