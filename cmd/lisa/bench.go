package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/lisa-llm/lisa/bench"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/synth"
)

// benchOptions are the flags of `lisa bench`.
type benchOptions struct {
	model, synthetic, vocab, kernels, format string
	p                                        bench.Params
	noSandbox                                bool
}

// maxBenchList bounds the values one list flag expands to: each is a
// test at every other list's every value.
const maxBenchList = 64

// parseIntList parses a list flag as llama-bench does: comma-separated
// items, each a number or a range FIRST-LAST, FIRST-LAST+STEP or
// FIRST-LAST*FACTOR (0-4096+1024 is 0,1024,2048,3072,4096). Every value
// must lie in [lo, hi] and the list expands to at most maxBenchList
// values; what names the values in errors.
func parseIntList(s, what string, lo, hi int) ([]int, error) {
	var out []int
	add := func(v int) error {
		if len(out) == maxBenchList {
			return fmt.Errorf("%s list %q: more than %d values", what, s, maxBenchList)
		}
		out = append(out, v)
		return nil
	}
	num := func(item, t string) (int, error) {
		n, err := strconv.Atoi(t)
		if err != nil || strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") {
			return 0, fmt.Errorf("%s %q: want a number or a range FIRST-LAST[+STEP|*FACTOR]", what, item)
		}
		if n < lo || n > hi {
			return 0, fmt.Errorf("%s %d is not in [%d, %d]", what, n, lo, hi)
		}
		return n, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		first, rest, isRange := strings.Cut(item, "-")
		a, err := num(item, first)
		if err != nil {
			return nil, err
		}
		if !isRange {
			if err := add(a); err != nil {
				return nil, err
			}
			continue
		}
		op := "+"
		last, stepText, stepped := strings.Cut(rest, "+")
		if !stepped {
			if last, stepText, stepped = strings.Cut(rest, "*"); stepped {
				op = "*"
			}
		}
		b, err := num(item, last)
		if err != nil {
			return nil, err
		}
		step := 1
		if stepped {
			if step, err = strconv.Atoi(stepText); err != nil || step < 1 || step > hi || strings.HasPrefix(stepText, "+") {
				return nil, fmt.Errorf("%s %q: the step %q is not a number in [1, %d]", what, item, stepText, hi)
			}
		}
		if b < a {
			return nil, fmt.Errorf("%s %q: the range ends before it starts", what, item)
		}
		if op == "*" && (step < 2 || a == 0) {
			return nil, fmt.Errorf("%s %q: a range by factor needs a factor of 2 or more and a first value above 0", what, item)
		}
		// v starts in [lo, hi] and grows by at least one a round, by at
		// most a factor or step of hi (no overflow); add stops the list
		// at its bound.
		for v := a; v <= b; {
			if err := add(v); err != nil {
				return nil, err
			}
			if op == "+" {
				v += step
			} else {
				v *= step
			}
		}
	}
	return out, nil
}

// parseThreads parses a list of thread counts.
func parseThreads(s string) ([]int, error) { return parseIntList(s, "thread count", 1, 1024) }

// pgFlag collects -pg PP,TG tests, one per use of the flag, as
// llama-bench takes them.
type pgFlag struct{ pg *[]bench.PG }

func (f pgFlag) String() string {
	if f.pg == nil {
		return ""
	}
	var parts []string
	for _, p := range *f.pg {
		parts = append(parts, fmt.Sprintf("%d,%d", p.NPrompt, p.NGen))
	}
	return strings.Join(parts, " ")
}

func (f pgFlag) Set(s string) error {
	pp, tg, ok := strings.Cut(s, ",")
	a, err1 := strconv.Atoi(strings.TrimSpace(pp))
	b, err2 := strconv.Atoi(strings.TrimSpace(tg))
	if !ok || err1 != nil || err2 != nil || a < 1 || b < 1 || a > bench.MaxContext || b > bench.MaxContext {
		return fmt.Errorf("%q: want PP,TG, two numbers in [1, %d] (e.g. 512,128)", s, bench.MaxContext)
	}
	if len(*f.pg) == maxBenchList {
		return fmt.Errorf("more than %d pg tests", maxBenchList)
	}
	*f.pg = append(*f.pg, bench.PG{NPrompt: a, NGen: b})
	return nil
}

