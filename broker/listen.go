package broker

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tlsListener runs TLS handshakes off the accept path, at most max at a
// time and perAddr per client address (0: no per-address cap), each
// within timeout. At either cap the oldest handshake whose client has sent
// nothing yet is abandoned to make room; with none silent, the newcomer is
// closed at once. Silent connections therefore cannot hold the handshake
// slots. It hands the server *tls.Conn values whose handshake is complete.
type tlsListener struct {
	inner      net.Listener
	cfg        *tls.Config
	max        int
	perAddr    int
	timeout    time.Duration
	inProgress *atomic.Int64
	log        *slog.Logger
	ready      chan net.Conn
	errc       chan error
	done       chan struct{}
	closeOnce  sync.Once

	mu     sync.Mutex
	shakes map[*handshake]struct{}
	byAddr map[string]int
	seq    uint64
}

// handshake is one TLS handshake in progress.
type handshake struct {
	conn  net.Conn
	addr  string
	seq   uint64 // arrival order
	reads func() uint64
}

func newTLSListener(inner net.Listener, cfg *tls.Config, max, perAddr int, timeout time.Duration, inProgress *atomic.Int64, log *slog.Logger) *tlsListener {
	l := &tlsListener{inner: inner, cfg: cfg, max: max, perAddr: perAddr, timeout: timeout,
		inProgress: inProgress, log: log, ready: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{}),
		shakes: make(map[*handshake]struct{}), byAddr: make(map[string]int)}
	go l.loop()
	return l
}

func (l *tlsListener) loop() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				l.errc <- err
				return
			}
			l.log.Warn("accept failed", "err", err)
			select {
			case <-time.After(backoff):
			case <-l.done:
				l.errc <- net.ErrClosed
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if h := l.begin(c); h != nil {
			go l.handshake(h)
		}
	}
}

// begin registers a handshake for c, abandoning a silent one if a cap is
// reached; it returns nil when c was refused (and closed).
func (l *tlsListener) begin(c net.Conn) *handshake {
	addr := addrKey(c.RemoteAddr())
	reads := func() uint64 { return 1 } // untracked connections never count as silent
	if tc, ok := c.(*trackedConn); ok {
		reads = tc.reads.Load
	}
	l.mu.Lock()
	addrFull := l.perAddr > 0 && l.byAddr[addr] >= l.perAddr
	full := len(l.shakes) >= l.max
	var victim *handshake
	if addrFull {
		victim = l.oldestSilent(addr)
	} else if full {
		victim = l.oldestSilent("")
	}
	if (full || addrFull) && victim == nil {
		l.mu.Unlock()
		l.log.Debug("TLS handshake refused: too many in progress", "remote", addr, "per_address", addrFull)
		c.Close()
		return nil
	}
	if victim != nil {
		l.end(victim)
	}
	l.seq++
	h := &handshake{conn: c, addr: addr, seq: l.seq, reads: reads}
	l.shakes[h] = struct{}{}
	l.byAddr[addr]++
	l.inProgress.Add(1)
	l.mu.Unlock()
	if victim != nil {
		l.log.Debug("abandoned a silent TLS handshake to make room", "remote", victim.addr, "for", addr)
		victim.conn.Close()
	}
	return h
}

// oldestSilent returns the oldest handshake (of addr, unless "") whose
// client has sent no byte. Callers hold l.mu.
func (l *tlsListener) oldestSilent(addr string) *handshake {
	var best *handshake
	for h := range l.shakes {
		if (addr == "" || h.addr == addr) && h.reads() == 0 && (best == nil || h.seq < best.seq) {
			best = h
		}
	}
	return best
}

// end removes h from the books; it reports false when it was already
// removed. Callers hold l.mu.
func (l *tlsListener) end(h *handshake) bool {
	if _, ok := l.shakes[h]; !ok {
		return false
	}
	delete(l.shakes, h)
	if l.byAddr[h.addr]--; l.byAddr[h.addr] <= 0 {
		delete(l.byAddr, h.addr)
	}
	l.inProgress.Add(-1)
	return true
}

func (l *tlsListener) handshake(h *handshake) {
	tc := tls.Server(h.conn, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	l.mu.Lock()
	l.end(h)
	l.mu.Unlock()
	if err != nil {
		l.log.Debug("TLS handshake failed", "remote", h.addr, "err", err)
		tc.Close()
		return
	}
	select {
	case l.ready <- tc:
	case <-l.done:
		tc.Close()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.errc:
		l.errc <- err // every later Accept fails the same way
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; handshakes in progress are abandoned.
func (l *tlsListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.inner.Close()
}

// Addr returns the listening address.
func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }
