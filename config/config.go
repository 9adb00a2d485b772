package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// maxFileBytes bounds the size of a configuration file.
const maxFileBytes = 1 << 20

// Config is the whole configuration of lisa serve. The yaml/json tags are
// the documented keys of the configuration file.
type Config struct {
	Model       string `yaml:"model" json:"model"`               // path of the GGUF file
	ModelName   string `yaml:"model_name" json:"model_name"`     // name served in /v1/models
	ModelSHA256 string `yaml:"model_sha256" json:"model_sha256"` // expected SHA-256 (hex) of the model file (a split model's first shard)
	// ModelAliases are further names clients may ask for the model by (a
	// client that hard-codes "gpt-4o-mini"); /v1/models lists them too.
	ModelAliases []string `yaml:"model_aliases" json:"model_aliases"`
	// CORSOrigins are the browser origins allowed to call the API
	// ("https://app.example:8443", or "*" for any); none by default.
	CORSOrigins []string `yaml:"cors_origins" json:"cors_origins"`
	HF          string   `yaml:"hf" json:"hf"` // OWNER/NAME[:QUANT] on Hugging Face, pulled if absent (instead of model)
	// ModelsDir is where hf models are kept ("": $LISA_MODELS or
	// ~/.cache/lisa/models). Given without model and hf, the server
	// serves every GGUF file directly in it, as several models.
	ModelsDir string `yaml:"models_dir" json:"models_dir"`
	// Models lists the models of a server with several (instead of
	// model), each in its own worker, loaded on first use; with
	// models_dir they add to, or refine, the directory's models.
	Models []ModelEntry `yaml:"models" json:"models"`
	// Preload names models (of models or models_dir) loaded at start
	// instead of on first use.
	Preload []string `yaml:"preload" json:"preload"`
	// ModelsMemoryBytes is the memory budget of a server with several
	// models: the loaded models' charges (each worker's memory cap, see
	// ModelEntry) stay within it, the least recently used idle model
	// evicted to make room (0: no budget).
	ModelsMemoryBytes int64 `yaml:"models_memory_bytes" json:"models_memory_bytes"`
	// ModelLoadTimeout bounds a model's load in a server with several
	// models; requests wait for a load at most this long (503 after).
	ModelLoadTimeout Duration `yaml:"model_load_timeout" json:"model_load_timeout"`
	Listen           string   `yaml:"listen" json:"listen"`     // host:port
	APIKeys          []string `yaml:"api_keys" json:"api_keys"` // "sha256:<hex>" digests
	APIKeysFile      string   `yaml:"api_keys_file" json:"api_keys_file"`

	Threads  int `yaml:"threads" json:"threads"`   // worker compute threads (0: one per core)
	CtxSize  int `yaml:"ctx_size" json:"ctx_size"` // tokens per slot (0: the model's)
	Parallel int `yaml:"parallel" json:"parallel"` // worker slots
	// CacheTypeK and CacheTypeV are the element types of the KV cache's
	// keys and values: f16 (llama.cpp's default), q8_0 (34 bytes per 32
	// values, 53% of f16's memory, logits within a few hundredths) or f32.
	CacheTypeK       string `yaml:"cache_type_k" json:"cache_type_k"`
	CacheTypeV       string `yaml:"cache_type_v" json:"cache_type_v"`
	MemoryLimitBytes int64  `yaml:"memory_limit_bytes" json:"memory_limit_bytes"`

	QueueSize      int `yaml:"queue_size" json:"queue_size"`   // generations waiting at most
	MaxRunning     int `yaml:"max_running" json:"max_running"` // generations running at once (0: parallel)
	RateLimitRPM   int `yaml:"rate_limit_rpm" json:"rate_limit_rpm"`
	RateLimitBurst int `yaml:"rate_limit_burst" json:"rate_limit_burst"`
	MaxConnections int `yaml:"max_connections" json:"max_connections"`
	MaxHandshakes  int `yaml:"max_handshakes" json:"max_handshakes"`

	// Per client address (an IPv4 address, an IPv6 /64): connections and
	// TLS handshakes at once (0: no per-address cap), and failed API key
	// checks a minute with their burst before 429.
	MaxConnectionsPerAddress int `yaml:"max_connections_per_address" json:"max_connections_per_address"`
	MaxHandshakesPerAddress  int `yaml:"max_handshakes_per_address" json:"max_handshakes_per_address"`
	AuthFailureRPM           int `yaml:"auth_failure_rpm" json:"auth_failure_rpm"`
	AuthFailureBurst         int `yaml:"auth_failure_burst" json:"auth_failure_burst"`
	// BehindTLSProxy says a TLS-terminating proxy is in front: plain HTTP
	// off loopback with API keys is then expected and not warned about.
	BehindTLSProxy bool `yaml:"behind_tls_proxy" json:"behind_tls_proxy"`
	// AllowControlTokenIDs lets token-id prompts carry control token ids
	// (EOS, turn markers, BOS past the start); by default they are a 400.
	AllowControlTokenIDs bool `yaml:"allow_control_token_ids" json:"allow_control_token_ids"`

	ReadHeaderTimeout Duration `yaml:"read_header_timeout" json:"read_header_timeout"`
	ReadTimeout       Duration `yaml:"read_timeout" json:"read_timeout"`
	WriteTimeout      Duration `yaml:"write_timeout" json:"write_timeout"`
	IdleTimeout       Duration `yaml:"idle_timeout" json:"idle_timeout"`
	// UnauthIdleTimeout is how long a connection that has made no
	// authenticated request (or, without keys, no API request) may stay
	// idle, before its first request or between requests.
	UnauthIdleTimeout Duration `yaml:"unauthenticated_idle_timeout" json:"unauthenticated_idle_timeout"`
	HandshakeTimeout  Duration `yaml:"handshake_timeout" json:"handshake_timeout"`
	QueueTimeout      Duration `yaml:"queue_timeout" json:"queue_timeout"`
	RequestTimeout    Duration `yaml:"request_timeout" json:"request_timeout"`
	ShutdownTimeout   Duration `yaml:"shutdown_timeout" json:"shutdown_timeout"`

	SandboxEnabled    bool       `yaml:"sandbox_enabled" json:"sandbox_enabled"`
	SandboxCgroup     CgroupMode `yaml:"sandbox_cgroup" json:"sandbox_cgroup"` // auto, true or false
	SandboxSeccompLog bool       `yaml:"sandbox_seccomp_log" json:"sandbox_seccomp_log"`

	TLSCertFile     string `yaml:"tls_cert_file" json:"tls_cert_file"`
	TLSKeyFile      string `yaml:"tls_key_file" json:"tls_key_file"`
	TLSClientCAFile string `yaml:"tls_client_ca_file" json:"tls_client_ca_file"`
	TLSMinVersion   string `yaml:"tls_min_version" json:"tls_min_version"` // "1.2" or "1.3"

	// Embeddings turns POST /v1/embeddings on (off by default: embedding
	// with a chat model is rarely what a client means).
	Embeddings bool `yaml:"embeddings" json:"embeddings"`

	// ReasoningFormat is how chat replies return the model's reasoning,
	// as llama-server's --reasoning-format: none leaves it in the content,
	// auto and deepseek put it in reasoning_content; a request's
	// reasoning_format overrides it.
	ReasoningFormat string `yaml:"reasoning_format" json:"reasoning_format"`

	LogPrompts bool   `yaml:"log_prompts" json:"log_prompts"`
	LogLevel   string `yaml:"log_level" json:"log_level"`   // debug, info, warn, error
	LogFormat  string `yaml:"log_format" json:"log_format"` // text or json

	// Keys holds the parsed digests of APIKeys and of the keys file; Resolve fills it.
	Keys []Digest `yaml:"-" json:"-"`
}

