package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// int64Value is a flag.Value for an int64 field.
type int64Value struct{ p *int64 }

func (v int64Value) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return fmt.Errorf("not an integer: %q", s)
	}
	*v.p = n
	return nil
}

// listValue is a flag.Value for a comma-separated list; giving the flag
// replaces the list of the file.
type listValue struct{ p *[]string }

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v listValue) Set(s string) error {
	*v.p = nil
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			*v.p = append(*v.p, e)
		}
	}
	return nil
}

// repeatValue is a flag.Value for a list given one element per flag
// (--alias a --alias b); the first use replaces the list of the file.
type repeatValue struct {
	p   *[]string
	set bool
}

func (v *repeatValue) String() string {
	if v == nil || v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v *repeatValue) Set(s string) error {
	if !v.set {
		*v.p, v.set = nil, true
	}
	*v.p = append(*v.p, s)
	return nil
}

// Bind registers one flag per configuration key on fs, each writing into c.
// The flag of a key is its name with dashes for underscores; model also
// has the short form -m. --config is registered by Parse, not here.
func Bind(fs *flag.FlagSet, c *Config) {
	s := func(p *string, name, usage string) {
		fs.StringVar(p, name, *p, usage+" (key "+strings.ReplaceAll(name, "-", "_")+")")
	}
	i := func(p *int, name, usage string) {
		fs.IntVar(p, name, *p, usage+" (key "+strings.ReplaceAll(name, "-", "_")+")")
	}
	b := func(p *bool, name, usage string) {
		fs.BoolVar(p, name, *p, usage+" (key "+strings.ReplaceAll(name, "-", "_")+")")
	}
	d := func(p *Duration, name, usage string) {
		fs.Var(p, name, usage+" (a `duration`; key "+strings.ReplaceAll(name, "-", "_")+")")
	}
	s(&c.Model, "model", "GGUF model `file`")
	fs.StringVar(&c.Model, "m", c.Model, "GGUF model `file` (short for --model)")
	s(&c.ModelName, "model-name", "model `name` served in /v1/models (default: the file name without .gguf)")
	s(&c.ModelSHA256, "model-sha256", "refuse to start unless the model file has this SHA-256 (`hex`)")
	s(&c.HF, "hf", "serve `OWNER/NAME[:QUANT]` from Hugging Face, pulled into the models directory if absent and pinned to its verified SHA-256")
	s(&c.ModelsDir, "models-dir", "`directory` of pulled models (default: $LISA_MODELS, else ~/.cache/lisa/models); without -m and --hf, serve every GGUF file in it as one of several models")
	fs.Var(&repeatValue{p: &c.Preload}, "preload", "with several models: load the model of this `name` at start instead of on first use (repeatable; key preload)")
	fs.Var(int64Value{&c.ModelsMemoryBytes}, "models-memory-bytes", "with several models: memory budget in `bytes` of the loaded models, each counting its worker's memory cap; the least recently used idle model is evicted to make room (0: no budget; key models_memory_bytes)")
	d(&c.ModelLoadTimeout, "model-load-timeout", "with several models: time a model's load may take; requests wait for it at most this long")
	s(&c.Listen, "listen", "`host:port` to listen on; off loopback API keys are required")
	fs.Var(&repeatValue{p: &c.ModelAliases}, "alias", "a further model `name` clients may use (repeatable; key model_aliases)")
	fs.Var(&repeatValue{p: &c.CORSOrigins}, "cors-origin", "a browser `origin` allowed to call the API, scheme://host[:port] or * (repeatable; key cors_origins)")
	fs.Var(listValue{&c.APIKeys}, "api-keys", "comma-separated API key `digests` (\"sha256:<hex>\", from lisa hash-key) (key api_keys)")
	s(&c.APIKeysFile, "api-keys-file", "`file` with one API key digest per line")
	i(&c.Threads, "threads", "compute threads of the worker (0: one per core)")
	i(&c.CtxSize, "ctx-size", "context size in tokens per slot (0: the model's)")
	i(&c.Parallel, "parallel", "generation slots in the worker")
	s(&c.CacheTypeK, "cache-type-k", "KV cache `type` of the keys: f16, q8_0 or f32 (also -ctk)")
	s(&c.CacheTypeV, "cache-type-v", "KV cache `type` of the values: f16, q8_0 or f32 (also -ctv)")
	fs.Var(int64Value{&c.MemoryLimitBytes}, "memory-limit-bytes", "memory cap of the worker in `bytes` (key memory_limit_bytes)")
	i(&c.QueueSize, "queue-size", "generations that may wait for a slot; more get 429")
	i(&c.MaxRunning, "max-running", "generations running at once (0: parallel)")
	i(&c.RateLimitRPM, "rate-limit-rpm", "requests per minute per API key (0: no limit)")
	i(&c.RateLimitBurst, "rate-limit-burst", "requests an API key may make at once before the per-minute rate applies")
	i(&c.MaxConnections, "max-connections", "open client connections at most")
	i(&c.MaxHandshakes, "max-handshakes", "TLS handshakes in progress at most")
	i(&c.MaxConnectionsPerAddress, "max-connections-per-address", "open connections per client address (IPv6: per /64) at most (0: no per-address cap)")
	i(&c.MaxHandshakesPerAddress, "max-handshakes-per-address", "TLS handshakes in progress per client address at most (0: no per-address cap)")
	i(&c.AuthFailureRPM, "auth-failure-rpm", "failed API key checks per minute per client address before 429 (0: no limit)")
	i(&c.AuthFailureBurst, "auth-failure-burst", "failed API key checks a client address may make at once before the per-minute rate applies")
	b(&c.BehindTLSProxy, "behind-tls-proxy", "a TLS-terminating proxy is in front: no warning for plain HTTP off loopback")
	b(&c.AllowControlTokenIDs, "allow-control-token-ids", "let token-id prompts carry control tokens (EOS, turn markers, BOS past the start)")
	d(&c.ReadHeaderTimeout, "read-header-timeout", "time to read a request's headers")
	d(&c.ReadTimeout, "read-timeout", "time to read a whole request")
	d(&c.WriteTimeout, "write-timeout", "time allowed for each write of a response (each streamed chunk gets it anew)")
	d(&c.IdleTimeout, "idle-timeout", "time a kept-alive connection may stay idle")
	d(&c.UnauthIdleTimeout, "unauthenticated-idle-timeout", "time a connection without an authenticated request may stay idle")
	d(&c.HandshakeTimeout, "handshake-timeout", "time allowed for a TLS handshake")
	d(&c.QueueTimeout, "queue-timeout", "time a generation may wait in the queue")
	d(&c.RequestTimeout, "request-timeout", "time a generation may run")
	d(&c.ShutdownTimeout, "shutdown-timeout", "time given to running requests on shutdown")
	b(&c.SandboxEnabled, "sandbox-enabled", "run the worker in the sandbox (false: unsandboxed, with a loud warning)")
	fs.Var(&c.SandboxCgroup, "sandbox-cgroup", "put the worker in a cgroup with memory and pids limits: auto (when one can be made), true (required) or false; give a value with = (key sandbox_cgroup)")
	b(&c.SandboxSeccompLog, "sandbox-seccomp-log", "diagnostic: seccomp logs denied calls instead of killing")
	s(&c.TLSCertFile, "tls-cert-file", "PEM certificate `file` (turns TLS on)")
	s(&c.TLSKeyFile, "tls-key-file", "PEM private key `file`")
	s(&c.TLSClientCAFile, "tls-client-ca-file", "PEM CA `file`: require client certificates it signed (mTLS)")
	s(&c.TLSMinVersion, "tls-min-version", "lowest TLS `version`: 1.2 or 1.3")
	s(&c.ReasoningFormat, "reasoning-format", "how chat replies return the model's reasoning (<think>, gpt-oss's analysis channel): `format` none (left in the content), auto or deepseek (in reasoning_content)")
	b(&c.Embeddings, "embeddings", "serve POST /v1/embeddings (pooling from the model's pooling_type, else mean)")
	b(&c.LogPrompts, "log-prompts", "debug: put prompt text in the request log lines")
	s(&c.LogLevel, "log-level", "log `level`: debug, info, warn or error")
	s(&c.LogFormat, "log-format", "log `format`: text or json")
}

