package supervisor

import (
	"io"
	"syscall"

	"github.com/lisa-llm/lisa/sandbox"
)

// SandboxLauncher starts each worker with sandbox.Start(Config).
type SandboxLauncher struct {
	Config sandbox.Config
}

// Launch starts one sandboxed worker.
func (l SandboxLauncher) Launch() (Worker, error) {
	p, err := sandbox.Start(l.Config)
	if err != nil {
		return nil, err
	}
	return sandboxWorker{p}, nil
}

// sandboxWorker is a Worker over a sandbox.Process.
type sandboxWorker struct{ p *sandbox.Process }

// Conn returns the broker's end of the socketpair.
func (w sandboxWorker) Conn() io.ReadWriteCloser { return w.p.Conn }

// Kill sends SIGKILL to the worker.
func (w sandboxWorker) Kill() error { return w.p.Kill() }

// Wait reaps the worker and converts how it ended.
func (w sandboxWorker) Wait() Exit { return ExitFromSandbox(w.p.Wait()) }

// ExitFromSandbox converts a sandbox.Exit: its String is the description.
func ExitFromSandbox(e sandbox.Exit) Exit {
	x := Exit{Description: e.String()}
	switch {
	case e.Err != nil:
		x.Cause = "unknown"
	case e.Seccomp:
		x.Cause = signalName(syscall.SIGSYS)
	case e.Signal != 0:
		x.Cause = signalName(e.Signal)
	default:
		x.Cause = "exit"
	}
	return x
}
