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

// limitListener caps the connections open at once: Accept waits for one
// to close when the cap is reached (new clients wait in the kernel's
// backlog instead of costing the broker memory).
type limitListener struct {
	net.Listener
	sem       chan struct{}
	open      *atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, max int, open *atomic.Int64) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, max), open: open, done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	l.open.Add(1)
	return &limitConn{Conn: c, release: func() { l.open.Add(-1); <-l.sem }}, nil
}

// Close stops Accept and closes the listener.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// tlsListener runs TLS handshakes off the accept path, at most max at a
// time, each within timeout; connections past the cap are closed at once.
// It hands the server *tls.Conn values whose handshake is complete.
type tlsListener struct {
	inner      net.Listener
	cfg        *tls.Config
	sem        chan struct{}
	timeout    time.Duration
	inProgress *atomic.Int64
	log        *slog.Logger
	ready      chan net.Conn
	errc       chan error
	done       chan struct{}
	closeOnce  sync.Once
}

func newTLSListener(inner net.Listener, cfg *tls.Config, max int, timeout time.Duration, inProgress *atomic.Int64, log *slog.Logger) *tlsListener {
	l := &tlsListener{inner: inner, cfg: cfg, sem: make(chan struct{}, max), timeout: timeout,
		inProgress: inProgress, log: log, ready: make(chan net.Conn), errc: make(chan error, 1), done: make(chan struct{})}
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
		select {
		case l.sem <- struct{}{}:
			l.inProgress.Add(1)
			go l.handshake(c)
		default:
			l.log.Debug("TLS handshake refused: too many in progress", "remote", c.RemoteAddr().String())
			c.Close()
		}
	}
}

func (l *tlsListener) handshake(c net.Conn) {
	tc := tls.Server(c, l.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	l.inProgress.Add(-1)
	<-l.sem
	if err != nil {
		l.log.Debug("TLS handshake failed", "remote", c.RemoteAddr().String(), "err", err)
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
