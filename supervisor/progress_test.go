package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// TestModelLoadedStories runs the real worker loop and engine on
// stories260K behind the supervisor and checks the "model loaded" line
// counts every tensor of the file and its bytes.
func TestModelLoadedStories(t *testing.T) {
	path := filepath.Join(shared.Dir(t), "models", "stories260K.gguf")
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var bytes int64
	for i := range f.Tensors {
		bytes += f.Tensors[i].Size
	}
	tensors := len(f.Tensors)
	f.Close()
	real := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		fh, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer fh.Close()
		serving := func() ([]ipc.Layer, int, error) { return nil, 0, nil }
		var eng worker.Engine
		load := func(fhs []*os.File, h ipc.Hello, progress func(worker.LoadProgress)) (worker.Engine, error) {
			var err error
			eng, err = engine.Load(fhs, h, progress)
			return eng, err
		}
		worker.Run(conn, []*os.File{fh}, load, serving)
		if e, ok := eng.(*engine.Engine); ok {
			e.Close() // its scheduler, which a worker process would leave to its exit
		}
	}
	logs := &logBuffer{}
	cfg := testConfig(logs)
	cfg.CtxSize, cfg.Threads = 64, 1
	s := startSupervisor(t, cfg, &fakeLauncher{t: t, scripts: []script{real}})
	if _, err := s.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := logs.lines("model loaded")
	want := fmt.Sprintf("tensors=%d bytes=%d duration=", tensors, bytes)
	if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], want) {
		t.Fatalf("load lines %q, want one with %q", lines, want)
	}
	t.Log(lines[0])
	if tensors != 48 {
		t.Fatalf("stories260K has %d tensors, want 48", tensors)
	}
}

// TestModelLoadedEcho checks the summary of the echo engine's reports.
func TestModelLoadedEcho(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{Tensors: 5}
	s := startSupervisor(t, testConfig(logs), &fakeLauncher{t: t, scripts: []script{honest(eng)}})
	if _, err := s.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lines := logs.lines("model loaded"); len(lines) != 1 || !strings.Contains(lines[0], "tensors=5 bytes=5120") {
		t.Fatalf("load lines %q", lines)
	}
}

// progressScript answers hello with the given frames, then ready.
func progressScript(frames ...*ipc.Progress) script {
	return func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		p := &fakePeer{conn: conn, r: ipc.NewReader(conn), stop: stop}
		hello, ok := p.next()
		if !ok {
			return
		}
		for _, f := range frames {
			f.ID = hello.RequestID()
			if !p.send(f) {
				return
			}
		}
		p.send(&ipc.Ready{ID: hello.RequestID(), Protocol: ipc.Version, ContextSize: 64, VocabSize: 64, Tensors: 4, TensorBytes: 40})
		p.drain()
	}
}

// TestProgressFlood: a worker that sends thousands of reports at once
// gets one "model loading" line from the broker, not thousands.
func TestProgressFlood(t *testing.T) {
	var frames []*ipc.Progress
	for i := range 2000 {
		frames = append(frames, &ipc.Progress{Tensors: min(i/500, 3), TensorsTotal: 4, Bytes: 1, BytesTotal: 40, ElapsedUS: int64(i)})
	}
	logs := &logBuffer{}
	s := startSupervisor(t, testConfig(logs), &fakeLauncher{t: t, scripts: []script{progressScript(frames...)}})
	if _, err := s.Info(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.lines("model loading")); n != 1 {
		t.Fatalf("%d progress lines for a burst of 2000 reports", n)
	}
	if n := len(logs.lines("model loaded")); n != 1 {
		t.Fatalf("%d summary lines", n)
	}
}

// TestProgressDisorder: reports that contradict earlier ones, or a ready
// that counts fewer tensors than reported, are protocol violations.
func TestProgressDisorder(t *testing.T) {
	p := func(tensors, total int, bytes, bytesTotal, ms int64) *ipc.Progress {
		return &ipc.Progress{Tensors: tensors, TensorsTotal: total, Bytes: bytes, BytesTotal: bytesTotal, ElapsedUS: ms}
	}
	tests := []struct {
		name   string
		frames []*ipc.Progress
		field  string
	}{
		{"tensors back", []*ipc.Progress{p(3, 4, 1, 40, 1), p(2, 4, 1, 40, 2)}, "tensors"},
		{"bytes back", []*ipc.Progress{p(1, 4, 20, 40, 1), p(2, 4, 10, 40, 2)}, "bytes"},
		{"total changes", []*ipc.Progress{p(1, 4, 1, 40, 1), p(2, 5, 1, 40, 2)}, "tensors_total"},
		{"bytes total changes", []*ipc.Progress{p(1, 4, 1, 40, 1), p(2, 4, 1, 41, 2)}, "bytes_total"},
		{"time back", []*ipc.Progress{p(1, 4, 1, 40, 5), p(2, 4, 1, 40, 4)}, "elapsed_us"},
		// The script's ready reports 4 tensors of 40 bytes.
		{"ready counts fewer", []*ipc.Progress{p(5, 5, 40, 40, 5)}, "tensors"},
		{"ready bytes fewer", []*ipc.Progress{p(4, 5, 41, 50, 5)}, "tensor_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuffer{}
			s := New(testConfig(logs), &fakeLauncher{t: t, scripts: []script{progressScript(tt.frames...)}})
			defer s.Close()
			err := s.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), "protocol violation") || !strings.Contains(err.Error(), `"`+tt.field+`"`) {
				t.Fatalf("start: %v, want a violation in %q", err, tt.field)
			}
		})
	}
}

// TestProgressLogPace checks the broker's own pace: a line at most once
// per progressLogEvery, none for the final report.
func TestProgressLogPace(t *testing.T) {
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	var l loadLog
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at      time.Duration
		tensors int
	}{{0, 1}, {500 * time.Millisecond, 2}, {1100 * time.Millisecond, 3}, {1200 * time.Millisecond, 4}, {3 * time.Second, 10}}
	for _, st := range steps {
		m := &ipc.Progress{ID: 1, Tensors: st.tensors, TensorsTotal: 10, BytesTotal: 1, ElapsedUS: st.at.Microseconds()}
		if err := l.progress(log, m, t0.Add(st.at)); err != nil {
			t.Fatal(err)
		}
	}
	lines := logs.lines("model loading")
	if len(lines) != 2 || !strings.Contains(lines[0], "tensors=1 ") || !strings.Contains(lines[1], "tensors=3 ") {
		t.Fatalf("lines %q, want reports 1 and 3", lines)
	}
}
