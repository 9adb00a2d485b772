package gguf

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed seed corpus in testdata/fuzz/FuzzRead")

// TestSeedCorpus checks that the committed seed corpus holds the sample
// files and every hostile case (so plain `go test` replays them through
// FuzzRead); with -update it rewrites them.
func TestSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRead")
	seeds := map[string][]byte{
		"sample-align32": sampleFile(t, 32),
		"sample-align1":  sampleFile(t, 1),
		// Found by fuzzing: valid, but rewriting it wrote 512 MiB of padding.
		"valid-alignment-2^29": hdr(3, 0, 1).kvU32(KeyAlignment, 1<<29).b,
	}
	for _, c := range hostileCases() {
		prefix := "hostile-" // refused under the default limits
		if c.lim != (Limits{}) {
			prefix = "limit-" // refused only under the case's own limits
		}
		seeds[prefix+strings.ReplaceAll(c.name, " ", "-")] = c.data
	}
	for name, data := range seeds {
		path := filepath.Join(dir, name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("seed %s is missing or stale (run go test -run TestSeedCorpus -update): %v", name, err)
		}
	}
	// A seed named after a case that no longer exists would still be
	// replayed (and run through lisa gguf inspect by cmd/lisa's tests).
	// Entries found by fuzzing are named by their hash and stay.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if _, ok := seeds[name]; ok || !strings.HasPrefix(name, "hostile-") && !strings.HasPrefix(name, "limit-") && !strings.HasPrefix(name, "sample-") {
			continue
		}
		if *update {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("seed %s belongs to no case (run go test -run TestSeedCorpus -update)", name)
	}
}
