package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// helpSpec is the help of one command or subcommand, as `lisa NAME
// --help` prints it on stdout: the synopsis, the flags with their
// defaults (from the command's flag set) and examples to copy.
type helpSpec struct {
	synopsis string   // the arguments after "lisa NAME"; further lines are alternatives
	about    string   // what the command does, a few lines
	examples []string // command lines, each printed as is
}

// helpFor returns the help of the command (or "command subcommand")
// name. Every name that commands() dispatches to has one; the help test
// checks that.
func helpFor(name string) helpSpec {
	switch name {
	case "version":
		return helpSpec{synopsis: "",
			about:    "Prints the version and commit, the kernel path chosen on this CPU and the sandbox features of this host.",
			examples: []string{"lisa version"}}
	case "gguf":
		return helpSpec{synopsis: "inspect|tensor|synth [ARGS]",
			about: "Inspects a GGUF file, extracts one tensor, or writes a random-weight model of a real shape.\n" +
				"Each parses the file (synth: the --vocab file) in a sandboxed worker; --no-sandbox parses it\n" +
				"in this process, with a warning. lisa gguf SUBCOMMAND --help shows each one's flags.",
			examples: []string{"lisa gguf inspect model.gguf", "lisa gguf synth --shape qwen3-0.6b -o tiny.gguf"}}
	case "gguf inspect":
		return helpSpec{synopsis: "FILE [--json] [--full] [--no-sandbox]",
			about:    "Summarises a GGUF file: its metadata and its tensors.",
			examples: []string{"lisa gguf inspect model.gguf", "lisa gguf inspect --json model.gguf | jq .metadata"}}
	case "gguf tensor":
		return helpSpec{synopsis: "FILE NAME [--f32] [--no-sandbox] -o OUT",
			about:    "Writes one tensor's raw bytes (--f32: dequantized little-endian float32) to OUT (\"-\": stdout).",
			examples: []string{"lisa gguf tensor model.gguf token_embd.weight --f32 -o embd.f32"}}
	case "gguf synth":
		return helpSpec{synopsis: "--shape SHAPE [--type TYPE (f32, f16, q8_0, q4_k_m, q5_k_m, q4_0, iq4_xs, q3_k_m, …: see --type below)] [--seed S] [--vocab FILE] -o OUT",
			about:    "Writes a model with random weights of a real model's shape (--shape list prints them all).",
			examples: []string{"lisa gguf synth --shape list", "lisa gguf synth --shape qwen3-0.6b --type q8_0 -o tiny.gguf"}}
	case "tokenize":
		return helpSpec{synopsis: "-m MODEL [--no-bos] [--special] [--json] [--no-sandbox] (-f FILE | TEXT)",
			about:    "Prints the token ids of a text with a GGUF file's tokenizer (parsed in a sandboxed worker).",
			examples: []string{"lisa tokenize -m model.gguf 'Hello, world'", "lisa tokenize -m model.gguf --json -f prompt.txt"}}
	case "hash-key":
		return helpSpec{synopsis: "< KEYFILE",
			about:    "Reads one API key (the first line of stdin) and prints its \"sha256:<hex>\" digest for api_keys.",
			examples: []string{"openssl rand -hex 32 > key.txt && lisa hash-key < key.txt"}}
	case "serve":
		return helpSpec{synopsis: "[MODEL.gguf | -m MODEL | --hf OWNER/NAME[:QUANT]] [--listen HOST:PORT] [--config FILE] [flags]",
			about: "Serves the OpenAI-compatible API; the model runs in the sandboxed worker.\n" +
				"Every flag but --config, -m, --check-config, --webui and the llama-server forms is also a key\n" +
				"of the configuration file (dashes become underscores).",
			examples: []string{"lisa serve model.gguf", "lisa serve --port 8081 -c 4096 -np 2 --webui model.gguf",
				"lisa serve --config lisa.yaml --check-config",
				"lisa serve --models-dir ./models --models-memory-bytes 8589934592 --preload llama-3.2-1b"}}
	case "health":
		return helpSpec{synopsis: "[--url URL] [--timeout D]",
			about:    "Asks a running server's /health whether it is ready: exit 0 when it is (for container health checks).",
			examples: []string{"lisa health", "lisa health --url http://127.0.0.1:8081/health"}}
	case "sandbox-check":
		return helpSpec{synopsis: "[--json] [--cgroup[=auto|true|false]] [--memory N] [--threads N] -m MODEL",
			about:    "Starts sandboxed workers on a model, runs escape probes in them and prints the layers applied.",
			examples: []string{"lisa sandbox-check -m model.gguf"}}
	case "loadgen":
		return helpSpec{synopsis: "[--url URL] [--api-key KEY] [--clients 1,4] [-n N] [flags]",
			about:    "Drives a running server with concurrent streaming clients and prints throughput and time to first token.",
			examples: []string{"lisa loadgen --url http://127.0.0.1:8080 --clients 1,2,4"}}
	case "bench":
		return helpSpec{synopsis: "(-m MODEL | --synthetic SHAPE:TYPE [--vocab FILE]) [-p 512] [-n 128] [-pg PP,TG] [-d 0,4096] [-b 2048] [-ub 512]\n" +
			"           [-r 3] [-t 1,2] [-o md|csv|json|svg] [flags]\n" +
			"lisa bench chart [--title TEXT] [--kind auto|bars|depth] [-o FILE] LABEL=RESULTS.json ...\n" +
			"lisa bench startup (-m MODEL | --synthetic SHAPE:TYPE [--vocab FILE]) [-r 3] [-o md|json] [-- SERVE FLAGS]",
			about: "Measures prompt processing (pp) and generation (tg) speed like llama-bench, in sandboxed workers by default.",
			examples: []string{"lisa bench -m model.gguf -p 512 -n 128 -t 2", "lisa bench -m model.gguf -d 0,4096 -pg 512,128 -o json > depth.json",
				"lisa bench --synthetic qwen3-0.6b:q4_k_m -o json > results.json"}}
	case "bench startup":
		return helpSpec{synopsis: "(-m MODEL | --synthetic SHAPE:TYPE [--vocab FILE]) [-r 3] [--timeout 2m] [-o md|json] [-v] [-- SERVE FLAGS]",
			about: "Measures the time from starting lisa serve to its first healthy /health answer, on a warm page cache\n" +
				"(one warm-up run first), with serve's defaults and the flags after --.",
			examples: []string{"lisa bench startup -m model.gguf", "lisa bench startup -m model.gguf -r 5 -- --threads 2 -c 4096"}}
	case "bench chart":
		return helpSpec{synopsis: "[--title TEXT] [--kind auto|bars|depth] [-o FILE] LABEL=RESULTS.json [LABEL=RESULTS.json ...]",
			about: "Draws an SVG bar chart of lisa bench -o json results (and llama-bench's -o json), one group per result\n" +
				"of the first file, one bar per file with the same weight type, test and thread count; results at more than\n" +
				"one context depth are drawn as depth series instead (x = depth, one line per file, test and thread count).",
			examples: []string{"lisa bench chart -o speed.svg lisa=lisa.json llama.cpp=llama.json"}}
	case "run":
		return helpSpec{synopsis: "-m MODEL -p PROMPT [-n N] [--temp T] [--seed S] [--threads K] [--stop TEXT] [--json] [flags]",
			about: "Generates through the same engine as lisa serve, in the sandboxed worker; --json and --teacher-force\n" +
				"evaluate there too and print ids and raw top logits per position.",
			examples: []string{"lisa run -m model.gguf -p 'The capital of France is' -n 16 --temp 0"}}
	case "doctor":
		return helpSpec{synopsis: "[--json]",
			about:    "Checks the host for what the sandbox needs; each line that is not ok says the fix. Exit 1 when a check fails.",
			examples: []string{"lisa doctor", "lisa doctor --json"}}
	case "pull":
		return helpSpec{synopsis: "[--models-dir DIR] OWNER/NAME[:QUANT] | OWNER/NAME/FILE.gguf",
			about: "Downloads a GGUF model from Hugging Face (HF_ENDPOINT for a mirror, HF_TOKEN for gated repositories,\n" +
				"proxies from HTTPS_PROXY), resuming an interrupted download and checking its SHA-256.",
			examples: []string{"lisa pull Qwen/Qwen3-0.6B-GGUF:Q8_0"}}
	case "models":
		return helpSpec{synopsis: "[--models-dir DIR]\nlisa models rm [--models-dir DIR] NAME",
			about:    "Lists the downloaded models (name, size, quant, digest); models rm removes one.",
			examples: []string{"lisa models", "lisa models rm Qwen/Qwen3-0.6B-GGUF:Q8_0"}}
	case "models rm":
		return helpSpec{synopsis: "[--models-dir DIR] NAME",
			about:    "Removes one downloaded model (NAME as lisa models lists it, or OWNER/NAME[:QUANT]).",
			examples: []string{"lisa models rm Qwen/Qwen3-0.6B-GGUF:Q8_0"}}
	}
	return helpSpec{}
}

