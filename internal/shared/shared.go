// Package shared finds the project's shared test data (models, llama.cpp
// reference outputs, tokenizer vectors), which lives beside the repository
// in ../shared and is never committed into it.
//
// Tests that need it call Dir or Path: when the data is absent they skip
// with a clear message on a user's fresh clone, and fail when the CI
// environment variable is set, so CI can never pass by skipping.
package shared

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the environment variable that overrides the shared folder.
const EnvDir = "LISA_SHARED"

// Find returns the shared folder: $LISA_SHARED if set, otherwise the
// folder "shared" beside the module root found from the working
// directory. It returns "" when there is none.
func Find() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			cand := filepath.Join(filepath.Dir(dir), "shared")
			if st, err := os.Stat(cand); err == nil && st.IsDir() {
				return cand
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Dir returns the shared folder, or skips t (fails it when CI is set)
// when there is none.
func Dir(t testing.TB) string {
	t.Helper()
	d := Find()
	if d == "" {
		missing(t, "the shared test data folder (../shared beside the repository, or $"+EnvDir+")")
	}
	return d
}

// Path returns the file or folder rel inside the shared folder, or skips t
// (fails it when CI is set) when it is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), rel)
	if _, err := os.Stat(p); err != nil {
		missing(t, p)
	}
	return p
}

// Model returns the path of a model file in shared/models.
func Model(t testing.TB, name string) string {
	t.Helper()
	return Path(t, filepath.Join("models", name))
}

// Models lists the GGUF files in shared/models (skipping t when absent).
func Models(t testing.TB) []string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(Path(t, "models"), "*.gguf"))
	if len(ms) == 0 {
		missing(t, "GGUF files in shared/models")
	}
	return ms
}

func missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("test data missing on CI: %s", what)
	}
	t.Skipf("test data missing: %s (clone the project beside its shared/ folder to run this test)", what)
}
