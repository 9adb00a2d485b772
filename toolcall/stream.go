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

// Stream parses an output as it is generated. It re-reads the text so
// far on each Write, so a reply costs O(n²) bytes of scanning in the
// worst case (bounded by MaxOutput); calls are short and a content reply
// without markers is scanned once per Write with strings.Index.
type Stream struct {
	p       *parser
	buf     strings.Builder
	content string // sent so far
	calls   int    // sent so far
	closed  bool
}

// NewStream starts a stream in format f.
func NewStream(f Format, o Options) (*Stream, error) {
	if err := check(f, 0); err != nil {
		return nil, err
	}
	return &Stream{p: newParser(f, o)}, nil
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
	return s.diff(s.p.run(s.buf.String(), false))
}

// Close ends the output and returns the last deltas and the whole
// result, the same as Parse of the concatenated text.
func (s *Stream) Close() ([]Delta, Result, error) {
	if s.closed {
		return nil, Result{}, fmt.Errorf("toolcall: closed twice")
	}
	s.closed = true
	r := s.p.run(s.buf.String(), true)
	d, err := s.diff(r)
	return d, r, err
}

// diff returns what r adds to what was sent. A run never takes back
// what an earlier run made certain; if it did, that is a bug here, and
// it is reported rather than sending a wrong stream.
func (s *Stream) diff(r Result) ([]Delta, error) {
	var out []Delta
	if !strings.HasPrefix(r.Content, s.content) || len(r.Calls) < s.calls {
		return nil, fmt.Errorf("toolcall: internal error: the parse of a longer output retracts sent text")
	}
	if len(r.Content) > len(s.content) {
		out = append(out, Delta{Content: r.Content[len(s.content):]})
		s.content = r.Content
	}
	for ; s.calls < len(r.Calls); s.calls++ {
		c := r.Calls[s.calls]
		out = append(out, Delta{Call: &c, Index: s.calls})
	}
	return out, nil
}
