package supervisor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// script is what an in-process fake worker does with its end of the socket.
// It must return once stop is closed (the supervisor killed it).
type script func(t *testing.T, conn net.Conn, stop <-chan struct{})

// fakeLauncher runs scripts[i] for the i-th launch (the last one again
// once they run out), each over a net.Pipe.
type fakeLauncher struct {
	t        *testing.T
	scripts  []script
	launches atomic.Int64
	exit     Exit // how a worker that was not killed ends (default: exit 0)
}

func (l *fakeLauncher) Launch() (Worker, error) {
	i := int(l.launches.Add(1)) - 1
	sc := l.scripts[min(i, len(l.scripts)-1)]
	b, w := net.Pipe()
	fw := &fakeWorker{conn: b, peer: w, stop: make(chan struct{}), done: make(chan struct{}), exit: l.exit}
	go func() {
		defer close(fw.done)
		sc(l.t, selfClosing{w, &fw.selfClosed}, fw.stop)
		w.Close()
	}()
	return fw, nil
}

type fakeWorker struct {
	conn, peer net.Conn
	stop, done chan struct{}
	once       sync.Once
	killed     atomic.Bool
	selfClosed atomic.Bool // the script closed its end: it "exited" by itself
	exit       Exit
}

// selfClosing records that the script closed its end of the socket.
type selfClosing struct {
	net.Conn
	flag *atomic.Bool
}

func (c selfClosing) Close() error {
	c.flag.Store(true)
	return c.Conn.Close()
}

func (w *fakeWorker) Conn() io.ReadWriteCloser { return w.conn }

func (w *fakeWorker) Kill() error {
	if !w.selfClosed.Load() {
		w.killed.Store(true)
	}
	w.once.Do(func() { close(w.stop); w.peer.Close() })
	return nil
}

func (w *fakeWorker) Wait() Exit {
	<-w.done
	switch {
	case w.killed.Load():
		return Exit{Description: "worker killed by signal 9 (killed)", Cause: "SIGKILL"}
	case w.exit.Cause != "":
		return w.exit
	}
	return Exit{Description: "worker exited with status 0", Cause: "exit"}
}

// honest runs the real worker loop with the echo engine.
func honest(eng *workertest.Engine) script {
	return func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		serving := func() ([]ipc.Layer, int, error) { return nil, 0, nil }
		worker.Run(conn, nil, eng.Loader(), serving)
	}
}

// fakePeer is a hand-driven worker end.
type fakePeer struct {
	conn net.Conn
	r    *ipc.Reader
	stop <-chan struct{} // closed when the supervisor kills the worker
}

// handshake reads hello and answers ready.
func handshake(conn net.Conn) (*fakePeer, bool) {
	p := &fakePeer{conn: conn, r: ipc.NewReader(conn)}
	m, ok := p.next()
	if !ok {
		return p, false
	}
	err := ipc.Write(conn, &ipc.Ready{ID: m.RequestID(), Protocol: ipc.Version, Name: "hostile", ContextSize: 256, VocabSize: 100,
		SpecialTokens: []string{"<|im_end|>", ""}})
	return p, err == nil
}

// next reads one request.
func (p *fakePeer) next() (ipc.Message, bool) {
	body, err := p.r.ReadFrame()
	if err != nil {
		return nil, false
	}
	m, err := ipc.DecodeRequest(body)
	return m, err == nil
}

// nextGenerate skips to the next generate, tokenize or detokenize.
func (p *fakePeer) nextRequest() (ipc.Message, bool) {
	for {
		m, ok := p.next()
		if !ok || m.Type() != ipc.TypeCancel {
			return m, ok
		}
	}
}

func (p *fakePeer) raw(b []byte) bool {
	_, err := p.conn.Write(b)
	return err == nil
}

func (p *fakePeer) frame(body string) bool {
	f, err := ipc.AppendFrame(nil, []byte(body))
	if err != nil {
		_, err = p.conn.Write(append([]byte{0, 0, 0, 0}, body...))
		return err == nil
	}
	return p.raw(f)
}

func (p *fakePeer) send(m ipc.Message) bool { return ipc.Write(p.conn, m) == nil }

// drain reads and discards until the connection ends.
func (p *fakePeer) drain() {
	for {
		if _, err := p.r.ReadFrame(); err != nil {
			return
		}
	}
}

// logBuffer collects log lines safely.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// testConfig is a configuration with short timeouts.
func testConfig(logs *logBuffer) Config {
	return Config{ReadyTimeout: 2 * time.Second, CancelGrace: 300 * time.Millisecond, StallTimeout: 2 * time.Second,
		SendTimeout: time.Second, ReapTimeout: 5 * time.Second, RestartDelay: time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
}

// startSupervisor starts a supervisor over l and closes it at cleanup,
// checking that no goroutine is left behind.
func startSupervisor(t *testing.T, cfg Config, l Launcher) *Supervisor {
	t.Helper()
	before := runtime.NumGoroutine()
	s := New(cfg, l)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		waitGoroutines(t, before)
	})
	return s
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sp points at s.
func sp(s string) *string { return &s }
