package broker

import (
	"container/list"
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// errQueueFull is returned by admission.acquire when the queue is full.
var errQueueFull = errors.New("queue full")

// errQueueTimeout is returned by admission.acquire after waiting too long.
var errQueueTimeout = errors.New("waited too long in the queue")

// admission is the first-come-first-served gate in front of the worker:
// at most maxRunning holders at once, at most maxQueue waiting in order.
type admission struct {
	mu         sync.Mutex
	running    int
	maxRunning int
	maxQueue   int
	waiting    list.List // of *waiter, oldest first
}

type waiter struct {
	ch      chan struct{} // closed when the slot is handed over
	granted bool
}

func newAdmission(maxRunning, maxQueue int) *admission {
	return &admission{maxRunning: maxRunning, maxQueue: maxQueue}
}

// acquire waits for a slot in arrival order. It fails at once when the
// queue is full, and when ctx ends or timeout passes first. The returned
// release must be called exactly once (further calls do nothing).
func (a *admission) acquire(ctx context.Context, timeout time.Duration) (func(), error) {
	a.mu.Lock()
	if a.running < a.maxRunning && a.waiting.Len() == 0 {
		a.running++
		a.mu.Unlock()
		return a.releaser(), nil
	}
	if a.waiting.Len() >= a.maxQueue {
		a.mu.Unlock()
		return nil, errQueueFull
	}
	w := &waiter{ch: make(chan struct{})}
	e := a.waiting.PushBack(w)
	a.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	var err error
	select {
	case <-w.ch:
		return a.releaser(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errQueueTimeout
	}
	a.mu.Lock()
	if w.granted { // handed a slot just as we gave up: pass it on
		a.mu.Unlock()
		a.releaser()()
		return nil, err
	}
	a.waiting.Remove(e)
	a.mu.Unlock()
	return nil, err
}

func (a *admission) releaser() func() {
	var once sync.Once
	return func() { once.Do(a.release) }
}

// release hands the slot to the oldest waiter, or frees it.
func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.waiting.Front(); e != nil {
		w := a.waiting.Remove(e).(*waiter)
		w.granted = true
		close(w.ch)
		return
	}
	a.running--
}

// depth returns the number of waiting and of running holders.
func (a *admission) depth() (waiting, running int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting.Len(), a.running
}

// rateLimiter keeps one token bucket per API key (index; -1 for requests
// without a key when none are configured, which then share one bucket).
// The map is bounded by the number of configured keys.
type rateLimiter struct {
	mu      sync.Mutex
	perSec  float64
	burst   float64
	buckets map[int]*bucket
	now     func() time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// newRateLimiter returns a limiter of rpm requests a minute with the given
// burst, or nil (no limit) when rpm is 0.
func newRateLimiter(rpm, burst int, now func() time.Time) *rateLimiter {
	if rpm <= 0 {
		return nil
	}
	return &rateLimiter{perSec: float64(rpm) / 60, burst: float64(burst), buckets: make(map[int]*bucket), now: now}
}

// allow takes one token from key's bucket, or says how long until one is
// there.
func (l *rateLimiter) allow(key int) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(l.burst, b.tokens+el*l.perSec)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perSec * float64(time.Second))
	return false, wait
}

// maxLimitedAddrs bounds the addresses an addrLimiter tracks.
const maxLimitedAddrs = 1 << 14

// addrLimiter keeps one token bucket per client address (see addrKey).
// Its map is bounded: when full, buckets that have refilled (which hold no
// state worth keeping) are dropped; if none has, the newcomers share one
// overflow bucket, so a flood of addresses costs bounded memory and still
// meets a limit.
type addrLimiter struct {
	mu      sync.Mutex
	perSec  float64
	burst   float64
	max     int
	buckets map[string]*bucket
	now     func() time.Time
}

// newAddrLimiter returns a limiter of rpm events a minute per address with
// the given burst, or nil (no limit) when rpm is 0.
func newAddrLimiter(rpm, burst, max int, now func() time.Time) *addrLimiter {
	if rpm <= 0 {
		return nil
	}
	return &addrLimiter{perSec: float64(rpm) / 60, burst: float64(burst), max: max, buckets: make(map[string]*bucket), now: now}
}

// allow takes one token from addr's bucket, or says how long until one is
// there.
func (l *addrLimiter) allow(addr string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[addr]
	if b == nil {
		if len(l.buckets) >= l.max {
			l.prune(now)
		}
		if len(l.buckets) >= l.max {
			addr = "" // the overflow bucket
		}
		if b = l.buckets[addr]; b == nil {
			b = &bucket{tokens: l.burst, last: now}
			l.buckets[addr] = b
		}
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(l.burst, b.tokens+el*l.perSec)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.perSec * float64(time.Second))
}

// prune drops the buckets that have refilled. Callers hold l.mu.
func (l *addrLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.perSec >= l.burst {
			delete(l.buckets, k)
		}
	}
}
