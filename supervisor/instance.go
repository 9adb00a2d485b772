package supervisor

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// sendQueue is the number of frames that may wait for the writer.
const sendQueue = 64

// maxReportedText bounds the worker-supplied text put in errors and logs.
const maxReportedText = 200

// instance is one worker and the requests in flight on it.
type instance struct {
	s       *Supervisor
	w       Worker
	conn    io.ReadWriteCloser
	sendq   chan []byte
	ready   chan struct{} // closed on ready
	failed  chan struct{} // closed on the first failure
	done    chan struct{} // closed by stop
	wg      sync.WaitGroup
	started time.Time
	busy    atomic.Bool  // the reader is decoding a frame: no stall
	quiet   atomic.Int64 // unix nanoseconds of the last bytes received, or of the first request after a lull

	mu      sync.Mutex
	failErr error
	tracker *ipc.Tracker
	calls   map[uint64]*call
	isReady bool
	vocab   int
	load    loadLog // the worker's progress reports
}

// newInstance starts serving w: hello is queued, and the reader, writer
// and watchdog run.
func newInstance(s *Supervisor, w Worker) *instance {
	in := &instance{s: s, w: w, conn: w.Conn(), sendq: make(chan []byte, sendQueue),
		ready: make(chan struct{}), failed: make(chan struct{}), done: make(chan struct{}),
		started: time.Now(), tracker: ipc.NewTracker(), calls: make(map[uint64]*call)}
	in.quiet.Store(in.started.UnixNano())
	c := s.cfg
	hello := &ipc.Hello{ID: in.tracker.Issue(ipc.ReqHello), Protocol: ipc.Version, ModelName: c.ModelName,
		Threads: c.Threads, CtxSize: c.CtxSize, Parallel: c.Parallel, KVType: c.KVType,
		CacheTypeK: c.CacheTypeK, CacheTypeV: c.CacheTypeV}
	f, err := ipc.Encode(nil, hello)
	if err == nil {
		err = ipc.Check(hello)
	}
	if err != nil {
		in.fail(fmt.Errorf("supervisor: hello: %w", err))
	} else {
		in.sendq <- f
	}
	in.wg.Add(3)
	go in.read()
	go in.write()
	go in.watch()
	return in
}

// fail records the first failure; the supervisor's loop then buries in.
func (in *instance) fail(err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.failErr == nil {
		in.failErr = err
		close(in.failed)
	}
}

// failure returns the first failure, or nil.
func (in *instance) failure() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.failErr
}

// stop ends the writer and watchdog and waits for all three goroutines;
// the caller has closed the connection and reaped the worker.
func (in *instance) stop() {
	close(in.done)
	in.wg.Wait()
}

// workerFailed is the error requests get when their worker is buried.
func workerFailed(reason error) error {
	return fmt.Errorf("%w: %v", broker.ErrWorkerFailed, reason)
}

func (in *instance) read() {
	defer in.wg.Done()
	r := ipc.NewReader(activityReader{in})
	for {
		body, err := r.ReadFrame()
		if err != nil {
			if err == io.EOF {
				err = errors.New("worker closed its socket")
			}
			in.fail(wrapViolation(err))
			return
		}
		in.busy.Store(true)
		m, err := ipc.DecodeReply(body)
		if err == nil {
			err = in.dispatch(m)
		}
		in.busy.Store(false)
		if err != nil {
			in.fail(wrapViolation(err))
			return
		}
		in.quiet.Store(time.Now().UnixNano()) // our own decoding time is no stall

	}
}

// activityReader reads the worker's socket and restarts the stall clock
// whenever bytes arrive, so a large frame on a slow machine is no stall.
type activityReader struct{ in *instance }

// Read reads from the worker's socket.
func (a activityReader) Read(p []byte) (int, error) {
	n, err := a.in.conn.Read(p)
	if n > 0 {
		a.in.quiet.Store(time.Now().UnixNano())
	}
	return n, err
}

func wrapViolation(err error) error {
	if errors.Is(err, ipc.ErrProtocol) {
		return fmt.Errorf("protocol violation: %w", err)
	}
	return err
}

func (in *instance) write() {
	defer in.wg.Done()
	for {
		select {
		case f := <-in.sendq:
			if _, err := in.conn.Write(f); err != nil {
				in.fail(fmt.Errorf("supervisor: write to worker: %w", err))
				return
			}
		case <-in.done:
			return
		}
	}
}

// watch fails the worker when it takes too long to get ready, to end a
// request it was asked to cancel, or to send anything while requests wait.
func (in *instance) watch() {
	defer in.wg.Done()
	c := in.s.cfg
	period := min(c.ReadyTimeout, c.CancelGrace, c.StallTimeout) / 4
	period = max(10*time.Millisecond, min(period, time.Second))
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			if err := in.check(now); err != nil {
				in.fail(err)
				return
			}
		case <-in.failed:
			return
		case <-in.done:
			return
		}
	}
}

