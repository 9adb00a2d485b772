package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

func TestTokenizeCommand(t *testing.T) {
	vocab := shared.Path(t, "ref/vocab/ggml-vocab-llama-spm.gguf")
	gpt2 := shared.Path(t, "ref/vocab/ggml-vocab-gpt-2.gguf")
	stories := shared.Model(t, "stories260K.gguf")
	file := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(file, []byte("Hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"json", []string{"-m", vocab, "--json", "Hello world"}, 0, "[1,15043,3186]\n"},
		{"flags after text", []string{"-m", vocab, "Hello world", "--json", "--no-bos"}, 0, "[15043,3186]\n"},
		{"pieces", []string{"-m", vocab, "Hello world"}, 0, "     1 -> '<s>'\n 15043 -> ' Hello'\n  3186 -> ' world'\n"},
		{"file bytes", []string{"-m", vocab, "--json", "-f", file}, 0, "[1,15043,3186,13]\n"},
		{"special off", []string{"-m", vocab, "--json", "--no-bos", "</s>"}, 0, "[1533,29879,29958]\n"},
		{"special on", []string{"-m", vocab, "--json", "--no-bos", "--special", "</s>"}, 0, "[2]\n"},
		{"empty", []string{"-m", vocab, "--json", "--no-bos", ""}, 0, "[]\n"},
		{"gpt2 vocab", []string{"-m", gpt2, "--json", " Hello world!"}, 0, "[18435,995,0]\n"},
		{"model file", []string{"-m", stories, "--json", "Once upon a time"}, 0, "[1,403,407,261,378]\n"},
		{"no model", []string{"Hello"}, 2, ""},
		{"no text", []string{"-m", vocab}, 2, ""},
		{"text and file", []string{"-m", vocab, "-f", file, "Hello"}, 2, ""},
		{"two texts", []string{"-m", vocab, "a", "b"}, 2, ""},
		{"missing model", []string{"-m", filepath.Join(t.TempDir(), "none.gguf"), "x"}, 1, ""},
		{"not gguf", []string{"-m", file, "x"}, 1, ""},
		{"missing file", []string{"-m", vocab, "-f", file + ".none"}, 1, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		// The test binary cannot be the sandboxed worker:
		// TestModelCommandsSandboxed runs the built binary.
		code := run(append([]string{"tokenize", "--no-sandbox"}, c.args...), &out, &errb)
		if code != c.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", c.name, code, c.code, errb.String())
			continue
		}
		if c.code == 0 && out.String() != c.out {
			t.Errorf("%s: stdout %q, want %q", c.name, out.String(), c.out)
		}
		if c.code != 0 && errb.Len() == 0 {
			t.Errorf("%s: nothing on stderr", c.name)
		}
	}
}

func TestPrintable(t *testing.T) {
	cases := map[string]string{"a b": "a b", "\n": `\n`, "\xe2": `\xe2`, "é": "é", "\x00": `\x00`}
	for in, want := range cases {
		if got := printable([]byte(in)); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
	if strings.Contains(printable([]byte("\t")), "\t") {
		t.Error("tab not escaped")
	}
}
