package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	s := startServeModel(t, shared.Path(t, "models/mini-24m-q4_k_m.gguf"), "--ctx-size", "1024")
	// 376 and 500 are Llama 2's ' "' and ' }': a bias that closes a
	// random model's JSON strings and objects within the budget.
	checkOpenAITools(t, s, `{"376":8,"500":8}`)
}

// TestServeOpenAIToolsHarmony runs the same checks against gpt-oss-tiny
// (random weights, gpt-oss's vocabulary and Harmony template): forced
// calls, streamed and whole, runTools, a tool result round trip and the
// Responses API's forced call, through Harmony's message headers.
func TestServeOpenAIToolsHarmony(t *testing.T) {
	path, tok := synthGptOss(t)
	bias := map[string]int{}
	for _, s := range []string{` "`, ` }`} {
		ids := tok.Encode(s, false, false)
		if len(ids) != 1 {
			t.Fatalf("%q is %d tokens", s, len(ids))
		}
		bias[strconv.Itoa(int(ids[0]))] = 8
	}
	b, _ := json.Marshal(bias)
	checkOpenAITools(t, startServeModel(t, path, "--ctx-size", "4096"), string(b))
}

// checkOpenAITools runs tools/openai-check's function-calling checks
// (LISA_TOOLS) against s, with jsonBias as the logit_bias of its
// json_object request.
func checkOpenAITools(t *testing.T, s *server, jsonBias string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "openai-check"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, "openai")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LISA_URL="+s.url+"/v1", "LISA_TOOLS=1", "LISA_JSON_BIAS="+jsonBias)
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
