package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runtimeLines returns the instructions after the last FROM of a
// Dockerfile, comments and blank lines dropped, COPY left out (the two
// files fill the root differently).
func runtimeLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "FROM "):
			out = out[:0]
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "COPY "):
		default:
			out = append(out, l)
		}
	}
	return out
}

// TestPrebuiltDockerfileMatches keeps deploy/Dockerfile.prebuilt's image
// the same as the Dockerfile's: user, port, volume, health check, entry
// point and command.
func TestPrebuiltDockerfileMatches(t *testing.T) {
	root := filepath.Join("..", "..")
	want := runtimeLines(t, filepath.Join(root, "Dockerfile"))
	got := runtimeLines(t, filepath.Join(root, "deploy", "Dockerfile.prebuilt"))
	if len(want) < 5 || !slices.Equal(got, want) {
		t.Fatalf("deploy/Dockerfile.prebuilt's final stage:\n%s\nthe Dockerfile's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