// Parse builds the configuration of lisa serve from its arguments: the
// defaults, then the file named by --config, then every flag given, which
// overrides the file. It then resolves and validates the result. With
// -h or --help it writes the usage to stderr and returns flag.ErrHelp.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	// First pass: find --config (and reject bad flags) on a scratch copy.
	scratch := Default()
	fs1 := newFlagSet(&scratch, new(string), io.Discard)
	if err := fs1.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs := newFlagSet(&scratch, new(string), stderr)
			fs.Usage()
			return nil, err
		}
		return nil, err
	}
	if fs1.NArg() != 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs1.Arg(0))
	}
	c := Default()
	var file string
	fs1.Visit(func(f *flag.Flag) {
		if f.Name == "config" {
			file = f.Value.String()
		}
	})
	if file != "" {
		if err := LoadFile(&c, file); err != nil {
			return nil, err
		}
	}
	// Second pass: the flags given override the file.
	fs2 := newFlagSet(&c, new(string), io.Discard)
	if err := fs2.Parse(args); err != nil {
		return nil, err
	}
	if err := c.Resolve(); err != nil {
		return nil, err
	}
	return &c, nil
}

func newFlagSet(c *Config, file *string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(file, "config", "", "YAML or JSON configuration `file` (.json: JSON); flags override it")
	Bind(fs, c)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lisa serve -m MODEL [--listen HOST:PORT] [--config FILE] [flags]")
		fmt.Fprintln(fs.Output(), "Every flag but --config and -m is also a key of the configuration file (dashes become underscores).")
		fs.PrintDefaults()
	}
	return fs
}
