package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServeRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, []byte("not parsed by the broker"), 0o600); err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 64)
	sum := sha256.Sum256([]byte("not parsed by the broker"))
	tests := []struct {
		name string
		args []string
		code int
		want []string // in stderr
	}{
		{"no model", []string{"--listen", "127.0.0.1:0"}, 2, []string{"model:"}},
		{"public without keys", []string{"-m", model, "--listen", "0.0.0.0:0"}, 2, []string{"not a loopback address"}},
		{"unknown flag", []string{"-m", model, "--ctx-sise", "3"}, 2, []string{"ctx-sise"}},
		{"plain key", []string{"-m", model, "--api-keys", "Zq8vR2mN5xL0pW7tK3hJ9cB4fD6gS1aE"}, 2, []string{"api_keys[0]"}},
		{"digest mismatch", []string{"-m", model, "--model-sha256", zeros, "--listen", "127.0.0.1:0"}, 1,
			[]string{zeros, hex.EncodeToString(sum[:])}},
		{"missing model", []string{"-m", filepath.Join(dir, "nope.gguf"), "--listen", "127.0.0.1:0"}, 1, []string{"nope.gguf"}},
	}
	for _, tt := range tests {
		var out, errb strings.Builder
		code := runServe(tt.args, &out, &errb)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d; stderr:\n%s", tt.name, code, tt.code, errb.String())
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, w, errb.String())
			}
		}
	}
}
