package worker_test

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
	"github.com/lisa-llm/lisa/worker/workertest"
)

// peer is the broker's end of a worker under test.
type peer struct {
	t    *testing.T
	conn net.Conn
	r    *ipc.Reader
	done chan error
}

func noLayers() ([]ipc.Layer, int, error) {
	return []ipc.Layer{{Name: "sandbox", Detail: "test"}}, 0, nil
}

func startWorker(t *testing.T, load worker.EngineLoader, serving worker.ServingFunc) *peer {
	t.Helper()
	b, w := net.Pipe()
	p := &peer{t: t, conn: b, r: ipc.NewReader(b), done: make(chan error, 1)}
	go func() { p.done <- worker.Run(w, nil, load, serving); w.Close() }()
	t.Cleanup(func() { b.Close() })
	return p
}

func (p *peer) send(m ipc.Message) {
	p.t.Helper()
	p.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := ipc.Write(p.conn, m); err != nil {
		p.t.Fatal(err)
	}
}

func (p *peer) recv() ipc.Message {
	p.t.Helper()
	p.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	body, err := p.r.ReadFrame()
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := ipc.DecodeReply(body)
	if err != nil {
		p.t.Fatal(err)
	}
	return m
}

func (p *peer) end() error {
	p.t.Helper()
	p.conn.Close()
	select {
	case err := <-p.done:
		return err
	case <-time.After(5 * time.Second):
		p.t.Fatal("worker did not stop after the socket closed")
		return nil
	}
}

func strp(s string) *string { return &s }

func TestRunServes(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &workertest.Engine{}
	p := startWorker(t, eng.Loader(), noLayers)
	p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version, ModelName: "served"})
	r, ok := p.recv().(*ipc.Ready)
	if !ok || r.ID != 1 || r.Name != "served" || r.VocabSize != workertest.VocabSize || len(r.Layers) != 1 {
		t.Fatalf("ready: %#v", r)
	}
	p.send(&ipc.Generate{ID: 2, Request: gen.Request{Prompt: strp("hi"), MaxTokens: 3, Logprobs: true}})
	var text strings.Builder
	for {
		m := p.recv()
		if m.RequestID() != 2 {
			t.Fatalf("reply for id %d", m.RequestID())
		}
		if tk, ok := m.(*ipc.Tokens); ok {
			if len(tk.Logprobs) != 1 {
				t.Fatalf("logprobs %v", tk.Logprobs)
			}
			text.WriteString(tk.Text)
			continue
		}
		d, ok := m.(*ipc.Done)
		if !ok || d.FinishReason != "length" || d.Usage.PromptTokens != 2 || d.Usage.CompletionTokens != 3 {
			t.Fatalf("end: %#v", m)
		}
		break
	}
	if text.String() != "tok0 tok1 tok2 " {
		t.Fatalf("text %q", text.String())
	}
	p.send(&ipc.Tokenize{ID: 3, Text: "<s>a", Special: true})
	if tk, ok := p.recv().(*ipc.Tokenized); !ok || len(tk.IDs) != 2 || tk.IDs[0] != workertest.BOS {
		t.Fatalf("tokenized %#v", tk)
	}
	p.send(&ipc.Detokenize{ID: 4, IDs: []int32{104, 105}})
	if d, ok := p.recv().(*ipc.Detokenized); !ok || d.Text != "hi" {
		t.Fatalf("detokenized %#v", d)
	}
	p.send(&ipc.Detokenize{ID: 5, IDs: []int32{9999}})
	if e, ok := p.recv().(*ipc.Error); !ok || e.ID != 5 {
		t.Fatalf("want an error for a bad id, got %#v", e)
	}
	p.send(&ipc.Generate{ID: 6, Request: gen.Request{Prompt: strp("fail"), MaxTokens: 3}})
	if e, ok := p.recv().(*ipc.Error); !ok || e.ID != 6 || !strings.Contains(e.Message, "engine failure") {
		t.Fatalf("want the engine's error, got %#v", e)
	} else if e.Code != "" {
		t.Fatalf("the engine's own failure carries code %q", e.Code)
	}
	// A failure the request caused keeps its code, field and message.
	p.send(&ipc.Generate{ID: 7, Request: gen.Request{Prompt: strp("x"), MaxTokens: 3, Format: gen.Format{Type: gen.FormatJSONObject}}})
	if e, ok := p.recv().(*ipc.Error); !ok || e.ID != 7 || e.Code != gen.CodeUnsupported || e.Param != "tools" ||
		e.Message != "the echo model follows no tools or formats" {
		t.Fatalf("want a typed unsupported error, got %#v", e)
	}
	if err := p.end(); err != nil {
		t.Fatalf("Run after EOF: %v", err)
	}
	waitGoroutines(t, before)
}

