package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// collect reads a generation to its end, with a timeout.
func collect(t *testing.T, ch <-chan broker.Event) (string, []broker.Event) {
	t.Helper()
	var text strings.Builder
	var evs []broker.Event
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return text.String(), evs
			}
			if ev.Kind == broker.EventText {
				text.WriteString(ev.Text)
			}
			evs = append(evs, ev)
		case <-timeout:
			t.Fatal("generation did not end")
		}
	}
}

func last(evs []broker.Event) broker.Event {
	if len(evs) == 0 {
		return broker.Event{Kind: -1}
	}
	return evs[len(evs)-1]
}

func TestServesOverIPC(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{}
	l := &fakeLauncher{t: t, scripts: []script{honest(eng)}}
	cfg := testConfig(logs)
	cfg.ModelName = "served-name"
	s := startSupervisor(t, cfg, l)
	ctx := context.Background()
	if err := s.Health(); err != nil {
		t.Fatalf("health: %v", err)
	}
	info, err := s.Info(ctx)
	if err != nil || info.Name != "served-name" || info.Architecture != "test" || info.VocabSize != workertest.VocabSize || len(info.SpecialTokens) != 1 ||
		len(info.ControlIDs) != 1 || info.ControlIDs[0] != workertest.BOS || info.BOS != workertest.BOS {
		t.Fatalf("info %+v, %v", info, err)
	}
	ids, err := s.Tokenize(ctx, "<s>hi", true)
	if err != nil || fmt.Sprint(ids) != "[256 104 105]" {
		t.Fatalf("tokenize %v, %v", ids, err)
	}
	text, err := s.Detokenize(ctx, []int32{104, 105})
	if err != nil || text != "hi" {
		t.Fatalf("detokenize %q, %v", text, err)
	}
	if _, err := s.Detokenize(ctx, []int32{5000}); !errors.Is(err, ErrRequestFailed) {
		t.Fatalf("detokenize of a bad id: %v", err)
	}
	// The echo engine makes no embeddings: a typed refusal, not a failure.
	if _, err := s.Embed(ctx, "hi", nil); !errors.Is(err, ErrRequestFailed) || gen.AsError(err) == nil || gen.AsError(err).Code != gen.CodeUnsupported {
		t.Fatalf("embed on an engine without embeddings: %v", err)
	}
	if _, err := s.Embed(ctx, "", nil); err == nil || errors.Is(err, ErrRequestFailed) {
		t.Fatalf("an empty embed was sent: %v", err)
	}
	// Several generations at once, each with its own stream.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := gen.Request{Prompt: sp("abc"), MaxTokens: 3 + i, Logprobs: i%2 == 0}
			if i == 1 {
				req = gen.Request{Messages: []gen.Message{{Role: "user", Content: "x"}}, MaxTokens: 4}
			}
			ch, err := s.Generate(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			got, evs := collect(t, ch)
			end := last(evs)
			var want strings.Builder
			for k := range req.MaxTokens {
				fmt.Fprintf(&want, "tok%d ", k)
			}
			if got != want.String() || end.Kind != broker.EventDone || end.Finish != "length" || end.Usage.CompletionTokens != req.MaxTokens {
				t.Errorf("generation %d: %q, end %+v", i, got, end)
			}
			probs := 0
			for _, ev := range evs {
				probs += len(ev.Logprobs)
			}
			if req.Logprobs && probs != req.MaxTokens || !req.Logprobs && probs != 0 {
				t.Errorf("generation %d: %d logprobs", i, probs)
			}
		}()
	}
	wg.Wait()
	if _, err := s.Generate(ctx, gen.Request{Prompt: sp("fail"), MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	ch, _ := s.Generate(ctx, gen.Request{Prompt: sp("fail"), MaxTokens: 2})
	_, evs := collect(t, ch)
	if last(evs).Kind != broker.EventError || !errors.Is(last(evs).Err, ErrRequestFailed) {
		t.Fatalf("engine error: %+v", evs)
	}
	if ge := gen.AsError(last(evs).Err); ge != nil {
		t.Fatalf("the engine's own failure came back typed: %+v", ge)
	}
	// A refusal the request caused comes back typed, across the process
	// line, and the worker stays up.
	ch, _ = s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 2, Format: gen.Format{Type: gen.FormatJSONObject}})
	if _, evs := collect(t, ch); last(evs).Kind != broker.EventError {
		t.Fatalf("constrained request: %+v", evs)
	} else if ge := gen.AsError(last(evs).Err); ge == nil || ge.Code != gen.CodeUnsupported || ge.Param != "tools" ||
		ge.Message != "the echo model follows no tools or formats" || !errors.Is(last(evs).Err, ErrRequestFailed) {
		t.Fatalf("want a typed unsupported_for_model error, got %v", last(evs).Err)
	}
	if _, err := s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 0}); err == nil {
		t.Fatal("max_tokens 0 accepted")
	}
	if st := s.WorkerStats(); st.Restarts != 0 || len(st.Deaths) != 0 || l.launches.Load() != 1 {
		t.Fatalf("stats %+v after %d launches", st, l.launches.Load())
	}
}

