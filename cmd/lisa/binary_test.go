package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Tests that run the lisa binary as a user does share one build of it.

var (
	e2eOnce sync.Once
	e2ePath string
	e2eErr  error
)

// e2eBinary builds lisa (CGO_ENABLED=0, -trimpath) once for every test
// of the package that runs the binary.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the lisa binary; skipped with -short")
	}
	e2eOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lisa-e2e-")
		if err != nil {
			e2eErr = err
			return
		}
		e2ePath = filepath.Join(dir, "lisa")
		cmd := exec.Command("go", "build", "-trimpath", "-o", e2ePath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			e2eErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	return e2ePath
}

// TestMain removes the binary the end-to-end tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if e2ePath != "" {
		os.RemoveAll(filepath.Dir(e2ePath))
	}
	os.Exit(code)
}
