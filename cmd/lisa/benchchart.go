package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lisa-llm/lisa/bench"
)

// runBenchChart implements `lisa bench chart`.
func runBenchChart(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench chart", flag.ContinueOnError)
	title := fs.String("title", "tokens per second (mean ± stddev), higher is better", "chart title")
	out := fs.String("o", "-", "output `file` (- for standard output)")
	kind := fs.String("kind", "auto", "bars (one group per test), depth (tokens per second against the context depth, one line per\n"+
		"file, test and thread count) or auto (depth when the results hold more than one depth)")
	pos, status, done := parseCommand("bench chart", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) == 0 {
		return badUsage(stderr, "bench chart", "give at least one LABEL=RESULTS.json")
	}
	if *kind != "auto" && *kind != "bars" && *kind != "depth" {
		return badUsage(stderr, "bench chart", fmt.Sprintf("--kind %q: want auto, bars or depth", *kind))
	}
	var ss []bench.Series
	for _, a := range pos {
		label, path, ok := strings.Cut(a, "=")
		if !ok || label == "" || path == "" {
			fmt.Fprintf(stderr, "lisa bench chart: %q: want LABEL=RESULTS.json\n", a)
			return 2
		}
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(stderr, "lisa bench chart:", err)
			return 1
		}
		rs, err := bench.ReadResults(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(stderr, "lisa bench chart: %s: %v\n", path, err)
			return 1
		}
		ss = append(ss, bench.Series{Label: label, Results: rs})
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(stderr, "lisa bench chart:", err)
			return 1
		}
		defer f.Close()
		w = f
	}
	draw := bench.WriteComparisonSVG
	if *kind == "depth" || *kind == "auto" && bench.HasDepths(ss) {
		draw = bench.WriteDepthSVG
	}
	if err := draw(w, *title, ss); err != nil {
		fmt.Fprintln(stderr, "lisa bench chart:", err)
		return 1
	}
	return 0
}
