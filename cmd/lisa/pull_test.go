package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/hub"
)

// TestPullBar: the bar shows bytes, rate and time left, redraws at most
// every pullRedraw, ends each file with a line of its own, and draws
// nothing when progress is off (piped).
func TestPullBar(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	var out strings.Builder
	b := newPullBar(&out, func() time.Time { return now })
	const total = 100 << 20
	b.event(hub.Event{File: "d/m-Q4_K_M.gguf", Index: 1, Count: 2, Total: total, Done: 10 << 20, Resumed: 10 << 20})
	now = t0.Add(2 * time.Second)
	b.event(hub.Event{File: "d/m-Q4_K_M.gguf", Index: 1, Count: 2, Total: total, Done: 30 << 20})
	now = now.Add(pullRedraw / 2) // too soon: not drawn
	b.event(hub.Event{File: "d/m-Q4_K_M.gguf", Index: 1, Count: 2, Total: total, Done: 31 << 20})
	lines := strings.Split(out.String(), "\r")
	last := lines[len(lines)-1]
	for _, want := range []string{"[1/2] m-Q4_K_M.gguf", " 30.0%", "30.0 MiB / 100.0 MiB", "10.0 MiB/s", "ETA 7s"} {
		if !strings.Contains(last, want) {
			t.Errorf("line %q lacks %q", last, want)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d draws, want 2 (the third came too soon): %q", len(lines)-1, out.String())
	}
	b.event(hub.Event{File: "d/m-Q4_K_M.gguf", Index: 1, Count: 2, Total: total, Done: total, Finished: true})
	if s := out.String(); !strings.HasSuffix(s, "verified\x1b[K\n") {
		t.Errorf("finished file: %q", s[strings.LastIndex(s, "\r"):])
	}
	out.Reset()
	b.event(hub.Event{File: "m.gguf", Retry: errors.New("connection reset")})
	b.event(hub.Event{File: "m.gguf", Waiting: true})
	if s := out.String(); !strings.Contains(s, "connection reset; resuming") || !strings.Contains(s, "waiting") {
		t.Errorf("retry and wait: %q", s)
	}
	for _, w := range []io.Writer{nil, io.Discard} {
		quiet := newPullBar(w, time.Now)
		quiet.event(hub.Event{File: "m.gguf", Total: 1, Done: 1, Finished: true}) // must not panic or write
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 30: "5.0 GiB", 3 << 40: "3.0 TiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHFModelName(t *testing.T) {
	for in, want := range map[string]string{
		"Llama-3.2-1B-Instruct-Q4_K_M.gguf":     "Llama-3.2-1B-Instruct-Q4_K_M",
		"Q4_K_M/Big-Q4_K_M-00001-of-00003.gguf": "Big-Q4_K_M",
		"stories260K.gguf":                      "stories260K",
		"x-of-00003.gguf":                       "x-of-00003",
		"weird.name-00001-of-00002-extra.gguf":  "weird.name-00001-of-00002-extra",
	} {
		if got := hfModelName(in); got != want {
			t.Errorf("hfModelName(%q) = %q, want %q", in, got, want)
		}
	}
}
