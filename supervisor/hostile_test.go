package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// hostile answers hello properly, waits for the first request, does act,
// and then only reads until it is killed.
func hostile(act func(p *fakePeer, req ipc.Message)) script {
	return func(t *testing.T, conn net.Conn, stop <-chan struct{}) {
		p, ok := handshake(conn)
		if !ok {
			return
		}
		p.stop = stop
		req, ok := p.nextRequest()
		if !ok {
			return
		}
		act(p, req)
		p.drain()
	}
}

func tokens(id uint64, text string) string {
	return fmt.Sprintf(`{"type":"tokens","id":%d,"text":%q}`, id, text)
}

type violationCase struct {
	name     string
	op       string // "generate" (default), "tokenize", "embed", "cancel"
	act      func(p *fakePeer, req ipc.Message)
	reason   string // in the death line
	cause    string // death cause counted (default SIGKILL)
	firstOK  bool   // the request itself completes before the violation
	maxToken int
}

func violationCases() []violationCase { return append(shapeCases(), replyCases()...) }

// shapeCases break the frame and message shape rules.
func shapeCases() []violationCase {
	id := func(m ipc.Message) uint64 { return m.RequestID() }
	return []violationCase{
		{name: "oversized frame", reason: "frame size", act: func(p *fakePeer, r ipc.Message) {
			p.raw([]byte{0x01, 0x00, 0x00, 0x01, '{'})
		}},
		{name: "max length", reason: "frame size", act: func(p *fakePeer, r ipc.Message) { p.raw([]byte{0xff, 0xff, 0xff, 0xff}) }},
		{name: "empty frame", reason: "frame size", act: func(p *fakePeer, r ipc.Message) { p.raw([]byte{0, 0, 0, 0}) }},
		{name: "truncated and gone", reason: "truncated frame", cause: "exit", act: func(p *fakePeer, r ipc.Message) {
			p.raw([]byte{0, 0, 0, 100, '{', '"'})
			p.conn.Close()
		}},
		{name: "exits mid-request", reason: "closed its socket", cause: "exit", act: func(p *fakePeer, r ipc.Message) {
			p.frame(tokens(id(r), "a"))
			p.conn.Close()
		}},
		{name: "bad JSON", reason: "bad JSON", act: func(p *fakePeer, r ipc.Message) { p.frame(`{"type":"tokens",`) }},
		{name: "not an object", reason: "wrong type", act: func(p *fakePeer, r ipc.Message) { p.frame(`[1,2,3]`) }},
		{name: "trailing data", reason: "trailing data", act: func(p *fakePeer, r ipc.Message) {
			p.frame(tokens(id(r), "a") + `{}`)
		}},
		{name: "unknown type", reason: "unknown type", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"exec","id":%d}`, id(r)))
		}},
		{name: "request type", reason: "unknown type", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"cancel","id":%d}`, id(r)))
		}},
		{name: "unknown field", reason: "unknown field", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":"a","shell":"/bin/sh"}`, id(r)))
		}},
		{name: "field case", reason: "unknown field", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"Text":"a"}`, id(r)))
		}},
		{name: "duplicate field", reason: "duplicate field", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":"a","text":"b"}`, id(r)))
		}},
		{name: "missing field", reason: "missing field", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d}`, id(r)))
		}},
		{name: "mistyped field", reason: "wrong type", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":["a"]}`, id(r)))
		}},
		{name: "null field", reason: "wrong type", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":null}`, id(r)))
		}},
	}
}

