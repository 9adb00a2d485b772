//go:build linux

//go:debug updatemaxprocs=0
//go:debug containermaxprocs=0

// Command tracework runs the worker workloads the seccomp allow-lists are
// derived from, and turns an strace log of them into per-stage call lists.
// sandbox/seccomp/trace.sh drives it; see there.
//
//	tracework run -m MODEL [-threads N] [-rounds R]   (run under strace -f)
//	tracework lists -pid PID STRACE.LOG               (compare with the lists)
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/lisa-llm/lisa/sandbox"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.WorkerFlag {
		os.Exit(sandbox.ProbeWorker(os.Args[1:]))
	}
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tracework run|lists ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "lists":
		err = lists(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracework:", err)
		os.Exit(1)
	}
}

// run starts a locked-down probe worker on the model and drives it: model
// pages touched from the given number of goroutines under GC pressure, and
// IPC round trips. It prints the worker's host pid on stderr.
func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	model := fs.String("m", "", "model file")
	threads := fs.Int("threads", 1, "worker goroutines touching the model")
	rounds := fs.Int("rounds", 20, "workload rounds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	m, err := os.Open(*model)
	if err != nil {
		return err
	}
	defer m.Close()
	s, err := sandbox.StartProbeWorker(sandbox.Config{Enabled: true, ModelPath: *model, Model: m,
		Threads: *threads, Stderr: os.Stderr})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "worker pid %d\n", s.Process.Pid)
	for i := 0; i < *rounds; i++ {
		var w map[string]uint64
		if err := s.Command("work "+strconv.Itoa(*threads), &w); err != nil {
			return fmt.Errorf("work round %d: %w (%v)", i, err, s.Process.Wait())
		}
		var e map[string]string
		if err := s.Command("echo round "+strconv.Itoa(i), &e); err != nil {
			return fmt.Errorf("echo round %d: %w", i, err)
		}
	}
	if e := s.Close(); e.Code != 0 {
		return fmt.Errorf("worker: %v", e)
	}
	return nil
}
