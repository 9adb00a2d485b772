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
	// memory cap, else its files' size).
	Charge int64
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
	// LoadTimeout bounds each load (default 2 min).
	LoadTimeout time.Duration
	// RetryFailed is how long a failed load is reported before a request
	// may try it again (default 30 s).
	RetryFailed time.Duration
	// NoRoomRetry is the retry hint of a request refused because every
	// loaded model is busy (default 5 s).
	NoRoomRetry time.Duration
	Logger      *slog.Logger // default slog.Default()
}

// Pool serves several models, each loaded on first use (or by Preload)
// and evicted, least recently used first, when a load needs room within
// the budget. A model with requests in flight, or waited for, is never
// evicted. It is a broker.Models; its methods are safe for concurrent
// use.
type Pool struct {
	cfg    PoolConfig
	log    *slog.Logger
	models []*member          // in id order
	byName map[string]*member // ids and aliases; not changed after NewPool
	ctx    context.Context    // cancelled by Close: aborts loads
	cancel context.CancelFunc //
	wg     sync.WaitGroup     // loads and closes under way
	mu     sync.Mutex         // guards what follows and every member's state
	used   int64              // charges of the loaded and loading models
	tick   uint64             // use clock of the LRU order
	closes []chan struct{}    // evicted models still closing
	closed bool
}

// member is a model of the pool and its state.
type member struct {
	spec     PoolModel
	state    broker.ModelState
	loaded   Loaded
	done     chan struct{} // closed when the current load ends
	err      error         // the last load's failure
	reason   string        // err as clients see it
	failedAt time.Time
	inflight int // requests holding the model
	waiting  int // requests waiting for its load
	lastUse  uint64
	past     broker.WorkerStats // of its evicted workers
	st       broker.ModelStatus // counters
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
		m := &member{spec: pm, state: broker.ModelUnloaded, past: broker.WorkerStats{Deaths: map[string]uint64{}}}
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
			if wait := p.cfg.RetryFailed - time.Since(m.failedAt); wait > 0 {
				return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoadFailed, Reason: m.reason, RetryAfter: wait, Err: m.err}
			}
			m.state = broker.ModelUnloaded
			continue
		case broker.ModelUnloaded:
			if err := p.startLoad(m); err != nil {
				err.Model = name
				return nil, nil, err
			}
		}
		// Loading: wait for the end of the load, counted as a waiter so
		// that the model is not evicted before this request takes it.
		done := m.done
		m.waiting++
		p.mu.Unlock()
		var ctxErr error
		select {
		case <-done:
		case <-ctx.Done():
			ctxErr = ctx.Err()
		}
		p.mu.Lock()
		m.waiting--
		if ctxErr != nil {
			return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoading, RetryAfter: 5 * time.Second, Err: ctxErr}
		}
	}
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

// startLoad makes room for m within the budget, evicting idle models
// least recently used first, and starts its load. p.mu is held.
func (p *Pool) startLoad(m *member) *broker.ModelError {
	charge := m.spec.Charge
	if p.cfg.Budget > 0 && charge > p.cfg.Budget {
		// No eviction can help: the model is refused as a failed load,
		// so /v1/models says why.
		m.err = fmt.Errorf("the model needs %d bytes, more than the whole models memory budget of %d", charge, p.cfg.Budget)
		m.reason, m.failedAt, m.state = m.err.Error(), time.Now(), broker.ModelFailed
		m.st.LoadFailures++
		p.log.Error("model cannot be loaded", "model", m.spec.ID, "err", m.err)
		return &broker.ModelError{Kind: broker.ErrModelLoadFailed, Reason: m.reason, RetryAfter: p.cfg.RetryFailed}
	}
	var victims []*member
	if p.cfg.Budget > 0 && p.used+charge > p.cfg.Budget {
		var idle []*member
		for _, o := range p.models {
			if o.state == broker.ModelLoaded && o.inflight == 0 && o.waiting == 0 {
				idle = append(idle, o)
			}
		}
		slices.SortFunc(idle, func(a, b *member) int { return cmp.Compare(a.lastUse, b.lastUse) })
		free := p.cfg.Budget - p.used
		for _, o := range idle {
			if free >= charge {
				break
			}
			victims = append(victims, o)
			free += o.spec.Charge
		}
		if free < charge {
			return &broker.ModelError{Kind: broker.ErrModelNoRoom, RetryAfter: p.cfg.NoRoomRetry,
				Reason: fmt.Sprintf("the models memory budget (%d bytes) is held by models with requests in flight", p.cfg.Budget)}
		}
	}
	for _, v := range victims {
		p.evict(v)
	}
	// The new worker starts only once every evicted worker has ended,
	// so the budget holds for memory really in use.
	wait := slices.Clone(p.closes)
	p.used += charge
	m.state, m.done, m.err, m.reason = broker.ModelLoading, make(chan struct{}), nil, ""
	m.st.Loads++
	p.wg.Add(1)
	go p.load(m, wait)
	return nil
}

// evict unloads the idle model v; its worker is closed in the
// background, tracked in p.closes. p.mu is held.
func (p *Pool) evict(v *member) {
	l := v.loaded
	v.state, v.loaded = broker.ModelUnloaded, nil
	v.st.Evictions++
	p.used -= v.spec.Charge
	closed := make(chan struct{})
	p.closes = append(p.closes, closed)
	p.log.Info("model evicted to make room", "model", v.spec.ID, "charge_bytes", v.spec.Charge)
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

// load runs one load of m after the evicted workers in wait have ended.
func (p *Pool) load(m *member, wait []chan struct{}) {
	defer p.wg.Done()
	for _, c := range wait {
		select {
		case <-c:
		case <-p.ctx.Done():
		}
	}
	start := time.Now()
	p.log.Info("loading model", "model", m.spec.ID)
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.LoadTimeout)
	l, err := loadSafely(ctx, m.spec.Load)
	cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(m.done)
	if err == nil && p.closed {
		// Close came during the load: nobody will evict this worker.
		p.mu.Unlock()
		l.Close()
		p.mu.Lock()
		err = ErrClosed
	}
	if err != nil {
		p.used -= m.spec.Charge
		m.state, m.err, m.failedAt = broker.ModelFailed, err, time.Now()
		m.reason = oneLine(err.Error())
		m.st.LoadFailures++
		p.log.Error("model failed to load", "model", m.spec.ID, "err", err, "duration", time.Since(start).Round(time.Millisecond))
		return
	}
	m.state, m.loaded = broker.ModelLoaded, l
	p.tick++
	m.lastUse = p.tick
	p.log.Info("model loaded", "model", m.spec.ID, "duration", time.Since(start).Round(time.Millisecond), "charge_bytes", m.spec.Charge)
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
		if err := p.startLoad(m); err != nil {
			err.Model = m.spec.ID
			p.log.Warn("preload", "model", m.spec.ID, "err", err)
		}
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
		st.ID, st.Aliases, st.State, st.InFlight, st.Charge = m.spec.ID, m.spec.Aliases, m.state, m.inflight, m.spec.Charge
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
