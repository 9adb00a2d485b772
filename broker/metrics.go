package broker

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ttftBuckets are the upper bounds (seconds) of the time-to-first-token histogram.
func ttftBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
}

// tokenBuckets are the upper bounds (seconds) of the per-token latency histogram.
func tokenBuckets() []float64 {
	return []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}

// histogram is a Prometheus histogram with fixed buckets.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

// observeN records n observations of v.
func (h *histogram) observeN(v float64, n uint64) {
	if n == 0 || math.IsNaN(v) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	i := sort.SearchFloat64s(h.bounds, v)
	if i < len(h.counts) {
		h.counts[i] += n
	}
	h.sum += v * float64(n)
	h.count += n
}

func (h *histogram) write(w io.Writer, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "%s_bucket{le=\"+Inf\"} %d\n", name, h.count)
	fmt.Fprintf(w, "%s_sum %s\n%s_count %d\n", name, strconv.FormatFloat(h.sum, 'g', -1, 64), name, h.count)
}

// routeStatus keys the request counter; both parts come from small fixed
// sets (route patterns, status codes).
type routeStatus struct {
	route  string
	status int
}

// metrics holds the broker's counters. Everything is written by hand in
// the Prometheus text exposition format.
type metrics struct {
	mu        sync.Mutex
	requests  map[routeStatus]uint64
	generated atomic.Uint64
	prompt    atomic.Uint64
	cancelled atomic.Uint64
	// authLimited counts requests refused with 429 for failed API key
	// checks past the per-address burst.
	authLimited atomic.Uint64
	ttft        *histogram
	perToken    *histogram
}

func newMetrics() *metrics {
	return &metrics{
		requests: make(map[routeStatus]uint64),
		ttft:     newHistogram(ttftBuckets()),
		perToken: newHistogram(tokenBuckets()),
	}
}

func (m *metrics) request(route string, status int) {
	m.mu.Lock()
	m.requests[routeStatus{route, status}]++
	m.mu.Unlock()
}

// gauges are the point-in-time values written with the counters.
type gauges struct {
	queued, running, conns, handshakes int
	evicted, refused                   uint64 // connections closed to make room, and refused
	ready                              bool
	worker                             WorkerStats
}

func (m *metrics) write(w io.Writer, g gauges) {
	m.mu.Lock()
	keys := make([]routeStatus, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].status < keys[j].status
	})
	fmt.Fprint(w, "# HELP lisa_http_requests_total HTTP requests by route and status.\n# TYPE lisa_http_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "lisa_http_requests_total{route=\"%s\",status=\"%d\"} %d\n", escapeLabel(k.route), k.status, m.requests[k])
	}
	m.mu.Unlock()
	counter(w, "lisa_generated_tokens_total", "Tokens generated.", m.generated.Load())
	counter(w, "lisa_prompt_tokens_total", "Prompt tokens processed.", m.prompt.Load())
	counter(w, "lisa_generations_cancelled_total", "Generations cancelled because the client left or stopped reading.", m.cancelled.Load())
	gauge(w, "lisa_queue_depth", "Generations waiting for a slot.", g.queued)
	gauge(w, "lisa_generations_running", "Generations holding a slot.", g.running)
	gauge(w, "lisa_open_connections", "Open client connections.", g.conns)
	gauge(w, "lisa_tls_handshakes_in_progress", "TLS handshakes in progress.", g.handshakes)
	counter(w, "lisa_connections_evicted_total", "Idle connections closed to make room for a new one.", g.evicted)
	counter(w, "lisa_connections_refused_total", "Connections refused at once because every slot was busy.", g.refused)
	counter(w, "lisa_auth_failures_limited_total", "Requests answered 429 for too many failed API key checks from their address.", m.authLimited.Load())
	ready := 0
	if g.ready {
		ready = 1
	}
	gauge(w, "lisa_worker_ready", "1 when the worker has loaded the model.", ready)
	m.ttft.write(w, "lisa_time_to_first_token_seconds", "Time from the request to its first generated text.")
	m.perToken.write(w, "lisa_time_per_output_token_seconds", "Time per generated token after the first.")
	counter(w, "lisa_worker_restarts_total", "Worker restarts.", g.worker.Restarts)
	counter(w, "lisa_worker_restart_budget_spent_total", "Restarts the restart budget refused; each waited with backoff instead.", g.worker.BudgetSpent)
	counter(w, "lisa_worker_stderr_dropped_lines_total", "Lines of worker stderr not logged (rate limit).", g.worker.StderrDroppedLines)
	counter(w, "lisa_worker_stderr_dropped_bytes_total", "Bytes of worker stderr not logged (rate limit).", g.worker.StderrDroppedBytes)
	fmt.Fprint(w, "# HELP lisa_worker_deaths_total Worker deaths by signal (\"exit\": non-zero exit status).\n# TYPE lisa_worker_deaths_total counter\n")
	causes := make([]string, 0, len(g.worker.Deaths))
	for c := range g.worker.Deaths {
		causes = append(causes, c)
	}
	sort.Strings(causes)
	for _, c := range causes {
		fmt.Fprintf(w, "lisa_worker_deaths_total{signal=\"%s\"} %d\n", escapeLabel(c), g.worker.Deaths[c])
	}
}

