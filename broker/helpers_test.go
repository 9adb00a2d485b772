package broker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/config"
)

// testKey is an API key that passes config.HashKey.
const testKey = "Zq8vR2mN5xL0pW7tK3hJ9cB4fD6gS1aE"

// testConfig is a resolved configuration for tests: loopback, no keys,
// no rate limit, short timeouts.
func testConfig(t testing.TB, mod func(*config.Config)) *config.Config {
	t.Helper()
	c := config.Default()
	c.Model = "/models/fake-model.gguf"
	c.Listen = "127.0.0.1:0"
	c.RateLimitRPM = 0
	c.WriteTimeout = config.Duration(5 * time.Second)
	c.ShutdownTimeout = config.Duration(2 * time.Second)
	if mod != nil {
		mod(&c)
	}
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	return &c
}

// testServer is a broker running on a loopback port.
type testServer struct {
	URL    string
	Addr   string
	Server *broker.Server
	Logs   *syncBuffer
	Stop   func() // shuts the server down and waits (also done at cleanup)
	client *http.Client
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything logged so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t testing.TB, backend broker.Backend, cfg *config.Config) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := broker.NewServer(cfg, backend, logger)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Serve did not return after shutdown")
			}
		})
	}
	t.Cleanup(stop)
	scheme := "http://"
	if cfg.TLS() {
		scheme = "https://"
	}
	return &testServer{URL: scheme + ln.Addr().String(), Addr: ln.Addr().String(), Server: srv, Logs: logs, Stop: stop,
		client: &http.Client{Timeout: 20 * time.Second}}
}

// do sends a request and returns the status, headers and body.
func (ts *testServer) do(t testing.TB, method, path, key, body string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// apiErr is the OpenAI error shape.
type apiErr struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// decodeError parses an error body strictly: exactly the four keys.
func decodeError(t testing.TB, b []byte) apiErr {
	t.Helper()
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("error body %q: %v", b, err)
	}
	if len(raw) != 1 || len(raw["error"]) != 4 {
		t.Fatalf("error body %s is not {\"error\":{message,type,param,code}}", b)
	}
	var e apiErr
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// sseEvents reads a server-sent event stream into its data payloads.
func sseEvents(t testing.TB, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("unexpected SSE line %q", line)
		}
		out = append(out, data)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func newFake(pieces ...string) *brokertest.Fake { return brokertest.New(pieces...) }