// ModelEntry is one model of a server with several. Path names a GGUF
// file (a split model's first shard); an entry without path refines the
// model of models_dir that Name names.
type ModelEntry struct {
	Path    string   `yaml:"path" json:"path"`
	Name    string   `yaml:"name" json:"name"`       // served id (default: the file name without .gguf)
	Aliases []string `yaml:"aliases" json:"aliases"` // further names clients may use
	Preload bool     `yaml:"preload" json:"preload"` // load at start
	SHA256  string   `yaml:"model_sha256" json:"model_sha256"`
	// MemoryLimitBytes is this model's worker memory cap (0: the
	// server's memory_limit_bytes); it is also what the model counts
	// against models_memory_bytes while loaded.
	MemoryLimitBytes int64 `yaml:"memory_limit_bytes" json:"memory_limit_bytes"`
	// CtxSize and Parallel are this model's tokens per slot and
	// generation slots (0: the server's ctx_size and parallel). Its KV
	// cache, their product, must fit its memory cap; without a cap it
	// counts against models_memory_bytes beside the files' size.
	CtxSize  int `yaml:"ctx_size" json:"ctx_size"`
	Parallel int `yaml:"parallel" json:"parallel"`
}

// MultiModel reports whether c serves several models: a models list, or
// models_dir given without model and hf.
func (c *Config) MultiModel() bool {
	return len(c.Models) > 0 || (c.ModelsDir != "" && c.Model == "" && c.HF == "")
}

