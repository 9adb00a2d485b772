package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/gen"
)

// fakeLoaded is a loaded model for pool tests: a brokertest.Fake whose
// Close is recorded.
type fakeLoaded struct {
	*brokertest.Fake
	id     string
	closed atomic.Bool
	delay  time.Duration // Close takes this long
	rec    *poolRecorder
}

func (f *fakeLoaded) Embed(context.Context, string, []int32) (broker.Embedding, error) {
	return broker.Embedding{Vector: []float32{1}, Tokens: 1}, nil
}

func (f *fakeLoaded) Close() error {
	time.Sleep(f.delay)
	f.closed.Store(true)
	f.rec.event("close " + f.id)
	return nil
}

// poolRecorder notes loads and closes in order, and the loaded models.
type poolRecorder struct {
	mu     sync.Mutex
	events []string
	loads  map[string]int
	live   map[string]*fakeLoaded
}

func (r *poolRecorder) event(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *poolRecorder) loadCount(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loads[id]
}

func (r *poolRecorder) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.events, ", ")
}

// poolSpec describes a test model.
type poolSpec struct {
	id      string
	aliases []string
	charge  int64
	load    func(ctx context.Context) error // nil: succeed at once
	close   time.Duration
	// identity and check are the model's Identity and Check (nil: none).
	identity func() (string, error)
	check    func(ctx context.Context) (int64, error)
}

func newTestPool(t *testing.T, cfg PoolConfig, specs ...poolSpec) (*Pool, *poolRecorder) {
	t.Helper()
	rec := &poolRecorder{loads: map[string]int{}, live: map[string]*fakeLoaded{}}
	var models []PoolModel
	for _, s := range specs {
		models = append(models, PoolModel{ID: s.id, Aliases: s.aliases, Charge: s.charge, Identity: s.identity, Check: s.check, Load: func(ctx context.Context) (Loaded, error) {
			rec.mu.Lock()
			rec.loads[s.id]++
			rec.events = append(rec.events, "load "+s.id)
			rec.mu.Unlock()
			if s.load != nil {
				if err := s.load(ctx); err != nil {
					return nil, err
				}
			}
			f := brokertest.New("from " + s.id)
			f.Model.Name = s.id
			l := &fakeLoaded{Fake: f, id: s.id, delay: s.close, rec: rec}
			rec.mu.Lock()
			rec.live[s.id] = l
			rec.mu.Unlock()
			return l, nil
		}})
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p, err := NewPool(cfg, models)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, rec
}

func acquire(t *testing.T, p *Pool, name string) (broker.Backend, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, release, err := p.Acquire(ctx, name)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", name, err)
	}
	return b, release
}

func states(p *Pool) string {
	var out []string
	for _, st := range p.Statuses() {
		out = append(out, st.ID+"="+string(st.State))
	}
	return strings.Join(out, " ")
}

func modelErrorKind(err error) error {
	var me *broker.ModelError
	if errors.As(err, &me) {
		return me.Kind
	}
	return nil
}

func TestPoolRouting(t *testing.T) {
	p, _ := newTestPool(t, PoolConfig{}, poolSpec{id: "b"}, poolSpec{id: "a", aliases: []string{"gpt-4o-mini"}})
	for _, tc := range []struct{ name, id string }{{"a", "a"}, {"gpt-4o-mini", "a"}, {"b", "b"}} {
		b, release := acquire(t, p, tc.name)
		info, err := b.Info(context.Background())
		if err != nil || info.Name != tc.id {
			t.Errorf("Acquire(%q) gave %q (%v), want %q", tc.name, info.Name, err, tc.id)
		}
		release()
		release() // a second call must not count twice
	}
	for _, st := range p.Statuses() {
		if st.InFlight != 0 {
			t.Errorf("%s: %d in flight after every release", st.ID, st.InFlight)
		}
	}
	if _, _, err := p.Acquire(context.Background(), "c"); !errors.Is(modelErrorKind(err), broker.ErrModelNotFound) {
		t.Errorf("unknown model: %v", err)
	}
	if got := states(p); got != "a=loaded b=loaded" {
		t.Errorf("states %q (in id order)", got)
	}
	if _, err := NewPool(PoolConfig{}, []PoolModel{{ID: "x", Load: func(context.Context) (Loaded, error) { return nil, nil }},
		{ID: "y", Aliases: []string{"x"}, Load: func(context.Context) (Loaded, error) { return nil, nil }}}); err == nil {
		t.Error("NewPool accepted an alias equal to another model's id")
	}
}

