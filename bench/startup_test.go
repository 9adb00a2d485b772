package bench

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// fakeServeArg makes the test binary a stand-in for lisa serve (see
// fakeServe), so that start-up measurement is tested against known
// delays.
const fakeServeArg = "--fake-serve"

// fakeServe is a server for TestStartup: MODE DELAY --listen ADDR. Mode
// "ok" listens after DELAY and answers /health ok; "loading" listens at
// once and answers 503 "loading" until DELAY has passed; "exit" exits
// with status 3; "never" listens and never becomes healthy.
func fakeServe(args []string) int {
	if len(args) != 4 || args[2] != "--listen" {
		return 2
	}
	delay, err := time.ParseDuration(args[1])
	if err != nil {
		return 2
	}
	start := time.Now()
	mode := args[0]
	switch mode {
	case "exit":
		return 3
	case "ok":
		time.Sleep(delay)
	}
	http.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if mode == "never" || mode == "loading" && time.Since(start) < delay {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "loading"})
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"status": "ok"})
	})
	if err := http.ListenAndServe(args[3], nil); err != nil {
		return 1
	}
	return 0
}

// TestStartup measures the stand-in server: every sample is at least its
// delay (and not absurdly more), a server that exits or never becomes
// healthy is an error, and the result writes as md and json.
func TestStartup(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	model := miniModel(t)
	for _, c := range []struct {
		mode  string
		delay time.Duration
	}{{"ok", 150 * time.Millisecond}, {"loading", 200 * time.Millisecond}} {
		t.Run(c.mode, func(t *testing.T) {
			var progress []string
			r, err := Startup(StartupParams{Exe: exe, Args: []string{fakeServeArg, c.mode, c.delay.String()}, Reps: 2,
				Timeout: 20 * time.Second, Model: model, Progress: func(m string) { progress = append(progress, m) }})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.SamplesMs) != 2 || len(progress) != 3 || r.ModelBytes < 1<<20 || r.Reps != 2 {
				t.Fatalf("%+v, progress %q", r, progress)
			}
			for _, s := range r.SamplesMs {
				if s < float64(c.delay.Milliseconds()) || s > 15000 {
					t.Errorf("sample %.1f ms for a server healthy after %v", s, c.delay)
				}
			}
			if m := (r.SamplesMs[0] + r.SamplesMs[1]) / 2; m != r.AvgMs {
				t.Errorf("avg_ms %g, want %g", r.AvgMs, m)
			}
			var b bytes.Buffer
			if err := WriteStartup(&b, "md", r); err != nil || !strings.Contains(b.String(), "| start to healthy (ms) |") {
				t.Errorf("md (%v):\n%s", err, b.String())
			}
			b.Reset()
			var back map[string]any
			if err := WriteStartup(&b, "json", r); err != nil || json.Unmarshal(b.Bytes(), &back) != nil || back["avg_ms"] != r.AvgMs {
				t.Errorf("json (%v):\n%s", err, b.String())
			}
		})
	}
	for _, c := range []struct{ mode, err string }{{"exit", "exited before it was healthy"}, {"never", "not healthy after"}, {"exit", "fake server starting"}} {
		_, err := Startup(StartupParams{Exe: exe, Args: []string{fakeServeArg, c.mode, "0s"}, Reps: 1, Timeout: 500 * time.Millisecond, Model: model})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.mode, err, c.err)
		}
	}
	if _, err := Startup(StartupParams{Exe: exe, Reps: 0, Timeout: time.Second}); err == nil {
		t.Error("0 repetitions accepted")
	}
	if err := WriteStartup(&bytes.Buffer{}, "svg", StartupResult{}); err == nil {
		t.Error("svg accepted")
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 5}
	for _, w := range []string{"ab", "cdef", "g", ""} {
		if n, err := tb.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("write %q: %d, %v", w, n, err)
		}
	}
	if got := tb.String(); got != "cdefg" {
		t.Errorf("tail %q, want cdefg", got)
	}
}
