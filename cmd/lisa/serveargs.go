package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/lisa-llm/lisa/config"
)

// serveArgs is lisa serve's command line once the forms config.Parse does
// not know (the positional model, llama-server's flags and the flags of
// this command alone) are taken out.
type serveArgs struct {
	args        []string // for config.Parse
	help        bool
	checkConfig bool
	webui       bool
	host, port  string   // llama-server's --host and --port, merged into --listen
	notes       []string // said once the logger exists
}

// serveFlagSet returns every flag lisa serve accepts: the configuration's
// (config.Bind), --config, and the forms this command handles itself. It
// is the help's list and tells which flags take a value.
func serveFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := config.Default()
	fs.String("config", "", "YAML or JSON configuration `file` (.json: JSON); flags override it")
	config.Bind(fs, &c)
	fs.Bool("check-config", false, "parse and validate the configuration (file and flags), print it, and exit without starting")
	fs.Bool("webui", false, "serve a chat page at / (it calls /v1/chat/completions with the API key you type into it)")
	// llama-server's spellings, for muscle memory and scripts.
	fs.String("host", "", "llama-server form: listen on this `address` (with --port; instead of --listen)")
	fs.String("port", "", "llama-server form: listen on this `port` (with --host; instead of --listen)")
	fs.String("c", "", "llama-server form of --ctx-size")
	fs.String("np", "", "llama-server form of --parallel")
	fs.String("t", "", "llama-server form of --threads")
	fs.String("ctk", "", "llama-server form of --cache-type-k")
	fs.String("ctv", "", "llama-server form of --cache-type-v")
	fs.String("ngl", "", "llama-server form, accepted and ignored: lisa runs on the CPU and has no GPU offload (also --n-gpu-layers, --gpu-layers)")
	return fs
}

// renames maps llama-server's flags onto lisa's.
func renames(name string) (string, bool) {
	switch name {
	case "c":
		return "ctx-size", true
	case "np":
		return "parallel", true
	case "t":
		return "threads", true
	case "ctk":
		return "cache-type-k", true
	case "ctv":
		return "cache-type-v", true
	}
	return "", false
}

// parseServeArgs splits lisa serve's arguments. Flags may come before
// or after the model file.
func parseServeArgs(args []string) (serveArgs, error) {
	var sa serveArgs
	fs := serveFlagSet()
	var pos []string
	modelGiven, listenGiven := false, false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		// value returns the flag's value: after "=" or the next argument.
		takeValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("flag needs an argument: %s", a)
			}
			i++
			return args[i], nil
		}
		switch name {
		case "h", "help":
			sa.help = true
			continue
		case "check-config", "webui":
			on := true
			if hasValue {
				switch value {
				case "true", "1":
				case "false", "0":
					on = false
				default:
					return sa, fmt.Errorf("--%s=%s: want true or false", name, value)
				}
			}
			if name == "webui" {
				sa.webui = on
			} else {
				sa.checkConfig = on
			}
			continue
		case "host", "port":
			v, err := takeValue()
			if err != nil {
				return sa, err
			}
			if name == "host" {
				sa.host = v
			} else {
				sa.port = v
			}
			continue
		case "alias", "a":
			// llama-server's --alias takes a comma-separated list;
			// lisa's --alias (key model_aliases) is repeatable.
			v, err := takeValue()
			if err != nil {
				return sa, err
			}
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					sa.args = append(sa.args, "--alias", s)
				}
			}
			continue
		case "ngl", "n-gpu-layers", "gpu-layers":
			v, err := takeValue()
			if err != nil {
				return sa, err
			}
			sa.notes = append(sa.notes, fmt.Sprintf("-%s %s ignored: lisa runs on the CPU and has no GPU offload", name, v))
			continue
		case "api-key", "api-key-file":
			// Never echo the value: it is a secret.
			return sa, fmt.Errorf("--%s: lisa serve takes API key digests, never the keys: "+
				"lisa hash-key < keyfile prints one, then --api-keys sha256:HEX (or --api-keys-file FILE, one digest a line)", name)
		}
		if to, ok := renames(name); ok {
			v, err := takeValue()
			if err != nil {
				return sa, err
			}
			sa.args = append(sa.args, "--"+to, v)
			continue
		}
		switch name {
		case "m", "model", "hf":
			modelGiven = true
		case "listen":
			listenGiven = true
		}
		sa.args = append(sa.args, a)
		f := fs.Lookup(name)
		if f == nil {
			return sa, fmt.Errorf("flag provided but not defined: -%s", name)
		}
		if hasValue {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			sa.args = append(sa.args, args[i])
		}
	}
	switch {
	case len(pos) > 1:
		return sa, fmt.Errorf("unexpected argument %q: give one model", pos[1])
	case len(pos) == 1 && modelGiven:
		return sa, fmt.Errorf("model %q given twice: as an argument and with -m, --model or --hf", pos[0])
	case len(pos) == 1:
		sa.args = append(sa.args, "--model", pos[0])
	}
	if listenGiven && (sa.host != "" || sa.port != "") {
		return sa, errors.New("give either --listen HOST:PORT or --host and --port, not both")
	}
	return sa, nil
}

// listenAddr merges --host and --port into listen, the address the
// configuration gives: what is not given is kept.
func (sa serveArgs) listenAddr(listen string) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen %q: %w", listen, err)
	}
	if sa.host != "" {
		host = sa.host
	}
	if sa.port != "" {
		port = sa.port
	}
	return net.JoinHostPort(host, port), nil
}

// parseServeConfig parses the configuration of sa, with --host and --port
// merged into listen (which a second parse then validates).
func parseServeConfig(sa serveArgs) (*config.Config, error) {
	cfg, err := config.Parse(sa.args, io.Discard)
	if err != nil || (sa.host == "" && sa.port == "") {
		return cfg, err
	}
	listen, err := sa.listenAddr(cfg.Listen)
	if err != nil {
		return nil, err
	}
	return config.Parse(append(sa.args, "--listen", listen), io.Discard)
}
