//go:build !linux

package sandbox

import "os"

// Process is a running worker (never created off Linux).
type Process struct {
	// Conn is the broker's end of the socketpair.
	Conn *os.File
	// Pid is the worker's pid.
	Pid int
	// Report lists the layers the broker set up.
	Report Report
}

// Start fails: the worker's sandbox exists only on Linux.
func Start(cfg Config) (*Process, error) { return nil, ErrUnsupported }

// Wait returns at once: there is no worker off Linux.
func (p *Process) Wait() Exit { return Exit{Code: -1, Err: ErrUnsupported} }

// Done returns a closed channel: there is no worker off Linux.
func (p *Process) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Kill fails: there is no worker off Linux.
func (p *Process) Kill() error { return ErrUnsupported }

// LockDown fails: the worker's sandbox exists only on Linux.
func LockDown(wc WorkerConfig) ([]*os.File, Report, error) { return nil, Report{}, ErrUnsupported }

// EnterServing fails: the worker's sandbox exists only on Linux.
func EnterServing(rep *Report) error { return ErrUnsupported }

// ProbeWorker fails: the worker's sandbox exists only on Linux.
func ProbeWorker(args []string) int {
	os.Stderr.WriteString(ErrUnsupported.Error() + "\n")
	return 1
}

// RunProbes fails: the worker's sandbox exists only on Linux.
func RunProbes(cfg Config, names []string) ([]ProbeResult, Report, error) {
	return nil, Report{}, ErrUnsupported
}
