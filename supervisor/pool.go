package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
)

// Loaded is a loaded model of a Pool: its backend (a Supervisor and its
// worker, in lisa serve), closed when the model is evicted.
type Loaded interface {
	broker.Backend
	broker.Embedder
	broker.Stats
	Close() error
}

// PoolModel is one model of a Pool.
type PoolModel struct {
	ID      string   // served id, unique in the pool
	Aliases []string // further names, unique in the pool
	// Charge is what the model counts against the pool's budget from the
	// start of its load until it is evicted (lisa serve: its worker's
	// memory cap, else its files' size), unless Check gives its own.
	Charge int64
	// CtxSize and Parallel are the model's tokens per slot (0: the
	// model's own) and generation slots, as configured: its status shows
	// them.
	CtxSize, Parallel int
	// Identity, when set, names the present version of the model's files
	// (lisa serve: the device, inode, size and modification time of
	// each). A failed check or load is remembered with the identity it
	// was tried on: until the identity changes, requests get that failure
	// at once, without a new worker and without evicting anything.
	// Without Identity, and after a check or load that ran out of time,
	// a failed model is tried again after RetryFailed.
	Identity func() (string, error)
	// Check, when set, checks the model's files cheaply (lisa serve: a
	// sandboxed one-job worker parses the file and plans its KV cache)
	// before the pool makes room for the model, so that a file that
	// cannot load evicts nothing. It returns the model's charge (0 or
	// less: Charge). A passed check is not run again while Identity
	// gives the same files. Its error, like Load's, is shown to clients.
	Check func(ctx context.Context) (int64, error)
	// Load starts the model and returns once it can serve; ctx bounds
	// the load. Its error is shown to clients, shortened to one line, so
	// it should name no path.
	Load func(ctx context.Context) (Loaded, error)
}

// PoolConfig configures a Pool. Zero durations take the defaults listed.
type PoolConfig struct {
	// Budget bounds the sum of the charges of the loaded and loading
	// models (0: no bound).
	Budget int64
	// LoadTimeout bounds each load, and each check (default 2 min).
	LoadTimeout time.Duration
	// RetryFailed is how long a failed load is reported before a request
	// may try it again, for a model without Identity; with Identity it is
	// only the retry hint of the failure (default 30 s).
	RetryFailed time.Duration
	// NoRoomRetry is the retry hint of a request refused because every
	// loaded model is busy (default 5 s).
	NoRoomRetry time.Duration
	Logger      *slog.Logger // default slog.Default()
}

// Pool serves several models, each loaded on first use (or by Preload)
// and evicted, least recently used first, when a load needs room within
// the budget. A model with requests in flight, or waited for, is never
// evicted, and nothing is evicted for a model before its Check has
// passed. It is a broker.Models; its methods are safe for concurrent
// use.
type Pool struct {
	cfg    PoolConfig
	log    *slog.Logger
	models []*member          // in id order
	byName map[string]*member // ids and aliases; not changed after NewPool
	ctx    context.Context    // cancelled by Close: aborts loads
	cancel context.CancelFunc //
	wg     sync.WaitGroup     // attempts and closes under way
	mu     sync.Mutex         // guards what follows and every member's state
	used   int64              // charges held by the loaded and loading models
	tick   uint64             // use clock of the LRU order
	closes []chan struct{}    // evicted models still closing
	closed bool
}

// member is a model of the pool and its state.
type member struct {
	spec   PoolModel
	state  broker.ModelState
	loaded Loaded
	att    *attempt // the current (state loading) or last load attempt
	seq    uint64   // attempts started
	charge int64    // the model's charge: spec.Charge until a check gives its own
	held   int64    // the charge it holds in Pool.used (loaded, or loading past the check)
	// checked says a check passed on the files of identity checkedID.
	checked   bool
	checkedID string
	err       error  // the last attempt's failure
	reason    string // err as clients see it
	failedAt  time.Time
	failID    string // the identity the failed attempt was tried on
	byID      bool   // the failure stands until the identity changes
	inflight  int    // requests holding the model
	waiting   int    // requests waiting for its load
	lastUse   uint64
	past      broker.WorkerStats // of its evicted workers
	st        broker.ModelStatus // counters
}

