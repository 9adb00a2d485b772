package config

import (
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	digest, err := HashKey("Zq8vR2mN5xL0pW7tK3hJ9cB4fD6gS1aE")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mod  func(*Config)
		want []string // labels, in order
	}{
		{"defaults", func(*Config) {}, nil},
		{"no sandbox", func(c *Config) { c.SandboxEnabled = false }, []string{"SANDBOX DISABLED"}},
		{"seccomp log", func(c *Config) { c.SandboxSeccompLog = true }, []string{"SECCOMP LOG MODE"}},
		{"no memory limit", func(c *Config) { c.MemoryLimitBytes = 0 }, []string{"NO MEMORY LIMIT"}},
		{"plain HTTP off loopback", func(c *Config) { c.Listen = "0.0.0.0:8080" }, []string{"API KEYS IN CLEAR"}},
		{"behind a TLS proxy", func(c *Config) { c.Listen, c.BehindTLSProxy = "0.0.0.0:8080", true }, nil},
		{"plain HTTP on loopback", func(c *Config) { c.Listen = "127.0.0.1:8080" }, nil},
		{"all at once", func(c *Config) { c.Listen, c.SandboxSeccompLog, c.MemoryLimitBytes = "[::]:80", true, 0 },
			[]string{"SECCOMP LOG MODE", "NO MEMORY LIMIT", "API KEYS IN CLEAR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Model = "/m.gguf"
			c.APIKeys = []string{digest.String()}
			tt.mod(&c)
			if err := c.Resolve(); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Warnings() {
				label, _, _ := strings.Cut(w.Message, ":")
				got = append(got, label)
				if w.Key == "" {
					t.Errorf("warning %q names no key", w.Message)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
		})
	}
}
