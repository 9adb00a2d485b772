package toolcall

import (
	"fmt"
	"strings"
)

// Delta is one piece of a streamed reply, in the shape of OpenAI's
// chat.completion.chunk: content text, or a piece of a tool call.
type Delta struct {
	// Content is text to append to the reply's content ("" when this
	// is a call's piece).
	Content string
	// Reasoning is text to append to the reply's reasoning (a
	// ReplyStream's; such a delta has no Content and no Call).
	Reasoning string
	// Call is a piece of call Index (nil for content), Index its place
	// among the reply's calls, as OpenAI's tool_calls[].index. A call's
	// first piece carries its ID and Name and the start of its
	// arguments (perhaps ""); later pieces only more argument text
	// (ID and Name ""). The pieces of a call come in a row, calls in
	// index order, and a call's Arguments pieces join to its
	// arguments in the Result.
	Call  *Call
	Index int
}

// Stream parses an output as it is generated. Each Write resumes from
// the last point the parse had decided, so a long content reply is read
// about once; an unfinished call is re-read until it closes, its
// arguments sent as they grow.
type Stream struct {
	p       *parser
	buf     strings.Builder
	st      runState
	pending string          // content sent past the checkpoint
	sent    strings.Builder // all content sent
	args    []string        // the arguments sent of each call begun
	fast    *openArgs       // the arguments the output is inside of, or nil
	closed  bool
}

// openArgs are the unfinished arguments of a committed call, read as
// they grow: until they close or break, nothing else of the parse can
// change, so a write need not re-read the call.
type openArgs struct {
	index int
	scan  jsonScan
	pos   int // bytes of the output read
	comp  compactor
	args  strings.Builder // compact, as read
}

// NewStream starts a stream in format f.
func NewStream(f Format, o Options) (*Stream, error) {
	if err := check(f, 0); err != nil {
		return nil, err
	}
	p := newParser(f, o)
	return &Stream{p: p, st: p.start()}, nil
}

// Write adds generated text and returns what is now certain. Text that
// may still be call markup is held back; of a call's arguments, what a
// continuation could still change (nothing once they began, but the end
// of an unfinished UTF-8 sequence).
func (s *Stream) Write(text string) ([]Delta, error) {
	if s.closed {
		return nil, fmt.Errorf("toolcall: write after close")
	}
	if s.buf.Len()+len(text) > MaxOutput {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxOutput)
	}
	s.buf.WriteString(text)
	all := s.buf.String()
	if f := s.fast; f != nil {
		if _, st := f.scan.feed(all, f.pos); st == incomplete {
			f.comp.add(&f.args, all[f.pos:])
			f.pos = len(all)
			return s.piece(nil, f.index, "", "", runeSafe(f.args.String()))
		}
		s.fast = nil // closed or broken: the parse decides what follows
	}
	content := s.p.step(all, false, &s.st)
	var out []Delta
	// The generic format's content is inside JSON (a "response"
	// string): none is certain before the end; its calls are.
	if s.p.f != Generic {
		if !strings.HasPrefix(content, s.pending) {
			return nil, errRetract
		}
		out = s.content(content[len(s.pending):])
		s.pending = content[s.st.cpContent:]
	}
	var partial []partialCall
	if s.st.tail >= 0 {
		var stop int
		partial, stop = s.p.partial(all, s.st.tail, s.p.o.MaxCalls-len(s.st.calls))
		if n := len(partial); n > 0 && !partial[n-1].complete && stop == len(all) {
			f := &openArgs{index: len(s.st.calls) + n - 1, pos: len(all)}
			f.scan.feed(all, partial[n-1].argsAt)
			f.comp.add(&f.args, all[partial[n-1].argsAt:])
			s.fast = f
		}
	}
	return s.calls(out, s.st.calls, partial)
}

var errRetract = fmt.Errorf("toolcall: internal error: the parse of a longer output retracts sent text")

// Close ends the output and returns the last deltas and the whole
// result, the same as Parse of the concatenated text.
func (s *Stream) Close() ([]Delta, Result, error) {
	if s.closed {
		return nil, Result{}, fmt.Errorf("toolcall: closed twice")
	}
	s.closed = true
	r := s.p.run(s.buf.String(), true)
	sent := s.sent.String()
	if !strings.HasPrefix(r.Content, sent) || len(r.Calls) < len(s.args) {
		return nil, Result{}, errRetract
	}
	out, err := s.calls(s.content(r.Content[len(sent):]), r.Calls, nil)
	if err != nil {
		return nil, Result{}, err
	}
	return out, r, nil
}

// content sends content text.
func (s *Stream) content(text string) []Delta {
	if text == "" {
		return nil
	}
	s.sent.WriteString(text)
	return []Delta{{Content: text}}
}

// calls sends what is new of the complete calls, then of the committed
// calls the output is inside of.
func (s *Stream) calls(out []Delta, whole []Call, partial []partialCall) ([]Delta, error) {
	var err error
	for i, c := range whole {
		if out, err = s.piece(out, i, c.ID, c.Name, c.Arguments); err != nil {
			return nil, err
		}
	}
	for j, c := range partial {
		i := len(whole) + j
		args := c.args
		if !c.complete {
			args = runeSafe(args)
		}
		if out, err = s.piece(out, i, s.p.id(i, c.id), c.name, args); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// piece sends call i's first piece, or the arguments past those sent.
func (s *Stream) piece(out []Delta, i int, id, name, args string) ([]Delta, error) {
	switch {
	case i == len(s.args):
		s.args = append(s.args, args)
		return append(out, Delta{Call: &Call{ID: id, Name: name, Arguments: args}, Index: i}), nil
	case i > len(s.args):
		return nil, errRetract
	}
	sent := s.args[i]
	if !strings.HasPrefix(args, sent) {
		return nil, errRetract
	}
	if len(args) == len(sent) {
		return out, nil
	}
	s.args[i] = args
	return append(out, Delta{Call: &Call{Arguments: args[len(sent):]}, Index: i}), nil
}
