package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// readmeCommand is one lisa invocation found in a shell block of README.md.
type readmeCommand struct {
	line string   // the whole shell line, for messages
	args []string // the words after lisa
}

// readmeShellLines returns the lines of the README's ```sh blocks in
// order, continuation lines joined.
func readmeShellLines(readme string) []string {
	inSh := false
	var lines []string
	for _, l := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			inSh = !inSh && strings.TrimSpace(strings.TrimPrefix(l, "```")) == "sh"
			continue
		case !inSh:
			continue
		}
		if n := len(lines); n > 0 && strings.HasSuffix(lines[n-1], "\\") {
			lines[n-1] = strings.TrimSuffix(lines[n-1], "\\") + " " + strings.TrimSpace(l)
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// readmeCommands extracts every lisa invocation from the README's ```sh
// blocks: pipelines and lists split, words after a redirection dropped.
func readmeCommands(readme string) []readmeCommand {
	var out []readmeCommand
	lines := readmeShellLines(readme)
	seps := regexp.MustCompile(`\|\||&&|[|;]`)
	for _, line := range lines {
		for _, seg := range seps.Split(line, -1) {
			words := strings.Fields(seg)
			if len(words) == 0 || (words[0] != "./lisa" && words[0] != "lisa" && words[0] != "/lisa") {
				continue
			}
			var args []string
			for _, w := range words[1:] {
				if strings.HasPrefix(w, "<") || strings.HasPrefix(w, ">") {
					break
				}
				args = append(args, w)
			}
			out = append(out, readmeCommand{line: strings.TrimSpace(line), args: args})
		}
	}
	return out
}

func TestReadmeCommandsParse(t *testing.T) {
	md := "text ./lisa nope\n```sh\nmake build\n./lisa serve -m m.gguf \\\n  --listen 127.0.0.1:8080\n" +
		"./lisa hash-key < api.key > api.keys && ./lisa version\n```\n```python\nlisa bogus\n```\n"
	got := readmeCommands(md)
	want := [][]string{{"serve", "-m", "m.gguf", "--listen", "127.0.0.1:8080"}, {"hash-key"}, {"version"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %q", got, want)
	}
	for i := range want {
		if strings.Join(got[i].args, " ") != strings.Join(want[i], " ") {
			t.Errorf("command %d: %q, want %q", i, got[i].args, want[i])
		}
	}
}

// TestReadmeCommands checks that every lisa command in the README's shell
// blocks names a real subcommand and only flags that subcommand's help
// lists, and that the models it names exist in ../shared, so the README
// cannot drift from the binary.
func TestReadmeCommands(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(string(data))
	if len(cmds) < 8 {
		t.Fatalf("found %d lisa commands in README.md, expected the quick start's and more: %+v", len(cmds), cmds)
	}
	known := commands()
	help := map[string]string{}
	seen := map[string]bool{}
	for _, c := range cmds {
		if len(c.args) == 0 {
			t.Errorf("%q: no subcommand", c.line)
			continue
		}
		sub := c.args[0]
		if _, ok := known[sub]; !ok {
			t.Errorf("%q: lisa has no subcommand %q", c.line, sub)
			continue
		}
		seen[sub] = true
		// A subcommand (gguf synth) has a help of its own.
		name, rest := []string{sub}, c.args[1:]
		if len(rest) > 0 && slices.Contains(known[sub].subs, rest[0]) {
			name, rest = append(name, rest[0]), rest[1:]
		}
		key := strings.Join(name, " ")
		if _, ok := help[key]; !ok {
			var out, errb bytes.Buffer
			if code := run(append(name, "-h"), &out, &errb); code != 0 || errb.Len() != 0 {
				t.Errorf("lisa %s -h: exit %d, stderr %q", key, code, errb.String())
			}
			help[key] = out.String()
		}
		for i, a := range rest {
			if !strings.HasPrefix(a, "-") {
				continue
			}
			name := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-")
			if name == "h" || name == "help" {
				continue // every flag set has them
			}
			re := regexp.MustCompile(`(^|[\s\[])--?` + regexp.QuoteMeta(name) + `([\s\]=,]|$)`)
			if !re.MatchString(help[key]) {
				t.Errorf("%q: lisa %s -h lists no flag %q:\n%s", c.line, key, a, help[key])
			}
			model := ""
			if i+1 < len(rest) {
				model = strings.TrimPrefix(strings.Trim(rest[i+1], `"`), "$PWD/")
			}
			if (a == "-m" || a == "--model") && strings.HasPrefix(model, "../shared/") {
				dir := shared.Dir(t) // skips (fails on CI) without ../shared
				rel := filepath.FromSlash(strings.TrimPrefix(model, "../shared/"))
				if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
					t.Errorf("%q: the model it names is not in the shared folder: %v", c.line, err)
				}
			}
		}
	}
	for _, sub := range []string{"serve", "hash-key", "version", "doctor"} {
		if !seen[sub] {
			t.Errorf("README.md never shows lisa %s", sub)
		}
	}
}