// cacheTypes are the KV cache element types the worker accepts (the
// names of llama.cpp's --cache-type-k/--cache-type-v that lisa has).
var cacheTypes = []string{"f16", "q8_0", "f32"}

// Default returns the configuration used when neither file nor flag says
// otherwise.
func Default() Config {
	return Config{
		Listen:            "127.0.0.1:8080",
		Parallel:          4,
		CacheTypeK:        "f16",
		CacheTypeV:        "f16",
		MemoryLimitBytes:  4 << 30,
		QueueSize:         64,
		RateLimitRPM:      600,
		RateLimitBurst:    60,
		MaxConnections:    512,
		MaxHandshakes:     64,
		ReadHeaderTimeout: Duration(10 * time.Second),
		ReadTimeout:       Duration(60 * time.Second),
		WriteTimeout:      Duration(30 * time.Second),
		IdleTimeout:       Duration(120 * time.Second),
		HandshakeTimeout:  Duration(10 * time.Second),
		QueueTimeout:      Duration(60 * time.Second),
		ModelLoadTimeout:  Duration(2 * time.Minute),
		RequestTimeout:    Duration(10 * time.Minute),
		ShutdownTimeout:   Duration(10 * time.Second),
		SandboxEnabled:    true,
		SandboxCgroup:     CgroupAuto,
		TLSMinVersion:     "1.2",
		LogLevel:          "info",
		LogFormat:         "text",
		ReasoningFormat:   "auto",

		MaxConnectionsPerAddress: 64,
		MaxHandshakesPerAddress:  8,
		AuthFailureRPM:           30,
		AuthFailureBurst:         10,
		UnauthIdleTimeout:        Duration(5 * time.Second),
	}
}

// LoadFile reads the file at path over c: keys present in the file replace
// c's values, the others are kept. JSON when the name ends in ".json",
// YAML otherwise; unknown keys, duplicate keys and mistyped values are
// errors naming the key.
func LoadFile(c *Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return fmt.Errorf("config %s: larger than %d bytes", path, maxFileBytes)
	}
	if strings.EqualFold(filepath.Ext(path), ".json") {
		err = decodeJSON(c, data)
	} else {
		err = decodeYAML(c, data)
	}
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

func decodeJSON(c *Config, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("key %s: wrong type: %s is not a %s", te.Field, te.Value, te.Type)
		}
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

func decodeYAML(c *Config, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // an empty file
		}
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	return nil
}

