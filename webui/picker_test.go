package webui

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/config"
)

// pickerModel is one model of pickerModels.
type pickerModel struct {
	id      string
	aliases []string
	fake    *brokertest.Fake
	state   broker.ModelState
	reason  string        // why it failed to load (state failed)
	load    time.Duration // how long its first Acquire takes (state unloaded)
}

// pickerModels is a broker.Models over fakes, in a fixed order: a failed
// model fails every Acquire, an unloaded one loads on its first. It
// records the names Acquire was called with.
type pickerModels struct {
	mu       sync.Mutex
	models   []*pickerModel
	acquired []string
}

func (p *pickerModels) find(name string) *pickerModel {
	for _, m := range p.models {
		if m.id == name {
			return m
		}
		for _, a := range m.aliases {
			if a == name {
				return m
			}
		}
	}
	return nil
}

func (p *pickerModels) Acquire(ctx context.Context, name string) (broker.Backend, func(), error) {
	p.mu.Lock()
	p.acquired = append(p.acquired, name)
	m := p.find(name)
	if m == nil {
		p.mu.Unlock()
		return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelNotFound}
	}
	if m.state == broker.ModelFailed {
		p.mu.Unlock()
		return nil, nil, &broker.ModelError{Model: name, Kind: broker.ErrModelLoadFailed, Reason: m.reason, RetryAfter: 30 * time.Second}
	}
	load := time.Duration(0)
	if m.state == broker.ModelUnloaded {
		m.state, load = broker.ModelLoading, m.load
	}
	p.mu.Unlock()
	if load > 0 {
		select {
		case <-time.After(load):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	p.mu.Lock()
	m.state = broker.ModelLoaded
	p.mu.Unlock()
	return m.fake, func() {}, nil
}

func (p *pickerModels) Statuses() []broker.ModelStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []broker.ModelStatus
	for _, m := range p.models {
		st := broker.ModelStatus{ID: m.id, Aliases: m.aliases, State: m.state}
		if m.state == broker.ModelFailed {
			st.Error = m.reason
		}
		out = append(out, st)
	}
	return out
}

func (p *pickerModels) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.acquired...)
}

