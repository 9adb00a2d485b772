package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// maxErrorText bounds the error texts the worker sends.
const maxErrorText = 4096

// errTooManyChunks ends a generation whose engine emits more chunks than
// max_tokens allows for a choice (the broker would treat the next one as a
// violation).
var errTooManyChunks = errors.New("worker: engine emitted more chunks than max_tokens")

// errBadChoice ends a generation whose engine emits a chunk for a choice
// the request did not ask for, or ends with the wrong number of choices.
var errBadChoice = errors.New("worker: engine emitted a choice outside the request's n")

// sender writes messages to the broker, one frame at a time.
type sender struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *sender) send(m ipc.Message) error {
	f, err := ipc.Encode(nil, m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(f); err != nil {
		return fmt.Errorf("worker: send %s: %w", m.Type(), err)
	}
	return nil
}

// sendError answers request id with err: with its code and field when it
// is a *gen.Error the request caused (the message is then the one meant
// for the client), else as the worker's own failure.
func (s *sender) sendError(id uint64, err error) error {
	m := &ipc.Error{ID: id, Message: err.Error()}
	if ge := gen.AsError(err); ge != nil && ge.Code.Known() {
		m.Code, m.Param, m.Message = ge.Code, clip(ge.Param, maxParamText), ge.Message
	}
	if m.Message = clip(m.Message, maxErrorText); m.Message == "" {
		m.Message = "error"
	}
	return s.send(m)
}

// maxParamText bounds the field path an error names (ipc's own bound).
const maxParamText = 256

// clip makes s valid UTF-8 of at most n bytes.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "")
	}
	return s
}

// server serves requests after the handshake.
type server struct {
	eng Engine
	out *sender

	mu      sync.Mutex
	running map[uint64]context.CancelFunc
	wg      sync.WaitGroup
}

// Serve answers the broker's requests from r until the stream ends (nil)
// or breaks (the error). Every generate runs in its own goroutine; before
// Serve returns, every running generation is cancelled and waited for.
func Serve(r *ipc.Reader, w io.Writer, eng Engine) error {
	s := &server{eng: eng, out: &sender{w: w}, running: make(map[uint64]context.CancelFunc)}
	defer s.stopAll()
	for {
		body, err := r.ReadFrame()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("worker: read request: %w", err)
		}
		m, err := ipc.DecodeRequest(body)
		if err != nil {
			return fmt.Errorf("worker: decode request: %w", err)
		}
		if err := s.handle(m); err != nil {
			return err
		}
	}
}

// stopAll cancels every running generation and waits for them.
func (s *server) stopAll() {
	s.mu.Lock()
	for _, cancel := range s.running {
		cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *server) handle(m ipc.Message) error {
	switch m := m.(type) {
	case *ipc.Generate:
		return s.start(m)
	case *ipc.Cancel:
		s.mu.Lock()
		if cancel := s.running[m.ID]; cancel != nil {
			cancel()
		}
		s.mu.Unlock()
		return nil
	case *ipc.Tokenize:
		ids, err := s.eng.Tokenize(m.Text, m.Special)
		if err != nil {
			return s.out.sendError(m.ID, err)
		}
		if ids == nil {
			ids = []int32{}
		}
		return s.out.send(&ipc.Tokenized{ID: m.ID, IDs: ids})
	case *ipc.Embed:
		return s.embed(m)
	case *ipc.Detokenize:
		text, err := s.eng.Detokenize(m.IDs)
		if err != nil {
			return s.out.sendError(m.ID, err)
		}
		return s.out.send(&ipc.Detokenized{ID: m.ID, Text: text})
	}
	return fmt.Errorf("worker: %s after the handshake", m.Type())
}

// start runs one generation in its own goroutine.
func (s *server) start(g *ipc.Generate) error {
	return s.spawn(g.ID, "generate", func(ctx context.Context) { s.generate(ctx, g) })
}

// spawn runs work for request id in its own goroutine with a context a
// cancel naming id ends; an id already running is a protocol error (kind
// names the request in it).
func (s *server) spawn(id uint64, kind string, work func(context.Context)) error {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	if _, dup := s.running[id]; dup {
		s.mu.Unlock()
		cancel()
		return fmt.Errorf("worker: %s id %d is already running", kind, id)
	}
	s.running[id] = cancel
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
			cancel()
		}()
		work(ctx)
	}()
	return nil
}

// generate runs g and sends its chunks and its end. Send errors mean the
// broker is gone; the read loop sees that too and ends Serve.
func (s *server) generate(ctx context.Context, g *ipc.Generate) {
	n := g.Request.Choices()
	chunks := make([]int, n) // per choice
	emit := func(c gen.Chunk) error {
		if c.Text == "" && len(c.Logprobs) == 0 && len(c.ToolCalls) == 0 && c.Reasoning == "" {
			return nil
		}
		if c.Index < 0 || c.Index >= n {
			return errBadChoice
		}
		if chunks[c.Index]++; chunks[c.Index] > g.Request.MaxTokens {
			return errTooManyChunks
		}
		return s.out.send(&ipc.Tokens{ID: g.ID, Index: c.Index, Text: c.Text, Logprobs: c.Logprobs, ToolCalls: c.ToolCalls, Reasoning: c.Reasoning})
	}
	done, err := s.eng.Generate(ctx, g.Request, emit)
	if err == nil && !done.Finish.Valid() {
		err = fmt.Errorf("worker: engine finished with reason %q", done.Finish)
	}
	if want := n; err == nil && len(done.Choices) != want && !(n == 1 && len(done.Choices) == 0) {
		err = fmt.Errorf("%w: %d finish reasons for n = %d", errBadChoice, len(done.Choices), n)
	}
	if err != nil {
		_ = s.out.sendError(g.ID, err)
		return
	}
	_ = s.out.send(&ipc.Done{ID: g.ID, FinishReason: done.Finish, Usage: done.Usage, Choices: done.Choices})
}
