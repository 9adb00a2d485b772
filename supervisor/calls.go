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

	n           int // generate: choices (the request's n, at least 1)
	maxTokens   int // generate: chunks, logprob entries and completion tokens allowed per choice
	maxBytes    int // generate: text bytes allowed over all choices
	logprobs    bool
	topLogprobs int
	chunks      []int // per choice (allocated on the first chunk)
	probs       []int // per choice
	calls       []int // tool calls received, per choice
	bytes       int
	args        []strings.Builder // per choice: the arguments of the call begun last
	maxCalls    int               // tool calls allowed per choice: 0 without tools, 1 without parallel calls
	abandonedAt time.Time         // when its requester gave up (zero: it has not)

	mu      sync.Mutex
	pending []pendingText // text not yet delivered, a run of each choice's chunks merged
	final   *broker.Event
	wake    chan struct{} // capacity 1: something to deliver

	result chan result // capacity 1: tokenize and detokenize
}

// pendingText is the merged text, log-probabilities and tool calls of
// consecutive chunks of one choice.
type pendingText struct {
	index  int
	text   strings.Builder
	tprobs []gen.TokenProb
	tcalls []gen.CallDelta
	reason strings.Builder
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
	if m.Index >= c.n {
		return tooMuch(m.Type(), "index", "choice %d of a request for %d", m.Index, c.n)
	}
	if c.chunks == nil {
		c.chunks, c.probs, c.calls = make([]int, c.n), make([]int, c.n), make([]int, c.n)
		c.args = make([]strings.Builder, c.n)
	}
	k := m.Index
	c.chunks[k]++
	c.bytes += len(m.Text) + len(m.Reasoning)
	c.probs[k] += len(m.Logprobs)
	for i, tc := range m.ToolCalls {
		c.bytes += len(tc.Arguments)
		if tc.ID == "" {
			// A later piece of the call begun last (ipc checked that
			// a piece without id has no name either).
			if c.calls[k] == 0 || tc.Index != c.calls[k]-1 {
				return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d].index", i), "a piece of call %d, want %d (the call begun last)", tc.Index, c.calls[k]-1)
			}
			c.args[k].WriteString(tc.Arguments)
			continue
		}
		// Every call but the last of a choice's output is whole: its
		// arguments one JSON object.
		if c.calls[k] > 0 && !jsonObject(c.args[k].String()) {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d]", i), "call %d ended with arguments that are not a JSON object", c.calls[k]-1)
		}
		c.args[k].Reset()
		c.args[k].WriteString(tc.Arguments)
		if c.calls[k] >= c.maxCalls {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d]", i), "call %d of a request allowing %d", c.calls[k]+1, c.maxCalls)
		}
		if tc.Index != c.calls[k] {
			return tooMuch(m.Type(), fmt.Sprintf("tool_calls[%d].index", i), "index %d, want %d (the calls so far)", tc.Index, c.calls[k])
		}
		c.calls[k]++
	}
	switch {
	case c.chunks[k] > c.maxTokens:
		return tooMuch(m.Type(), "text", "chunk %d of a request for %d tokens", c.chunks[k], c.maxTokens)
	case c.bytes > c.maxBytes:
		return tooMuch(m.Type(), "text", "%d bytes of text for a request allowing %d", c.bytes, c.maxBytes)
	case len(m.Logprobs) > 0 && !c.logprobs:
		return tooMuch(m.Type(), "logprobs", "log-probabilities were not requested")
	case c.probs[k] > c.maxTokens:
		return tooMuch(m.Type(), "logprobs", "%d entries for a request for %d tokens", c.probs[k], c.maxTokens)
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
	if len(c.pending) == 0 || c.pending[len(c.pending)-1].index != k {
		c.pending = append(c.pending, pendingText{index: k})
	}
	p := &c.pending[len(c.pending)-1]
	p.text.WriteString(m.Text)
	p.reason.WriteString(m.Reasoning)
	p.tprobs = append(p.tprobs, m.Logprobs...)
	for _, tc := range m.ToolCalls {
		p.tcalls = gen.JoinCall(p.tcalls, tc)
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
	if m.Usage.CompletionTokens > c.n*c.maxTokens {
		return tooMuch(m.Type(), "usage.completion_tokens", "%d tokens for a request for %d", m.Usage.CompletionTokens, c.n*c.maxTokens)
	}
	if want := c.n; len(m.Choices) != want && !(want == 1 && len(m.Choices) == 0) {
		return tooMuch(m.Type(), "choices", "%d finish reasons for a request for %d choices", len(m.Choices), c.n)
	}
	c.end(broker.Event{Kind: broker.EventDone, Finish: m.FinishReason, Usage: m.Usage, Choices: m.Choices})
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

// take returns the pending text (merged by runs of one choice) and then
// the final event, if any.
func (c *call) take() []broker.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	evs := make([]broker.Event, 0, len(c.pending)+1)
	for i := range c.pending {
		p := &c.pending[i]
		evs = append(evs, broker.Event{Kind: broker.EventText, Index: p.index, Text: p.text.String(), Logprobs: p.tprobs, ToolCalls: p.tcalls, Reasoning: p.reason.String()})
	}
	c.pending = nil
	if c.final != nil {
		evs = append(evs, *c.final)
	}
	return evs
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
		for _, ev := range c.take() {
			select {
			case out <- ev:
			case <-ctx.Done():
				gone()
				return
			}
			if ev.Kind != broker.EventText {
				return
			}
		}
	}
}
