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
	"github.com/lisa-llm/lisa/model/synth"
)

// benchOptions are the flags of `lisa bench`.
type benchOptions struct {
	model, synthetic, vocab, kernels, format string
	p                                        bench.Params
	noSandbox                                bool
}

// parseThreads parses a comma-separated list of thread counts.
func parseThreads(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > 1024 {
			return nil, fmt.Errorf("thread count %q is not in [1, 1024]", part)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseBenchFlags(args []string, stdout, stderr io.Writer) (benchOptions, int, bool) {
	var o benchOptions
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.model, "m", "", "GGUF model `file`")
	fs.IntVar(&o.p.NPrompt, "p", 512, "prompt tokens of the pp test (0: none)")
	fs.IntVar(&o.p.NGen, "n", 128, "generated tokens of the tg test (0: none)")
	fs.IntVar(&o.p.Reps, "r", 3, "repetitions after the warm-up")
	threads := fs.String("t", "1,2", "comma-separated thread counts")
	fs.StringVar(&o.kernels, "kernels", "auto", "kernel path: auto|generic|avx2|avx512|neon|dotprod")
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
	case "auto", "generic", "avx2", "avx512", "neon", "dotprod":
	default:
		return bad("--kernels %q: want auto, generic, avx2, avx512, neon or dotprod", o.kernels)
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
