package toolcall

import (
	"fmt"
	"strings"
)

// Delta is one piece of a streamed reply, in the shape of OpenAI's
// chat.completion.chunk: content text, or one tool call.
type Delta struct {
	// Content is text to append to the reply's content ("" when this
	// is a call).
	Content string
	// Call is a complete call (nil for content); Index is its place
	// among the reply's calls, as OpenAI's tool_calls[].index.
	Call  *Call
	Index int
}

// Stream parses an output as it is generated. Each Write resumes from
// the last point the parse had decided, so a long content reply is read
// about once; an unfinished call is re-read until it closes.
type Stream struct {
	p       *parser
	buf     strings.Builder
	st      runState
	pending string          // content sent past the checkpoint
	sent    strings.Builder // all content sent
	calls   int             // calls sent
	closed  bool
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
// may still be call markup is held back.
func (s *Stream) Write(text string) ([]Delta, error) {
	if s.closed {
		return nil, fmt.Errorf("toolcall: write after close")
	}
	if s.buf.Len()+len(text) > MaxOutput {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxOutput)
	}
	s.buf.WriteString(text)
	if s.p.f == Generic {
		// The generic format's content is inside JSON (a "response"
		// string): nothing is certain before the end.
		return nil, nil
	}
	content := s.p.step(s.buf.String(), false, &s.st)
	if !strings.HasPrefix(content, s.pending) {
		return nil, errRetract
	}
	out := s.deltas(content[len(s.pending):], s.st.calls)
	s.pending = content[s.st.cpContent:]
	return out, nil
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
	if !strings.HasPrefix(r.Content, sent) || len(r.Calls) < s.calls {
		return nil, Result{}, errRetract
	}
	return s.deltas(r.Content[len(sent):], r.Calls), r, nil
}

// deltas sends content and the calls not sent yet.
func (s *Stream) deltas(content string, calls []Call) []Delta {
	var out []Delta
	if content != "" {
		out = append(out, Delta{Content: content})
		s.sent.WriteString(content)
	}
	for ; s.calls < len(calls); s.calls++ {
		c := calls[s.calls]
		out = append(out, Delta{Call: &c, Index: s.calls})
	}
	return out
}
