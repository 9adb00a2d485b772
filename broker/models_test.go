package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// fakeModels is a broker.Models over fakes: one per id, with aliases,
// some failing to load. It counts what is held.
type fakeModels struct {
	mu       sync.Mutex
	order    []string
	fakes    map[string]*brokertest.Fake
	aliases  map[string][]string
	failing  map[string]string // id → reason
	refuse   map[string]error  // id → the error Acquire returns
	held     map[string]int
	acquires map[string]int
	settings map[string][2]int // id → its ctx_size and parallel
}

func newFakeModels() *fakeModels {
	return &fakeModels{fakes: map[string]*brokertest.Fake{}, aliases: map[string][]string{}, failing: map[string]string{}, refuse: map[string]error{},
		held: map[string]int{}, acquires: map[string]int{}, settings: map[string][2]int{}}
}

func (m *fakeModels) add(id string, f *brokertest.Fake, aliases ...string) {
	m.order = append(m.order, id)
	m.fakes[id], m.aliases[id] = f, aliases
}

func (m *fakeModels) resolve(name string) string {
	if _, ok := m.fakes[name]; ok {
		return name
	}
	for id, as := range m.aliases {
		for _, a := range as {
			if a == name {
				return id
			}
		}
	}
	return ""
}

func (m *fakeModels) Acquire(ctx context.Context, name string) (broker.Backend, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.resolve(name)
	if id == "" {
		return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelNotFound}
	}
	if r, bad := m.failing[id]; bad {
		return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoadFailed, Reason: r, RetryAfter: 30 * time.Second}
	}
	if err := m.refuse[id]; err != nil {
		return nil, nil, err
	}
	m.held[id]++
	m.acquires[id]++
	var once sync.Once
	return m.fakes[id], func() {
		once.Do(func() {
			m.mu.Lock()
			m.held[id]--
			m.mu.Unlock()
		})
	}, nil
}

func (m *fakeModels) Statuses() []broker.ModelStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []broker.ModelStatus
	for _, id := range m.order {
		st := broker.ModelStatus{ID: id, Aliases: m.aliases[id], State: broker.ModelLoaded, InFlight: m.held[id],
			Requests: uint64(m.acquires[id]), Charge: 100 << 20, Worker: broker.WorkerStats{Restarts: m.fakes[id].Restarts, Deaths: m.fakes[id].Deaths},
			CtxSize: m.settings[id][0], Parallel: m.settings[id][1]}
		if r, bad := m.failing[id]; bad {
			st.State, st.Error = broker.ModelFailed, r
		}
		out = append(out, st)
	}
	return out
}

func (m *fakeModels) heldNow(id string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[id]
}

func startMulti(t *testing.T, models broker.Models) *testServer {
	t.Helper()
	c := config.Default()
	c.ModelsDir = "/models"
	c.Listen = "127.0.0.1:0"
	c.RateLimitRPM = 0
	c.ModelsMemoryBytes = 1 << 30
	c.ShutdownTimeout = config.Duration(2 * time.Second)
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	srv, err := broker.NewMultiServer(&c, models, slog.New(slog.NewTextHandler(logs, nil)))
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
	t.Cleanup(func() { cancel(); <-done })
	return &testServer{URL: "http://" + ln.Addr().String(), Addr: ln.Addr().String(), Server: srv, Logs: logs, client: &http.Client{Timeout: 20 * time.Second}}
}