// attempt is one load of a model, from its check to its end. Requests
// for the model wait for done; err, set before done is closed, is why the
// attempt ended without a loaded model (nil: it loaded).
type attempt struct {
	done chan struct{}
	err  *broker.ModelError
}

// NewPool returns a pool of models; ids and aliases must be distinct.
func NewPool(cfg PoolConfig, models []PoolModel) (*Pool, error) {
	if cfg.LoadTimeout <= 0 {
		cfg.LoadTimeout = 2 * time.Minute
	}
	if cfg.RetryFailed <= 0 {
		cfg.RetryFailed = 30 * time.Second
	}
	if cfg.NoRoomRetry <= 0 {
		cfg.NoRoomRetry = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pool{cfg: cfg, log: cfg.Logger, byName: make(map[string]*member)}
	for _, pm := range models {
		if pm.Load == nil || pm.ID == "" {
			return nil, fmt.Errorf("supervisor: pool model %q has no id or no loader", pm.ID)
		}
		m := &member{spec: pm, state: broker.ModelUnloaded, charge: pm.Charge, past: broker.WorkerStats{Deaths: map[string]uint64{}}}
		for _, n := range append([]string{pm.ID}, pm.Aliases...) {
			if o, dup := p.byName[n]; dup {
				return nil, fmt.Errorf("supervisor: the name %q is given to both %q and %q", n, o.spec.ID, pm.ID)
			}
			p.byName[n] = m
		}
		p.models = append(p.models, m)
	}
	slices.SortFunc(p.models, func(a, b *member) int { return strings.Compare(a.spec.ID, b.spec.ID) })
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p, nil
}

// Acquire returns the model name names, loading it when needed and
// waiting for the load until ctx ends; see broker.Models.
func (p *Pool) Acquire(ctx context.Context, name string) (broker.Backend, func(), error) {
	m := p.byName[name]
	if m == nil {
		return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelNotFound}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.closed {
			return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoading, Reason: "the server is shutting down", Err: ErrClosed}
		}
		switch m.state {
		case broker.ModelLoaded:
			m.inflight++
			p.tick++
			m.lastUse = p.tick
			return counted{Loaded: m.loaded, p: p, m: m}, p.releaser(m), nil
		case broker.ModelFailed:
			retry, err := p.retryFailed(m)
			if err != nil {
				err.Model = name
				return nil, nil, err
			}
			if retry {
				m.state = broker.ModelUnloaded
			}
			continue // look again: the state may have changed meanwhile
		case broker.ModelUnloaded:
			p.startLoad(m)
		}
		// Loading: wait for the end of the attempt, counted as a waiter
		// so that the model is not evicted before this request takes it.
		a := m.att
		m.waiting++
		p.mu.Unlock()
		var ctxErr error
		select {
		case <-a.done:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		p.mu.Lock()
		m.waiting--
		if ctxErr != nil {
			return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoading, RetryAfter: 5 * time.Second, Err: ctxErr}
		}
		if a.err != nil {
			// The attempt this request waited for failed, or found no
			// room: that is its answer (a copy: every waiter names the
			// model as it asked).
			e := *a.err
			e.Model = name
			return nil, nil, &e
		}
	}
}

// retryFailed decides whether the failed model m may be tried again:
// true when it may; the failure to answer when it may not; false and nil
// when m's state changed while its files were looked at (the caller then
// looks again). p.mu is held; it is released while the identity of m's
// files is read.
func (p *Pool) retryFailed(m *member) (bool, *broker.ModelError) {
	if !m.byID {
		if wait := p.cfg.RetryFailed - time.Since(m.failedAt); wait > 0 {
			e := m.failure(p.cfg.RetryFailed)
			e.RetryAfter = wait
			return false, e
		}
		return true, nil
	}
	seq := m.seq
	p.mu.Unlock()
	id := identity(m.spec.Identity)
	p.mu.Lock()
	if m.state != broker.ModelFailed || m.seq != seq {
		return false, nil
	}
	if id == m.failID {
		return false, m.failure(p.cfg.RetryFailed)
	}
	p.log.Info("the model's files changed since its failed load: trying it again", "model", m.spec.ID)
	return true, nil
}