func TestCancelStopsGeneration(t *testing.T) {
	before := runtime.NumGoroutine()
	eng := &workertest.Engine{Step: 5 * time.Millisecond}
	p := startWorker(t, eng.Loader(), noLayers)
	p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
	p.recv()
	p.send(&ipc.Generate{ID: 2, Request: gen.Request{Prompt: strp("x"), MaxTokens: 100000}})
	p.send(&ipc.Generate{ID: 3, Request: gen.Request{Prompt: strp("y"), MaxTokens: 100000}})
	p.recv()
	start := time.Now()
	p.send(&ipc.Cancel{ID: 2})
	p.send(&ipc.Cancel{ID: 99}) // unknown: ignored
	for {
		m := p.recv()
		if e, ok := m.(*ipc.Error); ok && e.ID == 2 {
			break
		}
		if m.RequestID() == 2 && m.Type() != ipc.TypeTokens {
			t.Fatalf("cancelled generation ended with %#v", m)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if eng.Cancelled.Load() != 1 {
		t.Fatalf("%d generations cancelled, want 1", eng.Cancelled.Load())
	}
	// Closing the socket ends generation 3 too (cancelled, or its emit
	// fails); the goroutine check below sees it gone.
	if err := p.end(); err != nil {
		t.Fatal(err)
	}
	waitGoroutines(t, before)
}

func TestRunFailures(t *testing.T) {
	eng := &workertest.Engine{}
	tests := []struct {
		name    string
		load    worker.EngineLoader
		serving worker.ServingFunc
		first   ipc.Message
		reply   bool // an error reply naming the hello is expected
		want    string
	}{
		{"load fails", func([]*os.File, ipc.Hello, func(worker.LoadProgress)) (worker.Engine, error) {
			return nil, errors.New("bad magic at byte 0")
		},
			noLayers, &ipc.Hello{ID: 7, Protocol: ipc.Version}, true, "bad magic"},
		{"no engine", func([]*os.File, ipc.Hello, func(worker.LoadProgress)) (worker.Engine, error) { return nil, nil },
			noLayers, &ipc.Hello{ID: 7, Protocol: ipc.Version}, true, "no engine"},
		{"serving fails", eng.Loader(), func() ([]ipc.Layer, int, error) { return nil, 0, errors.New("seccomp stage 2") },
			&ipc.Hello{ID: 7, Protocol: ipc.Version}, true, "seccomp"},
		{"not hello", eng.Loader(), noLayers, &ipc.Cancel{ID: 1}, false, "want hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startWorker(t, tt.load, tt.serving)
			p.send(tt.first)
			if tt.reply {
				e, ok := p.recv().(*ipc.Error)
				if !ok || e.ID != 7 || !strings.Contains(e.Message, tt.want) {
					t.Fatalf("got %#v", e)
				}
			}
			select {
			case err := <-p.done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Run returned %v, want %q", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

func TestBadRequestEndsServe(t *testing.T) {
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty object", []byte{0, 0, 0, 4, '{', '}', '{', '}'}, "missing field"},
		{"second hello", mustFrame(t, &ipc.Hello{ID: 9, Protocol: ipc.Version}), "hello after the handshake"},
		{"duplicate generate", append(mustFrame(t, &ipc.Generate{ID: 5, Request: gen.Request{Prompt: strp("x"), MaxTokens: 1 << 20}}),
			mustFrame(t, &ipc.Generate{ID: 5, Request: gen.Request{Prompt: strp("x"), MaxTokens: 1}})...), "already running"},
		{"oversized", []byte{0x7f, 0, 0, 0}, "frame size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &workertest.Engine{Step: time.Millisecond}
			p := startWorker(t, eng.Loader(), noLayers)
			p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
			p.recv()
			go func() { // keep reading whatever the worker still sends
				for {
					if _, err := p.r.ReadFrame(); err != nil {
						return
					}
				}
			}()
			p.conn.Write(tt.raw)
			select {
			case err := <-p.done:
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, want %q", err, tt.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
		})
	}
}

func mustFrame(t *testing.T, m ipc.Message) []byte {
	t.Helper()
	f, err := ipc.Encode(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// chatty emits more chunks than asked for.
type chatty struct{ workertest.Engine }

func (c *chatty) Generate(ctx context.Context, req gen.Request, emit func(gen.Chunk) error) (gen.End, error) {
	for range req.MaxTokens + 5 {
		if err := emit(gen.Chunk{Text: "x"}); err != nil {
			return gen.End{}, err
		}
	}
	return gen.End{Finish: gen.FinishStop}, nil
}

func TestChunkLimit(t *testing.T) {
	eng := &chatty{}
	load := func([]*os.File, ipc.Hello, func(worker.LoadProgress)) (worker.Engine, error) { return eng, nil }
	p := startWorker(t, load, noLayers)
	p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
	p.recv()
	p.send(&ipc.Generate{ID: 2, Request: gen.Request{Prompt: strp("x"), MaxTokens: 3}})
	n := 0
	for {
		m := p.recv()
		if m.Type() == ipc.TypeTokens {
			n++
			continue
		}
		if m.Type() != ipc.TypeError {
			t.Fatalf("ended with %s", m.Type())
		}
		break
	}
	if n != 3 {
		t.Fatalf("%d chunks sent for max_tokens 3", n)
	}
	p.end()
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestRunReportsProgress(t *testing.T) {
	eng := &workertest.Engine{Tensors: 3}
	p := startWorker(t, eng.Loader(), noLayers)
	p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
	for i := 1; i <= 3; i++ {
		pr, ok := p.recv().(*ipc.Progress)
		if !ok || pr.ID != 1 || pr.Tensors != i || pr.TensorsTotal != 3 || pr.Bytes != int64(i)<<10 || pr.BytesTotal != 3<<10 {
			t.Fatalf("progress %d: %#v", i, pr)
		}
	}
	r, ok := p.recv().(*ipc.Ready)
	if !ok || r.Tensors != 3 || r.TensorBytes != 3<<10 || r.LoadUS < 0 {
		t.Fatalf("ready: %#v", r)
	}
	if err := p.end(); err != nil {
		t.Fatal(err)
	}
}

// TestRunDropsDisorderedProgress checks reports the broker would refuse
// never leave the worker: counts going back, totals changing, bytes out
// of range.
func TestRunDropsDisorderedProgress(t *testing.T) {
	eng := &workertest.Engine{}
	reports := []worker.LoadProgress{
		{Tensors: 2, TensorsTotal: 4, Bytes: 20, BytesTotal: 40},
		{Tensors: 1, TensorsTotal: 4, Bytes: 30, BytesTotal: 40}, // tensors go back
		{Tensors: 3, TensorsTotal: 5, Bytes: 30, BytesTotal: 40}, // total changes
		{Tensors: 3, TensorsTotal: 4, Bytes: 50, BytesTotal: 40}, // bytes past the total
		{Tensors: 4, TensorsTotal: 4, Bytes: 40, BytesTotal: 40},
	}
	load := func(_ []*os.File, h ipc.Hello, progress func(worker.LoadProgress)) (worker.Engine, error) {
		for _, r := range reports {
			progress(r)
		}
		return eng, nil
	}
	p := startWorker(t, load, noLayers)
	p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
	var got []int
	for {
		m := p.recv()
		if pr, ok := m.(*ipc.Progress); ok {
			got = append(got, pr.Tensors)
			continue
		}
		if r, ok := m.(*ipc.Ready); !ok || r.Tensors != 4 || r.TensorBytes != 40 {
			t.Fatalf("ended with %#v", m)
		}
		break
	}
	if len(got) != 2 || got[0] != 2 || got[1] != 4 {
		t.Fatalf("forwarded tensors %v, want [2 4]", got)
	}
	p.end()
}

// scripted emits its chunks and ends with its end.
type scripted struct {
	workertest.Engine
	chunks []gen.Chunk
	end    gen.End
}

func (s *scripted) Generate(ctx context.Context, req gen.Request, emit func(gen.Chunk) error) (gen.End, error) {
	for _, c := range s.chunks {
		if err := emit(c); err != nil {
			return gen.End{}, err
		}
	}
	return s.end, nil
}

// TestChoicesOnTheWire: chunks go out with their choice's index, bounded
// by max_tokens per choice; a chunk for a choice past n, or an end whose
// finish reasons do not number n (none for n = 1), ends the generation
// with an error instead of reaching the broker.
func TestChoicesOnTheWire(t *testing.T) {
	c := func(i int) gen.Chunk { return gen.Chunk{Index: i, Text: "x"} }
	stop, length := gen.FinishStop, gen.FinishLength
	tests := []struct {
		name       string
		n          int
		chunks     []gen.Chunk
		end        gen.End
		wantIdx    []int // the indexes of the tokens sent
		wantChoice int   // finish reasons in the done; -1: an error instead
	}{
		{"two choices", 2, []gen.Chunk{c(0), c(1), c(0)}, gen.End{Finish: stop, Choices: []gen.FinishReason{stop, length}}, []int{0, 1, 0}, 2},
		{"one choice", 1, []gen.Chunk{c(0)}, gen.End{Finish: stop}, []int{0}, 0},
		{"a choice past n", 2, []gen.Chunk{c(0), c(2)}, gen.End{Finish: stop, Choices: []gen.FinishReason{stop, stop}}, []int{0}, -1},
		{"a negative choice", 2, []gen.Chunk{c(-1)}, gen.End{Finish: stop, Choices: []gen.FinishReason{stop, stop}}, nil, -1},
		{"max_tokens per choice", 2, []gen.Chunk{c(1), c(1), c(0), c(1)}, gen.End{Finish: stop, Choices: []gen.FinishReason{stop, stop}}, []int{1, 1, 0}, -1},
		{"no reasons for two", 2, []gen.Chunk{c(0)}, gen.End{Finish: stop}, []int{0}, -1},
		{"two reasons for one", 1, nil, gen.End{Finish: stop, Choices: []gen.FinishReason{stop, stop}}, nil, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &scripted{chunks: tt.chunks, end: tt.end}
			load := func([]*os.File, ipc.Hello, func(worker.LoadProgress)) (worker.Engine, error) { return eng, nil }
			p := startWorker(t, load, noLayers)
			p.send(&ipc.Hello{ID: 1, Protocol: ipc.Version})
			p.recv()
			p.send(&ipc.Generate{ID: 2, Request: gen.Request{Prompt: strp("x"), MaxTokens: 2, N: tt.n}})
			var idx []int
			for {
				m := p.recv()
				if tk, ok := m.(*ipc.Tokens); ok {
					idx = append(idx, tk.Index)
					continue
				}
				d, done := m.(*ipc.Done)
				switch {
				case tt.wantChoice < 0 && m.Type() != ipc.TypeError:
					t.Fatalf("ended with %s, want an error", m.Type())
				case tt.wantChoice >= 0 && (!done || len(d.Choices) != tt.wantChoice):
					t.Fatalf("ended with %+v, want a done with %d reasons", m, tt.wantChoice)
				}
				break
			}
			if !slices.Equal(idx, tt.wantIdx) {
				t.Fatalf("tokens for choices %v, want %v", idx, tt.wantIdx)
			}
			p.end()
		})
	}
}
