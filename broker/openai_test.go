package broker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/internal/shared"
)

// TestOpenAINodeClient runs tools/openai-check (the official openai npm
// package) against the broker on the fake backend. It needs node; it runs
// npm ci first when the package is not installed. Without node or npm it
// skips, except on CI.
func TestOpenAINodeClient(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node; skipped with -short")
	}
	dir, err := filepath.Abs(filepath.Join("..", "tools", "openai-check"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, "openai")
	fake := embedFake{newFake("Once", " there", " was", " a", " fox.")}
	ts := start(t, fake, keyConfig(t, func(c *config.Config) { c.Embeddings = true }))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LISA_URL="+ts.URL+"/v1", "LISA_API_KEY="+testKey, "LISA_EXPECT=Once there was a fox.", "LISA_EMBEDDINGS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openai-check failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"failures":[]`) {
		t.Fatalf("unexpected output:\n%s", out)
	}
	// The same client with a wrong key must get a 401 error.
	cmd = exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LISA_URL="+ts.URL+"/v1", "LISA_API_KEY=wrong")
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "401") {
		t.Fatalf("a wrong key was not refused with 401:\n%s", out)
	}
}