// replyCases break the id, kind, limit and timing rules.
func replyCases() []violationCase {
	id := func(m ipc.Message) uint64 { return m.RequestID() }
	return []violationCase{
		{name: "unknown id", reason: "unknown id", act: func(p *fakePeer, r ipc.Message) { p.frame(tokens(id(r)+100, "a")) }},
		{name: "id zero", reason: "bad value", act: func(p *fakePeer, r ipc.Message) { p.frame(tokens(0, "a")) }},
		{name: "finished id", reason: "finished id", firstOK: true, act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Done{ID: id(r), FinishReason: "stop", Usage: gen.Usage{PromptTokens: 1, CompletionTokens: 1}})
			p.frame(tokens(id(r), "late"))
		}},
		{name: "second ready", reason: "finished id", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Ready{ID: 1, Protocol: ipc.Version, ContextSize: 1, VocabSize: 1})
		}},
		{name: "wrong reply kind", reason: "out of order", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Tokenized{ID: id(r), IDs: []int32{1}})
		}},
		{name: "invalid UTF-8", reason: "invalid UTF-8", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf("{\"type\":\"tokens\",\"id\":%d,\"text\":\"ok \xff\xfe\"}", id(r)))
		}},
		{name: "unpaired surrogate", reason: "invalid UTF-8", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":"\ud800"}`, id(r)))
		}},
		{name: "flood past max_tokens", reason: "chunk 6 of a request for 5", maxToken: 5, act: func(p *fakePeer, r ipc.Message) {
			for i := 0; i < 1000 && p.frame(tokens(id(r), "x")); i++ {
			}
		}},
		{name: "huge text", reason: "bytes of text", act: func(p *fakePeer, r ipc.Message) {
			body := fmt.Appendf(nil, `{"type":"tokens","id":%d,"text":"`, id(r))
			body = append(body, bytes.Repeat([]byte("A"), ipc.MaxFrame-len(body)-2)...)
			p.frame(string(append(body, `"}`...)))
		}},
		{name: "tool calls without tools", reason: "request allowing 0", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Tokens{ID: id(r), ToolCalls: []gen.CallDelta{{Index: 0, ID: "call_1", Name: "f", Arguments: "{}"}}})
		}},
		{name: "tool call piece of no call", reason: "the call begun last", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"tokens","id":%d,"text":"","tool_calls":[{"index":0,"arguments":"{}"}]}`, id(r)))
		}},
		{name: "logprobs not requested", reason: "not requested", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Tokens{ID: id(r), Text: "a", Logprobs: []gen.TokenProb{{Token: "a"}}})
		}},
		{name: "usage above max_tokens", reason: "usage.completion_tokens", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Done{ID: id(r), FinishReason: "length", Usage: gen.Usage{CompletionTokens: 5000}})
		}},
		{name: "bad finish reason", reason: "finish_reason", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"done","id":%d,"finish_reason":"eos","usage":{"prompt_tokens":1,"completion_tokens":1}}`, id(r)))
		}},
		{name: "token id beyond vocabulary", op: "tokenize", reason: "outside the vocabulary", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Tokenized{ID: id(r), IDs: []int32{1, 100}})
		}},
		{name: "embedding not of unit length", op: "embed", reason: "bad value", act: func(p *fakePeer, r ipc.Message) {
			p.frame(fmt.Sprintf(`{"type":"embedding","id":%d,"vector":[3,4],"tokens":1}`, id(r)))
		}},
		{name: "embedding answers a generate", reason: "out of order", act: func(p *fakePeer, r ipc.Message) {
			p.send(&ipc.Embedding{ID: id(r), Vector: []float32{1}, Tokens: 1})
		}},
		{name: "stall", reason: "nothing received", act: func(p *fakePeer, r ipc.Message) {}},
		{name: "stops reading", reason: "nothing received", act: func(p *fakePeer, r ipc.Message) { <-p.stop }},
		{name: "ignores cancel", op: "cancel", reason: "not ended within", act: func(p *fakePeer, r ipc.Message) {
			for p.frame(tokens(id(r), "x")) {
				time.Sleep(10 * time.Millisecond)
			}
		}},
	}
}