func (in *instance) check(now time.Time) error {
	c := in.s.cfg
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.isReady {
		if d := now.Sub(in.started); d > c.ReadyTimeout {
			return fmt.Errorf("worker stalled: not ready within %v", c.ReadyTimeout)
		}
		return nil
	}
	if len(in.calls) > 0 && !in.busy.Load() {
		if d := now.Sub(time.Unix(0, in.quiet.Load())); d > c.StallTimeout {
			return fmt.Errorf("worker stalled: nothing received for %v while %d requests wait", d.Round(time.Millisecond), len(in.calls))
		}
	}
	for _, cl := range in.calls {
		if !cl.abandonedAt.IsZero() && now.Sub(cl.abandonedAt) > c.CancelGrace {
			return fmt.Errorf("worker stalled: request %d not ended within %v of its cancellation", cl.id, c.CancelGrace)
		}
	}
	return nil
}

// dispatch handles one decoded reply.
func (in *instance) dispatch(m ipc.Message) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	kind, err := in.tracker.Check(m)
	if err != nil {
		return err
	}
	if kind == ipc.ReqHello {
		return in.onHello(m)
	}
	c := in.calls[m.RequestID()]
	if c == nil {
		return fmt.Errorf("supervisor: no call for live id %d", m.RequestID())
	}
	switch m := m.(type) {
	case *ipc.Tokens:
		return c.onTokens(m)
	case *ipc.Done:
		if err := c.onDone(m); err != nil {
			return err
		}
	case *ipc.Error:
		c.finish(requestError(m))
	case *ipc.Tokenized:
		for i, id := range m.IDs {
			if int(id) >= in.vocab {
				return &ipc.ProtocolError{Kind: ipc.KindBadValue, Type: m.Type(), Field: fmt.Sprintf("ids[%d]", i), Offset: -1,
					Detail: fmt.Sprintf("token id %d outside the vocabulary of %d", id, in.vocab)}
			}
		}
		c.resolve(result{ids: m.IDs})
	case *ipc.Detokenized:
		c.resolve(result{text: m.Text})
	case *ipc.Embedding:
		c.resolve(result{vec: m.Vector, tokens: m.Tokens})
	}
	delete(in.calls, m.RequestID())
	return nil
}

// requestError is the error an ipc.Error ends a request with: a
// *gen.Error (matching ErrRequestFailed) when the request caused it, so
// the broker can answer with its 4xx; else the worker's own failure.
func requestError(m *ipc.Error) error {
	if m.Code == "" {
		return fmt.Errorf("%w: %q", ErrRequestFailed, limitText(m.Message))
	}
	return &gen.Error{Code: m.Code, Param: m.Param, Message: limitText(m.Message), Err: ErrRequestFailed}
}

// onHello handles the answer to hello.
func (in *instance) onHello(m ipc.Message) error {
	switch m := m.(type) {
	case *ipc.Progress:
		return in.load.progress(in.s.log, m, time.Now())
	case *ipc.Error:
		return fmt.Errorf("worker could not load the model: %q", limitText(m.Message))
	case *ipc.Ready:
		if err := in.load.ready(in.s.log, m); err != nil {
			return err
		}
		info := broker.ModelInfo{Name: m.Name, Architecture: m.Architecture, ContextSize: m.ContextSize, Slots: m.Slots,
			VocabSize: m.VocabSize, ControlIDs: m.ControlIDs, BOS: -1, Kernels: m.Kernels, LandlockABI: m.LandlockABI}
		if m.BOS != nil {
			info.BOS = *m.BOS
		}
		if in.s.cfg.ModelName != "" {
			info.Name = in.s.cfg.ModelName
		}
		for _, t := range m.SpecialTokens {
			if t != "" { // an empty text would match every message
				info.SpecialTokens = append(info.SpecialTokens, t)
			}
		}
		in.isReady, in.vocab = true, m.VocabSize
		close(in.ready)
		if in.failErr == nil { // a worker already failing never serves
			in.s.becomeReady(in, info)
		}
		in.s.log.Info("worker ready", "model", limitText(info.Name), "architecture", limitText(info.Architecture),
			"n_ctx", info.ContextSize, "n_vocab", info.VocabSize, "kernels", limitText(info.Kernels),
			"landlock_abi", info.LandlockABI, "layers", len(m.Layers), "startup", time.Since(in.started).Round(time.Millisecond))
		return nil
	}
	return fmt.Errorf("supervisor: %s answers hello", m.Type())
}

// limitText shortens worker text for errors and logs.
func limitText(s string) string {
	if len(s) <= maxReportedText {
		return s
	}
	cut := maxReportedText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// failAll fails every request in flight with reason; it returns how many.
func (in *instance) failAll(reason error) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	err := workerFailed(reason)
	n := len(in.calls)
	for id, c := range in.calls {
		c.finish(err)
		delete(in.calls, id)
	}
	return n
}