// writeHelp prints the whole help of name on w: the synopsis, what it
// does, the flags of fs (nil: none) with their defaults, and examples.
func writeHelp(w io.Writer, name string, fs *flag.FlagSet) {
	h := helpFor(name)
	writeSynopsis(w, name, h)
	if h.about != "" {
		fmt.Fprintf(w, "\n%s\n", h.about)
	}
	if fs != nil {
		var n int
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(w, "\nflags:")
			out := fs.Output()
			fs.SetOutput(w)
			fs.PrintDefaults()
			fs.SetOutput(out)
		}
	}
	if len(h.examples) > 0 {
		fmt.Fprintln(w, "\nexamples:")
		for _, e := range h.examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
}

// writeSynopsis prints the usage lines of name.
func writeSynopsis(w io.Writer, name string, h helpSpec) {
	for i, line := range strings.Split(h.synopsis, "\n") {
		switch {
		case i == 0:
			fmt.Fprintf(w, "usage: %s\n", strings.TrimSpace("lisa "+name+" "+line))
		default:
			fmt.Fprintf(w, "       %s\n", line)
		}
	}
}

// badUsage reports a usage error of name on stderr: the reason (if any),
// the synopsis and where the full help is. It returns exit status 2.
func badUsage(stderr io.Writer, name, reason string) int {
	if reason != "" {
		fmt.Fprintf(stderr, "lisa %s: %s\n", name, reason)
	}
	writeSynopsis(stderr, name, helpFor(name))
	fmt.Fprintf(stderr, "run 'lisa %s --help' for the flags and examples\n", name)
	return 2
}

// parseCommand parses the flags of the command name. With -h or --help
// it prints the help on stdout and returns done with status 0; a bad
// flag gets flag's own message and the synopsis on stderr, status 2.
// With interspersed, flags may follow the positional arguments. It
// returns the positional arguments.
func parseCommand(name string, fs *flag.FlagSet, args []string, interspersed bool, stdout, stderr io.Writer) (pos []string, status int, done bool) {
	fs.SetOutput(stderr)
	// flag calls Usage before returning ErrHelp too: the help is printed
	// here instead, on stdout, once.
	fs.Usage = func() {}
	var err error
	if interspersed {
		pos, err = parseInterspersed(fs, args)
	} else if err = fs.Parse(args); err == nil {
		pos = fs.Args()
	}
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeHelp(stdout, name, fs)
		return nil, 0, true
	case err != nil:
		return nil, badUsage(stderr, name, ""), true
	}
	return pos, 0, false
}