// failure is m's last failure as a request gets it.
func (m *member) failure(retry time.Duration) *broker.ModelError {
	return &broker.ModelError{Model: m.spec.ID, Kind: broker.ErrModelLoadFailed, Reason: m.reason, RetryAfter: retry, Err: m.err}
}

// identity reads the identity of a model's files; a failure to read it is
// an identity too (the files that cannot be read stay the same until
// they can).
func identity(f func() (string, error)) string {
	if f == nil {
		return ""
	}
	id, err := f()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return "files: " + id
}

// releaser returns the function that ends one request's hold on m.
func (p *Pool) releaser(m *member) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			m.inflight--
			p.tick++
			m.lastUse = p.tick
			p.mu.Unlock()
		})
	}
}

// startLoad starts an attempt to load m, which is unloaded: requests
// wait for its end. p.mu is held.
func (p *Pool) startLoad(m *member) {
	m.seq++
	m.state, m.att, m.err, m.reason = broker.ModelLoading, &attempt{done: make(chan struct{})}, nil, ""
	p.wg.Add(1)
	go p.attempt(m, m.att)
}

// attempt loads m: it reads the identity of m's files, checks them
// (unless a check passed on the same files), makes room for m within the
// budget, evicting idle models least recently used first, and loads it
// once every evicted worker has ended. Nothing is evicted before the
// check has passed, and a failure gives back what m held of the budget.
func (p *Pool) attempt(m *member, a *attempt) {
	defer p.wg.Done()
	start := time.Now()
	id := identity(m.spec.Identity)
	p.mu.Lock()
	charge, needCheck := m.charge, m.spec.Check != nil && !(m.checked && m.checkedID == id)
	p.mu.Unlock()
	if needCheck {
		ctx, cancel := context.WithTimeout(p.ctx, p.cfg.LoadTimeout)
		c, err := checkSafely(ctx, m.spec.Check)
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil {
			p.mu.Lock()
			p.fail(m, a, id, "check", err, start, timedOut)
			p.mu.Unlock()
			return
		}
		if c <= 0 {
			c = m.spec.Charge
		}
		charge = c
		p.mu.Lock()
		m.charge, m.checked, m.checkedID = c, true, id
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.closed {
		p.fail(m, a, id, "load", ErrClosed, start, true)
		p.mu.Unlock()
		return
	}
	if p.cfg.Budget > 0 && charge > p.cfg.Budget {
		// No eviction can help: the model is refused as a failed load,
		// so /v1/models says why.
		p.fail(m, a, id, "budget", fmt.Errorf("the model needs %d bytes, more than the whole models memory budget of %d", charge, p.cfg.Budget), start, false)
		p.mu.Unlock()
		return
	}
	victims, ok := p.victims(charge)
	if !ok {
		m.state = broker.ModelUnloaded
		a.err = &broker.ModelError{Model: m.spec.ID, Kind: broker.ErrModelNoRoom, RetryAfter: p.cfg.NoRoomRetry,
			Reason: fmt.Sprintf("the models memory budget (%d bytes) is held by models with requests in flight", p.cfg.Budget)}
		p.log.Warn("no room for the model", "model", m.spec.ID, "charge_bytes", charge, "budget_bytes", p.cfg.Budget)
		close(a.done)
		p.mu.Unlock()
		return
	}
	for _, v := range victims {
		p.evict(v)
	}
	// The new worker starts only once every evicted worker has ended,
	// so the budget holds for memory really in use.
	wait := slices.Clone(p.closes)
	p.used += charge
	m.held = charge
	m.st.Loads++
	p.mu.Unlock()
	for _, c := range wait {
		select {
		case <-c:
		case <-p.ctx.Done():
		}
	}
	p.log.Info("loading model", "model", m.spec.ID)
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.LoadTimeout)
	l, err := loadSafely(ctx, m.spec.Load)
	timedOut := ctx.Err() != nil
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.closed {
		// Close came during the load: nobody will evict this worker.
		p.mu.Unlock()
		l.Close()
		p.mu.Lock()
		err = ErrClosed
	}
	if err != nil {
		p.used -= m.held
		m.held = 0
		p.fail(m, a, id, "load", err, start, timedOut || errors.Is(err, ErrClosed))
		return
	}
	m.state, m.loaded = broker.ModelLoaded, l
	p.tick++
	m.lastUse = p.tick
	close(a.done)
	p.log.Info("model loaded", "model", m.spec.ID, "duration", time.Since(start).Round(time.Millisecond), "charge_bytes", charge)
}

