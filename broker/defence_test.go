package broker_test

import (
	"bufio"
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

func keyConfig(t *testing.T, mod func(*config.Config)) *config.Config {
	d, err := config.HashKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	return testConfig(t, func(c *config.Config) {
		c.APIKeys = []string{d.String()}
		if mod != nil {
			mod(c)
		}
	})
}

func TestAuth(t *testing.T) {
	ts := start(t, newFake("ok"), keyConfig(t, nil))
	chat := `{"messages":[{"role":"user","content":"secret prompt text"}]}`
	tests := []struct {
		name, path, auth string
		status           int
	}{
		{"no key", "/v1/chat/completions", "", 401},
		{"wrong key", "/v1/chat/completions", "Bearer " + strings.ToUpper(testKey), 401},
		{"digest as key", "/v1/chat/completions", "Bearer sha256:abc", 401},
		{"basic scheme", "/v1/chat/completions", "Basic " + testKey, 401},
		{"right key", "/v1/chat/completions", "Bearer " + testKey, 200},
		{"models no key", "/v1/models", "", 401},
		{"metrics no key", "/metrics", "", 401},
		{"tokenize no key", "/tokenize", "", 401},
		{"health needs none", "/health", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, body := "POST", chat
			if tt.path == "/v1/models" || tt.path == "/metrics" || tt.path == "/health" {
				method, body = "GET", ""
			}
			if tt.path == "/tokenize" {
				body = `{"content":"x"}`
			}
			req, _ := http.NewRequest(method, ts.URL+tt.path, strings.NewReader(body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
			if tt.status == 401 {
				if e := decodeError(t, b); str(e.Error.Code) != "invalid_api_key" {
					t.Fatalf("bad 401 body %s", b)
				}
			}
		})
	}
	logs := ts.Logs.String()
	if strings.Contains(logs, testKey) || strings.Contains(logs, "secret prompt") {
		t.Fatalf("the log holds the key or the prompt:\n%s", logs)
	}
	if !strings.Contains(logs, "route=/v1/chat/completions status=200") || !strings.Contains(logs, "completion_tokens=1") {
		t.Fatalf("no request line in the log:\n%s", logs)
	}
}

func TestLogPrompts(t *testing.T) {
	ts := start(t, newFake("ok"), testConfig(t, func(c *config.Config) { c.LogPrompts = true }))
	ts.do(t, "POST", "/v1/completions", "", `{"prompt":"visible prompt"}`)
	if !strings.Contains(ts.Logs.String(), "visible prompt") {
		t.Fatalf("log_prompts did not log the prompt:\n%s", ts.Logs.String())
	}
}

func TestRateLimit(t *testing.T) {
	ts := start(t, newFake("ok"), keyConfig(t, func(c *config.Config) { c.RateLimitRPM = 60; c.RateLimitBurst = 2 }))
	var codes []int
	var retry string
	for range 3 {
		code, hdr, body := ts.do(t, "GET", "/v1/models", testKey, "")
		codes = append(codes, code)
		if code == 429 {
			retry = hdr.Get("Retry-After")
			decodeError(t, body)
		}
	}
	if fmt.Sprint(codes) != "[200 200 429]" || retry == "" || retry == "0" {
		t.Fatalf("codes %v, Retry-After %q", codes, retry)
	}
}

func TestQueue(t *testing.T) {
	fake := newFake("slow")
	fake.FirstDelay = 400 * time.Millisecond
	ts := start(t, fake, testConfig(t, func(c *config.Config) { c.MaxRunning = 1; c.QueueSize = 1 }))
	chat := `{"messages":[{"role":"user","content":"x"}]}`
	codes := make(chan int, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, _ := ts.do(t, "POST", "/v1/chat/completions", "", chat)
			codes <- code
		}()
		time.Sleep(50 * time.Millisecond) // first runs, second waits
	}
	code, hdr, body := ts.do(t, "POST", "/v1/chat/completions", "", chat)
	if code != 429 || hdr.Get("Retry-After") == "" {
		t.Fatalf("third request: status %d: %s", code, body)
	}
	if e := decodeError(t, body); str(e.Error.Code) != "queue_full" {
		t.Fatalf("bad body %s", body)
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("queued request got %d", c)
		}
	}
	// The fake counts a generation as ended just after its last event.
	for i := 0; ; i++ {
		_, active, _ := fake.Counts()
		if active == 0 {
			break
		}
		if i == 100 {
			t.Fatalf("%d generations still running", active)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSlowLoris(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) {
		c.ReadHeaderTimeout = config.Duration(300 * time.Millisecond)
	}))
	conn, err := net.Dial("tcp", ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	begin := time.Now()
	// Drip a header byte at a time, never finishing.
	go func() {
		for _, b := range []byte("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ") {
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		for {
			if _, err := conn.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept a slow-loris connection open for 5 s")
	}
	if el := time.Since(begin); el > 2*time.Second {
		t.Fatalf("closed after %v, want about 300ms", el)
	}
}

// streamRequest opens a raw connection and sends a streaming chat request.
func streamRequest(t *testing.T, addr string, maxTokens int) net.Conn {
	t.Helper()
	d := net.Dialer{}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":%d}`, maxTokens)
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return conn
}

func TestClientNeverReads(t *testing.T) {
	fake := newFake(strings.Repeat("z", 8192))
	fake.Endless = true
	fake.Model.ContextSize = 1 << 30
	ts := start(t, fake, testConfig(t, func(c *config.Config) { c.WriteTimeout = config.Duration(300 * time.Millisecond) }))
	cancelled := fake.Cancelled()
	conn := streamRequest(t, ts.Addr, 1<<29)
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	// Never read. The broker must give up on its own and stay responsive.
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the generation of a client that never reads was not cancelled")
	}
	if code, _, _ := ts.do(t, "GET", "/health", "", ""); code != 200 {
		t.Fatalf("broker unresponsive: %d", code)
	}
}

func TestClientDisconnects(t *testing.T) {
	fake := newFake("tok ")
	fake.Endless = true
	fake.Delay = 5 * time.Millisecond
	ts := start(t, fake, testConfig(t, nil))
	cancelled := fake.Cancelled()
	conn := streamRequest(t, ts.Addr, 500)
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, "tok ") {
			break
		}
	}
	conn.Close()
	begin := time.Now()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the backend context was not cancelled after the client left")
	}
	if el := time.Since(begin); el > 2*time.Second {
		t.Fatalf("cancelled after %v", el)
	}
}

