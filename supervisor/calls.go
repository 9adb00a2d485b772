package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// result is the answer to a tokenize or detokenize.
type result struct {
	ids    []int32
	text   string
	vec    []float32 // an Embedding's vector
	tokens int       // an Embedding's token count
	err    error
}

// call is one request in flight. The limit and abandonedAt fields are
// guarded by the instance's mutex; the delivery fields by mu.
type call struct {
	id   uint64
	kind ipc.ReqKind

	maxTokens   int // generate: chunks, logprob entries and completion tokens allowed
	maxBytes    int // generate: text bytes allowed
	logprobs    bool
	topLogprobs int
	chunks      int
	probs       int
	bytes       int
	calls       int             // tool calls received
	args        strings.Builder // the arguments of the call begun last
	maxCalls    int             // tool calls allowed: 0 without tools, 1 without parallel calls
	abandonedAt time.Time       // when its requester gave up (zero: it has not)

	mu      sync.Mutex
	text    strings.Builder
	tprobs  []gen.TokenProb
	tcalls  []gen.CallDelta
	hasText bool
	final   *broker.Event
	wake    chan struct{} // capacity 1: something to deliver

	result chan result // capacity 1: tokenize and detokenize
}

func (c *call) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// maxCalls is how many tool calls a generation of req may make.
func maxCalls(req *gen.Request) int {
	switch {
	case len(req.Tools) == 0 || req.ToolChoice.Mode == gen.ChoiceNone:
		return 0
	case !req.ParallelToolCalls:
		return 1
	}
	return gen.MaxToolCalls
}

func tooMuch(typ, field, format string, args ...any) error {
	return &ipc.ProtocolError{Kind: ipc.KindBadValue, Type: typ, Field: field, Offset: -1, Detail: fmt.Sprintf(format, args...)}
}

// onTokens checks a chunk against the request's limits and queues it.
func (c *call) onTokens(m *ipc.Tokens) error {
	c.chunks++
	c.bytes += len(m.Text)
	c.probs += len(m.Logprobs)
	for i, tc := range m.ToolCalls {
		c.bytes += len(tc.Arguments)
		if tc.ID == "" {
			// A later piece of the call begun last (ipc checked that
			// a piece without id has no name either).
			if c.calls == 0 || tc.Index != c.calls-1 {
				return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d].index", i), "a piece of call %d, want %d (the call begun last)", tc.Index, c.calls-1)
			}
			c.args.WriteString(tc.Arguments)
			continue
		}
		// Every call but the last of an output is whole: its arguments
		// one JSON object.
		if c.calls > 0 && !jsonObject(c.args.String()) {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d]", i), "call %d ended with arguments that are not a JSON object", c.calls-1)
		}
		c.args.Reset()
		c.args.WriteString(tc.Arguments)
		if c.calls >= c.maxCalls {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d]", i), "call %d of a request allowing %d", c.calls+1, c.maxCalls)
		}
		if tc.Index != c.calls {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d].index", i), "index %d, want %d (the calls so far)", tc.Index, c.calls)
		}
		c.calls++
	}
	switch {
	case c.chunks > c.maxTokens:
		return tooMuch(m.Type(), "text", "chunk %d of a request for %d tokens", c.chunks, c.maxTokens)
	case c.bytes > c.maxBytes:
		return tooMuch(m.Type(), "text", "%d bytes of text for a request allowing %d", c.bytes, c.maxBytes)
	case len(m.Logprobs) > 0 && !c.logprobs:
		return tooMuch(m.Type(), "logprobs", "log-probabilities were not requested")
	case c.probs > c.maxTokens:
		return tooMuch(m.Type(), "logprobs", "%d entries for a request for %d tokens", c.probs, c.maxTokens)
	}
	for i, p := range m.Logprobs {
		if len(p.Top) > c.topLogprobs {
			return tooMuch(m.Type(), fmt.Sprintf("logprobs[%d].top", i), "%d alternatives, %d requested", len(p.Top), c.topLogprobs)
		}
	}
	if !c.abandonedAt.IsZero() {
		return nil // nobody reads it
	}
	c.mu.Lock()
	c.text.WriteString(m.Text)
	c.hasText = true
	c.tprobs = append(c.tprobs, m.Logprobs...)
	for _, tc := range m.ToolCalls {
		c.tcalls = gen.JoinCall(c.tcalls, tc)
	}
	c.mu.Unlock()
	c.notify()
	return nil
}

// jsonObject reports whether s is one JSON object.
func jsonObject(s string) bool {
	return strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") && json.Valid([]byte(s))
}

// onDone checks the end of a generation and queues it.
func (c *call) onDone(m *ipc.Done) error {
	if m.Usage.CompletionTokens > c.maxTokens {
		return tooMuch(m.Type(), "usage.completion_tokens", "%d tokens for a request for %d", m.Usage.CompletionTokens, c.maxTokens)
	}
	c.end(broker.Event{Kind: broker.EventDone, Finish: m.FinishReason, Usage: m.Usage})
	return nil
}

// end queues the final event of a generation.
func (c *call) end(ev broker.Event) {
	c.mu.Lock()
	if c.final == nil {
		c.final = &ev
	}
	c.mu.Unlock()
	c.notify()
}

// finish ends any call with err.
func (c *call) finish(err error) {
	if c.kind == ipc.ReqGenerate {
		c.end(broker.Event{Kind: broker.EventError, Err: err})
		return
	}
	c.resolve(result{err: err})
}

func (c *call) resolve(r result) {
	select {
	case c.result <- r:
	default:
	}
}

// take returns the pending text (merged) and the final event, if any.
func (c *call) take() (text *broker.Event, final *broker.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hasText {
		text = &broker.Event{Kind: broker.EventText, Text: c.text.String(), Logprobs: c.tprobs, ToolCalls: c.tcalls}
		c.text.Reset()
		c.tprobs, c.tcalls, c.hasText = nil, nil, false
	}
	return text, c.final
}

// pump delivers a generation's events to out until the final one, or
// until ctx ends (then abandon runs and out gets a last error if it has
// room). out is closed either way.
func (c *call) pump(ctx context.Context, out chan<- broker.Event, abandon func()) {
	defer close(out)
	gone := func() {
		abandon()
		select {
		case out <- broker.Event{Kind: broker.EventError, Err: ctx.Err()}:
		default:
		}
	}
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			gone()
			return
		}
		text, final := c.take()
		for _, ev := range []*broker.Event{text, final} {
			if ev == nil {
				continue
			}
			select {
			case out <- *ev:
			case <-ctx.Done():
				gone()
				return
			}
		}
		if final != nil {
			return
		}
	}
}