func parseBenchFlags(args []string, stdout, stderr io.Writer) (benchOptions, int, bool) {
	var o benchOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.model, "m", "", "GGUF model `file`")
	fs.IntVar(&o.p.NPrompt, "p", 512, "prompt tokens of the pp test (0: none)")
	fs.IntVar(&o.p.NGen, "n", 128, "generated tokens of the tg test (0: none)")
	fs.IntVar(&o.p.Reps, "r", 3, "repetitions after the warm-up")
	threads := fs.String("t", "1,2", "thread counts: comma-separated, or ranges FIRST-LAST[+STEP|*FACTOR]")
	depths := fs.String("d", "0", "context depths: the KV cache holds this many tokens (decoded untimed) before each test; a list as -t's")
	fs.StringVar(depths, "n-depth", "0", "the same as -d")
	fs.Var(pgFlag{&o.p.PG}, "pg", "a prompt-then-generation test `PP,TG` timed as one (pp512+tg128: t/s over all tokens); repeatable")
	fs.IntVar(&o.p.NBatch, "b", bench.DefaultNBatch, "logical batch: prompt tokens per decode call")
	fs.IntVar(&o.p.NBatch, "batch-size", bench.DefaultNBatch, "the same as -b")
	fs.IntVar(&o.p.NUBatch, "ub", bench.DefaultNUBatch, "physical batch: tokens per forward pass at most (at most -b)")
	fs.IntVar(&o.p.NUBatch, "ubatch-size", bench.DefaultNUBatch, "the same as -ub")
	fs.StringVar(&o.kernels, "kernels", "auto", "kernel path: auto|generic|avx2|avx512|neon|dotprod|i8mm")
	fs.StringVar(&o.format, "o", "md", "output format: md|csv|json|svg")
	fs.StringVar(&o.synthetic, "synthetic", "", "benchmark a synthetic model `SHAPE:TYPE` (e.g. tinyllama-1.1b:q4_k_m) written to a temporary folder")
	fs.StringVar(&o.vocab, "vocab", "", "vocabulary GGUF `file` for --synthetic (needed by the Llama-2-style shapes; the others carry a synthetic one)")
	fs.BoolVar(&o.noSandbox, "no-sandbox", false, "measure (and parse --vocab) in this process instead of sandboxed workers")
	fs.StringVar(&o.p.TypeK, "ctk", "f16", "KV cache `type` of the keys: f16|q8_0|f32 (llama-bench's -ctk)")
	fs.StringVar(&o.p.TypeV, "ctv", "f16", "KV cache `type` of the values: f16|q8_0|f32 (llama-bench's -ctv)")
	fs.Int64Var(&o.p.MemoryLimit, "memory-limit-bytes", 0, "the sandboxed worker's memory cap in `bytes`, as lisa serve's memory_limit_bytes (0: serve's default)")
	pos, status, done := parseCommand("bench", fs, args, false, stdout, stderr)
	if done {
		return o, status, true
	}
	bad := func(format string, a ...any) (benchOptions, int, bool) {
		return o, badUsage(stderr, "bench", fmt.Sprintf(format, a...)), true
	}
	var err error
	if o.p.Threads, err = parseThreads(*threads); err != nil {
		return bad("-t: %v", err)
	}
	if o.p.Depths, err = parseIntList(*depths, "depth", 0, bench.MaxContext); err != nil {
		return bad("-d: %v", err)
	}
	switch {
	case o.p.NBatch < 1 || o.p.NBatch > bench.MaxContext:
		return bad("-b %d: want a batch size in [1, %d]", o.p.NBatch, bench.MaxContext)
	case o.p.NUBatch < 1 || o.p.NUBatch > model.MaxBatch:
		return bad("-ub %d: want a batch size in [1, %d]", o.p.NUBatch, model.MaxBatch)
	}
	switch {
	case len(pos) != 0:
		return bad("unexpected argument %q", pos[0])
	case (o.model == "") == (o.synthetic == ""):
		return bad("give exactly one of -m and --synthetic")
	case !bench.ValidFormat(o.format):
		return bad("-o %q: want one of %s", o.format, strings.Join(bench.Formats(), ", "))
	}
	if err := o.p.Validate(); err != nil {
		return bad("%v", err)
	}
	switch o.kernels {
	case "auto", "generic", "avx2", "avx512", "neon", "dotprod", "i8mm":
	default:
		return bad("--kernels %q: want auto, generic, avx2, avx512, neon, dotprod or i8mm", o.kernels)
	}
	return o, 0, false
}

