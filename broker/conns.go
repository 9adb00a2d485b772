package broker

import (
	"bufio"
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Connection admission. A client must not be able to lock others out by
// opening connections and keeping them quiet, so:
//
//   - Accept never waits. At the global cap or at the client address's cap,
//     the oldest idle connection (of that address first, for the address
//     cap) is closed to make room; with none idle, the newcomer gets a 503
//     at once (plain HTTP) or is closed (TLS).
//   - Idle means: accepted but silent, or between requests. A connection
//     that has not made an authenticated request (with no keys: an API
//     request) is closed after unauthenticated_idle_timeout of idleness.
//   - Addresses are IPv4 addresses or IPv6 /64 prefixes, so one host
//     cannot multiply itself through its own address range.

// addrKey is the per-address key of a remote address.
func addrKey(a net.Addr) string {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(a.String())
		if err != nil {
			return a.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// connPhase is where a tracked connection is in its life.
type connPhase int

const (
	phaseAccepted connPhase = iota // accepted, no HTTP state yet (TLS: handshaking)
	phaseNew                       // serving, before its first request
	phaseActive                    // reading a request or writing its response
	phaseIdle                      // between requests
	phaseClosed
)

// connTracker admits, tracks and evicts client connections.
type connTracker struct {
	max, perAddr int
	unauthIdle   time.Duration
	refuse503    bool // answer refusals with a plain-HTTP 503 (false with TLS)
	log          *slog.Logger
	open         *atomic.Int64 // the lisa_open_connections gauge
	evicted      atomic.Uint64
	refused      atomic.Uint64
	refusing     atomic.Int64 // refusal answers running

	mu     sync.Mutex
	all    map[*trackedConn]struct{}
	idle   list.List // of *trackedConn, longest idle first
	byAddr map[string]int
}

func newConnTracker(max, perAddr int, unauthIdle time.Duration, refuse503 bool, open *atomic.Int64, log *slog.Logger) *connTracker {
	return &connTracker{max: max, perAddr: perAddr, unauthIdle: unauthIdle, refuse503: refuse503, log: log,
		open: open, all: make(map[*trackedConn]struct{}), byAddr: make(map[string]int)}
}

// trackedConn is one client connection. Its fields after Conn are guarded
// by the tracker's mutex, except reads, which the connection's reader bumps.
type trackedConn struct {
	net.Conn
	t         *connTracker
	addr      string
	reads     atomic.Uint64 // Read calls that returned bytes
	phase     connPhase
	readMark  uint64        // reads when the connection last became idle
	elem      *list.Element // in t.idle while idle
	trusted   bool          // made an authenticated request
	timer     *time.Timer
	closeOnce sync.Once
}

// Read counts the reads that returned bytes: an "idle" connection that
// has sent part of something is not silent, and is not evicted.
func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// CloseWrite half-closes the connection when the inner one can, so the
// HTTP server can end a response gracefully (no reset over unread input).
func (c *trackedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Close closes the connection once and forgets it.
func (c *trackedConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		err = c.Conn.Close()
		c.t.forget(c)
	})
	return err
}

// admit takes a new connection in, making room by eviction if needed. It
// returns nil when the connection was refused (and answered or closed).
func (t *connTracker) admit(raw net.Conn) *trackedConn {
	addr := addrKey(raw.RemoteAddr())
	t.mu.Lock()
	var victim *trackedConn
	full := len(t.all) >= t.max
	addrFull := t.perAddr > 0 && t.byAddr[addr] >= t.perAddr
	if addrFull {
		victim = t.oldestIdle(addr)
	} else if full {
		victim = t.oldestIdle("")
	}
	if (full || addrFull) && victim == nil {
		t.mu.Unlock()
		t.refuse(raw, addr, addrFull)
		return nil
	}
	if victim != nil {
		t.drop(victim)
	}
	c := &trackedConn{Conn: raw, t: t, addr: addr}
	t.all[c] = struct{}{}
	t.byAddr[addr]++
	t.open.Add(1)
	t.becomeIdle(c, phaseAccepted)
	t.mu.Unlock()
	if victim != nil {
		t.evicted.Add(1)
		t.log.Debug("closed the oldest idle connection to make room", "remote", victim.addr, "for", addr)
		victim.Close()
	}
	return c
}

// oldestIdle returns the idle connection idle longest, of addr when addr
// is not "", that has been silent since it became idle. Callers hold t.mu.
func (t *connTracker) oldestIdle(addr string) *trackedConn {
	for e := t.idle.Front(); e != nil; e = e.Next() {
		c := e.Value.(*trackedConn)
		if (addr == "" || c.addr == addr) && c.reads.Load() == c.readMark {
			return c
		}
	}
	return nil
}

// Bounds on answering refused connections: each answer waits at most
// refuseWait for the request's head, reads at most refuseReadBytes, and
// at most maxRefusing answers run at once (past that, refused connections
// are closed without one).
const (
	refuseWait      = time.Second
	refuseReadBytes = 16 << 10
	maxRefusing     = 64
)

// refuse answers a connection there is no room for: over plain HTTP with
// a 503 once its request head has arrived (a response sent before the
// request would be unsolicited to the client), with TLS by closing it.
func (t *connTracker) refuse(c net.Conn, addr string, addrFull bool) {
	t.refused.Add(1)
	why := "too many open connections"
	if addrFull {
		why = "too many open connections from this address"
	}
	t.log.Debug("connection refused", "remote", addr, "reason", why)
	if !t.refuse503 || t.refusing.Add(1) > maxRefusing {
		if t.refuse503 {
			t.refusing.Add(-1)
		}
		c.Close()
		return
	}
	go func() {
		defer t.refusing.Add(-1)
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refuseWait))
		if _, err := http.ReadRequest(bufio.NewReader(io.LimitReader(c, refuseReadBytes))); err != nil {
			return
		}
		body, _ := marshal((&APIError{Type: "server_error", Code: "too_many_connections", Message: why + "; retry later"}).body())
		_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
			"Connection: close\r\nContent-Length: " + strconv.Itoa(len(body)+1) + "\r\n\r\n" + string(body) + "\n"))
		// Read what is left of the request (within the same bounds), so
		// closing with unread bytes does not reset the answer away.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
			_, _ = io.Copy(io.Discard, io.LimitReader(c, refuseReadBytes))
		}
	}()
}

