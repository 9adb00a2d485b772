package supervisor

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// readyThenGarbage answers hello and at once breaks the protocol.
func readyThenGarbage(t *testing.T, conn net.Conn, stop <-chan struct{}) {
	p, ok := handshake(conn)
	if ok {
		p.frame(`{"type":"nonsense","id":1}`)
	}
	p.drain()
}

// TestRestartBudget checks the state once workers die faster than the
// budget allows: Health says failed with the reason (not "starting"), the
// refusals are counted, and the supervisor keeps starting workers with a
// growing backoff until one serves again.
func TestRestartBudget(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{}
	scripts := []script{hostile(func(p *fakePeer, r ipc.Message) { p.frame("{}") })}
	for range 6 {
		scripts = append(scripts, readyThenGarbage)
	}
	scripts = append(scripts, honest(eng)) // the 8th launch and later serve
	l := &fakeLauncher{t: t, scripts: scripts}
	cfg := testConfig(logs)
	cfg.RestartBackoff, cfg.MaxRestartBackoff = 40*time.Millisecond, 160*time.Millisecond
	cfg.RestartWindow = time.Minute
	s := startSupervisor(t, cfg, l)
	ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, ch)
	waitFor(t, "the supervisor to give up", func() bool { return errors.Is(s.Health(), ErrGaveUp) })
	err = s.Health()
	var gu *GaveUpError
	if !errors.Is(err, broker.ErrNotReady) || !errors.Is(err, broker.ErrFailed) || !errors.As(err, &gu) ||
		!strings.Contains(err.Error(), "unknown type") || !strings.Contains(gu.Reason(), "SIGKILL") || strings.Contains(gu.Reason(), "unknown type") {
		t.Fatalf("health %v: want a failed state (503) naming the last death, with a reason free of worker text", err)
	}
	if _, err := s.Info(context.Background()); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("info: %v", err)
	}
	// It keeps trying: the honest worker of the 8th launch serves at last.
	// (Each garbage worker is ready for a moment: wait for the 8th launch.)
	waitFor(t, "a worker to serve again", func() bool { return l.launches.Load() >= 8 && s.Health() == nil })
	if n := l.launches.Load(); n != 8 {
		t.Fatalf("%d launches, want 8", n)
	}
	st := s.WorkerStats()
	if st.Restarts != 7 || st.BudgetSpent != 4 || st.Deaths["SIGKILL"] != 7 {
		t.Fatalf("stats %+v, want 7 restarts of which 4 past the budget, 7 deaths", st)
	}
	var waits []string
	for _, line := range logs.lines("budget spent") {
		_, after, _ := strings.Cut(line, "retry_in=")
		waits = append(waits, strings.Fields(after)[0])
	}
	if strings.Join(waits, " ") != "40ms 80ms 160ms 160ms" {
		t.Fatalf("backoff waits %q, want doubling from 40ms up to 160ms", waits)
	}
	ch, err = s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 3})
	if err != nil {
		t.Fatalf("generate after recovery: %v", err)
	}
	collect(t, ch)
}

func TestRestartWindow(t *testing.T) {
	s := New(Config{MaxRestarts: 3, RestartWindow: 100 * time.Millisecond}, nil)
	for i := range 3 {
		if err := s.spend("", ""); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
	}
	if err := s.spend("", ""); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("fourth restart within the window: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := s.spend("", ""); err != nil {
		t.Fatalf("restart after the window: %v", err)
	}
	if s.WorkerStats().Restarts != 4 {
		t.Fatalf("restarts %d", s.WorkerStats().Restarts)
	}
}

type failingLauncher struct {
	first    Launcher
	launches int
}

func (f *failingLauncher) Launch() (Worker, error) {
	f.launches++
	if f.first != nil && f.launches == 1 {
		return f.first.Launch()
	}
	return nil, errors.New("clone: operation not permitted")
}

func TestStartFailures(t *testing.T) {
	silent := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		(&fakePeer{conn: conn, r: ipc.NewReader(conn)}).drain()
	}
	refuses := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		p := &fakePeer{conn: conn, r: ipc.NewReader(conn)}
		if m, ok := p.next(); ok {
			p.send(&ipc.Error{ID: m.RequestID(), Message: "gguf: tensor data out of bounds at byte 1234"})
		}
		p.drain()
	}
	badReady := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		p := &fakePeer{conn: conn, r: ipc.NewReader(conn)}
		if _, ok := p.next(); ok {
			p.frame(`{"type":"ready","id":1,"protocol":2,"n_ctx":0,"n_vocab":5}`)
		}
		p.drain()
	}
	early := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		p := &fakePeer{conn: conn, r: ipc.NewReader(conn)}
		if _, ok := p.next(); ok {
			p.send(&ipc.Tokens{ID: 2, Text: "before ready"})
		}
		p.drain()
	}
	tests := []struct {
		name string
		l    Launcher
		want string
	}{
		{"tokens before ready", &fakeLauncher{t: t, scripts: []script{early}}, "unknown id"},
		{"no ready", &fakeLauncher{t: t, scripts: []script{silent}}, "not ready within"},
		{"load error", &fakeLauncher{t: t, scripts: []script{refuses}}, "tensor data out of bounds"},
		{"bad ready", &fakeLauncher{t: t, scripts: []script{badReady}}, "n_ctx"},
		{"launch error", &failingLauncher{}, "operation not permitted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logBuffer{}
			cfg := testConfig(logs)
			cfg.ReadyTimeout = 200 * time.Millisecond
			s := New(cfg, tt.l)
			err := s.Start(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("start: %v, want %q", err, tt.want)
			}
			if h := s.Health(); h == nil || !strings.Contains(h.Error(), tt.want) {
				t.Fatalf("health %v", h)
			}
			if fl, ok := tt.l.(*fakeLauncher); ok && fl.launches.Load() != 1 {
				t.Fatalf("%d launches: a failed first start must not restart", fl.launches.Load())
			}
			s.Close()
		})
	}
}

