package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/sandbox"
)

// buildLisa builds the real lisa binary (cgo-free, as shipped): the
// sandbox-check workers are re-executions of it.
func buildLisa(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lisa")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, to build lisa: %v", err)
	}
	cmd := exec.Command(gobin, "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build lisa: %v\n%s", err, out)
	}
	return bin
}

// runLisa runs the binary and returns stdout, stderr and the exit code.
func runLisa(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), errb.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), 0
}

func TestSandboxCheck(t *testing.T) {
	model := shared.Model(t, "stories260K.gguf")
	bin := buildLisa(t)
	out, errs, code := runLisa(t, bin, "sandbox-check", "--json", "-m", model)
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errs)
	}
	var r struct {
		Layers []struct {
			Name               string
			Requested, Applied bool
			Detail             string
		}
		Probes []struct {
			Name, Phase   string
			Blocked       bool
			How, Evidence string
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(r.Probes) != len(sandbox.ProbeNames()) {
		t.Errorf("%d probes, want %d", len(r.Probes), len(sandbox.ProbeNames()))
	}
	listed := map[string]bool{}
	for _, p := range r.Probes {
		listed[p.Name] = true
		if !p.Blocked || p.How == "" || p.Phase == "" || p.Evidence == "" {
			t.Errorf("probe %+v", p)
		}
	}
	// Issue 20's probes: setrlimit itself, connect past socket, Landlock's
	// rules before seccomp, shared memory past the cap, a thread bomb.
	for _, want := range []string{"setrlimit", "TCP connect past socket (Landlock network rule)",
		"list / past seccomp (Landlock)", "signal a process outside the domain (Landlock scope)",
		"map shared memory past the cap", "thread bomb"} {
		if !listed[want] {
			t.Errorf("sandbox-check --json does not list probe %q", want)
		}
	}
	applied := map[string]bool{}
	for _, l := range r.Layers {
		applied[l.Name] = l.Applied
		if l.Name == "landlock" && !strings.HasPrefix(l.Detail, "ABI ") {
			t.Errorf("landlock layer without its ABI: %+v", l)
		}
	}
	for _, want := range []string{"landlock", "seccomp stage 1", "seccomp stage 2", "root", "capabilities"} {
		if !applied[want] {
			t.Errorf("layer %q not applied: %+v", want, r.Layers)
		}
	}

	// In seccomp-log mode nothing is blocked: the command must fail.
	out, errs, code = runLisa(t, bin, "sandbox-check", "--seccomp-log", "-m", model)
	if code != 1 || !strings.Contains(errs, "NOT blocked") {
		t.Errorf("log mode: exit %d, stderr %q; want 1 and an unblocked probe named", code, errs)
	}
	if !strings.Contains(out, "PROBE") || !strings.Contains(out, "LOGGED, NOT BLOCKED") {
		t.Errorf("table output:\n%s", out)
	}
}

func TestSandboxCheckUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"-m"}, {"-m", "x", "extra"}, {"--bogus"}} {
		var out, errb bytes.Buffer
		if code := runSandboxCheck(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	var out, errb bytes.Buffer
	if code := runSandboxCheck([]string{"-m", "/nonexistent.gguf"}, &out, &errb); code != 1 {
		t.Errorf("missing model: exit %d, want 1", code)
	}
}
