package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/sandbox"
)

// TestSandboxLauncher runs the real worker.Main in workers started by
// sandbox.Start, unsandboxed and sandboxed, through the real supervisor.
func TestSandboxLauncher(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sandboxed processes")
	}
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprint("sandbox=", enabled), func(t *testing.T) {
			if enabled && cgoEnabled {
				t.Skip("the sandbox needs a cgo-free test binary (CGO_ENABLED=0)")
			}
			path := filepath.Join(t.TempDir(), "model.gguf")
			if err := os.WriteFile(path, []byte("the echo engine reads no byte of this"), 0o644); err != nil {
				t.Fatal(err)
			}
			model, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer model.Close()
			logs := &logBuffer{}
			stderr := &logBuffer{}
			l := SandboxLauncher{Config: sandbox.Config{Enabled: enabled, ModelPath: path, Model: model,
				Executable: os.Args[0], Stderr: stderr}}
			cfg := testConfig(logs)
			cfg.ReadyTimeout = 20 * time.Second
			s := startSupervisor(t, cfg, l)
			ctx := context.Background()
			info, err := s.Info(ctx)
			if err != nil || info.Name != "echo" {
				t.Fatalf("info %+v, %v", info, err)
			}
			if enabled && info.LandlockABI == 0 {
				t.Logf("no Landlock ABI reported (kernel without Landlock?)")
			}
			ch, err := s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 3})
			if err != nil {
				t.Fatal(err)
			}
			if text, evs := collect(t, ch); text != "tok0 tok1 tok2 " || last(evs).Kind != broker.EventDone {
				t.Fatalf("generation %q %+v; worker stderr: %s; log: %s", text, last(evs), stderr.b.String(), logs.b.String())
			}
			if ids, err := s.Tokenize(ctx, "ab", false); err != nil || len(ids) != 2 {
				t.Fatalf("tokenize %v %v", ids, err)
			}
			cctx, cancel := context.WithCancel(ctx)
			ch, _ = s.Generate(cctx, gen.Request{Prompt: sp("x"), MaxTokens: 100000})
			<-ch
			cancel()
			collect(t, ch)
			// A worker killed from outside is logged and replaced.
			s.mu.Lock()
			s.cur.w.Kill()
			s.mu.Unlock()
			waitFor(t, "the restart", func() bool { return s.WorkerStats().Restarts == 1 && s.Health() == nil })
			lines := logs.lines("worker died")
			if len(lines) != 1 || !strings.Contains(lines[0], "killed by signal 9") {
				t.Fatalf("death lines %q", lines)
			}
			if _, err := s.Detokenize(ctx, []int32{104, 105}); err != nil && !errors.Is(err, broker.ErrNotReady) {
				t.Fatalf("after the restart: %v", err)
			}
		})
	}
}
