package bench

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// llamaCppLib returns the folder of the prebuilt llama.cpp library that
// bench/llamacpp/run.sh installs, or skips the test when it or a C
// compiler is absent (it is fetched from the npm registry on demand, not
// part of ../shared).
func llamaCppLib(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the prebuilt llama.cpp package is for linux/amd64")
	}
	dir := os.Getenv("LLAMACPP_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Skip("no cache folder:", err)
		}
		dir = filepath.Join(cache, "lisa-llamacpp")
	}
	lib := filepath.Join(dir, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
	if _, err := os.Stat(filepath.Join(lib, "libllama.v0.5.0.so")); err != nil {
		t.Skipf("llama.cpp is not installed in %s (bench/llamacpp/run.sh installs it): %v", dir, err)
	}
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler:", err)
	}
	return lib
}

// TestLLBenchDepth compiles bench/llamacpp/llbench.c as run.sh does and
// runs it on the mini model at depths 0 and 32: its output reads as
// results (ReadResults) in llama-bench's order and names, and bad depth
// lists are refused.
func TestLLBenchDepth(t *testing.T) {
	lib := llamaCppLib(t)
	bin := filepath.Join(t.TempDir(), "llbench")
	cc := exec.Command("cc", "-O2", "-Wall", "-Werror", "-o", bin, filepath.Join("llamacpp", "llbench.c"), "-L"+lib,
		"-l:libllama.v0.5.0.so", "-l:libggml.v0.5.0.so", "-l:libggml-base.so", "-lm", "-Wl,-rpath,"+lib)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	model := miniModel(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, lib, model, "1", "16", "4", "1", "0,32")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("llbench: %v\n%s", err, stderr.String())
	}
	rs, err := ReadResults(&stdout)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Test())
		if r.NBatch != DefaultNBatch || r.NUBatch != DefaultNUBatch || r.NThreads != 1 || r.AvgTs <= 0 || r.ModelNParams != 17958144 {
			t.Errorf("%s: %+v", r.Test(), r)
		}
	}
	if want := []string{"pp16", "tg4", "pp16 @ d32", "tg4 @ d32"}; !slices.Equal(got, want) {
		t.Errorf("tests %q, want %q", got, want)
	}
	if !strings.Contains(stderr.String(), "llbench: depth 32, 1 threads: filling the cache") {
		t.Errorf("no fill at depth 32:\n%s", stderr.String())
	}
	for _, bad := range []string{"0,-1", "x", "0,,1", "2000000", "", "1,", " 1"} {
		cmd := exec.Command(bin, lib, model, "1", "16", "4", "1", bad)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "bad depth list") {
			t.Errorf("depths %q: %v\n%s", bad, err, out)
		}
	}
}
