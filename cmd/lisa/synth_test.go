package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model/synth"
)

// TestGGUFSynth runs `lisa gguf synth` on the mini shape and checks the
// file, and that bad arguments are usage errors.
func TestGGUFSynth(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	out := filepath.Join(t.TempDir(), "mini.gguf")
	var so, se bytes.Buffer
	if code := run([]string{"gguf", "synth", "--shape", "mini", "--type", "q8_0", "--vocab", vocab, "--no-sandbox", "-o", out}, &so, &se); code != 0 {
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
		{"bad type", []string{"gguf", "synth", "--shape", "mini", "--type", "iq2_xs", "-o", out}, 2, "file type"},
		{"no vocab", []string{"gguf", "synth", "--shape", "mini", "-o", out + "2"}, 1, "vocabulary"},
		{"vocab of the wrong size", []string{"gguf", "synth", "--shape", "qwen2-tiny", "--vocab", vocab, "--no-sandbox", "-o", out + "3"}, 1, "32000 tokens"},
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

// TestGGUFSynthFamilies writes each family's tiny shape with its
// synthetic tokenizer (no vocabulary file needed) and checks the
// architecture and tokenizer keys of the file.
func TestGGUFSynthFamilies(t *testing.T) {
	tests := []struct{ shape, arch, pre string }{
		{"llama3-tiny", "llama", "llama-bpe"},
		{"mistral-tiny", "llama", "tekken"},
		{"qwen2-tiny", "qwen2", "qwen2"},
		{"qwen3-tiny", "qwen3", "qwen2"},
		{"granite-tiny", "granite", "refact"},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), tc.shape+".gguf")
			var so, se bytes.Buffer
			if code := run([]string{"gguf", "synth", "--shape", tc.shape, "--type", "q4_k_m", "-o", out}, &so, &se); code != 0 {
				t.Fatalf("exit %d: %s", code, se.String())
			}
			f, err := gguf.Open(out, gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			arch, _ := f.String("general.architecture")
			pre, _ := f.String("tokenizer.ggml.pre")
			tmpl, _ := f.String("tokenizer.chat_template")
			if arch != tc.arch || pre != tc.pre || tmpl == "" {
				t.Errorf("architecture %q, pre %q, template of %d bytes; want %q, %q, a template", arch, pre, len(tmpl), tc.arch, tc.pre)
			}
		})
	}
}

// TestGGUFSynthList checks --shape list and the usage text name every
// shape.
func TestGGUFSynthList(t *testing.T) {
	var so, se bytes.Buffer
	if code := run([]string{"gguf", "synth", "--shape", "list"}, &so, &se); code != 0 {
		t.Fatalf("exit %d: %s", code, se.String())
	}
	var uo, ue bytes.Buffer
	run([]string{"gguf", "synth", "--help"}, &uo, &ue)
	for _, s := range synth.Shapes() {
		if !strings.Contains(so.String(), s.Name+" ") || !strings.Contains(uo.String(), s.Name+" ") || ue.Len() != 0 {
			t.Errorf("shape %s missing from --shape list or --help", s.Name)
		}
	}
}
