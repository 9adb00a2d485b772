package broker

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAdmissionFIFO(t *testing.T) {
	a := newAdmission(1, 3)
	first, err := a.acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := range 3 {
		go func() {
			rel, err := a.acquire(context.Background(), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			time.Sleep(10 * time.Millisecond)
			rel()
		}()
		for { // wait until it is queued, so arrival order is known
			if q, _ := a.depth(); q == i+1 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	if _, err := a.acquire(context.Background(), time.Second); !errors.Is(err, errQueueFull) {
		t.Fatalf("acquire on a full queue: %v", err)
	}
	first()
	first() // a second release is a no-op
	for want := range 3 {
		if got := <-order; got != want {
			t.Fatalf("served %d, want %d (not first come first served)", got, want)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if q, r := a.depth(); q != 0 || r != 0 {
		t.Fatalf("depth after all released: %d waiting, %d running", q, r)
	}
}

func TestAdmissionCancelAndTimeout(t *testing.T) {
	a := newAdmission(1, 4)
	rel, _ := a.acquire(context.Background(), time.Second)
	if _, err := a.acquire(context.Background(), 20*time.Millisecond); !errors.Is(err, errQueueTimeout) {
		t.Fatalf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	if _, err := a.acquire(ctx, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	if q, r := a.depth(); q != 0 || r != 1 {
		t.Fatalf("gave-up waiters left behind: %d waiting, %d running", q, r)
	}
	rel()
	rel2, err := a.acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal("slot lost after waiters gave up")
	}
	rel2()
}

func TestRateLimiter(t *testing.T) {
	now := time.Unix(1000, 0)
	l := newRateLimiter(60, 2, func() time.Time { return now })
	steps := []struct {
		advance time.Duration
		key     int
		ok      bool
	}{
		{0, 0, true}, {0, 0, true}, {0, 0, false}, // burst of 2
		{0, 1, true}, // another key has its own bucket
		{500 * time.Millisecond, 0, false},
		{500 * time.Millisecond, 0, true}, // one a second refills
		{0, 0, false},
		{10 * time.Second, 0, true}, {0, 0, true}, {0, 0, false}, // refill caps at the burst
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, wait := l.allow(s.key)
		if ok != s.ok {
			t.Fatalf("step %d: allow = %v, want %v", i, ok, s.ok)
		}
		if !ok && (wait <= 0 || wait > time.Second) {
			t.Fatalf("step %d: wait %v", i, wait)
		}
	}
	if ok, _ := (*rateLimiter)(nil).allow(0); !ok {
		t.Fatal("a nil limiter must allow")
	}
}