// fail ends the attempt a of m with err, a failure remembered with the
// identity id of the files it was tried on (stage names what failed: the
// check, the budget or the load). A transient failure, one that ran out
// of time or that Close ended, says nothing sure of the files (a loaded
// machine is slow too): it is tried again after RetryFailed instead.
// p.mu is held.
func (p *Pool) fail(m *member, a *attempt, id, stage string, err error, start time.Time, transient bool) {
	m.state, m.err, m.failedAt = broker.ModelFailed, err, time.Now()
	m.reason = oneLine(err.Error())
	m.failID = id
	m.byID = m.spec.Identity != nil && !transient
	m.st.LoadFailures++
	a.err = m.failure(p.cfg.RetryFailed)
	close(a.done)
	p.log.Error("model failed to load", "model", m.spec.ID, "stage", stage, "err", err, "duration", time.Since(start).Round(time.Millisecond))
}

// victims returns the idle models to evict, least recently used first,
// for a load of charge bytes to fit in the budget, and whether they
// make enough room. p.mu is held.
func (p *Pool) victims(charge int64) ([]*member, bool) {
	if p.cfg.Budget <= 0 || p.used+charge <= p.cfg.Budget {
		return nil, true
	}
	var idle []*member
	for _, o := range p.models {
		if o.state == broker.ModelLoaded && o.inflight == 0 && o.waiting == 0 {
			idle = append(idle, o)
		}
	}
	slices.SortFunc(idle, func(a, b *member) int { return cmp.Compare(a.lastUse, b.lastUse) })
	free := p.cfg.Budget - p.used
	var victims []*member
	for _, o := range idle {
		if free >= charge {
			break
		}
		victims = append(victims, o)
		free += o.held
	}
	return victims, free >= charge
}

// evict unloads the idle model v; its worker is closed in the
// background, tracked in p.closes. p.mu is held.
func (p *Pool) evict(v *member) {
	l := v.loaded
	v.state, v.loaded = broker.ModelUnloaded, nil
	v.st.Evictions++
	p.used -= v.held
	closed := make(chan struct{})
	p.closes = append(p.closes, closed)
	p.log.Info("model evicted to make room", "model", v.spec.ID, "charge_bytes", v.held)
	v.held = 0
	if sr, ok := l.(interface{ SetStopReason(string) }); ok {
		sr.SetStopReason("model evicted to make room")
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.closeLoaded(v, l)
		p.mu.Lock()
		p.closes = slices.DeleteFunc(p.closes, func(c chan struct{}) bool { return c == closed })
		p.mu.Unlock()
		close(closed)
	}()
}

// closeLoaded closes a model's worker and keeps its counters.
func (p *Pool) closeLoaded(v *member, l Loaded) {
	st := l.WorkerStats()
	if err := l.Close(); err != nil {
		p.log.Warn("closing a model", "model", v.spec.ID, "err", err)
	}
	p.mu.Lock()
	addStats(&v.past, st)
	p.mu.Unlock()
}

func addStats(sum *broker.WorkerStats, st broker.WorkerStats) {
	sum.Restarts += st.Restarts
	sum.BudgetSpent += st.BudgetSpent
	sum.StderrDroppedLines += st.StderrDroppedLines
	sum.StderrDroppedBytes += st.StderrDroppedBytes
	if sum.Deaths == nil {
		sum.Deaths = map[string]uint64{}
	}
	for c, n := range st.Deaths {
		sum.Deaths[c] += n
	}
}