// TestModelPickerInChromium loads the chat page against a broker serving
// several models: one that failed to load (listed first), one not loaded
// yet and one loaded with an alias. The picker must list each model once
// (the alias in its label), default to the loaded one, send the chosen
// id with each message, show "loading…" while a model's first request
// waits for its load, show a failed model's error when it is picked, and
// remember the choice across a reload of the tab.
func TestModelPickerInChromium(t *testing.T) {
	endpoint := startChromium(t)

	const reason = "the worker refused the file: not a GGUF file"
	warm, cold := brokertest.New("warm", " reply"), brokertest.New("cold", " reply")
	cold.Delay, warm.Delay = 20*time.Millisecond, 20*time.Millisecond
	pm := &pickerModels{models: []*pickerModel{
		{id: "a-broken", fake: brokertest.New("never"), state: broker.ModelFailed, reason: reason},
		{id: "b-cold", fake: cold, state: broker.ModelUnloaded, load: 700 * time.Millisecond},
		{id: "c-warm", aliases: []string{"gpt-4o-mini"}, fake: warm, state: broker.ModelLoaded},
	}}
	cfg := config.Default()
	cfg.ModelsDir = "/models" // never read: pm is the model set
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	srv, err := broker.NewMultiServer(&cfg, pm, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.MountWebUI(Handler())
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	c := openPage(t, endpoint, ts.URL+"/")
	text, waitFor := c.text(t), c.waitFor(t)
	const (
		statusJS  = `document.getElementById("status").textContent`
		valueJS   = `document.getElementById("model").value`
		stateJS   = `document.getElementById("modelstate").textContent`
		optionsJS = `[...document.getElementById("model").options].map(o => o.value + "=" + o.textContent).join("\n")`
		replyJS   = `(Array.from(document.querySelectorAll(".msg.assistant .content")).pop() || {textContent: ""}).textContent`
	)
	waitFor("the picker's default", valueJS, func(s string) bool { return s != "" })
	if v := text(valueJS); v != "c-warm" {
		t.Errorf("default model %q, want c-warm (the loaded one, not the failed or the unloaded)", v)
	}
	opts := strings.Split(text(optionsJS), "\n")
	if len(opts) != 3 {
		t.Fatalf("options %q, want the three models once each", opts)
	}
	for i, want := range []struct{ value, label string }{
		{"a-broken", "failed"}, {"b-cold", "unloaded"}, {"c-warm", "gpt-4o-mini"},
	} {
		value, label, _ := strings.Cut(opts[i], "=")
		if value != want.value || !strings.Contains(label, want.value) || !strings.Contains(label, want.label) {
			t.Errorf("option %d %q, want %s labelled with %q", i, opts[i], want.value, want.label)
		}
	}
	if d := text(`String(document.getElementById("model").disabled)`); d != "false" {
		t.Errorf("picker disabled=%s with three models", d)
	}

	// send types a message and submits it.
	send := func(msg string) {
		t.Helper()
		if err := c.eval(`document.getElementById("prompt").value = `+jsString(msg)+`, document.getElementById("form").requestSubmit(), ""`, nil); err != nil {
			t.Fatal(err)
		}
	}
	// choose picks a model as a user would: the value, then a change event.
	choose := func(id string) {
		t.Helper()
		if err := c.eval(`(() => { const s = document.getElementById("model"); s.value = `+jsString(id)+
			`; s.dispatchEvent(new Event("change")); return ""; })()`, nil); err != nil {
			t.Fatal(err)
		}
	}
	done := func(s string) bool { return strings.HasPrefix(s, "done") }

	send("hello warm")
	waitFor("the warm model's reply", statusJS, done)
	if r := text(replyJS); r != "warm reply" {
		t.Errorf("reply %q, want the warm model's", r)
	}

	// The unloaded model: "loading…" while its first request waits.
	choose("b-cold")
	waitFor("the cold model's state", stateJS, func(s string) bool { return strings.Contains(s, "not loaded") })
	send("hello cold")
	waitFor("loading shown while the cold model loads", stateJS, func(s string) bool { return strings.Contains(s, "loading") })
	if s := text(statusJS); !strings.Contains(s, "loading the model b-cold") {
		t.Errorf("status %q while loading, want it to say the model is loading", s)
	}
	waitFor("the cold model's reply", statusJS, done)
	if r, st := text(replyJS), text(stateJS); r != "cold reply" || st != "loaded" {
		t.Errorf("reply %q, state %q; want the cold model's reply and loaded", r, st)
	}

	// The failed model: its error is shown when picked, and when used.
	choose("a-broken")
	waitFor("the failed model's error", stateJS, func(s string) bool { return strings.Contains(s, reason) })
	if s := text(statusJS); !strings.Contains(s, reason) {
		t.Errorf("status %q after picking the failed model, want its error", s)
	}
	c.screenshot(t, "picker.png")
	send("hello broken")
	waitFor("the failed model's answer", statusJS, func(s string) bool { return s == "error" })
	if r := text(replyJS); !strings.Contains(r, "a-broken") || !strings.Contains(r, reason) {
		t.Errorf("error shown %q, want it to name a-broken and say why", r)
	}

	// Each request named the model picked when it was sent.
	if got, want := strings.Join(pm.names(), ","), "c-warm,b-cold,a-broken"; got != want {
		t.Errorf("models the requests named %s, want %s", got, want)
	}
	if rs := warm.Requests(); len(rs) != 1 || rs[0].Messages[len(rs[0].Messages)-1].Content != "hello warm" {
		t.Errorf("warm model's requests %+v, want the first message", rs)
	}
	if rs := cold.Requests(); len(rs) != 1 || rs[0].Messages[len(rs[0].Messages)-1].Content != "hello cold" {
		t.Errorf("cold model's requests %+v, want the second message", rs)
	}

	// The choice outlives a reload of the tab (sessionStorage).
	if err := c.call("Page.reload", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the remembered choice after a reload", valueJS+` + "|" + `+statusJS, func(s string) bool { return s == "a-broken|ready" })
	// (The 503 is the failed model's answer.)
	if p := c.problems("status of 503"); len(p) != 0 {
		t.Errorf("console errors or CSP violations: %q", p)
	}
}

// jsString quotes s as a JavaScript string literal (a JSON string,
// with U+2028 and U+2029 escaped by encoding/json).
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