// Resolve reads the API keys file, parses every digest, fills derived
// defaults (max_running from parallel, model_name from the file name) and
// validates c. The error lists every problem found, each naming its key.
func (c *Config) Resolve() error {
	var errs []error
	keys := append([]string(nil), c.APIKeys...)
	if c.APIKeysFile != "" {
		more, err := ReadKeysFile(c.APIKeysFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("api_keys_file: %w", err))
		}
		keys = append(keys, more...)
	}
	c.Keys = c.Keys[:0]
	for i, k := range keys {
		d, err := ParseDigest(strings.TrimSpace(k))
		if err != nil {
			errs = append(errs, fmt.Errorf("api_keys[%d]: %w", i, err))
			continue
		}
		if p, bad := isPlaceholderDigest(d); bad {
			errs = append(errs, fmt.Errorf("api_keys[%d]: this is the digest of the placeholder key %q: choose a real key", i, p))
			continue
		}
		c.Keys = append(c.Keys, d)
	}
	if c.MaxRunning == 0 {
		c.MaxRunning = c.Parallel
	}
	if c.ModelName == "" && c.Model != "" {
		c.ModelName = strings.TrimSuffix(filepath.Base(c.Model), filepath.Ext(c.Model))
	}
	errs = append(errs, c.validate()...)
	return errors.Join(errs...)
}

// validate checks every value's range. It runs after the keys are parsed.
func (c *Config) validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Model == "" && c.HF == "" && !c.MultiModel() {
		bad("model", "no model file given (use -m FILE, -hf OWNER/NAME[:QUANT], --models-dir DIR or the model key)")
	}
	if c.Model != "" && c.HF != "" {
		bad("hf", "give either model or hf, not both")
	}
	if c.ModelSHA256 != "" {
		if h := strings.TrimPrefix(strings.ToLower(c.ModelSHA256), DigestPrefix); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
			bad("model_sha256", "want 64 hex digits, got %q", c.ModelSHA256)
		}
	}
	if len(c.ModelName) > 256 || strings.ContainsFunc(c.ModelName, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		bad("model_name", "must be at most 256 printable characters")
	}
	errs = append(errs, c.validateAliases()...)
	errs = append(errs, c.validateModels()...)
	errs = append(errs, c.validateOrigins()...)
	errs = append(errs, c.validateListen()...)
	intRange := func(key string, v, lo, hi int) {
		if v < lo || v > hi {
			bad(key, "must be between %d and %d, got %d", lo, hi, v)
		}
	}
	intRange("threads", c.Threads, 0, 1024)
	intRange("ctx_size", c.CtxSize, 0, MaxCtxSize)
	intRange("parallel", c.Parallel, 1, MaxParallel)
	for _, k := range []struct{ key, v string }{{"cache_type_k", c.CacheTypeK}, {"cache_type_v", c.CacheTypeV}} {
		if !slices.Contains(cacheTypes, k.v) {
			bad(k.key, "must be one of %s, got %q", strings.Join(cacheTypes, ", "), k.v)
		}
	}
	intRange("queue_size", c.QueueSize, 0, 1<<16)
	intRange("max_running", c.MaxRunning, 1, 1024)
	intRange("rate_limit_rpm", c.RateLimitRPM, 0, 1<<20)
	intRange("rate_limit_burst", c.RateLimitBurst, 0, 1<<20)
	intRange("max_connections", c.MaxConnections, 1, 1<<20)
	intRange("max_handshakes", c.MaxHandshakes, 1, 1<<16)
	intRange("max_connections_per_address", c.MaxConnectionsPerAddress, 0, 1<<20)
	intRange("max_handshakes_per_address", c.MaxHandshakesPerAddress, 0, 1<<16)
	intRange("auth_failure_rpm", c.AuthFailureRPM, 0, 1<<20)
	intRange("auth_failure_burst", c.AuthFailureBurst, 0, 1<<20)
	if c.AuthFailureRPM > 0 && c.AuthFailureBurst == 0 {
		bad("auth_failure_burst", "must be at least 1 when auth_failure_rpm is set")
	}
	if c.RateLimitRPM > 0 && c.RateLimitBurst == 0 {
		bad("rate_limit_burst", "must be at least 1 when rate_limit_rpm is set")
	}
	if c.MemoryLimitBytes != 0 && c.MemoryLimitBytes < 64<<20 {
		bad("memory_limit_bytes", "must be 0 or at least %d (the Go runtime alone needs about 40 MiB), got %d", 64<<20, c.MemoryLimitBytes)
	}
	if c.MemoryLimitBytes < 0 {
		bad("memory_limit_bytes", "must not be negative")
	}
	for _, d := range []struct {
		key string
		v   Duration
	}{
		{"read_header_timeout", c.ReadHeaderTimeout}, {"read_timeout", c.ReadTimeout},
		{"write_timeout", c.WriteTimeout}, {"idle_timeout", c.IdleTimeout},
		{"unauthenticated_idle_timeout", c.UnauthIdleTimeout},
		{"handshake_timeout", c.HandshakeTimeout}, {"queue_timeout", c.QueueTimeout},
		{"request_timeout", c.RequestTimeout}, {"shutdown_timeout", c.ShutdownTimeout},
		{"model_load_timeout", c.ModelLoadTimeout},
	} {
		if d.v <= 0 || d.v.D() > 24*time.Hour {
			bad(d.key, "must be more than 0 and at most 24h, got %s", d.v)
		}
	}
	errs = append(errs, c.validateTLS()...)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log_level", "must be debug, info, warn or error, got %q", c.LogLevel)
	}
	switch c.ReasoningFormat {
	case "none", "auto", "deepseek":
	default:
		bad("reasoning_format", "must be none, auto or deepseek, got %q", c.ReasoningFormat)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		bad("log_format", "must be text or json, got %q", c.LogFormat)
	}
	return errs
}