// TestHostileWorker runs each violation against the real supervisor: the
// request in flight fails with ErrWorkerFailed, the death is logged once,
// and the next worker serves.
func TestHostileWorker(t *testing.T) {
	for _, tc := range violationCases() {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			eng := &workertest.Engine{}
			l := &fakeLauncher{t: t, scripts: []script{hostile(tc.act), honest(eng)}}
			s := startSupervisor(t, testConfig(logs), l)
			checkFirstRequest(t, s, tc)
			waitFor(t, "the restarted worker", func() bool { return s.Health() == nil && l.launches.Load() == 2 })
			ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 2})
			if err != nil {
				t.Fatalf("after restart: %v", err)
			}
			if _, evs := collect(t, ch); last(evs).Kind != broker.EventDone {
				t.Fatalf("after restart: %+v", evs)
			}
			deaths := logs.lines("worker died")
			if len(deaths) != 1 || !strings.Contains(deaths[0], tc.reason) {
				t.Fatalf("death lines %q, want one with %q", deaths, tc.reason)
			}
			cause := tc.cause
			if cause == "" {
				cause = "SIGKILL"
			}
			if st := s.WorkerStats(); st.Restarts != 1 || st.Deaths[cause] != 1 {
				t.Fatalf("stats %+v, want 1 restart and 1 death by %s", st, cause)
			}
		})
	}
}

func checkFirstRequest(t *testing.T, s *Supervisor, tc violationCase) {
	t.Helper()
	ctx := context.Background()
	if tc.op == "embed" {
		if _, err := s.Embed(ctx, "x", nil); !errors.Is(err, broker.ErrWorkerFailed) {
			t.Fatalf("embed: %v, want ErrWorkerFailed", err)
		}
		return
	}
	if tc.op == "tokenize" {
		if _, err := s.Tokenize(ctx, "x", false); !errors.Is(err, broker.ErrWorkerFailed) {
			t.Fatalf("tokenize: %v, want ErrWorkerFailed", err)
		}
		return
	}
	if tc.maxToken == 0 {
		tc.maxToken = 1000
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := s.Generate(gctx, gen.Request{Prompt: sp("x"), MaxTokens: tc.maxToken})
	if err != nil {
		t.Fatal(err)
	}
	if tc.op == "cancel" {
		<-ch
		cancel()
		collect(t, ch)
		return
	}
	_, evs := collect(t, ch)
	end := last(evs)
	switch {
	case tc.firstOK && end.Kind != broker.EventDone:
		t.Fatalf("request before the violation: %+v", end)
	case !tc.firstOK && (end.Kind != broker.EventError || !errors.Is(end.Err, broker.ErrWorkerFailed)):
		t.Fatalf("request in flight ended with %+v, want ErrWorkerFailed", end)
	}
}

// TestSendQueueFull: a worker that stops reading fills the send queue;
// the supervisor neither blocks its callers past SendTimeout nor grows.
func TestSendQueueFull(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{}
	l := &fakeLauncher{t: t, scripts: []script{hostile(func(p *fakePeer, r ipc.Message) { <-p.stop }), honest(eng)}}
	s := startSupervisor(t, testConfig(logs), l)
	var chans []<-chan broker.Event
	refused := 0
	start := time.Now()
	for range sendQueue + 8 {
		ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 2})
		if err != nil {
			if !errors.Is(err, broker.ErrWorkerFailed) && !errors.Is(err, broker.ErrNotReady) {
				t.Fatalf("refused with %v", err)
			}
			refused++
			continue
		}
		chans = append(chans, ch)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("callers blocked for %v", d)
	}
	for _, ch := range chans {
		if _, evs := collect(t, ch); !errors.Is(last(evs).Err, broker.ErrWorkerFailed) {
			t.Fatalf("queued request ended with %+v", last(evs))
		}
	}
	if refused == 0 {
		t.Fatal("no request was refused although the queue was full")
	}
	// The death is logged once the worker has been reaped, which may come
	// after the queued requests have already been failed.
	waitFor(t, "the death log line", func() bool { return len(logs.lines("worker died")) > 0 })
	if lines := logs.lines("worker died"); len(lines) != 1 || !strings.Contains(lines[0], "send queue full") {
		t.Fatalf("death lines %q", lines)
	}
}
