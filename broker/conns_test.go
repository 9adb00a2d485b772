package broker_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/config"
)

// idleConn opens a connection, makes one unauthenticated GET /health on it
// and keeps it open and idle (HTTP keep-alive). With tc it speaks TLS.
func idleConn(addr string, tc *tls.Config) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if tc != nil {
		c = tls.Client(c, tc)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: lisa\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// TestIdleFlood is the red-team scenario of one client locking everyone
// out: 600 idle keep-alive connections from one address (and, with TLS,
// silent TCP connections that never start a handshake), then a new client
// must be answered within 1 s.
func TestIdleFlood(t *testing.T) {
	const flood, silent = 600, 100
	needFDs(t, 2*(flood+silent)+64)
	p := newPKI(t)
	tests := []struct {
		name    string
		tls     bool
		perAddr int // max_connections_per_address (0: only the global cap of 512)
	}{
		{"http per-address cap", false, 64},
		{"http global cap", false, 0},
		{"tls per-address cap", true, 64},
		{"tls global cap", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
				c.MaxConnectionsPerAddress = tt.perAddr
				// Long, so that making room is what the test sees, not the
				// short idle timeout (TestUnauthenticatedIdleTimeout).
				c.UnauthIdleTimeout = config.Duration(time.Minute)
				if tt.tls {
					c.TLSCertFile, c.TLSKeyFile = p.certFile, p.keyFile
				}
			}))
			var tc *tls.Config
			if tt.tls {
				tc = &tls.Config{RootCAs: p.caPool, ServerName: "127.0.0.1"}
			}
			var mu sync.Mutex
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			var wg sync.WaitGroup
			jobs := make(chan int)
			var failed int
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range jobs {
						c, err := idleConn(ts.Addr, tc)
						mu.Lock()
						if err != nil {
							failed++ // an evicted connection's late handshake, say
						} else {
							conns = append(conns, c)
						}
						mu.Unlock()
					}
				}()
			}
			// Bounded: a server that makes clients wait would otherwise
			// take minutes to fail this test.
			floodStart, sent := time.Now(), 0
			for i := range flood {
				if time.Since(floodStart) > 30*time.Second {
					break
				}
				jobs <- i
				sent++
			}
			close(jobs)
			wg.Wait()
			if sent < flood || failed > flood/2 {
				t.Fatalf("%d of %d flood connections made in 30 s, %d of them failed: the server makes clients wait", sent, flood, failed)
			}
			if tt.tls {
				for range silent {
					c, err := net.Dial("tcp", ts.Addr)
					if err != nil {
						t.Fatal(err)
					}
					conns = append(conns, c)
				}
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
			defer client.CloseIdleConnections()
			began := time.Now()
			resp, err := client.Get(ts.URL + "/health")
			took := time.Since(began)
			if err != nil {
				t.Fatalf("new client after the flood: %v (after %v)", err, took)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || took > time.Second {
				t.Fatalf("new client: status %d after %v, want 200 within 1 s", resp.StatusCode, took)
			}
			t.Logf("%d flood connections kept open by the client side, %d failed; new client answered in %v", len(conns), failed, took)
		})
	}
}

// TestUnauthenticatedIdleTimeout checks that a connection that has made
// no authenticated request is closed after unauthenticated_idle_timeout,
// silent or after an unauthenticated request, while one that made an
// authenticated request stays.
func TestUnauthenticatedIdleTimeout(t *testing.T) {
	digest, err := config.HashKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
		c.APIKeys = []string{digest.String()}
		c.UnauthIdleTimeout = config.Duration(300 * time.Millisecond)
	}))
	request := func(req string) func(net.Conn) error {
		return func(c net.Conn) error {
			if _, err := io.WriteString(c, req); err != nil {
				return err
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.Body.Close()
		}
	}
	tests := []struct {
		name   string
		before func(net.Conn) error
		closed bool
	}{
		{"silent", func(net.Conn) error { return nil }, true},
		{"after /health", request("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"), true},
		{"after an authenticated request", request("GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + testKey + "\r\n\r\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := tt.before(c); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
			_, err = c.Read(make([]byte, 1))
			closed := err != nil && !isTimeout(err)
			if closed != tt.closed {
				t.Fatalf("closed %v (read: %v), want %v", closed, err, tt.closed)
			}
		})
	}
}

// TestAuthFailureLimit checks that failed API key checks from one address
// get 429 (OpenAI error shape, Retry-After) past the burst, that each
// failure closes its connection, and that a valid key still passes.
func TestAuthFailureLimit(t *testing.T) {
	digest, err := config.HashKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	const burst = 5
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
		c.APIKeys = []string{digest.String()}
		c.AuthFailureRPM, c.AuthFailureBurst = 6, burst
	}))
	wrong := strings.Repeat("w", 40)
	for i := range burst + 2 {
		code, hdr, body := ts.do(t, "GET", "/v1/models", wrong, "")
		want := 401
		if i >= burst {
			want = 429
		}
		if code != want {
			t.Fatalf("failure %d: status %d, want %d: %s", i+1, code, want, body)
		}
		e := decodeError(t, body)
		if want == 429 && (str(e.Error.Code) != "too_many_auth_failures" || e.Error.Type != "rate_limit_error" || hdr.Get("Retry-After") == "") {
			t.Fatalf("429 without its code, type or Retry-After: %s %v", body, hdr)
		}
	}
	if code, _, body := ts.do(t, "GET", "/v1/models", testKey, ""); code != 200 {
		t.Fatalf("a valid key was refused while its address is limited: %d %s", code, body)
	}
	// A failure closes its connection (no idle slot kept by a failing client).
	c, err := net.Dial("tcp", ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", wrong)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := br.ReadByte(); err == nil || isTimeout(err) {
		t.Fatalf("the connection stayed open after a failed key check (read: %v)", err)
	}
}
