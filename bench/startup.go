package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// StartupParams are what a start-up measurement runs: Exe with Args plus
// "--listen 127.0.0.1:PORT" (a free port each run), once to warm up (the
// page cache holds the model afterwards), then Reps times.
type StartupParams struct {
	Exe     string
	Args    []string
	Reps    int
	Timeout time.Duration // per run: how long the server may take to become healthy
	// Model is the file the server loads, named in the result.
	Model string
	// Stderr receives the servers' output (nil: only the end of a failed
	// run's output is kept, in its error).
	Stderr io.Writer
	// Progress, when set, is called before each run.
	Progress func(msg string)
}

// StartupResult is a start-up measurement: the time from starting the
// server process to its first healthy answer (GET /health, 200 with
// status "ok"), polled every StartupPoll.
type StartupResult struct {
	ModelFilename string    `json:"model_filename"`
	ModelBytes    int64     `json:"model_file_bytes"`
	Reps          int       `json:"reps"`
	AvgMs         float64   `json:"avg_ms"`
	StddevMs      float64   `json:"stddev_ms"`
	SamplesMs     []float64 `json:"samples_ms"`
	TestTime      string    `json:"test_time"`
}

// StartupPoll is how often a start-up measurement asks /health: the
// resolution of its samples (every request is one line of the server's
// log, so asking much more often costs the server being measured).
const StartupPoll = 10 * time.Millisecond

// Startup measures how long the server takes to become healthy.
func Startup(p StartupParams) (StartupResult, error) {
	switch {
	case p.Reps < 1 || p.Reps > 100:
		return StartupResult{}, fmt.Errorf("bench: startup: repetitions %d out of range [1, 100]", p.Reps)
	case p.Timeout <= 0:
		return StartupResult{}, fmt.Errorf("bench: startup: timeout %v", p.Timeout)
	}
	res := StartupResult{ModelFilename: p.Model, Reps: p.Reps, TestTime: time.Now().UTC().Format(time.RFC3339)}
	if st, err := os.Stat(p.Model); err == nil {
		res.ModelBytes = st.Size()
	}
	for i := -1; i < p.Reps; i++ {
		if p.Progress != nil {
			if i < 0 {
				p.Progress("start-up: warm-up run")
			} else {
				p.Progress(fmt.Sprintf("start-up: run %d/%d", i+1, p.Reps))
			}
		}
		d, err := startOnce(p)
		if err != nil {
			return StartupResult{}, err
		}
		if i >= 0 {
			res.SamplesMs = append(res.SamplesMs, float64(d.Microseconds())/1e3)
		}
	}
	res.AvgMs, res.StddevMs = meanStddev(res.SamplesMs)
	return res, nil
}

// freeLoopbackAddr returns a loopback address nobody listens on now.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startOnce starts the server, waits for its first healthy answer and
// stops it, returning the time from just before the start to the answer.
func startOnce(p StartupParams) (time.Duration, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return 0, fmt.Errorf("bench: startup: %w", err)
	}
	args := append(append([]string(nil), p.Args...), "--listen", addr)
	cmd := exec.Command(p.Exe, args...)
	tail := &tailBuffer{max: 8 << 10}
	var out io.Writer = tail
	if p.Stderr != nil {
		out = io.MultiWriter(tail, p.Stderr)
	}
	cmd.Stdout, cmd.Stderr = out, out
	client := &http.Client{Timeout: time.Second}
	url := "http://" + addr + "/health"
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("bench: startup: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		// SIGTERM is the server's orderly stop (its worker goes with
		// it); one that does not stop in time is killed.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	deadline := t0.Add(p.Timeout)
	for {
		if healthy(client, url) {
			d := time.Since(t0)
			stop()
			return d, nil
		}
		select {
		case err := <-exited:
			return 0, fmt.Errorf("bench: startup: %s %s exited before it was healthy: %v; its output ends:\n%s",
				p.Exe, strings.Join(args, " "), err, tail.String())
		case <-time.After(StartupPoll):
		}
		if time.Now().After(deadline) {
			stop()
			return 0, fmt.Errorf("bench: startup: not healthy after %v; the server's output ends:\n%s", p.Timeout, tail.String())
		}
	}
}

// tailBuffer keeps the last max bytes written to it: a server's output
// for an error, bounded however much it writes.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// healthy reports whether GET url answers 200 with status "ok".
func healthy(client *http.Client, url string) bool {
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct{ Status string }
	err = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&st)
	return err == nil && resp.StatusCode == http.StatusOK && st.Status == "ok"
}

// WriteStartup writes a start-up result as md (one table row) or json.
func WriteStartup(w io.Writer, format string, r StartupResult) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "md":
		var samples []string
		for _, s := range r.SamplesMs {
			samples = append(samples, strconv.FormatFloat(s, 'f', 0, 64))
		}
		_, err := fmt.Fprintf(w, "| model | file size | runs | start to healthy (ms) | samples (ms) |\n| --- | ---: | ---: | ---: | --- |\n"+
			"| %s | %s | %d | %.0f ± %.0f | %s |\n", r.ModelFilename, mib(r.ModelBytes), r.Reps, r.AvgMs, r.StddevMs, strings.Join(samples, ", "))
		return err
	}
	return errors.New("bench: startup output format " + strconv.Quote(format) + ": want md or json")
}
