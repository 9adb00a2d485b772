package supervisor

import (
	"bytes"
	"log/slog"
	"math"
	"sync"
	"time"
)

// Bounds on the worker's stderr in the broker's log. A worker may write
// without end (a hostile one on purpose); what reaches the log is at most
// stderrBurst bytes at once and stderrRate bytes a second after that, in
// lines of at most stderrLineBytes. The rest is dropped, counted, and
// summarised in one line a second while dropping lasts.
const (
	stderrRate      = 16 << 10  // bytes a second
	stderrBurst     = 256 << 10 // bytes
	stderrLineBytes = 1024
	stderrSummary   = time.Second
)

// StderrLog forwards the worker's stderr, line by line, to a logger at
// WARN ("worker stderr"), within the bounds above. It is an io.Writer for
// sandbox.Config.Stderr (which calls Write once per line); give the same
// StderrLog to Config.Stderr so /metrics counts what it dropped. Its
// methods are safe for concurrent use.
type StderrLog struct {
	log *slog.Logger
	now func() time.Time

	mu           sync.Mutex
	tokens       float64 // bytes that may be logged now
	last         time.Time
	droppedLines uint64 // totals, for /metrics
	droppedBytes uint64
	pendLines    uint64 // dropped since the last summary
	pendBytes    uint64
	summary      *time.Timer // pending summary, nil when none
}

// NewStderrLog returns a StderrLog writing to log.
func NewStderrLog(log *slog.Logger) *StderrLog {
	return newStderrLog(log, time.Now)
}

func newStderrLog(log *slog.Logger, now func() time.Time) *StderrLog {
	return &StderrLog{log: log, now: now, tokens: stderrBurst, last: now()}
}

// Write logs p as one line (cut to stderrLineBytes, invalid UTF-8
// replaced; slog quotes it), or drops and counts it when the byte rate is
// exceeded. It never fails and never blocks on the budget.
func (l *StderrLog) Write(p []byte) (int, error) {
	line := bytes.TrimRight(p, "\n")
	if len(line) == 0 {
		return len(p), nil
	}
	cut := false
	if len(line) > stderrLineBytes {
		line, cut = line[:stderrLineBytes], true
	}
	l.mu.Lock()
	now := l.now()
	if el := now.Sub(l.last).Seconds(); el > 0 {
		l.tokens = math.Min(stderrBurst, l.tokens+el*stderrRate)
	}
	l.last = now
	if l.tokens < float64(len(line)) {
		l.droppedLines++
		l.droppedBytes += uint64(len(p))
		l.pendLines++
		l.pendBytes += uint64(len(p))
		if l.summary == nil {
			l.summary = time.AfterFunc(stderrSummary, l.summarise)
		}
		l.mu.Unlock()
		return len(p), nil
	}
	l.tokens -= float64(len(line))
	l.mu.Unlock()
	text := string(bytes.ToValidUTF8(line, []byte("\uFFFD")))
	if cut {
		l.log.Warn("worker stderr", "line", text, "cut_from_bytes", len(p))
	} else {
		l.log.Warn("worker stderr", "line", text)
	}
	return len(p), nil
}

// summarise logs what was dropped since the last summary.
func (l *StderrLog) summarise() {
	l.mu.Lock()
	lines, n := l.pendLines, l.pendBytes
	l.pendLines, l.pendBytes, l.summary = 0, 0, nil
	l.mu.Unlock()
	if lines > 0 {
		l.log.Warn("worker stderr dropped: the worker writes faster than the log takes",
			"dropped_lines", lines, "dropped_bytes", n, "limit_bytes_per_second", stderrRate)
	}
}

// Dropped returns the lines and bytes dropped so far.
func (l *StderrLog) Dropped() (lines, bytes uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.droppedLines, l.droppedBytes
}

// Close logs the summary of what is still pending at once.
func (l *StderrLog) Close() error {
	l.mu.Lock()
	if l.summary != nil {
		l.summary.Stop()
	}
	l.mu.Unlock()
	l.summarise()
	return nil
}
