// Command lisa is LiSa-Go's one binary: the broker (serve), the sandboxed
// worker it re-executes (--sandbox-worker), and the tools around them.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/worker"
)

// command is one subcommand of lisa.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists lisa's subcommands. Each lives in its own file.
func commands() map[string]command {
	return map[string]command{
		"version":       {"print the version, the kernel path and the host's sandbox features", runVersion},
		"gguf":          {"inspect a GGUF file or extract one tensor", runGGUF},
		"tokenize":      {"print the token ids of a text with a GGUF file's tokenizer", runTokenize},
		"hash-key":      {"read an API key on stdin and print its sha256 digest for the config", runHashKey},
		"serve":         {"serve the OpenAI-compatible API, the model running in the sandboxed worker", runServe},
		"health":        {"ask a running server's /health whether it is ready (for container health checks)", runHealth},
		"sandbox-check": {"start sandboxed workers on a model, run escape probes, print the layers applied", runSandboxCheck},
		"loadgen":       {"drive a running server with concurrent streaming clients; print throughput and TTFT", runLoadgen},
		"bench":         {"measure prompt processing and generation speed like llama-bench (sandboxed by default)", runBench},
		"run":           {"run one prompt through a model and print the text (or JSON with top logits)", runRun},
		"doctor":        {"check the host for what the sandbox needs; each failing line says the fix", runDoctor},
		"pull":          {"download a GGUF model from Hugging Face (OWNER/NAME[:QUANT]), resumable, SHA-256 checked", runPull},
		"models":        {"list the downloaded models (name, size, quant, digest); models rm NAME removes one", runModels},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	// The broker re-executes this binary as its sandboxed worker.
	if len(args) > 0 && args[0] == sandbox.WorkerFlag {
		return worker.Main(args, engine.Load)
	}
	// A command that reads a model re-executes it as a one-job worker.
	if len(args) > 0 && args[0] == jobWorkerArg {
		return jobWorkerMain(args[1:])
	}
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(cmds, stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lisa: unknown command %q\n", args[0])
		usage(cmds, stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(cmds map[string]command, w io.Writer) {
	fmt.Fprintln(w, "usage: lisa COMMAND [ARGS]")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, cmds[n].summary)
	}
}
