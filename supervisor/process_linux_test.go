//go:debug updatemaxprocs=0
//go:debug containermaxprocs=0

package supervisor

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/worker"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// helperEnv selects the helper-process mode of the test binary.
const helperEnv = "LISA_SUPERVISOR_HELPER"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.WorkerFlag {
		// A worker started by SandboxLauncher (its environment is empty).
		eng := &workertest.Engine{Step: time.Millisecond}
		os.Exit(worker.Main(os.Args[1:], eng.Loader()))
	}
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain is a worker process: honest, or broken in one way.
func helperMain(mode string) int {
	conn := os.NewFile(3, "ipc")
	if mode == "honest" {
		eng := &workertest.Engine{Step: time.Millisecond}
		serving := func() ([]ipc.Layer, int, error) { return nil, 0, nil }
		if err := worker.Run(conn, nil, eng.Loader(), serving); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			return 1
		}
		return 0
	}
	r := ipc.NewReader(conn)
	body, err := r.ReadFrame()
	if err != nil {
		return 1
	}
	hello, _ := ipc.DecodeRequest(body)
	switch mode {
	case "exit3":
		os.Stderr.WriteString("lisa worker: load model: cannot map tensors\n")
		return 3
	case "garbage":
		conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
		time.Sleep(time.Minute) // until the supervisor kills it
	case "panic":
		ipc.Write(conn, &ipc.Ready{ID: hello.RequestID(), Protocol: ipc.Version, ContextSize: 64, VocabSize: 64})
		r.ReadFrame()
		panic("boom in the engine")
	}
	return 1
}

// procLauncher runs the test binary as a worker process over a socketpair.
type procLauncher struct {
	t        *testing.T
	modes    []string
	mu       sync.Mutex
	launches int
}

func (l *procLauncher) launched() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.launches
}

func (l *procLauncher) Launch() (Worker, error) {
	l.mu.Lock()
	mode := l.modes[min(l.launches, len(l.modes)-1)]
	l.launches++
	l.mu.Unlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "broker"), os.NewFile(uintptr(fds[1]), "worker")
	defer theirs.Close()
	conn, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.ExtraFiles = []*os.File{theirs}
	p := &procWorker{conn: conn, cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		conn.Close()
		return nil, err
	}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

type procWorker struct {
	conn   net.Conn
	cmd    *exec.Cmd
	stderr lockedBuffer
	done   chan struct{}
}

func (p *procWorker) Conn() io.ReadWriteCloser { return p.conn }
func (p *procWorker) Kill() error              { return p.cmd.Process.Kill() }

// Wait converts the process state as the sandbox package does.
func (p *procWorker) Wait() Exit {
	<-p.done
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	e := sandbox.Exit{Code: ws.ExitStatus(), StderrTail: p.stderr.b.String()}
	if ws.Signaled() {
		e.Code, e.Signal, e.Seccomp = -1, ws.Signal(), ws.Signal() == syscall.SIGSYS
	}
	return ExitFromSandbox(e)
}

func TestWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	logs := &logBuffer{}
	l := &procLauncher{t: t, modes: []string{"honest", "garbage", "panic", "honest"}}
	s := startSupervisor(t, testConfig(logs), l)
	ctx := context.Background()
	ch, err := s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 5})
	if err != nil {
		t.Fatal(err)
	}
	if text, evs := collect(t, ch); text != "tok0 tok1 tok2 tok3 tok4 " || last(evs).Kind != broker.EventDone {
		t.Fatalf("honest process: %q %+v", text, last(evs))
	}
	// Cancellation reaches the real process.
	cctx, cancel := context.WithCancel(ctx)
	ch, _ = s.Generate(cctx, gen.Request{Prompt: sp("x"), MaxTokens: 1000000})
	<-ch
	cancel()
	collect(t, ch)
	// Kill the honest worker from outside: a SIGKILL death, then "garbage".
	s.mu.Lock()
	s.cur.w.Kill()
	s.mu.Unlock()
	// The "garbage" worker dies before ready; the "panic" one gets ready
	// and dies on the first request.
	waitFor(t, "the panicking worker to be ready", func() bool { return l.launched() == 3 && s.Health() == nil })
	ch, _ = s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 5})
	if _, evs := collect(t, ch); !errors.Is(last(evs).Err, broker.ErrWorkerFailed) {
		t.Fatalf("request to a panicking worker: %+v", last(evs))
	}
	waitFor(t, "three deaths", func() bool {
		st := s.WorkerStats()
		return st.Deaths["SIGKILL"] == 2 && st.Deaths["exit"] == 1 && s.Health() == nil
	})
	lines := logs.lines("worker died")
	if len(lines) != 3 {
		t.Fatalf("death lines %q", lines)
	}
	for i, want := range []string{"killed by signal 9", "frame size", `panic: boom in the engine`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("death line %d %q lacks %q", i, lines[i], want)
		}
	}
	ch, _ = s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 2})
	if _, evs := collect(t, ch); last(evs).Kind != broker.EventDone {
		t.Fatalf("after the restarts: %+v", evs)
	}
}

func TestWorkerProcessExitBeforeReady(t *testing.T) {
	logs := &logBuffer{}
	s := New(testConfig(logs), &procLauncher{t: t, modes: []string{"exit3"}})
	err := s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "closed its socket") {
		t.Fatalf("start: %v", err)
	}
	lines := logs.lines("worker died")
	if len(lines) != 1 || !strings.Contains(lines[0], "exited with status 3") || !strings.Contains(lines[0], "cannot map tensors") {
		t.Fatalf("death lines %q", lines)
	}
	if errors.Is(err, ErrGaveUp) {
		t.Fatal("a failed first start is not a spent budget")
	}
	s.Close()
}
