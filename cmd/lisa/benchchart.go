package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lisa-llm/lisa/bench"
)

const benchChartUsage = `usage: lisa bench chart [--title TEXT] [-o FILE] LABEL=RESULTS.json [LABEL=RESULTS.json ...]
  Draws an SVG bar chart comparing result files (lisa bench -o json, or llama-bench -o json):
  one group per result of the first file, one bar per file with the same weight type, test and
  thread count.`

// runBenchChart implements `lisa bench chart`.
func runBenchChart(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench chart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	title := fs.String("title", "tokens per second (mean ± stddev), higher is better", "chart title")
	out := fs.String("o", "-", "output `file` (- for standard output)")
	fs.Usage = func() { fmt.Fprintln(stderr, benchChartUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "lisa bench chart: give at least one LABEL=RESULTS.json\n"+benchChartUsage)
		return 2
	}
	var ss []bench.Series
	for _, a := range fs.Args() {
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
	if err := bench.WriteComparisonSVG(w, *title, ss); err != nil {
		fmt.Fprintln(stderr, "lisa bench chart:", err)
		return 1
	}
	return 0
}