// loadSafely runs a loader, turning a panic into an error so that one
// model's loader cannot take the others down.
func loadSafely(ctx context.Context, load func(context.Context) (Loaded, error)) (l Loaded, err error) {
	defer func() {
		if v := recover(); v != nil {
			l, err = nil, fmt.Errorf("the loader panicked: %v", v)
		}
	}()
	l, err = load(ctx)
	if err == nil && l == nil {
		err = errors.New("the loader returned no model")
	}
	return l, err
}

// checkSafely runs a check, turning a panic into an error as loadSafely
// does.
func checkSafely(ctx context.Context, check func(context.Context) (int64, error)) (charge int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			charge, err = 0, fmt.Errorf("the check panicked: %v", v)
		}
	}()
	return check(ctx)
}

// oneLine is err's text as clients see it: printable, one line, short.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
	return limitText(s)
}

// Preload starts the loads of the models names names, without waiting;
// an unknown name is an error (before any load starts).
func (p *Pool) Preload(names []string) error {
	var ms []*member
	for _, n := range names {
		m := p.byName[n]
		if m == nil {
			return fmt.Errorf("preload: no model is named %q", n)
		}
		ms = append(ms, m)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range ms {
		if m.state != broker.ModelUnloaded || p.closed {
			continue
		}
		p.startLoad(m)
	}
	return nil
}

// Statuses describes every model, in id order; see broker.Models.
func (p *Pool) Statuses() []broker.ModelStatus {
	p.mu.Lock()
	type snap struct {
		st broker.ModelStatus
		l  Loaded
	}
	snaps := make([]snap, len(p.models))
	for i, m := range p.models {
		st := m.st
		st.ID, st.Aliases, st.State, st.InFlight, st.Charge = m.spec.ID, m.spec.Aliases, m.state, m.inflight, m.charge
		st.CtxSize, st.Parallel = m.spec.CtxSize, m.spec.Parallel
		if m.state == broker.ModelFailed {
			st.Error = m.reason
		}
		st.Worker = broker.WorkerStats{Deaths: map[string]uint64{}}
		addStats(&st.Worker, m.past)
		snaps[i] = snap{st, m.loaded}
	}
	p.mu.Unlock()
	out := make([]broker.ModelStatus, len(snaps))
	for i, s := range snaps {
		if s.l != nil {
			addStats(&s.st.Worker, s.l.WorkerStats())
			s.st.Error = workerState(s.l)
		}
		out[i] = s.st
	}
	return out
}

// workerState says why a loaded model cannot serve now (its worker
// restarts, or its restart budget is spent), "" when it can. The text
// holds no words of the worker.
func workerState(l Loaded) string {
	h, ok := l.(interface{ Health() error })
	if !ok {
		return ""
	}
	err := h.Health()
	var r interface{ Reason() string }
	switch {
	case err == nil:
		return ""
	case errors.As(err, &r):
		return r.Reason()
	case errors.Is(err, broker.ErrNotReady):
		return "the worker is restarting"
	}
	return "the worker is not available"
}

// Close stops every model and load; it waits for their workers to end.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var open []*member
	for _, m := range p.models {
		if m.state == broker.ModelLoaded {
			open = append(open, m)
		}
	}
	p.mu.Unlock()
	p.cancel()
	var wg sync.WaitGroup
	for _, m := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.loaded.Close()
		}()
	}
	wg.Wait()
	p.wg.Wait()
	return nil
}

// counted is a loaded model as one request sees it: its generations are
// counted for /metrics.
type counted struct {
	Loaded
	p *Pool
	m *member
}

// Generate starts a generation and counts it and its tokens.
func (c counted) Generate(ctx context.Context, req gen.Request) (<-chan broker.Event, error) {
	ch, err := c.Loaded.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	c.p.mu.Lock()
	c.m.st.Requests++
	c.p.mu.Unlock()
	out := make(chan broker.Event)
	go func() {
		defer close(out)
		for ev := range ch {
			if ev.Kind == broker.EventDone {
				c.p.mu.Lock()
				c.m.st.PromptTokens += uint64(max(0, ev.Usage.PromptTokens))
				c.m.st.CompletionTokens += uint64(max(0, ev.Usage.CompletionTokens))
				c.p.mu.Unlock()
			}
			out <- ev
		}
	}()
	return out, nil
}