// runBench implements `lisa bench`, and its worker side.
func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == bench.WorkerArg {
		return bench.WorkerMain(args[1:])
	}
	if len(args) > 0 && args[0] == "chart" {
		return runBenchChart(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "startup" {
		return runBenchStartup(args[1:], stdout, stderr)
	}
	o, code, done := parseBenchFlags(args, stdout, stderr)
	if done {
		return code
	}
	if o.kernels != "auto" && !o.noSandbox {
		// The worker is started with the path; its results say what it used.
		o.p.Kernels = o.kernels
	} else if o.kernels != "auto" && o.kernels != string(kernels.Selected()) {
		if os.Getenv(kernels.EnvKernels) == o.kernels {
			fmt.Fprintf(stderr, "lisa bench: kernel path %s is not available here (selected: %s)\n", o.kernels, kernels.Selected())
			return 1
		}
		// The kernel path is chosen at start-up: start again with it.
		os.Setenv(kernels.EnvKernels, o.kernels)
		err := syscall.Exec("/proc/self/exe", os.Args, os.Environ())
		fmt.Fprintln(stderr, "lisa bench: re-execute with", kernels.EnvKernels+"="+o.kernels+":", err)
		return 1
	}
	progress := progressOut(stderr, isTerminal)
	path := o.model
	if o.synthetic != "" {
		p, cleanup, err := writeSynthetic(o.synthetic, o.vocab, o.noSandbox, progress, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "lisa bench:", err)
			return 1
		}
		defer cleanup()
		path = p
	}
	o.p.Progress = func(msg string) { fmt.Fprintln(progress, msg) }
	var rs []bench.Result
	var err error
	if o.noSandbox {
		var f *gguf.File
		if f, err = gguf.Load(path, gguf.DefaultLimits()); err == nil {
			rs, err = bench.Run(f, o.p)
			f.Close()
		}
	} else {
		rs, err = bench.RunWorker(path, o.p, true, []string{"bench", bench.WorkerArg}, progress)
	}
	if err != nil {
		fmt.Fprintln(stderr, "lisa bench:", err)
		return 1
	}
	// model_filename is the file as given (llama-bench's), or the
	// synthetic spec whose temporary file is gone: never the name the
	// model's metadata claims.
	for i := range rs {
		rs[i].ModelFilename = benchModelFilename(o)
	}
	for _, r := range rs {
		if o.kernels != "auto" && r.Kernels != o.kernels {
			fmt.Fprintf(stderr, "lisa bench: kernel path %s is not available here (the worker used %s)\n", o.kernels, r.Kernels)
			return 1
		}
	}
	if err := bench.Write(stdout, o.format, rs); err != nil {
		fmt.Fprintln(stderr, "lisa bench:", err)
		return 1
	}
	return 0
}

// benchModelFilename is the model_filename of o's results: -m's path as
// given, as llama-bench writes it, or "synthetic:SHAPE:TYPE".
func benchModelFilename(o benchOptions) string {
	if o.synthetic != "" {
		return "synthetic:" + o.synthetic
	}
	return o.model
}

// writeSynthetic writes the model SHAPE:TYPE names into a temporary
// folder and returns its path and a function removing it. The vocabulary
// file is parsed in a sandboxed worker unless noSandbox.
func writeSynthetic(spec, vocab string, noSandbox bool, progress, stderr io.Writer) (string, func(), error) {
	shapeName, typeName, ok := strings.Cut(spec, ":")
	if !ok {
		typeName = "q4_k_m"
	}
	s, found := synth.Lookup(shapeName)
	if !found {
		return "", nil, fmt.Errorf("--synthetic: unknown shape %q (want %s)", shapeName, shapeNames())
	}
	ft, err := synth.ParseFileType(typeName)
	if err != nil {
		return "", nil, fmt.Errorf("--synthetic: %w", err)
	}
	// The shapes of the modern families carry a synthetic vocabulary of
	// their own; the Llama-2-style ones need a vocabulary file.
	var kvs []gguf.KV
	switch {
	case vocab != "":
		if kvs, err = loadVocabKVs("lisa bench", vocab, noSandbox, stderr); err != nil {
			return "", nil, fmt.Errorf("--vocab: %w", err)
		}
	case s.Vocab.Family == 0:
		return "", nil, fmt.Errorf("--synthetic %s needs --vocab FILE with %d tokens (e.g. ggml-vocab-llama-spm.gguf)", s.Name, s.NVocab)
	}
	dir, err := os.MkdirTemp("", "lisa-bench-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	path := filepath.Join(dir, s.Name+"-"+ft.String()+".gguf")
	fmt.Fprintf(progress, "writing synthetic %s %s to %s\n", s.Name, ft, path)
	if _, err := synth.WriteFile(path, synth.Options{Shape: s, Type: ft, Seed: 1, VocabKVs: kvs}); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}
