// Command lisa is LiSa-Go's one binary: the broker (serve), the sandboxed
// worker it re-executes (--sandbox-worker), and the tools around them.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/worker"
)

// command is one subcommand of lisa.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
	subs    []string // subcommands, each with its own helpFor("NAME SUB")
}

// commands lists lisa's subcommands. Each lives in its own file.
func commands() map[string]command {
	return map[string]command{
		"version":       {"print the version, the kernel path and the host's sandbox features", runVersion, nil},
		"gguf":          {"inspect a GGUF file, extract one tensor or write a synthetic model", runGGUF, []string{"inspect", "tensor", "synth"}},
		"tokenize":      {"print the token ids of a text with a GGUF file's tokenizer", runTokenize, nil},
		"hash-key":      {"read an API key on stdin and print its sha256 digest for the config", runHashKey, nil},
		"serve":         {"serve the OpenAI-compatible API, the model running in the sandboxed worker", runServe, nil},
		"health":        {"ask a running server's /health whether it is ready (for container health checks)", runHealth, nil},
		"sandbox-check": {"start sandboxed workers on a model, run escape probes, print the layers applied", runSandboxCheck, nil},
		"loadgen":       {"drive a running server with concurrent streaming clients; print throughput and TTFT", runLoadgen, nil},
		"bench":         {"measure prompt processing and generation speed like llama-bench (sandboxed by default)", runBench, []string{"chart"}},
		"run":           {"run one prompt through a model and print the text (or JSON with top logits)", runRun, nil},
		"doctor":        {"check the host for what the sandbox needs; each failing line says the fix", runDoctor, nil},
		"pull":          {"download a GGUF model from Hugging Face (OWNER/NAME[:QUANT]), resumable, SHA-256 checked", runPull, nil},
		"models":        {"list the downloaded models (name, size, quant, digest); models rm NAME removes one", runModels, []string{"rm"}},
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
	if len(args) == 0 {
		usage(cmds, stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(cmds, stdout)
		return 0
	case "help":
		// lisa help COMMAND [SUBCOMMAND] is COMMAND [SUBCOMMAND] --help.
		if len(args) == 1 {
			usage(cmds, stdout)
			return 0
		}
		if _, ok := cmds[args[1]]; !ok {
			fmt.Fprintf(stderr, "lisa help: unknown command %q\n", args[1])
			usage(cmds, stderr)
			return 2
		}
		return run(append(args[1:], "--help"), stdout, stderr)
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "lisa: unknown command %q\n", args[0])
		usage(cmds, stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

// usage lists every command and subcommand with what it does.
func usage(cmds map[string]command, w io.Writer) {
	fmt.Fprintln(w, "usage: lisa COMMAND [ARGS]      (lisa COMMAND --help, or lisa help COMMAND, shows its flags and examples)")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-16s %s\n", n, cmds[n].summary)
		for _, sub := range cmds[n].subs {
			about, _, _ := strings.Cut(helpFor(n+" "+sub).about, "\n")
			about = strings.TrimSuffix(about, ".")
			if about != "" {
				about = strings.ToLower(about[:1]) + about[1:]
			}
			fmt.Fprintf(w, "  %-16s %s\n", n+" "+sub, about)
		}
	}
	fmt.Fprintln(w, "\nexample:\n  lisa gguf synth --shape qwen3-tiny -o tiny.gguf && lisa serve tiny.gguf")
}