func TestCancelReachesWorker(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{Step: 2 * time.Millisecond}
	s := startSupervisor(t, testConfig(logs), &fakeLauncher{t: t, scripts: []script{honest(eng)}})
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 100000})
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-ch; ev.Kind != broker.EventText {
		t.Fatalf("first event %+v", ev)
	}
	cancel()
	start := time.Now()
	collect(t, ch)
	waitFor(t, "the worker to see the cancel", func() bool { return eng.Cancelled.Load() == 1 })
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("cancel took %v", d)
	}
	// The worker is still the same one, and still serves.
	ch, _ = s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 2})
	if _, evs := collect(t, ch); last(evs).Kind != broker.EventDone {
		t.Fatalf("after cancel: %+v", evs)
	}
	if st := s.WorkerStats(); len(st.Deaths) != 0 {
		t.Fatalf("deaths %v", st.Deaths)
	}
	// A tokenize whose caller gives up is forgotten once the worker answers.
	tctx, tcancel := context.WithCancel(context.Background())
	tcancel()
	if _, err := s.Tokenize(tctx, "x", false); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled tokenize: %v", err)
	}
}

func TestSlowReaderDoesNotBlockOthers(t *testing.T) {
	logs := &logBuffer{}
	eng := &workertest.Engine{}
	s := startSupervisor(t, testConfig(logs), &fakeLauncher{t: t, scripts: []script{honest(eng)}})
	ctx := context.Background()
	slow, err := s.Generate(ctx, gen.Request{Prompt: sp("x"), MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	// Nobody reads slow while another generation runs to its end.
	fast, _ := s.Generate(ctx, gen.Request{Prompt: sp("y"), MaxTokens: 5})
	if _, evs := collect(t, fast); last(evs).Kind != broker.EventDone {
		t.Fatalf("fast generation: %+v", evs)
	}
	waitFor(t, "the slow generation's end to arrive", func() bool {
		in, _ := s.serving()
		in.mu.Lock()
		defer in.mu.Unlock()
		return len(in.calls) == 0
	})
	text, evs := collect(t, slow)
	if last(evs).Kind != broker.EventDone || strings.Count(text, "tok") != 500 {
		t.Fatalf("slow generation: %d tokens, end %+v", strings.Count(text, "tok"), last(evs))
	}
	if len(evs) > 10 {
		t.Fatalf("%d events: pending text was not merged", len(evs))
	}
}

func TestNotReadyAndClosed(t *testing.T) {
	s := New(Config{}, &fakeLauncher{t: t, scripts: []script{honest(&workertest.Engine{})}})
	if _, err := s.Info(context.Background()); !errors.Is(err, broker.ErrNotReady) {
		t.Fatalf("info before start: %v", err)
	}
	if _, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: 1}); !errors.Is(err, broker.ErrNotReady) {
		t.Fatalf("generate before start: %v", err)
	}
	if err := s.Health(); !errors.Is(err, broker.ErrNotReady) {
		t.Fatalf("health before start: %v", err)
	}
	s.Close()
	if err := s.Start(context.Background()); err == nil {
		t.Fatal("start after close")
	}
}
