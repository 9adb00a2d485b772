package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/model/synth"
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
	base.CtxSize, base.Parallel = 1024, 4
	for _, tc := range []struct {
		name    string
		entries []config.ModelEntry
		want    string // ids, or the error's text
	}{
		{"dir alone", nil, "a b"},
		{"refine by name", []config.ModelEntry{{Name: "a", Aliases: []string{"gpt"}, MemoryLimitBytes: 128 << 20}}, "a b"},
		{"own ctx_size and parallel", []config.ModelEntry{{Name: "a", CtxSize: 8192, Parallel: 1}}, "a b"},
		{"own ctx_size only", []config.ModelEntry{{Name: "a", CtxSize: 256}}, "a b"},
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
				wantCtx, wantPar := 1024, 4
				if m.id == "a" && len(tc.entries) > 0 {
					if e := tc.entries[0]; e.CtxSize != 0 {
						wantCtx = e.CtxSize
					}
					if e := tc.entries[0]; e.Parallel != 0 {
						wantPar = e.Parallel
					}
				}
				if m.ctxSize != wantCtx || m.parallel != wantPar {
					t.Errorf("%s: ctx_size %d and parallel %d, want %d and %d", m.id, m.ctxSize, m.parallel, wantCtx, wantPar)
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

// TestModelIdentity checks the identity of a model's files changes when
// the file is rewritten, touched or replaced, and a split model's with
// any shard, and stays while nothing changes.
func TestModelIdentity(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, "a.gguf", "s-00001-of-00002.gguf", "s-00002-of-00002.gguf")
	one := serveModel{id: "a", path: filepath.Join(dir, "a.gguf")}
	split := serveModel{id: "s", path: filepath.Join(dir, "s-00001-of-00002.gguf")}
	later := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name   string
		m      serveModel
		change func(t *testing.T)
		same   bool
	}{
		{"nothing changes", one, func(*testing.T) {}, true},
		{"rewritten, another size", one, func(t *testing.T) {
			if err := os.WriteFile(one.path, []byte("xy"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"touched", one, func(t *testing.T) {
			if err := os.Chtimes(one.path, later, later); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced, same size and time", one, func(t *testing.T) {
			st, err := os.Stat(one.path)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(dir, "tmp")
			data, _ := os.ReadFile(one.path)
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(tmp, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, one.path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a later shard touched", split, func(t *testing.T) {
			if err := os.Chtimes(filepath.Join(dir, "s-00002-of-00002.gguf"), later.Add(time.Hour), later.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"removed", one, func(t *testing.T) {
			if err := os.Remove(one.path); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := tc.m.identity()
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t)
			after, err := tc.m.identity()
			if err != nil {
				after = "error: " + err.Error()
			}
			if (before == after) != tc.same {
				t.Errorf("identity %q then %q, want the same: %v", before, after, tc.same)
			}
		})
	}
}

// TestModelPoolCheck runs a model's pool check in process (no sandbox)
// on a synthetic model: the charge is the memory cap, or without one the
// file's size with the KV cache and scratch of the model's own ctx_size
// and parallel; a truncated file, a wrong digest and settings the cap
// cannot hold fail it, naming no directory.
func TestModelPoolCheck(t *testing.T) {
	shape, ok := synth.Lookup("qwen3-tiny")
	if !ok {
		t.Fatal("no qwen3-tiny shape")
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "tiny.gguf")
	if _, err := synth.WriteFile(good, synth.Options{Shape: shape, Type: synth.F32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "cut.gguf")
	if err := os.WriteFile(truncated, data[:len(data)-4096], 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	cfg := config.Default()
	cfg.SandboxEnabled = false
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	charge := func(m serveModel) (int64, error) { return m.check(&cfg, logger)(context.Background()) }
	small, err := charge(serveModel{id: "tiny", path: good, ctxSize: 64, parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if small <= size {
		t.Fatalf("charge %d without a cap, want the file's %d bytes and more", small, size)
	}
	for _, tc := range []struct {
		name string
		m    serveModel
		want func(int64) bool
		err  string
	}{
		{"the cap", serveModel{id: "tiny", path: good, ctxSize: 64, parallel: 1, memLimit: 1 << 30}, func(c int64) bool { return c == 1<<30 }, ""},
		{"more slots count more", serveModel{id: "tiny", path: good, ctxSize: 64, parallel: 8}, func(c int64) bool { return c > small }, ""},
		{"a longer context counts more", serveModel{id: "tiny", path: good, ctxSize: 4096, parallel: 1}, func(c int64) bool { return c > small }, ""},
		{"truncated", serveModel{id: "cut", path: truncated, ctxSize: 64, parallel: 1}, nil, "ends beyond the file"},
		{"wrong digest", serveModel{id: "tiny", path: good, ctxSize: 64, parallel: 1, sha256: strings.Repeat("ab", 32)}, nil, "model_sha256"},
		{"over its cap", serveModel{id: "tiny", path: good, ctxSize: 1 << 16, parallel: 256, memLimit: 64 << 20}, nil, "lower parallel or ctx_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := charge(tc.m)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), dir) {
					t.Fatalf("error %v, want %q and no directory", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(c) {
				t.Errorf("charge %d (without a cap, 64 tokens and 1 slot: %d)", c, small)
			}
		})
	}
	// A check that outlives its context gives up at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (serveModel{id: "tiny", path: good}).check(&cfg, logger)(ctx); err == nil {
		t.Error("a check with its context ended passed")
	}
}
