package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lisa-llm/lisa/loadgen"
)

// runLoadgen is lisa loadgen: concurrent streaming clients against a
// running server, printing throughput and time-to-first-token tables.
func runLoadgen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:8080", "base URL of the server")
	key := fs.String("api-key", "", "API key")
	clientsFlag := fs.String("clients", "1,4", "comma-separated numbers of concurrent clients")
	n := fs.Int("n", 128, "tokens each generation asks for")
	promptLen := fs.Int("prompt", 16, "prompt tokens of the throughput runs")
	ttftPrompt := fs.Int("ttft-prompt", 128, "prompt tokens of the time-to-first-token probe")
	busy := fs.Int("busy", 3, "generations decoding in the background while the probe runs (0: skip the probe)")
	repeat := fs.Int("r", 3, "repetitions")
	vocab := fs.Int("vocab", 32000, "prompt ids are drawn below this")
	pos, status, done := parseCommand("loadgen", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 0 {
		return badUsage(stderr, "loadgen", fmt.Sprintf("unexpected argument %q", pos[0]))
	}
	var clients []int
	for _, f := range strings.Split(*clientsFlag, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 || c > 256 {
			fmt.Fprintf(stderr, "lisa loadgen: --clients: %q is not a number of clients in [1, 256]\n", f)
			return 2
		}
		clients = append(clients, c)
	}
	if *n < 1 || *promptLen < 1 || *ttftPrompt < 1 || *repeat < 1 || *busy < 0 || *vocab < 101 {
		fmt.Fprintln(stderr, "lisa loadgen: -n, --prompt, --ttft-prompt and -r must be positive, --vocab above 100")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg := loadgen.Config{URL: *url, APIKey: *key, Vocab: *vocab, Seed: 1, MaxTokens: *n}
	fmt.Fprintf(stdout, "| clients | generated tokens | wall s | aggregate t/s | × one client | mean TTFT ms |\n|---|---|---|---|---|---|\n")
	var one float64
	for _, c := range clients {
		var tps []float64
		var sum loadgen.Throughput
		for r := range *repeat {
			t, err := cfg.RunThroughput(ctx, c, *promptLen, uint64(r))
			if err != nil {
				fmt.Fprintf(stderr, "lisa loadgen: %d clients: %v\n", c, err)
				return 1
			}
			tps = append(tps, t.TokPerSec)
			sum.Tokens += t.Tokens
			sum.Wall += t.Wall
			sum.TTFT += t.TTFT
		}
		agg := float64(sum.Tokens) / sum.Wall.Seconds()
		if c == 1 {
			one = agg
		}
		ratio := "-" // without a one-client run first
		if one > 0 {
			ratio = strconv.FormatFloat(agg/one, 'f', 2, 64)
		}
		fmt.Fprintf(stdout, "| %d | %d | %.2f | %.2f (runs %s) | %s | %.0f |\n", c, sum.Tokens, sum.Wall.Seconds(), agg,
			joinFloats(tps), ratio, ms(sum.TTFT/time.Duration(*repeat)))
	}
	if *busy == 0 {
		return 0
	}
	idle, loaded, err := cfg.TTFTUnderLoad(ctx, *busy, *ttftPrompt, *repeat)
	if err != nil {
		fmt.Fprintf(stderr, "lisa loadgen: TTFT probe: %v\n", err)
		return 1
	}
	si, sl := loadgen.Summarise(idle), loadgen.Summarise(loaded)
	fmt.Fprintf(stdout, "\n| %d-token prompt | mean TTFT ms | min | max |\n|---|---|---|---|\n", *ttftPrompt)
	fmt.Fprintf(stdout, "| idle server | %.0f | %.0f | %.0f |\n", ms(si.Mean), ms(si.Min), ms(si.Max))
	fmt.Fprintf(stdout, "| while %d others decode | %.0f | %.0f | %.0f |\n", *busy, ms(sl.Mean), ms(sl.Min), ms(sl.Max))
	fmt.Fprintf(stdout, "\nTTFT under load / idle: %.2f×\n", loadgen.Ratio(float64(sl.Mean), float64(si.Mean)))
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, f := range v {
		s[i] = strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strings.Join(s, ", ")
}
