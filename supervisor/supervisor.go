package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lisa-llm/lisa/broker"
)

// ErrGaveUp is matched by the error of a Supervisor whose workers died
// more often than its restart budget allows (a *GaveUpError, which also
// matches broker.ErrFailed and broker.ErrNotReady).
var ErrGaveUp = errors.New("supervisor: gave up restarting the worker")

// GaveUpError is the state of a Supervisor that spent its restart budget:
// it waits Retry, then starts a worker again. It matches ErrGaveUp,
// broker.ErrFailed (so /health says "failed" with Reason) and
// broker.ErrNotReady (so requests get 503).
type GaveUpError struct {
	Restarts int           // restarts within Window
	Window   time.Duration // the restart window
	Last     string        // why the last worker died (worker text included: for logs)
	Cause    string        // how it died: a signal name, "exit", "launch" or "unknown"
	Retry    time.Duration // the wait before the next start
}

// Error says that the budget is spent, and why the last worker died.
func (e *GaveUpError) Error() string {
	return fmt.Sprintf("supervisor: gave up restarting the worker: %d restarts within %v; last death: %s; next start in %v",
		e.Restarts, e.Window, e.Last, e.Retry)
}

// Reason is the one-line state /health shows. It holds no text the worker
// wrote: only counts and how the last worker ended.
func (e *GaveUpError) Reason() string {
	return fmt.Sprintf("the worker died %d times within %v (last: %s); restart budget spent, next start in %v",
		e.Restarts, e.Window, e.Cause, e.Retry)
}

// Is reports whether target is ErrGaveUp, broker.ErrFailed or broker.ErrNotReady.
func (e *GaveUpError) Is(target error) bool {
	return target == ErrGaveUp || target == broker.ErrFailed || target == broker.ErrNotReady
}

// ErrClosed is returned after Close.
var ErrClosed = errors.New("supervisor: closed")

// ErrRequestFailed wraps the error a live worker reported for one request.
var ErrRequestFailed = errors.New("worker could not serve the request")

// errStarting is the health of a supervisor whose worker is not ready yet.
var errStarting = fmt.Errorf("%w: the worker is starting", broker.ErrNotReady)

// Supervisor runs one worker at a time and is a broker.Backend and a
// broker.Stats. Its methods are safe for concurrent use.
type Supervisor struct {
	cfg    Config
	launch Launcher
	log    *slog.Logger

	mu       sync.Mutex
	cur      *instance // the worker that serves, nil while none is ready
	info     broker.ModelInfo
	health   error // nil when ready
	restarts []time.Time
	stats    broker.WorkerStats
	closing  chan struct{}
	closed   bool
	started  bool
	stopWhy  string // the reason Close logs ("": the server shuts down)
	loopDone chan struct{}
}

// New returns a Supervisor that will start workers with l. Call Start.
func New(cfg Config, l Launcher) *Supervisor {
	cfg = cfg.withDefaults()
	return &Supervisor{cfg: cfg, launch: l, log: cfg.Logger, health: errStarting,
		stats:   broker.WorkerStats{Deaths: make(map[string]uint64)},
		closing: make(chan struct{}), loopDone: make(chan struct{})}
}

// Start launches the first worker and waits until it is ready. An error
// (the worker could not start, refused the model, broke the protocol or
// timed out) is final: no restart follows, and the server should not
// start. Later deaths are handled in the background.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started || s.closed {
		s.mu.Unlock()
		return errors.New("supervisor: Start called twice or after Close")
	}
	s.started = true
	s.mu.Unlock()
	inst, err := s.startInstance()
	if err != nil {
		s.setHealth(err)
		close(s.loopDone)
		return err
	}
	select {
	case <-inst.ready:
	case <-inst.failed:
	case <-ctx.Done():
		inst.fail(fmt.Errorf("supervisor: start: %w", ctx.Err()))
	case <-s.closing:
		inst.fail(ErrClosed)
	}
	if err := inst.failure(); err != nil {
		s.bury(inst)
		err = fmt.Errorf("supervisor: first worker: %w", err)
		s.setHealth(err)
		close(s.loopDone)
		return err
	}
	go s.loop(inst)
	return nil
}

// SetStopReason sets the reason the worker's stop line gives when Close
// ends it (by default "server shutting down"): a Pool evicting a model
// says so.
func (s *Supervisor) SetStopReason(reason string) {
	s.mu.Lock()
	s.stopWhy = reason
	s.mu.Unlock()
}

// Close stops the worker and fails what it was doing. It waits for the
// worker to be reaped.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	started := s.started
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	if started {
		<-s.loopDone
	}
	s.setHealth(ErrClosed)
	return nil
}

// Health returns nil when a worker is ready, an error matching
// broker.ErrNotReady while one starts, and a *GaveUpError (matching
// ErrGaveUp) while the restart budget is spent.
func (s *Supervisor) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health
}

// WorkerStats returns the restart and death counters for /metrics.
func (s *Supervisor) WorkerStats() broker.WorkerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := make(map[string]uint64, len(s.stats.Deaths))
	for k, v := range s.stats.Deaths {
		d[k] = v
	}
	st := broker.WorkerStats{Restarts: s.stats.Restarts, Deaths: d, BudgetSpent: s.stats.BudgetSpent}
	if s.cfg.Stderr != nil {
		st.StderrDroppedLines, st.StderrDroppedBytes = s.cfg.Stderr.Dropped()
	}
	return st
}

