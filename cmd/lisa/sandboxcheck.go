// The worker's allow-lists assume these runtime settings: without them
// the Go runtime re-reads the host's cgroup CPU limits every second, which
// seccomp stage 2 kills (sandbox.LockDown refuses a binary without them).
//go:debug updatemaxprocs=0
//go:debug containermaxprocs=0

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/sandbox"
)

// probeWorkerFlag makes `lisa sandbox-check` the probe worker it starts.
const probeWorkerFlag = "--probe-worker"

// sandboxCheckReport is what `lisa sandbox-check --json` prints.
type sandboxCheckReport struct {
	Layers []sandbox.Layer       `json:"layers"`
	Probes []sandbox.ProbeResult `json:"probes"`
}

// runSandboxCheck starts real, locked-down workers on a model, one per
// escape probe, and prints the layers applied and how each probe was
// stopped. It exits 1 if any probe was not blocked.
func runSandboxCheck(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == probeWorkerFlag {
		// Inside the sandbox: the probes run only after the full lock-down.
		return sandbox.ProbeWorker(args[1:])
	}
	fs := flag.NewFlagSet("sandbox-check", flag.ContinueOnError)
	model := fs.String("m", "", "the GGUF model the workers load")
	asJSON := fs.Bool("json", false, "print JSON instead of tables")
	cgroup := config.CgroupAuto
	fs.Var(&cgroup, "cgroup", "place the workers in cgroups as sandbox_cgroup: auto (when one can be made), true (required) or false")
	memory := fs.Int64("memory", 1<<30, "memory_limit_bytes for the workers")
	seccompLog := fs.Bool("seccomp-log", false, "log instead of kill (sandbox_seccomp_log; probes then fail)")
	threads := fs.Int("threads", 2, "worker threads")
	pos, status, done := parseCommand("sandbox-check", fs, args, false, stdout, stderr)
	if done {
		return status
	}
	switch {
	case len(pos) != 0:
		return badUsage(stderr, "sandbox-check", fmt.Sprintf("unexpected argument %q", pos[0]))
	case *model == "":
		return badUsage(stderr, "sandbox-check", "-m MODEL is required")
	}
	path, err := filepath.Abs(*model)
	if err != nil {
		fmt.Fprintln(stderr, "lisa sandbox-check:", err)
		return 1
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(stderr, "lisa sandbox-check:", err)
		return 1
	}
	defer f.Close()
	shardPaths, shards, err := broker.OpenShards(path, sandbox.MaxShards)
	if err != nil {
		fmt.Fprintln(stderr, "lisa sandbox-check:", err)
		return 1
	}
	defer broker.CloseShards(shards)
	cfg := sandbox.Config{Enabled: true, ModelPath: path, Model: f, ShardPaths: shardPaths, Shards: shards, MemoryLimit: *memory, Cgroup: cgroup.Required(), CgroupAuto: cgroup.Auto(),
		SeccompLog: *seccompLog, Threads: *threads, ExecArgs: []string{"sandbox-check", probeWorkerFlag}}
	probes, rep, err := sandbox.RunProbes(cfg, sandbox.ProbeNames())
	if err != nil {
		fmt.Fprintln(stderr, "lisa sandbox-check:", err)
		return 1
	}
	out := sandboxCheckReport{Layers: rep.Layers, Probes: probes}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return 1
		}
	} else {
		printSandboxCheck(stdout, out)
	}
	for _, p := range probes {
		if !p.Blocked {
			fmt.Fprintf(stderr, "lisa sandbox-check: probe %q was NOT blocked: %s\n", p.Name, p.How)
			return 1
		}
	}
	return 0
}

func printSandboxCheck(w io.Writer, r sandboxCheckReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tREQUESTED\tAPPLIED\tDETAIL")
	for _, l := range r.Layers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, yesNo(l.Requested), yesNo(l.Applied), l.Detail)
	}
	fmt.Fprintln(tw, "\t\t\t")
	fmt.Fprintln(tw, "PROBE\tPHASE\tBLOCKED\tHOW (EVIDENCE)")
	for _, p := range r.Probes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s (%s)\n", p.Name, p.Phase, yesNo(p.Blocked), p.How, p.Evidence)
	}
	tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