// MaxCtxSize and MaxParallel bound ctx_size and parallel, the server's
// and each model's.
const (
	MaxCtxSize  = 1 << 20
	MaxParallel = 256
)

// MaxAliases bounds model_aliases and cors_origins.
const MaxAliases = 64

// validName reports whether s may name the model: 1 to 256 printable
// characters.
func validName(s string) bool {
	return s != "" && len(s) <= 256 && !strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f })
}

func (c *Config) validateAliases() []error {
	if len(c.ModelAliases) > MaxAliases {
		return []error{fmt.Errorf("model_aliases: %d aliases, at most %d", len(c.ModelAliases), MaxAliases)}
	}
	seen := map[string]bool{c.ModelName: true}
	for _, a := range c.ModelAliases {
		switch {
		case !validName(a):
			return []error{fmt.Errorf("model_aliases: %q must be 1 to 256 printable characters", a)}
		case seen[a]:
			return []error{fmt.Errorf("model_aliases: %q is the model's name or given twice", a)}
		}
		seen[a] = true
	}
	return nil
}

// validateOrigins accepts "*" or scheme://host[:port] with an http or
// https scheme and nothing after the host, as browsers send Origin.
func (c *Config) validateOrigins() []error {
	if len(c.CORSOrigins) > MaxAliases {
		return []error{fmt.Errorf("cors_origins: %d origins, at most %d", len(c.CORSOrigins), MaxAliases)}
	}
	for _, o := range c.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ToLower(o) != o {
			return []error{fmt.Errorf("cors_origins: %q is not an origin (lower-case scheme://host[:port], or *)", o)}
		}
	}
	return nil
}

func (c *Config) validateListen() []error {
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return []error{fmt.Errorf("listen: %q is not host:port: %w", c.Listen, err)}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return []error{fmt.Errorf("listen: bad port %q", port)}
	}
	if !IsLoopback(host) && len(c.Keys) == 0 {
		return []error{fmt.Errorf("listen: %s is not a loopback address and no API key is configured: refusing to start (add api_keys or --api-keys-file with digests made by lisa hash-key, or listen on 127.0.0.1)", c.Listen)}
	}
	return nil
}

func (c *Config) validateTLS() []error {
	var errs []error
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("tls_cert_file, tls_key_file: both or neither must be set"))
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		errs = append(errs, errors.New("tls_client_ca_file: client certificates need TLS (tls_cert_file and tls_key_file)"))
	}
	if c.TLSMinVersion != "1.2" && c.TLSMinVersion != "1.3" {
		errs = append(errs, fmt.Errorf("tls_min_version: must be \"1.2\" or \"1.3\", got %q", c.TLSMinVersion))
	}
	return errs
}

// TLS reports whether c serves HTTPS.
func (c *Config) TLS() bool { return c.TLSCertFile != "" }

// IsLoopback reports whether host (an IP address or "localhost") can only
// be reached from this machine. An empty host means every interface.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
