package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lisa-llm/lisa/bench"
)

// runBenchStartup implements `lisa bench startup`: the time from starting
// `lisa serve` to its first healthy answer, on a warm page cache (a
// warm-up run first), with serve's defaults and the flags after --.
func runBenchStartup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench startup", flag.ContinueOnError)
	var o benchOptions
	fs.StringVar(&o.model, "m", "", "GGUF model `file`")
	fs.StringVar(&o.synthetic, "synthetic", "", "a synthetic model `SHAPE:TYPE` written to a temporary folder")
	fs.StringVar(&o.vocab, "vocab", "", "vocabulary GGUF `file` for --synthetic")
	reps := fs.Int("r", 3, "measured runs after the warm-up")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long one server may take to become healthy")
	fs.StringVar(&o.format, "o", "md", "output format: md|json")
	verbose := fs.Bool("v", false, "copy the servers' logs to standard error")
	pos, status, done := parseCommand("bench startup", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	switch {
	case (o.model == "") == (o.synthetic == ""):
		return badUsage(stderr, "bench startup", "give exactly one of -m and --synthetic")
	case *reps < 1 || *reps > 100:
		return badUsage(stderr, "bench startup", fmt.Sprintf("-r %d: want 1 to 100 runs", *reps))
	case *timeout <= 0:
		return badUsage(stderr, "bench startup", fmt.Sprintf("--timeout %v: want a positive duration", *timeout))
	case o.format != "md" && o.format != "json":
		return badUsage(stderr, "bench startup", fmt.Sprintf("-o %q: want md or json", o.format))
	}
	for _, a := range pos {
		if a == "--listen" || a == "-listen" || a == "--port" || a == "-port" || a == "--host" || a == "-host" {
			return badUsage(stderr, "bench startup", "the server's address is chosen here (a free loopback port): no "+a)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "lisa bench startup:", err)
		return 1
	}
	progress := progressOut(stderr, isTerminal)
	path := o.model
	if o.synthetic != "" {
		p, cleanup, err := writeSynthetic(o.synthetic, o.vocab, false, progress, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "lisa bench startup:", err)
			return 1
		}
		defer cleanup()
		path = p
	}
	p := bench.StartupParams{Exe: exe, Args: append([]string{"serve", "-m", path}, pos...), Reps: *reps, Timeout: *timeout,
		Model: path, Progress: func(msg string) { fmt.Fprintln(progress, msg) }}
	if *verbose {
		p.Stderr = stderr
	}
	r, err := bench.Startup(p)
	if err != nil {
		fmt.Fprintln(stderr, "lisa bench startup:", err)
		return 1
	}
	r.ModelFilename = benchModelFilename(o)
	if err := bench.WriteStartup(stdout, o.format, r); err != nil {
		fmt.Fprintln(stderr, "lisa bench startup:", err)
		return 1
	}
	return 0
}
