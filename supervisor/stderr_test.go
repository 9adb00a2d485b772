package supervisor

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestStderrLogBounded is the red-team case: 20 MB written on the worker's
// stderr must not go straight to the broker's log. What is logged stays
// within the burst plus the rate, the rest is counted, and one summary
// says what was dropped.
func TestStderrLogBounded(t *testing.T) {
	tests := []struct {
		name    string
		line    int           // bytes per line, newline included
		total   int           // bytes written
		elapsed time.Duration // fake time over the whole write
	}{
		{"20 MB in 4 KiB lines at once", 4096, 20 << 20, 0},
		{"20 MB in short lines over 10 s", 100, 20 << 20, 10 * time.Second},
		{"small output passes whole", 200, 64 << 10, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := time.Unix(1000, 0)
			l := newStderrLog(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return clock })
			line := []byte(strings.Repeat("x", tt.line-1) + "\n")
			n := tt.total / tt.line
			step := tt.elapsed / time.Duration(n)
			for range n {
				clock = clock.Add(step)
				if k, err := l.Write(line); k != len(line) || err != nil {
					t.Fatalf("Write = %d, %v", k, err)
				}
			}
			l.Close()
			droppedLines, droppedBytes := l.Dropped()
			logged := uint64(n) - droppedLines
			budget := float64(stderrBurst) + tt.elapsed.Seconds()*stderrRate
			loggedBytes := float64(logged) * float64(min(tt.line-1, stderrLineBytes))
			if loggedBytes > budget {
				t.Fatalf("%d lines (%.0f bytes) logged, over the budget of %.0f bytes", logged, loggedBytes, budget)
			}
			if droppedBytes != uint64(n-int(logged))*uint64(tt.line) {
				t.Fatalf("dropped %d bytes for %d dropped lines of %d", droppedBytes, droppedLines, tt.line)
			}
			if got := uint64(strings.Count(out.String(), "msg=\"worker stderr\"")); got != logged {
				t.Fatalf("%d lines in the log, %d counted as logged", got, logged)
			}
			if out.Len() > 2*int(budget)+64<<10 {
				t.Fatalf("the log grew by %d bytes for a budget of %.0f", out.Len(), budget)
			}
			// The summaries (one a second of real time, and one at Close)
			// must add up to what was dropped.
			var summaries int
			var sumLines, sumBytes uint64
			for _, ln := range strings.Split(out.String(), "\n") {
				if !strings.Contains(ln, "worker stderr dropped") {
					continue
				}
				summaries++
				var a, b uint64
				_, rest, _ := strings.Cut(ln, "dropped_lines=")
				if _, err := fmt.Sscanf(rest, "%d dropped_bytes=%d", &a, &b); err != nil {
					t.Fatalf("summary %q: %v", ln, err)
				}
				sumLines, sumBytes = sumLines+a, sumBytes+b
			}
			if droppedLines == 0 {
				if summaries != 0 {
					t.Fatal("a drop summary without drops")
				}
				return
			}
			if summaries == 0 || sumLines != droppedLines || sumBytes != droppedBytes {
				t.Fatalf("%d summaries say %d lines, %d bytes dropped; %d lines, %d bytes were", summaries, sumLines, sumBytes, droppedLines, droppedBytes)
			}
		})
	}
}