func TestStreamOutlivesReadTimeout(t *testing.T) {
	fake := newFake("a", "b", "c", "d", "e", "f")
	fake.Delay = 150 * time.Millisecond
	ts := start(t, fake, testConfig(t, func(c *config.Config) {
		c.ReadTimeout = config.Duration(200 * time.Millisecond)
		c.WriteTimeout = config.Duration(300 * time.Millisecond)
	}))
	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	events := sseEvents(t, strings.NewReader(string(out)))
	if code != 200 || len(events) != 9 || events[8] != "[DONE]" {
		t.Fatalf("a stream longer than the read and write timeouts broke: %d %q", code, events)
	}
	_, _, cancelled := fake.Counts()
	if cancelled != 0 {
		t.Fatal("the generation was cancelled")
	}
}

// TestConnectionCap checks both answers at the global cap: silent
// connections are closed to make room (the oldest first), and when every
// connection is busy the newcomer gets a 503 at once instead of waiting.
func TestConnectionCap(t *testing.T) {
	tests := []struct {
		name    string
		partial bool // the held connections sent part of a request: busy, not idle
		status  int
	}{
		{"silent connections make room", false, 200},
		{"busy connections: 503 at once", true, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) { c.MaxConnections = 2 }))
			var held []net.Conn
			for range 2 {
				c, err := net.Dial("tcp", ts.Addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if tt.partial {
					if _, err := c.Write([]byte("GET /health HTTP/1.1\r\n")); err != nil {
						t.Fatal(err)
					}
				}
				held = append(held, c)
			}
			time.Sleep(100 * time.Millisecond)
			client := &http.Client{Timeout: time.Second}
			began := time.Now()
			resp, err := client.Get(ts.URL + "/health")
			if err != nil {
				t.Fatalf("a new client got no answer at the cap: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || time.Since(began) > time.Second {
				t.Fatalf("status %d after %v, want %d within 1 s", resp.StatusCode, time.Since(began), tt.status)
			}
			// The oldest silent connection was the one closed.
			_ = held[0].SetReadDeadline(time.Now().Add(time.Second))
			_, err = held[0].Read(make([]byte, 1))
			closed := err != nil && !isTimeout(err)
			if closed != !tt.partial {
				t.Fatalf("oldest held connection closed: %v (read: %v), want %v", closed, err, !tt.partial)
			}
		})
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestMetrics(t *testing.T) {
	fake := newFake("a", "b")
	fake.Restarts = 3
	fake.Deaths = map[string]uint64{"SIGSYS": 2, "exit": 1}
	ts := start(t, fake, testConfig(t, nil))
	ts.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"xyz"}]}`)
	ts.do(t, "POST", "/v1/chat/completions", "", `{"bad":1}`)
	code, hdr, body := ts.do(t, "GET", "/metrics", "", "")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", code, hdr.Get("Content-Type"))
	}
	m := string(body)
	for _, want := range []string{
		`lisa_http_requests_total{route="/v1/chat/completions",status="200"} 1`,
		`lisa_http_requests_total{route="/v1/chat/completions",status="400"} 1`,
		"lisa_generated_tokens_total 2",
		"lisa_prompt_tokens_total 3",
		"lisa_queue_depth 0",
		"lisa_time_to_first_token_seconds_count 1",
		`lisa_time_per_output_token_seconds_bucket{le="+Inf"} 1`,
		"lisa_worker_restarts_total 3",
		`lisa_worker_deaths_total{signal="SIGSYS"} 2`,
		"lisa_worker_ready 1",
		"# TYPE lisa_time_to_first_token_seconds histogram",
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Log(m)
	}
}

func TestNonStreamingClientLeaves(t *testing.T) {
	fake := newFake("slow")
	fake.Endless = true
	fake.Delay = 10 * time.Millisecond
	ts := start(t, fake, testConfig(t, nil))
	cancelled := fake.Cancelled()
	conn, err := net.Dial("tcp", ts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":400}`
	fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	time.Sleep(100 * time.Millisecond)
	conn.Close()
	select {
	case <-cancelled:
	case <-time.After(3 * time.Second):
		t.Fatal("the generation went on after its client left")
	}
}

func TestRequestTimeout(t *testing.T) {
	fake := newFake("slow")
	fake.Endless = true
	fake.Delay = 10 * time.Millisecond
	ts := start(t, fake, testConfig(t, func(c *config.Config) { c.RequestTimeout = config.Duration(200 * time.Millisecond) }))
	code, _, body := ts.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"x"}],"max_tokens":400}`)
	if code != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", code, body)
	}
	decodeError(t, body)
}

func TestHeaderLimit(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, nil))
	req, _ := http.NewRequest("GET", ts.URL+"/health", nil)
	req.Header.Set("X-Big", strings.Repeat("a", 128<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 128 KiB header got %d", resp.StatusCode)
	}
}