// drop removes c from the books; the caller closes it. Callers hold t.mu.
func (t *connTracker) drop(c *trackedConn) {
	if c.phase == phaseClosed {
		return
	}
	c.phase = phaseClosed
	if c.elem != nil {
		t.idle.Remove(c.elem)
		c.elem = nil
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	delete(t.all, c)
	if t.byAddr[c.addr]--; t.byAddr[c.addr] <= 0 {
		delete(t.byAddr, c.addr)
	}
	t.open.Add(-1)
}

func (t *connTracker) forget(c *trackedConn) {
	t.mu.Lock()
	t.drop(c)
	t.mu.Unlock()
}

// becomeIdle puts c at the back of the idle list and, unless it is
// trusted, arms the short idle timer. Callers hold t.mu.
func (t *connTracker) becomeIdle(c *trackedConn, p connPhase) {
	c.phase = p
	c.readMark = c.reads.Load()
	if c.elem != nil {
		t.idle.Remove(c.elem)
	}
	c.elem = t.idle.PushBack(c)
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if !c.trusted {
		mark := c.readMark
		c.timer = time.AfterFunc(t.unauthIdle, func() { t.expire(c, p, mark) })
	}
}

// expire closes c if it is still in the idle phase p and has sent nothing
// since: it made no authenticated request within the short idle timeout.
func (t *connTracker) expire(c *trackedConn, p connPhase, mark uint64) {
	t.mu.Lock()
	stale := c.phase == p && c.readMark == mark && c.reads.Load() == mark && !c.trusted
	t.mu.Unlock()
	if stale {
		t.log.Debug("closed an idle connection that made no authenticated request", "remote", c.addr)
		c.Close()
	}
}

// connState is the http.Server's ConnState hook.
func (t *connTracker) connState(nc net.Conn, st http.ConnState) {
	c := trackedOf(nc)
	if c == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.phase == phaseClosed {
		return
	}
	switch st {
	case http.StateNew:
		t.becomeIdle(c, phaseNew)
	case http.StateIdle:
		t.becomeIdle(c, phaseIdle)
	case http.StateActive:
		c.phase = phaseActive
		if c.elem != nil {
			t.idle.Remove(c.elem)
			c.elem = nil
		}
		if c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
	}
}

// trust marks c as having made an authenticated request: from now on only
// idle_timeout applies to it.
func (t *connTracker) trust(c *trackedConn) {
	t.mu.Lock()
	c.trusted = true
	t.mu.Unlock()
}

// trackedOf finds the tracked connection under nc (a *tls.Conn's too).
func trackedOf(nc net.Conn) *trackedConn {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	c, _ := nc.(*trackedConn)
	return c
}

// connKey is the context key of a request's *trackedConn.
type connKey struct{}

// connContext is the http.Server's ConnContext hook.
func connContext(ctx context.Context, nc net.Conn) context.Context {
	if c := trackedOf(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

// trackerListener admits each accepted connection through the tracker.
type trackerListener struct {
	net.Listener
	t *connTracker
}

// Accept returns the next admitted connection; refused ones never reach
// the server. Errors are the inner listener's (the server backs off on
// temporary ones).
func (l trackerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.t.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// addrKeyOf is the per-address key of a request's client.
func addrKeyOf(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return addrKey(net.TCPAddrFromAddrPort(ap))
	}
	return r.RemoteAddr
}
