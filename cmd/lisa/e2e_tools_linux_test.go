package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/shared"
)

// TestServeOpenAITools runs the function-calling and structured-output
// checks of tools/openai-check (the official openai npm client) against
// lisa serve on a random-weight model with the real Llama 2 vocabulary:
// whatever structure its output has comes from the grammar, so forced
// calls and json_schema output that parse and fit show the constrained
// decoding end to end.
func TestServeOpenAITools(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "openai-check"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, "openai")
	s := startServeModel(t, shared.Path(t, "models/mini-24m-q4_k_m.gguf"), "--ctx-size", "1024")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = dir
	// 376 and 500 are Llama 2's ' "' and ' }': a bias that closes a
	// random model's JSON strings and objects within the budget.
	cmd.Env = append(os.Environ(), "LISA_URL="+s.url+"/v1", "LISA_TOOLS=1", `LISA_JSON_BIAS={"376":8,"500":8}`)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openai-check: %v\n%s", err, out)
	}
	var res struct {
		Failures []string `json:"failures"`
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Failures == nil {
		t.Fatalf("openai-check output %q: %v", out, err)
	}
	if len(res.Failures) != 0 {
		t.Errorf("openai-check failures: %q", res.Failures)
	}
}