func TestPoolConcurrentFirstUseLoadsOnce(t *testing.T) {
	gate := make(chan struct{})
	p, rec := newTestPool(t, PoolConfig{}, poolSpec{id: "m", load: func(ctx context.Context) error {
		<-gate
		return nil
	}})
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, release, err := p.Acquire(context.Background(), "m")
			if err == nil {
				_, err = b.Info(context.Background())
				release()
			}
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // let every request reach the wait
	if got := states(p); got != "m=loading" {
		t.Errorf("while loading: %q", got)
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if c := rec.loadCount("m"); c != 1 {
		t.Errorf("%d loads for %d concurrent first requests, want 1", c, n)
	}
}

func TestPoolLRUEvictionWithinBudget(t *testing.T) {
	p, rec := newTestPool(t, PoolConfig{Budget: 250}, poolSpec{id: "a", charge: 100}, poolSpec{id: "b", charge: 100}, poolSpec{id: "c", charge: 100})
	for _, name := range []string{"a", "b", "a"} { // b is now the least recently used
		_, release := acquire(t, p, name)
		release()
	}
	_, release := acquire(t, p, "c")
	release()
	if got := states(p); got != "a=loaded b=unloaded c=loaded" {
		t.Errorf("after loading c: %q, want b evicted (least recently used)", got)
	}
	if !rec.live["b"].closed.Load() || rec.live["a"].closed.Load() {
		t.Error("the evicted worker was not closed, or the kept one was")
	}
	var used int64
	for _, st := range p.Statuses() {
		if st.State == broker.ModelLoaded {
			used += st.Charge
		}
		if want := map[string]uint64{"b": 1}[st.ID]; st.Evictions != want {
			t.Errorf("%s evicted %d times, want %d", st.ID, st.Evictions, want)
		}
	}
	if used > 250 {
		t.Errorf("%d bytes loaded, over the budget of 250", used)
	}
	// b comes back: a is now the least recently used.
	_, release = acquire(t, p, "b")
	release()
	if got := states(p); got != "a=unloaded b=loaded c=loaded" {
		t.Errorf("after b again: %q", got)
	}
	if c := rec.loadCount("b"); c != 2 {
		t.Errorf("b loaded %d times, want 2", c)
	}
}

// An evicted worker has ended before the next one starts.
func TestPoolEvictionEndsBeforeLoad(t *testing.T) {
	p, rec := newTestPool(t, PoolConfig{Budget: 100}, poolSpec{id: "a", charge: 100, close: 100 * time.Millisecond}, poolSpec{id: "b", charge: 100})
	_, release := acquire(t, p, "a")
	release()
	_, release = acquire(t, p, "b")
	release()
	if got, want := rec.log(), "load a, close a, load b"; got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestPoolInFlightNotEvicted(t *testing.T) {
	p, rec := newTestPool(t, PoolConfig{Budget: 150, NoRoomRetry: 3 * time.Second}, poolSpec{id: "a", charge: 100}, poolSpec{id: "b", charge: 100})
	_, releaseA := acquire(t, p, "a")
	_, _, err := p.Acquire(context.Background(), "b")
	var me *broker.ModelError
	if !errors.As(err, &me) || me.Kind != broker.ErrModelNoRoom || me.RetryAfter != 3*time.Second || me.Model != "b" {
		t.Fatalf("b while a is in flight: %v, want no room with a retry hint", err)
	}
	if rec.live["a"].closed.Load() || states(p) != "a=loaded b=unloaded" {
		t.Fatalf("a request's model was evicted: %s", states(p))
	}
	releaseA()
	_, releaseB := acquire(t, p, "b")
	releaseB()
	if got := states(p); got != "a=unloaded b=loaded" {
		t.Errorf("after a ended: %q", got)
	}
}

func TestPoolLoadFailureIsolated(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	p, rec := newTestPool(t, PoolConfig{RetryFailed: 200 * time.Millisecond},
		poolSpec{id: "bad", load: func(context.Context) error {
			if fail.Load() {
				return errors.New("bad.gguf: not a GGUF file\x1b[31m")
			}
			return nil
		}},
		poolSpec{id: "panics", load: func(context.Context) error { panic("loader bug") }},
		poolSpec{id: "good"})
	_, _, err := p.Acquire(context.Background(), "bad")
	var me *broker.ModelError
	if !errors.As(err, &me) || me.Kind != broker.ErrModelLoadFailed || me.Model != "bad" || me.RetryAfter <= 0 ||
		me.Reason != "bad.gguf: not a GGUF file [31m" {
		t.Fatalf("bad: %#v", err)
	}
	if _, _, err := p.Acquire(context.Background(), "panics"); !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) {
		t.Errorf("a panicking loader: %v", err)
	}
	b, release := acquire(t, p, "good")
	if _, err := b.Info(context.Background()); err != nil {
		t.Error(err)
	}
	release()
	if got := states(p); got != "bad=failed good=loaded panics=failed" {
		t.Errorf("states %q", got)
	}
	for _, st := range p.Statuses() {
		if st.ID == "bad" && (st.Error == "" || st.LoadFailures != 1) {
			t.Errorf("bad's status %+v lacks its failure", st)
		}
	}
	// Within RetryFailed the failure is reported without a new load.
	p.Acquire(context.Background(), "bad")
	if c := rec.loadCount("bad"); c != 1 {
		t.Errorf("bad loaded %d times within the retry interval", c)
	}
	fail.Store(false)
	time.Sleep(250 * time.Millisecond)
	_, release = acquire(t, p, "bad")
	release()
	if c := rec.loadCount("bad"); c != 2 {
		t.Errorf("bad loaded %d times, want a retry after the interval", c)
	}
}

func TestPoolLoadTimeouts(t *testing.T) {
	p, rec := newTestPool(t, PoolConfig{LoadTimeout: 300 * time.Millisecond, Budget: 1000, RetryFailed: 500 * time.Millisecond},
		poolSpec{id: "slow", load: func(ctx context.Context) error {
			<-ctx.Done()
			return fmt.Errorf("worker start: %w", ctx.Err())
		}},
		poolSpec{id: "huge", charge: 2000},
		// A load that runs out of time says nothing sure of its file:
		// tried again after RetryFailed although its identity stays.
		poolSpec{id: "slowid", identity: func() (string, error) { return "same", nil }, load: func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("the worker did not start in time")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := p.Acquire(ctx, "slow"); !errors.Is(modelErrorKind(err), broker.ErrModelLoading) {
		t.Errorf("a request's wait ending: %v, want still loading", err)
	}
	if _, _, err := p.Acquire(context.Background(), "slow"); !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) ||
		!strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("after the load timeout: %v, want failed", err)
	}
	if _, _, err := p.Acquire(context.Background(), "huge"); !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) ||
		!strings.Contains(err.Error(), "more than the whole models memory budget") {
		t.Errorf("a model over the budget: %v", err)
	}
	for _, tc := range []struct {
		after time.Duration // since the previous request
		loads int
	}{{0, 1}, {0, 1}, {600 * time.Millisecond, 2}} {
		time.Sleep(tc.after)
		if _, _, err := p.Acquire(context.Background(), "slowid"); !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) {
			t.Errorf("slowid: %v", err)
		}
		if c := rec.loadCount("slowid"); c != tc.loads {
			t.Errorf("slowid loaded %d times %v after the previous request, want %d", c, tc.after, tc.loads)
		}
	}
}

