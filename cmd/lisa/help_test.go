package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpEveryCommand asks every command and subcommand for --help (and
// -h, and lisa help NAME): the help goes to stdout with exit 0 and has a
// synopsis, the flags with defaults where there are flags, and an example.
func TestHelpEveryCommand(t *testing.T) {
	var names []string
	for name, c := range commands() {
		names = append(names, name)
		for _, sub := range c.subs {
			names = append(names, name+" "+sub)
		}
	}
	for _, name := range names {
		for _, form := range []string{"--help", "-h", "help"} {
			args := append(strings.Fields(name), form)
			if form == "help" {
				args = append([]string{"help"}, strings.Fields(name)...)
			}
			var so, se bytes.Buffer
			code := run(args, &so, &se)
			out := so.String()
			switch {
			case code != 0:
				t.Errorf("lisa %s: exit %d, stderr %q", strings.Join(args, " "), code, se.String())
			case se.Len() != 0:
				t.Errorf("lisa %s: stderr %q, want nothing", strings.Join(args, " "), se.String())
			case !strings.HasPrefix(out, "usage: lisa "+name):
				t.Errorf("lisa %s: stdout does not start with the synopsis:\n%s", strings.Join(args, " "), out)
			case !strings.Contains(out, "\nexamples:\n  lisa ") && !strings.Contains(out, "\nexamples:\n  openssl"):
				t.Errorf("lisa %s: no example:\n%s", strings.Join(args, " "), out)
			}
		}
	}
}

// TestHelpFlagsWithDefaults checks the help lists the flags of commands
// that have some, with their defaults.
func TestHelpFlagsWithDefaults(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--help"}, []string{"-ctx-size", "(default 4)", "key model_sha256", "key tls_min_version", "-port", "-ngl", "no GPU offload", "-webui", "-check-config"}},
		{[]string{"bench", "--help"}, []string{"-p int", "(default 512)", "(default \"md\")"}},
		{[]string{"gguf", "synth", "--help"}, []string{"-shape", "(default \"q4_k_m\")", "qwen3-tiny"}},
		{[]string{"health", "-h"}, []string{"-url", "(default \"http://127.0.0.1:8080/health\")"}},
		{[]string{"doctor", "--help"}, []string{"-json"}},
		{[]string{"run", "--help"}, []string{"-temp", "(default 0.8)"}},
	}
	for _, tt := range tests {
		var so, se bytes.Buffer
		if code := run(tt.args, &so, &se); code != 0 {
			t.Fatalf("lisa %v: exit %d", tt.args, code)
		}
		for _, w := range tt.want {
			if !strings.Contains(so.String(), w) {
				t.Errorf("lisa %v: help lacks %q:\n%s", tt.args, w, so.String())
			}
		}
	}
}

// TestTopLevelHelp checks lisa --help lists every command and subcommand
// on stdout, and a bare lisa is a usage error on stderr.
func TestTopLevelHelp(t *testing.T) {
	var so, se bytes.Buffer
	if code := run([]string{"--help"}, &so, &se); code != 0 || se.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, se.String())
	}
	for name, c := range commands() {
		if !strings.Contains(so.String(), "\n  "+name+" ") {
			t.Errorf("lisa --help lacks %q", name)
		}
		for _, sub := range c.subs {
			if !strings.Contains(so.String(), "\n  "+name+" "+sub+" ") {
				t.Errorf("lisa --help lacks %q", name+" "+sub)
			}
		}
	}
	if !strings.Contains(so.String(), "gguf synth") {
		t.Errorf("lisa --help lacks gguf synth:\n%s", so.String())
	}
	so.Reset()
	se.Reset()
	if code := run(nil, &so, &se); code != 2 || so.Len() != 0 || !strings.Contains(se.String(), "usage: lisa") {
		t.Errorf("bare lisa: exit %d, stdout %q, stderr %q", code, so.String(), se.String())
	}
}

// TestUsageErrors checks a bad command line is exit 2 with the reason and
// the synopsis on stderr, nothing on stdout.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"version", "x"}, `unexpected argument "x"`},
		{[]string{"doctor", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"health", "x"}, "usage: lisa health"},
		{[]string{"gguf", "nope"}, `unknown subcommand "nope"`},
		{[]string{"gguf", "synth", "-o", "x.gguf"}, "--shape is required"},
		{[]string{"gguf", "tensor", "f.gguf", "name"}, "-o OUT is required"},
		{[]string{"tokenize", "hi"}, "-m MODEL is required"},
		{[]string{"models", "rm"}, "usage: lisa models rm"},
		{[]string{"help", "nope"}, `unknown command "nope"`},
		{[]string{"serve", "a.gguf", "b.gguf"}, `unexpected argument "b.gguf"`},
	}
	for _, tt := range tests {
		var so, se bytes.Buffer
		code := run(tt.args, &so, &se)
		if code != 2 || so.Len() != 0 || !strings.Contains(se.String(), tt.want) {
			t.Errorf("lisa %v: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, so.String(), se.String(), tt.want)
		}
	}
}
