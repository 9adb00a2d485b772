package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/internal/splitgguf"
)

// writeSplit writes stories260K split in three shards, as gguf-split
// does, into a directory of their own and returns their paths.
func writeSplit(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // the worker's user namespace reaches it as "other"
	paths, err := splitgguf.Write(shared.Model(t, "stories260K.gguf"), dir, "stories", 3)
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// TestServeSplitModel: lisa serve given the first shard of a split model
// serves it from all three shards in the sandboxed worker, answering every
// greedy completion as the whole file does (llama.cpp's reference, which
// TestServeEndToEnd holds the whole file to).
func TestServeSplitModel(t *testing.T) {
	paths := writeSplit(t)
	s := startServeModel(t, paths[0])
	for prompt, want := range refGreedy(t) {
		code, out := s.post(t, "/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 64, "temperature": 0})
		if code != http.StatusOK {
			t.Fatalf("%q: status %d %v", prompt, code, out)
		}
		if text, _, _ := completion(t, out); text != want {
			t.Errorf("%q from the split model:\n got %q\nwant %q (the whole file's)", prompt, text, want)
		}
	}
	if logs := s.logs.String(); !strings.Contains(logs, `"tensors":48`) {
		t.Errorf("the worker did not load stories260K's 48 tensors from the shards:\n%s", logs)
	}
}

// TestServeSplitMissingShard: a split model with a shard missing stops
// lisa serve before it listens, with an error naming the shard; so does
// the path of a later shard.
func TestServeSplitMissingShard(t *testing.T) {
	bin := e2eBinary(t)
	paths := writeSplit(t)
	if err := os.Remove(paths[1]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		model string
		want  []string
	}{
		{paths[0], []string{"shard 2 of 3 (stories-00002-of-00003.gguf) cannot be opened", "no such file"}},
		{paths[2], []string{"shard 3 of 3", "is not the first shard", "stories-00001-of-00003.gguf"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bin, "serve", "-m", c.model, "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("%s: lisa serve still running after 30 s:\n%s", filepath.Base(c.model), out)
		}
		if err == nil {
			t.Errorf("%s: lisa serve exited 0", filepath.Base(c.model))
		}
		for _, w := range c.want {
			if !bytes.Contains(out, []byte(w)) {
				t.Errorf("%s: output does not say %q:\n%s", filepath.Base(c.model), w, out)
			}
		}
	}
}

// TestRunSplitModel: lisa run, sandboxed, generates from a split model
// what it generates from the whole file, and its --json evaluation
// worker reads the split model too.
func TestRunSplitModel(t *testing.T) {
	bin := e2eBinary(t)
	paths := writeSplit(t)
	ref := readRunRef(t, "stories260K.gguf")
	p := ref.Prompts[0]
	lisaRun := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append([]string{"run", "-m", paths[0], "-p", p.Prompt, "-n", fmt.Sprint(len(p.GeneratedIDs)), "--temp", "0"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lisa run %v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	if out := lisaRun(); out != p.GeneratedText+"\n" {
		t.Errorf("split model, sandboxed: %q\nwhole file (llama.cpp): %q", out, p.GeneratedText)
	}
	got := decodeRunJSON(t, lisaRun("--json"))
	if !slices.Equal(got.GeneratedIDs, p.GeneratedIDs) {
		t.Errorf("split model, evaluation worker: ids %v, want %v", got.GeneratedIDs, p.GeneratedIDs)
	}
}

// TestSandboxCheckSplit: lisa sandbox-check on a split model's first shard
// locks the probe worker down with every shard mounted and checked, and
// every probe is still blocked.
func TestSandboxCheckSplit(t *testing.T) {
	paths := writeSplit(t)
	out, errs, code := runLisa(t, buildLisa(t), "sandbox-check", "--json", "-m", paths[0])
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, errs)
	}
	var r struct {
		Layers []struct {
			Name    string
			Applied bool
			Detail  string
		}
		Probes []struct {
			Name    string
			Blocked bool
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	var checked bool
	for _, l := range r.Layers {
		checked = checked || (l.Name == "model inode check" && l.Applied && strings.Contains(l.Detail, "fds 4–6"))
	}
	if !checked {
		t.Errorf("no inode check of the three shards' fds 4–6 in %+v", r.Layers)
	}
	if len(r.Probes) == 0 {
		t.Error("no probes ran")
	}
	for _, p := range r.Probes {
		if !p.Blocked {
			t.Errorf("probe %q not blocked with a split model", p.Name)
		}
	}
}
