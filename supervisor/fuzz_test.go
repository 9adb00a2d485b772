package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// FuzzWorkerStream sends arbitrary bytes as the worker's replies to one
// generation (id 2) and checks that the real supervisor never panics or
// hangs, that the generation ends, and that what it delivers is sound.
func FuzzWorkerStream(f *testing.F) {
	frame := func(ms ...ipc.Message) []byte {
		var b []byte
		for _, m := range ms {
			b, _ = ipc.Encode(b, m)
		}
		return b
	}
	f.Add(frame(&ipc.Tokens{ID: 2, Text: "hello"}, &ipc.Done{ID: 2, FinishReason: "stop", Usage: gen.Usage{PromptTokens: 1, CompletionTokens: 1}}))
	f.Add(frame(&ipc.Error{ID: 2, Message: "context full"}))
	f.Add(frame(&ipc.Tokens{ID: 2, Text: "a"}, &ipc.Tokens{ID: 3, Text: "b"}))
	f.Add(frame(&ipc.Done{ID: 2, FinishReason: "length", Usage: gen.Usage{CompletionTokens: 4}}, &ipc.Tokens{ID: 2, Text: "late"}))
	f.Add(frame(&ipc.Progress{ID: 1, Tensors: 1, TensorsTotal: 2, BytesTotal: 1})) // the load is over
	f.Add(frame(&ipc.Progress{ID: 2, Tensors: 1, TensorsTotal: 2, BytesTotal: 1})) // no answer to a generate
	f.Add([]byte{0, 0, 0, 5, '{', '}', '{', '}', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(checkStream)
}

// checkStream runs one generation against a worker that answers stream.
func checkStream(t *testing.T, stream []byte) {
	{
		logs := &logBuffer{}
		cfg := testConfig(logs)
		cfg.StallTimeout, cfg.CancelGrace = 20*time.Millisecond, 20*time.Millisecond
		l := &fakeLauncher{t: t, scripts: []script{
			hostile(func(p *fakePeer, r ipc.Message) { p.raw(stream) }),
			honest(&workertest.Engine{}),
		}}
		s := New(cfg, l)
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		const maxTokens = 4
		ch, err := s.Generate(context.Background(), gen.Request{Prompt: sp("x"), MaxTokens: maxTokens})
		if err != nil {
			t.Fatal(err)
		}
		text, evs := collect(t, ch)
		end := last(evs)
		switch end.Kind {
		case broker.EventDone:
			if end.Finish != "stop" && end.Finish != "length" || end.Usage.CompletionTokens > maxTokens {
				t.Fatalf("unsound end %+v", end)
			}
		case broker.EventError:
			if !errors.Is(end.Err, broker.ErrWorkerFailed) && !errors.Is(end.Err, ErrRequestFailed) {
				t.Fatalf("error %v", end.Err)
			}
		default:
			t.Fatalf("ended with %+v", end)
		}
		if !utf8.ValidString(text) || len(text) > maxTokens*cfg.withDefaults().MaxTokenBytes {
			t.Fatalf("delivered %d bytes of text, valid UTF-8: %v", len(text), utf8.ValidString(text))
		}
	}
}
