package engine

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gen"
)

// byChoice splits a generation's chunks by choice, checking every index
// is one of the n asked for.
func byChoice(t *testing.T, r result, n int) []result {
	t.Helper()
	out := make([]result, n)
	for _, c := range r.chunks {
		if c.Index < 0 || c.Index >= n {
			t.Fatalf("chunk for choice %d of %d", c.Index, n)
		}
		o := &out[c.Index]
		o.chunks = append(o.chunks, c)
		o.text += c.Text
	}
	return out
}

// TestChoicesSharePrompt: n choices evaluate the prompt once (the forward
// passes carry the prompt once and then each choice's fed-back tokens),
// choice i says what a request with n = 1 and seed+i says (tokens and
// log-probabilities), seeded choices differ, greedy ones do not, and the
// end has every choice's reason and usage summed over them.
func TestChoicesSharePrompt(t *testing.T) {
	refs := loadRef(t)
	ids := refs[0].PromptIDs
	const n, maxTokens, seed = 3, 30, 11
	for _, sampled := range []bool{true, false} {
		e := newEngine(t, Options{Threads: 2, Parallel: 4})
		req := greedy(ids, maxTokens)
		if sampled {
			req = seeded(ids, maxTokens, seed)
		}
		req.N = n
		r := runGen(context.Background(), e, req)
		if r.err != nil {
			t.Fatal(r.err)
		}
		choices := byChoice(t, r, n)
		completion := 0
		for _, c := range choices {
			completion += len(c.logprobs())
		}
		u := r.done.Usage
		if u.PromptTokens != len(ids) || u.CompletionTokens != completion || len(r.done.Choices) != n || r.done.Choices[0] != r.done.Finish {
			t.Fatalf("end %+v: want %d prompt tokens, %d completion tokens and %d reasons", r.done, len(ids), completion, n)
		}
		// Every sampled token but each choice's last is fed back.
		if got, want := e.sched.evaluated.Load(), int64(len(ids)+completion-n); got != want {
			t.Errorf("sampled=%v: the forward passes carried %d tokens, want %d (the prompt of %d once, %d fed back)", sampled, got, want, len(ids), completion-n)
		}
		single := newEngine(t, Options{Threads: 2, Parallel: 1})
		distinct := map[string]bool{}
		for i, c := range choices {
			one := greedy(ids, maxTokens)
			if sampled {
				one = seeded(ids, maxTokens, gen.ChoiceSeed(seed, i))
			}
			want := runGen(context.Background(), single, one)
			if want.err != nil {
				t.Fatal(want.err)
			}
			if c.text != want.text || !reflect.DeepEqual(c.logprobs(), want.logprobs()) || r.done.Choices[i] != want.done.Finish {
				t.Errorf("sampled=%v choice %d: %q (%s), alone with its seed %q (%s)", sampled, i, c.text, r.done.Choices[i], want.text, want.done.Finish)
			}
			distinct[c.text] = true
		}
		if sampled && len(distinct) < 2 || !sampled && len(distinct) != 1 {
			t.Errorf("sampled=%v: %d distinct choices of %d", sampled, len(distinct), n)
		}
	}
}

// TestChoicesLimits: more choices than slots is the client's error naming
// n; a request for n waits until n slots are free (here behind a request
// that holds one of two), and a cancelled one frees all its slots.
func TestChoicesLimits(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 2, CtxSize: 256})
	req := seeded(refs[1].PromptIDs, 10, 3)
	req.N = 3
	r := runGen(context.Background(), e, req)
	if ge := gen.AsError(r.err); ge == nil || ge.Code != gen.CodeInvalidRequest || ge.Param != "n" || !errors.Is(r.err, ErrPrompt) {
		t.Fatalf("3 choices on 2 slots: %v, want an invalid_request naming n", r.err)
	}

	// A long request holds a slot; two choices wait for it to end.
	long := seeded(refs[0].PromptIDs, 40, 1)
	started := make(chan struct{})
	longDone := make(chan result, 1)
	go func() {
		var lr result
		lr.done, lr.err = e.Generate(context.Background(), long, func(c gen.Chunk) error {
			if len(lr.chunks) == 0 {
				close(started)
			}
			lr.chunks = append(lr.chunks, c)
			return nil
		})
		longDone <- lr
	}()
	<-started
	req.N = 2
	two := runGen(context.Background(), e, req)
	lr := <-longDone
	if two.err != nil || lr.err != nil {
		t.Fatalf("two choices %v, the long request %v", two.err, lr.err)
	}
	if len(two.done.Choices) != 2 || lr.done.Usage.CompletionTokens != 40 {
		t.Fatalf("two choices end %+v, long end %+v", two.done, lr.done)
	}

	// Cancelled after its first chunk, a request for two choices ends
	// with the context's error and leaves both slots free.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := e.Generate(ctx, req, func(gen.Chunk) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	// Were a slot still held, this would wait for it past the timeout.
	actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer acancel()
	again := runGen(actx, e, req)
	if again.err != nil || len(again.done.Choices) != 2 {
		t.Fatalf("after a cancel: %+v %v", again.done, again.err)
	}
	if got := byChoice(t, again, 2); got[0].text != byChoice(t, two, 2)[0].text {
		t.Errorf("after a cancel choice 0 says %q, before %q", got[0].text, byChoice(t, two, 2)[0].text)
	}
}