func TestRestartLaunchFailureSpendsBudget(t *testing.T) {
	logs := &logBuffer{}
	l := &failingLauncher{first: &fakeLauncher{t: t, scripts: []script{hostile(func(p *fakePeer, r ipc.Message) { p.frame("{}") })}}}
	s := startSupervisor(t, testConfig(logs), l)
	ch, _ := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 3})
	collect(t, ch)
	waitFor(t, "the supervisor to give up", func() bool { return errors.Is(s.Health(), ErrGaveUp) })
	if n := len(logs.lines("worker start failed")); n != 3 {
		t.Fatalf("%d start failures logged, want 3", n)
	}
}

func TestDeathByEvent(t *testing.T) {
	seccompExit := ExitFromSandbox(sandbox.Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true, Syscall: "openat"})
	logs := &logBuffer{}
	eng := &workertest.Engine{}
	dies := hostile(func(p *fakePeer, r ipc.Message) { p.conn.Close() })
	l := &fakeLauncher{t: t, scripts: []script{dies, honest(eng)}, exit: seccompExit}
	s := startSupervisor(t, testConfig(logs), l)
	ch, _ := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 3})
	if _, evs := collect(t, ch); !errors.Is(last(evs).Err, broker.ErrWorkerFailed) {
		t.Fatalf("events %+v", evs)
	}
	waitFor(t, "the restart", func() bool { return s.Health() == nil })
	lines := logs.lines("worker died")
	if len(lines) != 1 || !strings.Contains(lines[0], "killed by seccomp (SIGSYS): blocked system call openat") {
		t.Fatalf("death lines %q", lines)
	}
	if st := s.WorkerStats(); st.Deaths["SIGSYS"] != 1 {
		t.Fatalf("deaths %v", st.Deaths)
	}
}

func TestCloseFailsInFlight(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{Step: 5 * time.Millisecond}
	l := &fakeLauncher{t: t, scripts: []script{honest(eng)}}
	s := startSupervisor(t, testConfig(logs), l)
	ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	<-ch
	s.Close()
	if _, evs := collect(t, ch); !errors.Is(last(evs).Err, broker.ErrWorkerFailed) {
		t.Fatalf("in flight at close: %+v", last(evs))
	}
	if !errors.Is(s.Health(), ErrClosed) {
		t.Fatalf("health after close: %v", s.Health())
	}
	// A shutdown is no death: one plain INFO line, without the SIGKILL
	// that reads like a crash.
	if lines := logs.lines("worker died"); len(lines) != 0 {
		t.Fatalf("death lines at close %q", lines)
	}
	if lines := logs.lines("worker stopped"); len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") ||
		!strings.Contains(lines[0], "failed_requests=1") || strings.Contains(lines[0], "exit=") {
		t.Fatalf("stop lines %q", lines)
	}
	if l.launches.Load() != 1 {
		t.Fatal("restarted after Close")
	}
	if st := s.WorkerStats(); len(st.Deaths) != 0 {
		t.Fatalf("a shutdown counted as a death: %v", st.Deaths)
	}
}

func TestExitFromSandbox(t *testing.T) {
	tests := []struct {
		exit  sandbox.Exit
		cause string
		desc  string
	}{
		{sandbox.Exit{Code: -1, Signal: syscall.SIGSYS, Seccomp: true}, "SIGSYS", "seccomp"},
		{sandbox.Exit{Code: 2, Seccomp: true, Syscall: "socket", StderrTail: "SIGSYS: bad system call\n"}, "SIGSYS", "socket"},
		{sandbox.Exit{Code: -1, Signal: syscall.SIGKILL}, "SIGKILL", "signal 9"},
		{sandbox.Exit{Code: -1, Signal: syscall.SIGSEGV}, "SIGSEGV", "signal 11"},
		{sandbox.Exit{Code: 1, StderrTail: "panic: boom\n"}, "exit", "status 1"},
		{sandbox.Exit{Err: errors.New("wait: no child")}, "unknown", "no child"},
	}
	for _, tt := range tests {
		got := ExitFromSandbox(tt.exit)
		if got.Cause != tt.cause || !strings.Contains(got.Description, tt.desc) {
			t.Errorf("%+v: got %+v, want cause %s and %q", tt.exit, got, tt.cause, tt.desc)
		}
	}
}

func TestCloseDuringStart(t *testing.T) {
	silent := func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		(&fakePeer{conn: conn, r: ipc.NewReader(conn)}).drain()
	}
	logs := &logBuffer{}
	cfg := testConfig(logs)
	cfg.ReadyTimeout = time.Minute
	s := New(cfg, &fakeLauncher{t: t, scripts: []script{silent}})
	errc := make(chan error, 1)
	go func() { errc <- s.Start(context.Background()) }()
	time.Sleep(20 * time.Millisecond)
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("start: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Start did not return after Close")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
}
