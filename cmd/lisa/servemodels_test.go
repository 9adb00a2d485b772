package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/config"
)

// writeFiles makes the named files (contents "x") in dir.
func writeFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func modelIDs(ms []serveModel) string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	return strings.Join(ids, " ")
}

func TestScanModelsDir(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "a.gguf", "B.GGUF", "big-00001-of-00002.gguf", "big-00002-of-00002.gguf", ".hidden.gguf",
		"a b.gguf", "-flag.gguf", "readme.md", "c.gguf.part")
	other := t.TempDir()
	writeFiles(t, other, "out.gguf")
	for link, target := range map[string]string{"in.gguf": filepath.Join(dir, "a.gguf"), "out.gguf": filepath.Join(other, "out.gguf"),
		"dangling.gguf": filepath.Join(dir, "nothing"), "up.gguf": "../" + filepath.Base(other) + "/out.gguf"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "d.gguf"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	ms, err := scanModelsDir(dir, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(modelIDs(ms))
	want := map[string]bool{"a": true, "B": true, "big": true, "in": true}
	if len(got) != len(want) {
		t.Errorf("models %q, want %v", got, want)
	}
	for _, id := range got {
		if !want[id] {
			t.Errorf("model %q should have been skipped", id)
		}
	}
	for _, m := range ms {
		if filepath.Dir(m.path) == other || !strings.HasPrefix(m.path, "/") {
			t.Errorf("model %s has the path %s", m.id, m.path)
		}
	}
	for _, skipped := range []string{"file=out.gguf", "file=up.gguf", "file=dangling.gguf", "file=d.gguf", `file="a b.gguf"`, "file=-flag.gguf"} {
		if !strings.Contains(logs.String(), skipped) {
			t.Errorf("no warning for %s in\n%s", skipped, logs.String())
		}
	}

	// Too many models is an error, not a truncated list.
	many := t.TempDir()
	for i := range config.MaxModels + 1 {
		writeFiles(t, many, fmt.Sprintf("m-%d.gguf", i))
	}
	if _, err := scanModelsDir(many, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "more than 256 GGUF models") {
		t.Errorf("a directory of %d models: %v", config.MaxModels+1, err)
	}
}

func TestMultiModels(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "a.gguf", "b.gguf")
	extra := filepath.Join(t.TempDir(), "x.gguf")
	writeFiles(t, filepath.Dir(extra), "x.gguf")
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	base := config.Default()
	base.MemoryLimitBytes = 1 << 30
	for _, tc := range []struct {
		name    string
		entries []config.ModelEntry
		want    string // ids, or the error's text
	}{
		{"dir alone", nil, "a b"},
		{"refine by name", []config.ModelEntry{{Name: "a", Aliases: []string{"gpt"}, MemoryLimitBytes: 128 << 20}}, "a b"},
		{"refine by path, renamed", []config.ModelEntry{{Path: filepath.Join(dir, "b.gguf"), Name: "bee"}}, "a bee"},
		{"added file", []config.ModelEntry{{Path: extra, Preload: true}}, "a b x"},
		{"unknown name", []config.ModelEntry{{Name: "zz"}}, `models[0]: models_dir has no model "zz"`},
		{"id taken", []config.ModelEntry{{Path: extra, Name: "a"}}, `models[0]: the model id "a" is also`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			cfg.ModelsDir, cfg.Models = dir, tc.entries
			ms, err := multiModels(&cfg, discard)
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want %q", err, tc.want)
				}
				return
			}
			if got := modelIDs(ms); got != tc.want {
				t.Fatalf("ids %q, want %q", got, tc.want)
			}
			for _, m := range ms {
				wantLimit := int64(1 << 30)
				if m.id == "a" && len(tc.entries) > 0 && tc.entries[0].MemoryLimitBytes != 0 {
					wantLimit = tc.entries[0].MemoryLimitBytes
					if len(m.aliases) != 1 {
						t.Errorf("a lost its aliases: %+v", m)
					}
				}
				if m.memLimit != wantLimit {
					t.Errorf("%s: memory cap %d, want %d", m.id, m.memLimit, wantLimit)
				}
				if c, err := m.charge(); err != nil || c != wantLimit {
					t.Errorf("%s: charge %d (%v), want its cap %d", m.id, c, err, wantLimit)
				}
				if m.id == "x" && !m.preload {
					t.Error("x lost its preload")
				}
			}
		})
	}
	// Without a memory cap, a model counts its files' size.
	cfg := base
	cfg.ModelsDir, cfg.MemoryLimitBytes = dir, 0
	ms, err := multiModels(&cfg, discard)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := ms[0].charge(); err != nil || c != 1 {
		t.Errorf("charge without a cap: %d (%v), want the file's 1 byte", c, err)
	}
}
