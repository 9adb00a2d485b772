package config

import (
	"crypto/sha256"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goodDigest is the digest of a key that passes HashKey.
const goodKey = "Zq8vR2mN5xL0pW7tK3hJ9cB4fD6gS1aE"

func goodDigest(t *testing.T) string {
	t.Helper()
	d, err := HashKey(goodKey)
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadFile(t *testing.T) {
	tests := []struct {
		name, file, body string
		wantErr          string // substring; "" means success
		check            func(*Config) bool
	}{
		{"yaml", "c.yaml", "model: /m.gguf\nctx_size: 256\nwrite_timeout: 5s\nsandbox_enabled: false\napi_keys: [a, b]\n", "",
			func(c *Config) bool {
				return c.Model == "/m.gguf" && c.CtxSize == 256 && c.WriteTimeout.D() == 5*time.Second && !c.SandboxEnabled && len(c.APIKeys) == 2
			}},
		{"json", "c.json", `{"model":"/m.gguf","parallel":3,"read_timeout":"2m"}`, "",
			func(c *Config) bool {
				return c.Parallel == 3 && c.ReadTimeout.D() == 2*time.Minute && c.QueueSize == 64
			}},
		{"empty yaml keeps defaults", "c.yaml", "", "", func(c *Config) bool { return c.Listen == "127.0.0.1:8080" }},
		{"yaml unknown key", "c.yaml", "model: x\nctx_sise: 3\n", "ctx_sise", nil},
		{"yaml wrong type", "c.yaml", "ctx_size: lots\n", "lots", nil},
		{"yaml duration as number", "c.yaml", "write_timeout: 30\n", "duration", nil},
		{"yaml bad duration", "c.yaml", "write_timeout: soon\n", "soon", nil},
		{"yaml duplicate key", "c.yaml", "parallel: 1\nparallel: 2\n", "parallel", nil},
		{"yaml two documents", "c.yaml", "parallel: 1\n---\nparallel: 2\n", "more than one", nil},
		{"json unknown key", "c.json", `{"modle":"x"}`, "modle", nil},
		{"json wrong type", "c.json", `{"parallel":"four"}`, "parallel", nil},
		{"json trailing", "c.json", `{"parallel":1} {"parallel":2}`, "after the JSON", nil},
		{"json duration as number", "c.json", `{"idle_timeout":5}`, "duration", nil},
		{"sandbox_cgroup default", "c.yaml", "", "", func(c *Config) bool { return c.SandboxCgroup.Auto() && !c.SandboxCgroup.Required() }},
		{"yaml sandbox_cgroup true", "c.yaml", "sandbox_cgroup: true\n", "", func(c *Config) bool { return c.SandboxCgroup.Required() }},
		{"yaml sandbox_cgroup false", "c.yaml", "sandbox_cgroup: false\n", "", func(c *Config) bool { return c.SandboxCgroup == CgroupOff }},
		{"yaml sandbox_cgroup auto", "c.yaml", "sandbox_cgroup: auto\n", "", func(c *Config) bool { return c.SandboxCgroup == CgroupAuto }},
		{"yaml sandbox_cgroup bad", "c.yaml", "sandbox_cgroup: maybe\n", "maybe", nil},
		{"yaml sandbox_cgroup quoted true", "c.yaml", "sandbox_cgroup: \"true\"\n", "sandbox_cgroup", nil},
		{"json sandbox_cgroup auto", "c.json", `{"sandbox_cgroup":"auto"}`, "", func(c *Config) bool { return c.SandboxCgroup.Auto() }},
		{"json sandbox_cgroup true", "c.json", `{"sandbox_cgroup":true}`, "", func(c *Config) bool { return c.SandboxCgroup.Required() }},
		{"json sandbox_cgroup bad", "c.json", `{"sandbox_cgroup":"on"}`, "sandbox_cgroup", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			err := LoadFile(&c, writeFile(t, tt.file, tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(&c) {
				t.Fatalf("unexpected config %+v", c)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	good := goodDigest(t)
	placeholder := sha256.Sum256([]byte("changeme"))
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"loopback without keys", func(c *Config) {}, ""},
		{"localhost without keys", func(c *Config) { c.Listen = "localhost:1" }, ""},
		{"ipv6 loopback", func(c *Config) { c.Listen = "[::1]:8080" }, ""},
		{"all interfaces without keys", func(c *Config) { c.Listen = ":8080" }, "not a loopback address"},
		{"public without keys", func(c *Config) { c.Listen = "0.0.0.0:8080" }, "no API key"},
		{"public with key", func(c *Config) { c.Listen = "0.0.0.0:8080"; c.APIKeys = []string{good} }, ""},
		{"plain key", func(c *Config) { c.APIKeys = []string{goodKey} }, "api_keys[0]"},
		{"short digest", func(c *Config) { c.APIKeys = []string{"sha256:abcd"} }, "hex digits"},
		{"placeholder digest", func(c *Config) { c.APIKeys = []string{Digest(placeholder).String()} }, "placeholder"},
		{"no model", func(c *Config) { c.Model = "" }, "model:"},
		{"hf instead of model", func(c *Config) { c.Model, c.HF, c.ModelName = "", "o/n:Q4_K_M", "x" }, ""},
		{"model and hf", func(c *Config) { c.HF = "o/n" }, "hf:"},
		{"bad sha", func(c *Config) { c.ModelSHA256 = "xyz" }, "model_sha256"},
		{"aliases", func(c *Config) { c.ModelAliases = []string{"gpt-4o-mini", "my model"} }, ""},
		{"empty alias", func(c *Config) { c.ModelAliases = []string{""} }, "model_aliases"},
		{"alias control char", func(c *Config) { c.ModelAliases = []string{"a\nb"} }, "model_aliases"},
		{"alias twice", func(c *Config) { c.ModelAliases = []string{"a", "a"} }, "model_aliases"},
		{"too many aliases", func(c *Config) { c.ModelAliases = make([]string, MaxAliases+1) }, "model_aliases"},
		{"origins", func(c *Config) { c.CORSOrigins = []string{"https://app.example:8443", "http://localhost:3000", "*"} }, ""},
		{"origin with path", func(c *Config) { c.CORSOrigins = []string{"https://app.example/"} }, "cors_origins"},
		{"origin scheme", func(c *Config) { c.CORSOrigins = []string{"ftp://app.example"} }, "cors_origins"},
		{"origin host only", func(c *Config) { c.CORSOrigins = []string{"app.example"} }, "cors_origins"},
		{"origin upper case", func(c *Config) { c.CORSOrigins = []string{"https://App.example"} }, "cors_origins"},
		{"bad listen", func(c *Config) { c.Listen = "8080" }, "listen"},
		{"bad parallel", func(c *Config) { c.Parallel = 0 }, "parallel"},
		{"negative ctx", func(c *Config) { c.CtxSize = -1 }, "ctx_size"},
		{"q8_0 cache", func(c *Config) { c.CacheTypeK, c.CacheTypeV = "q8_0", "q8_0" }, ""},
		{"f32 keys", func(c *Config) { c.CacheTypeK = "f32" }, ""},
		{"unknown key type", func(c *Config) { c.CacheTypeK = "q4_0" }, "cache_type_k"},
		{"empty value type", func(c *Config) { c.CacheTypeV = "" }, "cache_type_v"},
		{"zero timeout", func(c *Config) { c.WriteTimeout = 0 }, "write_timeout"},
		{"small memory", func(c *Config) { c.MemoryLimitBytes = 1 << 20 }, "memory_limit_bytes"},
		{"tls half", func(c *Config) { c.TLSCertFile = "c.pem" }, "tls_key_file"},
		{"tls version", func(c *Config) { c.TLSMinVersion = "1.1" }, "tls_min_version"},
		{"ca without tls", func(c *Config) { c.TLSClientCAFile = "ca.pem" }, "tls_client_ca_file"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "log_level"},
		{"burst zero", func(c *Config) { c.RateLimitBurst = 0 }, "rate_limit_burst"},
		{"auth failure burst zero", func(c *Config) { c.AuthFailureBurst = 0 }, "auth_failure_burst"},
		{"negative per-address cap", func(c *Config) { c.MaxConnectionsPerAddress = -1 }, "max_connections_per_address"},
		{"negative handshake cap", func(c *Config) { c.MaxHandshakesPerAddress = -1 }, "max_handshakes_per_address"},
		{"zero unauthenticated idle", func(c *Config) { c.UnauthIdleTimeout = 0 }, "unauthenticated_idle_timeout"},
		{"per-address caps off", func(c *Config) { c.MaxConnectionsPerAddress, c.MaxHandshakesPerAddress, c.AuthFailureRPM = 0, 0, 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Model = "/models/x.gguf"
			tt.mod(&c)
			err := c.Resolve()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.MaxRunning != c.Parallel || c.ModelName != "x" {
					t.Fatalf("derived defaults not applied: %+v", c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{goodKey, true},
		{"short-but-random-Kx81", false},
		{strings.Repeat("changeme", 4), false},
		{strings.Repeat("test", 8), false},
		{strings.Repeat("ab", 20), false},
		{"sk-no-key-required-Zq8vR2mN5xL0pW7tK3", false},
		{"Zq8vR2mN5xL0pW7t K3hJ9cB4fD6gS1aE", false},
		{"Zq8vR2mN5xL0pW7t\u00e9K3hJ9cB4fD6gS1aE", false},
		{"MY-EXAMPLE-KEY-Zq8vR2mN5xL0pW7tK3", false},
	}
	for _, tt := range tests {
		d, err := HashKey(tt.key)
		if tt.ok != (err == nil) {
			t.Errorf("HashKey(%q) err = %v, want ok=%v", tt.key, err, tt.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrWeakKey) {
				t.Errorf("HashKey(%q) err = %v, not ErrWeakKey", tt.key, err)
			}
			continue
		}
		if d != sha256.Sum256([]byte(tt.key)) {
			t.Errorf("HashKey(%q) = %s, not its SHA-256", tt.key, d)
		}
		back, err := ParseDigest(d.String())
		if err != nil || back != d {
			t.Errorf("ParseDigest(%s) = %v, %v", d, back, err)
		}
	}
}

func TestReadKeysFile(t *testing.T) {
	good := goodDigest(t)
	p := writeFile(t, "keys", "# comment\n\n"+good+"\n  "+strings.ToUpper(good[7:])+"\n")
	if _, err := ReadKeysFile(p); err == nil || !strings.Contains(err.Error(), ":4:") {
		t.Fatalf("err = %v, want one naming line 4", err)
	}
	p = writeFile(t, "keys", "# comment\n\n"+good+"\nsha256:"+strings.ToUpper(good[7:])+"\n")
	keys, err := ReadKeysFile(p)
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys = %v, err = %v", keys, err)
	}
	if _, err := ReadKeysFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file gave no error")
	}
}

func TestParseFlagsOverrideFile(t *testing.T) {
	good := goodDigest(t)
	file := writeFile(t, "c.yaml", "model: /from/file.gguf\nparallel: 2\nqueue_size: 5\nlisten: 0.0.0.0:9000\napi_keys: ["+good+"]\n")
	c, err := Parse([]string{"--config", file, "--queue-size", "7", "-m", "/flag.gguf", "--write-timeout", "3s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != "/flag.gguf" || c.QueueSize != 7 || c.Parallel != 2 || c.Listen != "0.0.0.0:9000" || c.WriteTimeout.D() != 3*time.Second || len(c.Keys) != 1 {
		t.Fatalf("flags did not override the file: %+v", c)
	}
	// No file at all: loopback, no key.
	c, err = Parse([]string{"-m", "/m.gguf", "--listen", "127.0.0.1:8080"}, io.Discard)
	if err != nil || c.Listen != "127.0.0.1:8080" {
		t.Fatalf("c = %+v, err = %v", c, err)
	}
	keysFile := writeFile(t, "keys", good+"\n")
	c, err = Parse([]string{"-m", "/m.gguf", "--listen", "0.0.0.0:1", "--api-keys-file", keysFile}, io.Discard)
	if err != nil || len(c.Keys) != 1 {
		t.Fatalf("keys file: c = %+v, err = %v", c, err)
	}
	for _, args := range [][]string{
		{"-m", "/m.gguf", "--no-such-flag"},
		{"-m", "/m.gguf", "--listen", "0.0.0.0:1"},
		{"-m", "/m.gguf", "extra"},
		{"-m", "/m.gguf", "--config", writeFile(t, "bad.yaml", "bogus: 1\n")},
	} {
		if _, err := Parse(args, io.Discard); err == nil {
			t.Errorf("Parse(%q) succeeded", args)
		}
	}
	for _, tc := range []struct {
		args []string
		want CgroupMode
	}{
		{nil, CgroupAuto},
		{[]string{"--sandbox-cgroup"}, CgroupOn},
		{[]string{"--sandbox-cgroup=false"}, CgroupOff},
		{[]string{"--sandbox-cgroup=auto"}, CgroupAuto},
	} {
		c, err := Parse(append([]string{"-m", "/m.gguf"}, tc.args...), io.Discard)
		if err != nil || c.SandboxCgroup != tc.want {
			t.Errorf("%q: sandbox_cgroup %q (%v), want %q", tc.args, c.SandboxCgroup, err, tc.want)
		}
	}
	if _, err := Parse([]string{"-m", "/m.gguf", "--sandbox-cgroup=sometimes"}, io.Discard); err == nil {
		t.Error("--sandbox-cgroup=sometimes accepted")
	}
	var help strings.Builder
	if _, err := Parse([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help err = %v", err)
	}
	for _, key := range []string{"ctx-size", "model-sha256", "tls-min-version", "api-keys-file", "config", "key rate_limit_rpm"} {
		if !strings.Contains(help.String(), key) {
			t.Errorf("--help does not list %s", key)
		}
	}
}

// TestExampleDocumentsEveryKey keeps example.yaml complete and loadable.
func TestExampleDocumentsEveryKey(t *testing.T) {
	c := Default()
	if err := LoadFile(&c, "example.yaml"); err != nil {
		t.Fatal(err)
	}
	def := Default()
	def.Model = c.Model
	if len(c.APIKeys) == 0 {
		def.APIKeys = c.APIKeys
	}
	if !reflect.DeepEqual(c, def) {
		t.Errorf("example.yaml differs from the defaults:\n%+v\n%+v", c, def)
	}
	body, err := os.ReadFile("example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		key := typ.Field(i).Tag.Get("yaml")
		if key == "-" {
			continue
		}
		if !strings.Contains(string(body), "\n"+key+":") {
			t.Errorf("example.yaml does not document %s", key)
		}
	}
}

// TestRepeatableFlags: --alias and --cors-origin add one element each,
// replacing the file's list.
func TestRepeatableFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(file, []byte("model: /m.gguf\nmodel_aliases: [from-file]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Parse([]string{"--config", file, "--alias", "gpt-4o-mini", "--alias", "my model", "--cors-origin", "https://a.example"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.ModelAliases, []string{"gpt-4o-mini", "my model"}) || !reflect.DeepEqual(c.CORSOrigins, []string{"https://a.example"}) {
		t.Fatalf("aliases %q origins %q", c.ModelAliases, c.CORSOrigins)
	}
	if c, err = Parse([]string{"--config", file}, io.Discard); err != nil || !reflect.DeepEqual(c.ModelAliases, []string{"from-file"}) || c.CORSOrigins != nil {
		t.Fatalf("from the file: %q %q %v", c.ModelAliases, c.CORSOrigins, err)
	}
}