func TestPoolPreloadAndCounts(t *testing.T) {
	p, rec := newTestPool(t, PoolConfig{}, poolSpec{id: "a"}, poolSpec{id: "b"})
	if err := p.Preload([]string{"a", "nope"}); err == nil {
		t.Error("Preload accepted an unknown name")
	}
	if err := p.Preload([]string{"a"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for states(p) != "a=loaded b=unloaded" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := states(p); got != "a=loaded b=unloaded" {
		t.Fatalf("after preloading a: %q", got)
	}
	b, release := acquire(t, p, "a")
	defer release()
	ch, err := b.Generate(context.Background(), gen.Request{PromptIDs: []int32{1, 2}, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	var done broker.Event
	for ev := range ch {
		if ev.Kind == broker.EventDone {
			done = ev
		}
	}
	st := p.Statuses()[0]
	if st.Requests != 1 || st.CompletionTokens != uint64(done.Usage.CompletionTokens) || st.CompletionTokens == 0 || st.InFlight != 1 {
		t.Errorf("counts %+v after one generation of %+v", st, done.Usage)
	}
	rec.live["a"].Restarts = 3
	if st := p.Statuses()[0]; st.Worker.Restarts != 3 {
		t.Errorf("worker stats not reported: %+v", st.Worker)
	}
}

// healthLoaded is a loaded model whose worker health is set by the test.
type healthLoaded struct {
	*fakeLoaded
	health error
}

func (h *healthLoaded) Health() error { return h.health }

func TestPoolReportsWorkerHealth(t *testing.T) {
	hl := &healthLoaded{}
	p, err := NewPool(PoolConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, []PoolModel{{ID: "m", Load: func(context.Context) (Loaded, error) {
		hl.fakeLoaded = &fakeLoaded{Fake: brokertest.New("x"), id: "m", rec: &poolRecorder{}}
		return hl, nil
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, release := acquire(t, p, "m")
	release()
	for _, tc := range []struct {
		health error
		want   string
	}{
		{nil, ""},
		{errStarting, "the worker is restarting"},
		{&GaveUpError{Restarts: 3, Window: time.Minute, Cause: "SIGSYS", Last: "worker text", Retry: time.Second}, "the worker died 3 times within 1m0s (last: SIGSYS)"},
	} {
		hl.health = tc.health
		st := p.Statuses()[0]
		if st.State != broker.ModelLoaded || !strings.HasPrefix(st.Error, tc.want) || (tc.want == "") != (st.Error == "") || strings.Contains(st.Error, "worker text") {
			t.Errorf("health %v: status %q %q, want loaded with %q", tc.health, st.State, st.Error, tc.want)
		}
	}
}

// brokenFile is a model file for pool tests: its identity, and whether
// its check or its load fails, set by the test; it counts its checks.
type brokenFile struct {
	mu         sync.Mutex
	id         string
	checkFails bool
	loadFails  bool
	checks     int
	charge     int64 // what a passed check returns
}

func (f *brokenFile) set(id string, checkFails, loadFails bool) {
	f.mu.Lock()
	f.id, f.checkFails, f.loadFails = id, checkFails, loadFails
	f.mu.Unlock()
}

func (f *brokenFile) identity() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.id, nil
}

func (f *brokenFile) check(context.Context) (int64, error) {
	time.Sleep(50 * time.Millisecond) // long enough for concurrent requests to wait for it
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	if f.checkFails {
		return 0, errors.New("broken.gguf: gguf: truncated file")
	}
	return f.charge, nil
}

func (f *brokenFile) load(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loadFails {
		return errors.New("the worker died loading broken.gguf")
	}
	return nil
}

func (f *brokenFile) checkCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.checks
}

// statusOf returns the status of the model id.
func statusOf(t *testing.T, p *Pool, id string) broker.ModelStatus {
	t.Helper()
	for _, st := range p.Statuses() {
		if st.ID == id {
			return st
		}
	}
	t.Fatalf("no model %q", id)
	return broker.ModelStatus{}
}

// A model whose file cannot load must not evict a working one before its
// check has passed, must not be tried again (nor evict again) until its
// file changes, and the model evicted for it comes back.
func TestPoolBrokenModelKeepsWorkingOne(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		checkFails, loadFails bool
		reason                string
		evictions             uint64 // of the working model, by the broken file's first attempt
		checks, loads         int    // of the broken file's first attempt
	}{
		{"check fails", true, false, "broken.gguf: gguf: truncated file", 0, 1, 0},
		{"load fails after the check", false, true, "the worker died loading broken.gguf", 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &brokenFile{}
			f.set("v1", tc.checkFails, tc.loadFails)
			p, rec := newTestPool(t, PoolConfig{Budget: 100, RetryFailed: time.Millisecond},
				poolSpec{id: "good", charge: 100},
				poolSpec{id: "broken", charge: 100, identity: f.identity, check: f.check, load: f.load})
			_, release := acquire(t, p, "good")
			release()

			// Concurrent requests share the one attempt, or get its
			// remembered failure: all the same typed error.
			const n = 4
			errs := make(chan error, n)
			for range n {
				go func() {
					_, _, err := p.Acquire(context.Background(), "broken")
					errs <- err
				}()
			}
			for range n {
				var me *broker.ModelError
				if err := <-errs; !errors.As(err, &me) || me.Kind != broker.ErrModelLoadFailed || me.Model != "broken" || me.Reason != tc.reason || me.RetryAfter <= 0 {
					t.Fatalf("broken: %v, want the load failure %q", err, tc.reason)
				}
			}
			// Later requests, long after RetryFailed, get the remembered
			// failure: no check, no load, no eviction.
			time.Sleep(5 * time.Millisecond)
			for range 5 {
				if _, _, err := p.Acquire(context.Background(), "broken"); !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) {
					t.Fatalf("broken again: %v", err)
				}
			}
			if c, l := f.checkCount(), rec.loadCount("broken"); c != tc.checks || l != tc.loads {
				t.Errorf("broken checked %d and loaded %d times, want %d and %d", c, l, tc.checks, tc.loads)
			}
			good := statusOf(t, p, "good")
			if good.Evictions != tc.evictions {
				t.Errorf("good evicted %d times, want %d", good.Evictions, tc.evictions)
			}
			if st := statusOf(t, p, "broken"); st.State != broker.ModelFailed || st.Error != tc.reason || st.LoadFailures != 1 {
				t.Errorf("broken's status %+v", st)
			}
			// The budget is given back: the working model comes back (or
			// stays) without a refusal, and the sum stays within it.
			_, release = acquire(t, p, "good")
			release()
			if want := 1 + int(tc.evictions); rec.loadCount("good") != want {
				t.Errorf("good loaded %d times, want %d", rec.loadCount("good"), want)
			}
			if got := states(p); got != "broken=failed good=loaded" {
				t.Errorf("states %q", got)
			}

			// A changed file is tried again; fixed, it loads (evicting
			// good, the idle one), and good comes back after it.
			f.set("v2", false, false)
			_, release = acquire(t, p, "broken")
			release()
			if got := states(p); got != "broken=loaded good=unloaded" {
				t.Errorf("after the file was fixed: %q", got)
			}
			_, release = acquire(t, p, "good")
			release()
			if got := states(p); got != "broken=unloaded good=loaded" {
				t.Errorf("good again: %q", got)
			}
			// A passed check is not run again for the same file.
			_, release = acquire(t, p, "broken")
			release()
			if c := f.checkCount(); c != tc.checks+1 {
				t.Errorf("broken checked %d times, want %d (one check per file version)", c, tc.checks+1)
			}
		})
	}
}

// A check's charge is what the model counts against the budget.
func TestPoolCheckCharge(t *testing.T) {
	f := &brokenFile{id: "v1", charge: 60}
	p, _ := newTestPool(t, PoolConfig{Budget: 100},
		poolSpec{id: "a", charge: 1, identity: f.identity, check: f.check},
		poolSpec{id: "b", charge: 50})
	if st := statusOf(t, p, "a"); st.Charge != 1 {
		t.Errorf("charge %d before the check, want the static 1", st.Charge)
	}
	_, release := acquire(t, p, "a")
	release()
	if st := statusOf(t, p, "a"); st.Charge != 60 {
		t.Errorf("charge %d after the check, want its 60", st.Charge)
	}
	// 60 + 50 > 100: a is evicted (with the static charge of 1 it
	// would not be).
	_, release = acquire(t, p, "b")
	release()
	if got := states(p); got != "a=unloaded b=loaded" {
		t.Errorf("states %q, want a evicted for b", got)
	}
}

// A load failing while other requests wait for it answers them all, and
// the pool's memory is given back: with a budget for one model, the next
// model loads at once.
func TestPoolFailureWhileWaiting(t *testing.T) {
	gate := make(chan struct{})
	p, _ := newTestPool(t, PoolConfig{Budget: 100},
		poolSpec{id: "bad", charge: 100, identity: func() (string, error) { return "same", nil }, load: func(context.Context) error {
			<-gate
			return errors.New("out of memory")
		}},
		poolSpec{id: "ok", charge: 100})
	const n = 3
	errs := make(chan error, n)
	for range n {
		go func() {
			_, _, err := p.Acquire(context.Background(), "bad")
			errs <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for statusOf(t, p, "bad").State != broker.ModelLoading && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
	for range n {
		if err := <-errs; !errors.Is(modelErrorKind(err), broker.ErrModelLoadFailed) || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("a waiter got %v", err)
		}
	}
	_, release := acquire(t, p, "ok")
	release()
	if st := statusOf(t, p, "bad"); st.State != broker.ModelFailed || st.Loads != 1 || st.LoadFailures != 1 {
		t.Errorf("bad: %+v", st)
	}
}