func TestMultiModelRouting(t *testing.T) {
	fm := newFakeModels()
	fm.add("alpha", newFake("from ", "alpha"), "gpt-4o-mini")
	fm.add("beta", newFake("from ", "beta"))
	fm.add("broken", newFake("never"))
	fm.failing["broken"] = "the worker refused the file: not a GGUF file"
	fm.add("slow", newFake("x"))
	fm.refuse["slow"] = &broker.ModelError{Model: "slow", Kind: broker.ErrModelLoading, RetryAfter: 5 * time.Second}
	fm.add("full", newFake("x"))
	fm.refuse["full"] = &broker.ModelError{Model: "full", Kind: broker.ErrModelNoRoom, Reason: "the budget is held by models in use", RetryAfter: 3 * time.Second}
	ts := startMulti(t, fm)

	chat := func(model string) string {
		b, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
		return string(b)
	}
	for _, tc := range []struct {
		name, path, body string
		status           int
		want             []string // substrings of the body
		heldID           string   // the model the request used
	}{
		{"id alpha", "/v1/chat/completions", chat("alpha"), 200, []string{`"content":"from alpha"`, `"model":"alpha"`}, "alpha"},
		{"id beta", "/v1/chat/completions", chat("beta"), 200, []string{`"content":"from beta"`, `"model":"beta"`}, "beta"},
		{"alias of alpha", "/v1/chat/completions", chat("gpt-4o-mini"), 200, []string{`"content":"from alpha"`, `"model":"gpt-4o-mini"`}, "alpha"},
		{"completions", "/v1/completions", `{"model":"beta","prompt":"x","max_tokens":5}`, 200, []string{`"text":"from beta"`}, "beta"},
		{"stream", "/v1/chat/completions", strings.TrimSuffix(chat("beta"), "}") + `,"stream":true}`, 200, []string{`"content":"beta"`, "[DONE]"}, "beta"},
		{"tokenize routed", "/tokenize", `{"model":"alpha","content":"ab"}`, 200, []string{`"tokens":[`}, "alpha"},
		{"unknown model", "/v1/chat/completions", chat("gamma"), 404, []string{`the model \"gamma\" does not exist`, `"code":"model_not_found"`}, ""},
		{"failed model", "/v1/chat/completions", chat("broken"), 503, []string{`the model \"broken\" failed to load: the worker refused the file`, `"code":"model_load_failed"`}, ""},
		{"still loading", "/v1/chat/completions", chat("slow"), 503, []string{`the model \"slow\" is still loading; retry later`, `"code":"model_loading"`}, ""},
		{"no room", "/v1/chat/completions", chat("full"), 503, []string{`the model \"full\" cannot be loaded now: the budget is held by models in use`, `"code":"model_memory_full"`}, ""},
		{"no model", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`, 400, []string{`"code":"model_required"`}, ""},
		{"no model tokenize", "/tokenize", `{"content":"ab"}`, 400, []string{`"code":"model_required"`}, ""},
		{"bad body still the decoder's error", "/v1/chat/completions", `{"model":`, 400, []string{`"code":"invalid_json"`}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string]int{}
			for id := range fm.fakes {
				before[id] = fm.acquires[id]
			}
			status, h, body := ts.do(t, "POST", tc.path, "", tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(body), w) {
					t.Errorf("body %s lacks %s", body, w)
				}
			}
			if want := map[string]string{"failed model": "30", "still loading": "5", "no room": "3"}[tc.name]; h.Get("Retry-After") != want {
				t.Errorf("Retry-After %q, want %q", h.Get("Retry-After"), want)
			}
			for id := range fm.fakes {
				used := fm.acquires[id] - before[id]
				if want := map[bool]int{true: 1}[id == tc.heldID]; used != want {
					t.Errorf("model %s acquired %d times, want %d", id, used, want)
				}
				if n := fm.heldNow(id); n != 0 {
					t.Errorf("model %s still held %d times after the request", id, n)
				}
			}
		})
	}
}

func TestMultiModelListHealthMetrics(t *testing.T) {
	fm := newFakeModels()
	a := newFake("a")
	a.Restarts, a.Deaths = 2, map[string]uint64{"SIGSYS": 1}
	fm.add("alpha", a, "gpt-4o-mini")
	fm.settings["alpha"] = [2]int{2048, 2}
	fm.add("broken", newFake("b"))
	fm.failing["broken"] = "not a GGUF file"
	fm.settings["broken"] = [2]int{0, 4}
	ts := startMulti(t, fm)

	status, _, body := ts.do(t, "GET", "/v1/models", "", "")
	var list struct {
		Data []struct {
			ID, Status, Error string
			AliasOf           string `json:"alias_of"`
			CtxSize           *int   `json:"ctx_size"`
			Parallel          int
		}
	}
	if err := json.Unmarshal(body, &list); status != 200 || err != nil {
		t.Fatalf("/v1/models: %d %v %s", status, err, body)
	}
	var got []string
	for _, d := range list.Data {
		ctx := "model's"
		if d.CtxSize != nil {
			ctx = fmt.Sprint(*d.CtxSize)
		}
		got = append(got, fmt.Sprintf("%s/%s/%s/%d", d.ID, d.Status, ctx, d.Parallel))
	}
	// Each model's own ctx_size (absent: the model's) and parallel.
	if want := "alpha/loaded/2048/2 gpt-4o-mini/loaded/2048/2 broken/failed/model's/4"; strings.Join(got, " ") != want {
		t.Errorf("/v1/models lists %q, want %q (%s)", got, want, body)
	}
	if !strings.Contains(string(body), `"error":"not a GGUF file"`) || !strings.Contains(string(body), `"alias_of":"alpha"`) {
		t.Errorf("/v1/models lacks the failure or the alias: %s", body)
	}
	if status, _, body := ts.do(t, "GET", "/v1/models/gpt-4o-mini", "", ""); status != 200 || !strings.Contains(string(body), `"alias_of":"alpha"`) {
		t.Errorf("/v1/models/gpt-4o-mini: %d %s", status, body)
	}
	if status, _, body := ts.do(t, "GET", "/v1/models/nope", "", ""); status != 404 || !strings.Contains(string(body), `\"nope\"`) {
		t.Errorf("/v1/models/nope: %d %s", status, body)
	}

	status, _, body = ts.do(t, "GET", "/health", "", "")
	if status != 200 || !strings.Contains(string(body), `"broken":{"state":"failed","error":"not a GGUF file"`) || !strings.Contains(string(body), `"alpha":{"state":"loaded"`) {
		t.Errorf("/health: %d %s", status, body)
	}
	ts.do(t, "POST", "/v1/completions", "", `{"model":"alpha","prompt":"x","max_tokens":3}`)
	_, _, body = ts.do(t, "GET", "/metrics", "", "")
	for _, want := range []string{
		`lisa_model_loaded{model="alpha"} 1`, `lisa_model_failed{model="broken"} 1`, `lisa_model_generations_total{model="alpha"} 1`,
		`lisa_model_worker_restarts_total{model="alpha"} 2`, `lisa_model_worker_deaths_total{model="alpha",signal="SIGSYS"} 1`,
		`lisa_worker_restarts_total 2`, `lisa_worker_ready 1`, "lisa_models_memory_budget_bytes 1073741824", "lisa_models_memory_bytes 104857600",
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// Every model failed: /health says so.
	fm.mu.Lock()
	fm.failing["alpha"] = "gone"
	fm.mu.Unlock()
	if status, _, body := ts.do(t, "GET", "/health", "", ""); status != 503 || !strings.Contains(string(body), `"status":"failed"`) {
		t.Errorf("/health with every model failed: %d %s", status, body)
	}
}

// A streaming request holds its model until the stream ends.
func TestMultiModelHeldWhileStreaming(t *testing.T) {
	fm := newFakeModels()
	slow := newFake("a", "b", "c")
	slow.Delay = 150 * time.Millisecond
	fm.add("slow", slow)
	ts := startMulti(t, fm)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.do(t, "POST", "/v1/completions", "", `{"model":"slow","prompt":"x","max_tokens":5,"stream":true}`)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for fm.heldNow("slow") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if fm.heldNow("slow") != 1 {
		t.Fatal("the streaming request does not hold its model")
	}
	<-done
	if n := fm.heldNow("slow"); n != 0 {
		t.Errorf("model held %d times after the stream ended", n)
	}
}

// With one model, /tokenize and /detokenize take an optional model that
// must name it.
func TestSingleModelTokenizeModelField(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, nil))
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/tokenize", `{"model":"fake-model","content":"ab"}`, 200},
		{"/tokenize", `{"model":"other","content":"ab"}`, 404},
		{"/tokenize", `{"model":7,"content":"ab"}`, 400},
		{"/detokenize", `{"model":"fake-model","tokens":[97]}`, 200},
		{"/detokenize", `{"model":"other","tokens":[97]}`, 404},
	} {
		if status, _, body := ts.do(t, "POST", tc.path, "", tc.body); status != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.path, tc.body, status, tc.status, body)
		}
	}
}