func counter(w io.Writer, name, help string, v uint64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
}

func gauge(w io.Writer, name, help string, v int) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
}

// escapeLabel escapes a label value as the text format requires.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// writeModelMetrics writes the per-model families of a server with
// several models, each labelled model="ID", and the memory budget.
func writeModelMetrics(w io.Writer, sts []ModelStatus, budget int64) {
	family := func(name, typ, help string, v func(ModelStatus) uint64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, st := range sts {
			fmt.Fprintf(w, "%s{model=\"%s\"} %d\n", name, escapeLabel(st.ID), v(st))
		}
	}
	is := func(st ModelStatus, s ModelState) uint64 {
		if st.State == s {
			return 1
		}
		return 0
	}
	family("lisa_model_loaded", "gauge", "1 when the model's worker is loaded.", func(st ModelStatus) uint64 { return is(st, ModelLoaded) })
	family("lisa_model_loading", "gauge", "1 while the model loads.", func(st ModelStatus) uint64 { return is(st, ModelLoading) })
	family("lisa_model_failed", "gauge", "1 when the model's last load failed.", func(st ModelStatus) uint64 { return is(st, ModelFailed) })
	family("lisa_model_requests_in_flight", "gauge", "Requests holding the model (it is not evicted while any does).", func(st ModelStatus) uint64 { return uint64(max(0, st.InFlight)) })
	family("lisa_model_charge_bytes", "gauge", "Bytes the model counts against the memory budget while loaded.", func(st ModelStatus) uint64 { return uint64(max(0, st.Charge)) })
	family("lisa_model_loads_total", "counter", "Loads of the model started.", func(st ModelStatus) uint64 { return st.Loads })
	family("lisa_model_load_failures_total", "counter", "Loads of the model that failed.", func(st ModelStatus) uint64 { return st.LoadFailures })
	family("lisa_model_evictions_total", "counter", "Times the model was evicted to make room for another.", func(st ModelStatus) uint64 { return st.Evictions })
	family("lisa_model_generations_total", "counter", "Generations the model started.", func(st ModelStatus) uint64 { return st.Requests })
	family("lisa_model_prompt_tokens_total", "counter", "Prompt tokens the model processed.", func(st ModelStatus) uint64 { return st.PromptTokens })
	family("lisa_model_generated_tokens_total", "counter", "Tokens the model generated.", func(st ModelStatus) uint64 { return st.CompletionTokens })
	family("lisa_model_worker_restarts_total", "counter", "Restarts of the model's workers.", func(st ModelStatus) uint64 { return st.Worker.Restarts })
	fmt.Fprint(w, "# HELP lisa_model_worker_deaths_total Deaths of the model's workers by signal (\"exit\": non-zero exit status).\n# TYPE lisa_model_worker_deaths_total counter\n")
	var used int64
	for _, st := range sts {
		causes := make([]string, 0, len(st.Worker.Deaths))
		for c := range st.Worker.Deaths {
			causes = append(causes, c)
		}
		sort.Strings(causes)
		for _, c := range causes {
			fmt.Fprintf(w, "lisa_model_worker_deaths_total{model=\"%s\",signal=\"%s\"} %d\n", escapeLabel(st.ID), escapeLabel(c), st.Worker.Deaths[c])
		}
		if st.State == ModelLoaded || st.State == ModelLoading {
			used += st.Charge
		}
	}
	fmt.Fprintf(w, "# HELP lisa_models_memory_bytes Bytes the loaded and loading models count against the budget.\n# TYPE lisa_models_memory_bytes gauge\nlisa_models_memory_bytes %d\n", used)
	fmt.Fprintf(w, "# HELP lisa_models_memory_budget_bytes The models' memory budget (0: none).\n# TYPE lisa_models_memory_budget_bytes gauge\nlisa_models_memory_budget_bytes %d\n", budget)
}