// TestChoicesConstrained: each choice of a request with a response format
// follows the format on its own (its own grammar state), from one
// prompt.
func TestChoicesConstrained(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 3, CtxSize: 512})
	req := chatReq(200, 4)
	req.N = 3
	req.Format = gen.Format{Type: gen.FormatJSONSchema, Name: "w", Schema: weatherSchema, Strict: true}
	r := runGen(context.Background(), e, req)
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, c := range byChoice(t, r, 3) {
		if _, err := decodeWeather(c.text); err != nil || r.done.Choices[i] != gen.FinishStop {
			t.Errorf("choice %d: %q (finish %s): %v", i, c.text, r.done.Choices[i], err)
		}
	}
}

// TestChoicesToolCalls: with a forced call each choice makes its own call
// (its own parser: indexes from 0, ids of its own), arguments that fit the
// schema, and ends with tool_calls.
func TestChoicesToolCalls(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 2, CtxSize: 512})
	req := chatReq(200, 9)
	req.N = 2
	req.Tools = []gen.Tool{{Name: "get_weather", Parameters: weatherSchema}}
	req.ToolChoice = gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"}
	r := runGen(context.Background(), e, req)
	if r.err != nil {
		t.Fatal(r.err)
	}
	ids := map[string]bool{}
	for i, c := range byChoice(t, r, 2) {
		cs := calls(t, c)
		if len(cs) != 1 || r.done.Choices[i] != gen.FinishToolCalls {
			t.Fatalf("choice %d: %d calls, finish %s (text %q)", i, len(cs), r.done.Choices[i], c.text)
		}
		if _, err := decodeWeather(cs[0].Arguments); err != nil || cs[0].Name != "get_weather" {
			t.Errorf("choice %d: call %+v: %v", i, cs[0], err)
		}
		ids[cs[0].ID] = true
	}
	if len(ids) != 2 {
		t.Errorf("the choices' calls share an id")
	}
}

// TestChoicesClosedInQueue: closing the engine ends a request for several
// choices that waits in the queue (and the one holding the slot it waits
// for) with ErrClosed.
func TestChoicesClosedInQueue(t *testing.T) {
	refs := loadRef(t)
	e := newEngine(t, Options{Threads: 2, Parallel: 2, CtxSize: 256})
	// Once armed, the scheduler stops before its next step until the gate
	// opens: the long request holds its slot, the other stays queued.
	var armed atomic.Bool
	gate := make(chan struct{})
	e.sched.beforeStep = func() {
		if armed.Load() {
			<-gate
		}
	}
	started := make(chan struct{})
	errs := make(chan error, 2)
	go func() {
		first := true
		_, err := e.Generate(context.Background(), seeded(refs[0].PromptIDs, 100, 1), func(gen.Chunk) error {
			if first {
				first = false
				armed.Store(true)
				close(started)
			}
			return nil
		})
		errs <- err
	}()
	<-started
	two := seeded(refs[1].PromptIDs, 10, 2)
	two.N = 2
	go func() {
		_, err := e.Generate(context.Background(), two, func(gen.Chunk) error { return nil })
		errs <- err
	}()
	waitFor(t, "the request for two choices to queue", func() bool {
		e.sched.mu.Lock()
		defer e.sched.mu.Unlock()
		return len(e.sched.queue) == 1
	})
	closed := make(chan struct{})
	go func() {
		e.sched.close()
		close(closed)
	}()
	waitFor(t, "close to begin", func() bool {
		e.sched.mu.Lock()
		defer e.sched.mu.Unlock()
		return e.sched.closed
	})
	close(gate)
	<-closed
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("after close: %v, want ErrClosed", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a generation did not end after close")
		}
	}
}