func (s *Supervisor) setHealth(err error) {
	s.mu.Lock()
	s.health = err
	s.mu.Unlock()
}

// serving returns the ready worker, or why there is none.
func (s *Supervisor) serving() (*instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, s.health
	}
	return s.cur, nil
}

// becomeReady makes inst the serving worker.
func (s *Supervisor) becomeReady(inst *instance, info broker.ModelInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.cur, s.info, s.health = inst, info, nil
}

// loop buries each worker that fails and starts the next. Within the
// budget a restart follows after RestartDelay; past it the supervisor
// waits with exponential backoff (RestartBackoff doubling up to
// MaxRestartBackoff) and tries again: the budget limits the rate of
// restarts, not the life of the server.
func (s *Supervisor) loop(inst *instance) {
	defer close(s.loopDone)
	lastReason, lastCause := "", ""
	var backoff time.Duration
	for {
		if inst != nil {
			select {
			case <-inst.failed:
			case <-s.closing:
				inst.fail(ErrClosed)
			}
			lastReason, lastCause = s.bury(inst)
		}
		if s.isClosing() {
			return
		}
		wait := s.cfg.RestartDelay
		if gu := s.spend(lastReason, lastCause); gu != nil {
			backoff = min(max(2*backoff, s.cfg.RestartBackoff), s.cfg.MaxRestartBackoff)
			gu.Retry, wait = backoff, backoff
			s.log.Error("worker restart budget spent; retrying with backoff", "err", gu, "retry_in", backoff)
			s.mu.Lock()
			s.health = gu
			s.stats.Restarts++ // the start after the wait
			s.mu.Unlock()
		} else {
			backoff = 0
		}
		select {
		case <-time.After(wait):
		case <-s.closing:
			return
		}
		var err error
		if inst, err = s.startInstance(); err != nil {
			s.log.Error("worker start failed", "err", err)
			lastReason, lastCause = err.Error(), "launch"
		}
	}
}

func (s *Supervisor) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// spend takes one restart from the budget, or, counting it, returns the
// error that says the budget is spent (Retry still to fill in).
func (s *Supervisor) spend(lastReason, lastCause string) *GaveUpError {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	kept := s.restarts[:0]
	for _, t := range s.restarts {
		if now.Sub(t) < s.cfg.RestartWindow {
			kept = append(kept, t)
		}
	}
	s.restarts = kept
	if len(kept) >= s.cfg.MaxRestarts {
		s.stats.BudgetSpent++
		return &GaveUpError{Restarts: len(kept), Window: s.cfg.RestartWindow, Last: limitText(lastReason), Cause: lastCause}
	}
	s.restarts = append(s.restarts, now)
	s.stats.Restarts++
	s.health = errStarting
	return nil
}

// startInstance launches a worker and sends it hello.
func (s *Supervisor) startInstance() (*instance, error) {
	w, err := s.launch.Launch()
	if err != nil {
		return nil, fmt.Errorf("supervisor: launch worker: %w", err)
	}
	return newInstance(s, w), nil
}

// bury kills a failed worker, reaps it, fails its requests and logs its
// end in one line: "worker stopped" at INFO when Close asked for it
// (its exit at DEBUG), "worker died" at ERROR otherwise. It returns the line's reason and the
// exit's cause.
func (s *Supervisor) bury(inst *instance) (reason string, cause string) {
	s.mu.Lock()
	if s.cur == inst {
		s.cur = nil
		s.health = errStarting
	}
	s.mu.Unlock()
	failure := inst.failure()
	inst.w.Kill()
	inst.conn.Close()
	var exit Exit
	reaped := make(chan struct{})
	go func() { exit = inst.w.Wait(); close(reaped) }()
	select {
	case <-reaped:
	case <-time.After(s.cfg.ReapTimeout):
		exit = Exit{Description: fmt.Sprintf("worker not reaped within %v of SIGKILL", s.cfg.ReapTimeout), Cause: "unknown"}
	}
	failed := inst.failAll(failure)
	inst.stop()
	stopped := errors.Is(failure, ErrClosed)
	if !stopped {
		// A shutdown Close asked for is no death for /metrics either.
		s.mu.Lock()
		s.stats.Deaths[exit.Cause]++
		s.mu.Unlock()
	}
	if stopped {
		// The SIGKILL of a shutdown is no crash: the line says it was
		// asked for, the signal only at debug level.
		s.mu.Lock()
		why := s.stopWhy
		s.mu.Unlock()
		if why == "" {
			why = "server shutting down"
		}
		s.log.Info("worker stopped", "reason", why, "failed_requests", failed)
		s.log.Debug("worker reaped after shutdown", "exit", exit.Description)
	} else {
		s.log.Error("worker died", "exit", exit.Description,
			"cause", exit.Cause, "reason", failure.Error(), "failed_requests", failed)
	}
	return exit.Description + "; " + failure.Error(), exit.Cause
}
