package supervisor

import (
	"io"
	"log/slog"
	"time"
)

// Config configures a Supervisor. Zero durations and counts take the
// defaults listed.
type Config struct {
	// ModelName is the served model name; empty: the model's own name.
	ModelName string
	// Threads, CtxSize, Parallel, KVType, CacheTypeK and CacheTypeV are
	// passed to the worker in hello (0 or empty: the worker's defaults).
	Threads    int
	CtxSize    int
	Parallel   int
	KVType     string
	CacheTypeK string
	CacheTypeV string

	// ReadyTimeout bounds the time from launch to ready (default 2 min).
	ReadyTimeout time.Duration
	// CancelGrace is how long the worker has to end a request after its
	// requester gave up (default 10 s).
	CancelGrace time.Duration
	// StallTimeout is how long the worker may send nothing while requests
	// wait for it (default 5 min).
	StallTimeout time.Duration
	// SendTimeout bounds the wait for room in the send queue (default 10 s).
	SendTimeout time.Duration
	// ReapTimeout bounds the wait for a killed worker to be reaped
	// (default 10 s).
	ReapTimeout time.Duration
	// MaxRestarts is the restart budget per RestartWindow (default 3 per
	// minute).
	MaxRestarts   int
	RestartWindow time.Duration
	// RestartDelay is the pause before a restart (default 100 ms).
	RestartDelay time.Duration
	// RestartBackoff is the first wait before a start once the budget is
	// spent (default 1 s); it doubles for every further refusal, up to
	// MaxRestartBackoff (default 5 min), and starts over once the budget
	// has room again.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// MaxTokenBytes bounds a generation's text: at most MaxTokenBytes per
	// token of max_tokens (default 1024).
	MaxTokenBytes int
	// MaxTextBytes bounds a generation's text whatever its max_tokens
	// (default 16 MiB).
	MaxTextBytes int

	// Logger receives the death lines and lifecycle events (default
	// slog.Default()).
	Logger *slog.Logger
	// Stderr is the StderrLog the launcher forwards the worker's stderr
	// through, if any: WorkerStats reports what it dropped.
	Stderr *StderrLog
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.ReadyTimeout, 2*time.Minute)
	def(&c.CancelGrace, 10*time.Second)
	def(&c.StallTimeout, 5*time.Minute)
	def(&c.SendTimeout, 10*time.Second)
	def(&c.ReapTimeout, 10*time.Second)
	def(&c.RestartWindow, time.Minute)
	def(&c.RestartDelay, 100*time.Millisecond)
	def(&c.RestartBackoff, time.Second)
	def(&c.MaxRestartBackoff, 5*time.Minute)
	c.MaxRestartBackoff = max(c.MaxRestartBackoff, c.RestartBackoff)
	if c.MaxRestarts <= 0 {
		c.MaxRestarts = 3
	}
	if c.MaxTokenBytes <= 0 {
		c.MaxTokenBytes = 1024
	}
	if c.MaxTextBytes <= 0 {
		c.MaxTextBytes = 16 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Launcher starts workers. The real one is SandboxLauncher; tests run
// workers in-process or as helper processes.
type Launcher interface {
	// Launch starts one worker and returns once it runs.
	Launch() (Worker, error)
}

// Worker is one running worker process.
type Worker interface {
	// Conn is the supervisor's end of the worker's socket.
	Conn() io.ReadWriteCloser
	// Kill ends the worker at once (SIGKILL for a process).
	Kill() error
	// Wait blocks until the worker has ended and been reaped, and says how.
	Wait() Exit
}

// Exit is how a worker ended.
type Exit struct {
	// Description is one line such as "worker killed by seccomp (SIGSYS):
	// blocked system call openat" or "worker exited with status 1".
	Description string
	// Cause is what /metrics counts deaths by: a signal name ("SIGSYS",
	// "SIGKILL"), "exit" for an exit status, "unknown" when waiting failed.
	Cause string
}
