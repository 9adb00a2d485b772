package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

// TestGGUFSynth runs `lisa gguf synth` on the mini shape and checks the
// file, and that bad arguments are usage errors.
func TestGGUFSynth(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	out := filepath.Join(t.TempDir(), "mini.gguf")
	var so, se bytes.Buffer
	if code := run([]string{"gguf", "synth", "--shape", "mini", "--type", "q8_0", "--vocab", vocab, "-o", out}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	f, err := gguf.Open(out, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ft, _ := f.Int32("general.file_type"); ft != 7 {
		t.Errorf("general.file_type %d, want 7 (Q8_0)", ft)
	}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no shape", []string{"gguf", "synth", "-o", out}, 2, "usage"},
		{"bad shape", []string{"gguf", "synth", "--shape", "huge", "-o", out}, 2, "unknown shape"},
		{"bad type", []string{"gguf", "synth", "--shape", "mini", "--type", "q3_k", "-o", out}, 2, "file type"},
		{"no vocab", []string{"gguf", "synth", "--shape", "mini", "-o", out + "2"}, 1, "vocabulary"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var so, se bytes.Buffer
			if code := run(tc.args, &so, &se); code != tc.code || !strings.Contains(se.String(), tc.msg) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, se.String(), tc.code, tc.msg)
			}
		})
	}
}
