package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
)

// TestBenchStartup measures `lisa serve` on stories260K through the
// built binary (which the measurement starts again as the server): one
// warm-up and two runs, each a positive time, the flags after -- reach
// the server.
func TestBenchStartup(t *testing.T) {
	model := shared.Path(t, "models/stories260K.gguf")
	bin := e2eBinary(t)
	cmd := exec.Command(bin, "bench", "startup", "-m", model, "-r", "2", "-o", "json", "--", "--threads", "1", "-c", "256")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r struct {
		ModelFilename string    `json:"model_filename"`
		ModelBytes    int64     `json:"model_file_bytes"`
		AvgMs         float64   `json:"avg_ms"`
		SamplesMs     []float64 `json:"samples_ms"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if r.ModelFilename != model || r.ModelBytes < 1000 || len(r.SamplesMs) != 2 || r.AvgMs <= 0 || r.SamplesMs[0] <= 0 {
		t.Errorf("result %+v", r)
	}
	// A server flag serve refuses stops the first run with its message.
	cmd = exec.Command(bin, "bench", "startup", "-m", model, "-r", "1", "--", "--no-such-flag")
	errb.Reset()
	cmd.Stderr = &errb
	if err := cmd.Run(); err == nil || !strings.Contains(errb.String(), "exited before it was healthy") ||
		!strings.Contains(errb.String(), "no-such-flag") {
		t.Errorf("a bad serve flag: %v\n%s", err, errb.String())
	}
}
