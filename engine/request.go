package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/grammar"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/tokenizer"
	"github.com/lisa-llm/lisa/toolcall"
)

// request is one generation: the scheduler's state for it, and the output
// it hands to the goroutine that called Generate.
type request struct {
	ctx       context.Context
	prompt    []int32
	maxTokens int // the output budget, within the context
	logprobs  bool
	topN      int
	bias      []gen.Bias // added to the logits before sampling
	smp       *sample.Sampler
	dec       *tokenizer.StreamDecoder
	stop      stopper
	con       *grammar.Constraint   // the output's grammar, or nil
	markup    map[int32]string      // special tokens the output shows as their text
	calls     *toolcall.ReplyStream // the reply reader: calls, reasoning (used by wait alone), or nil

	// forks are the other choices of a request with n > 1, each to get
	// a slot with the first: they wait there, without work, until the
	// first choice's prompt is evaluated, then take a copy of its cache
	// and of its last logits (scheduler.fork).
	forks []*request

	// Owned by the scheduler.
	generated int     // tokens sampled so far
	cached    int     // prompt tokens reused from the slot's cache
	slots     []*slot // the forks' slots, once assigned

	mu     sync.Mutex
	chunks []gen.Chunk // output not yet emitted
	done   bool
	info   gen.End
	err    error
	ready  chan struct{} // signalled (capacity 1) when output or the end is there
}

// newRequest makes the request of one choice; ready is the channel its
// output is signalled on, shared by the choices of one Generate (nil: a
// new one).
func newRequest(ctx context.Context, prompt []int32, maxTokens int, p *gen.Request, smp *sample.Sampler, dec *tokenizer.StreamDecoder, ready chan struct{}) *request {
	if ready == nil {
		ready = make(chan struct{}, 1)
	}
	return &request{ctx: ctx, prompt: prompt, maxTokens: maxTokens, logprobs: p.Logprobs, topN: p.TopLogprobs,
		bias: p.Sampling.LogitBias, smp: smp, dec: dec, stop: newStopper(p.Stop), ready: ready}
}

// signal wakes the waiting goroutine.
func (r *request) signal() {
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// push queues one token's output; empty output is dropped.
func (r *request) push(text string, lp *gen.TokenProb) {
	if text == "" && lp == nil {
		return
	}
	c := gen.Chunk{Text: text}
	if lp != nil {
		c.Logprobs = []gen.TokenProb{*lp}
	}
	r.mu.Lock()
	r.chunks = append(r.chunks, c)
	r.mu.Unlock()
	r.signal()
}

// finish records the end of the generation.
func (r *request) finish(info gen.End, err error) {
	r.mu.Lock()
	r.done, r.info, r.err = true, info, err
	r.mu.Unlock()
	r.signal()
}

// finishAll ends r and its forks, none of which has a slot, with err.
func (r *request) finishAll(err error) {
	r.finish(gen.End{}, err)
	for _, f := range r.forks {
		f.finish(gen.End{}, err)
	}
}

// last queues the last token's output and the end together, so that the
// waiter sees both at once and sends what the call parser still holds
// with that output (one emit per token at most).
func (r *request) last(text string, lp *gen.TokenProb, info gen.End) {
	r.mu.Lock()
	if text != "" || lp != nil {
		c := gen.Chunk{Text: text}
		if lp != nil {
			c.Logprobs = []gen.TokenProb{*lp}
		}
		r.chunks = append(r.chunks, c)
	}
	r.done, r.info = true, info
	r.mu.Unlock()
	r.signal()
}

// wait emits the output of the choices rs (one request per choice, all
// signalling one ready channel) as it comes, each chunk with its choice's
// index, until every choice has ended or ctx is done. Chunks of a choice
// that piled up while emit was busy go out as one, so emit is called at
// most once per generated token of each choice. A choice that fails fails
// the whole generation; when emit fails, or a choice does, cancel tells
// the scheduler to free the slots. The end has choice 0's finish reason,
// every choice's when there are several, the prompt counted once and the
// completion tokens summed.
func wait(ctx context.Context, cancel context.CancelFunc, rs []*request, emit func(gen.Chunk) error) (gen.End, error) {
	ends := make([]*gen.End, len(rs))
	left := len(rs)
	for left > 0 {
		select {
		case <-rs[0].ready:
		case <-ctx.Done():
			return gen.End{}, ctx.Err()
		}
		for i, r := range rs {
			if ends[i] != nil {
				continue
			}
			info, done, err := r.emitPending(i, emit)
			if err != nil {
				cancel()
				return gen.End{}, err
			}
			if done {
				ends[i] = &info
				left--
			}
		}
	}
	end := *ends[0]
	if len(rs) > 1 {
		end.Choices = make([]gen.FinishReason, len(rs))
		end.Usage.CompletionTokens = 0
		for i, e := range ends {
			end.Choices[i] = e.Finish
			end.Usage.CompletionTokens += e.Usage.CompletionTokens
		}
	}
	return end, nil
}

// emitPending emits the output r holds as one chunk of choice index and
// reports whether r has ended, and how.
func (r *request) emitPending(index int, emit func(gen.Chunk) error) (gen.End, bool, error) {
	r.mu.Lock()
	chunks, done, info, err := r.chunks, r.done, r.info, r.err
	r.chunks = nil
	r.mu.Unlock()
	var c gen.Chunk
	if len(chunks) > 0 {
		c = merge(chunks)
	}
	if r.calls != nil && err == nil {
		if perr := parseChunk(r.calls, &c); perr != nil {
			return gen.End{}, false, perr
		}
		if done {
			deltas, res, perr := r.calls.Close()
			if perr != nil {
				return gen.End{}, false, fmt.Errorf("%w: %w", errCallParse, perr)
			}
			addDeltas(&c, deltas)
			// A budget that ran out keeps "length": the calls
			// before it are sent, but the output was cut.
			if len(res.Calls) > 0 && info.Finish != gen.FinishLength {
				info.Finish = gen.FinishToolCalls
			}
		}
	}
	if c.Text != "" || len(c.Logprobs) > 0 || len(c.ToolCalls) > 0 || c.Reasoning != "" {
		c.Index = index
		if err := emit(c); err != nil {
			return gen.End{}, false, err
		}
	}
	return info, done, err
}

// merge joins chunks into one.
func merge(chunks []gen.Chunk) gen.Chunk {
	if len(chunks) == 1 {
		return chunks[0]
	}
	var b, reason strings.Builder
	var lps []gen.TokenProb
	var calls []gen.CallDelta
	for _, c := range chunks {
		b.WriteString(c.Text)
		reason.WriteString(c.Reasoning)
		lps = append(lps, c.Logprobs...)
		for _, d := range c.ToolCalls {
			calls = gen.JoinCall(calls, d)
		}
	}
	return gen.Chunk{Text: b.String(), Logprobs: lps, ToolCalls: calls, Reasoning: reason.String()}
}

// stopper matches stop strings in a stream of text pieces. It holds back
// the longest end of the text that could still grow into a stop string,
// so that no text it lets through is ever cut later.
type stopper struct {
	stops []string
	held  string
}

func newStopper(stops []string) stopper {
	var s stopper
	for _, st := range stops {
		if st != "" {
			s.stops = append(s.stops, st)
		}
	}
	return s
}

// push adds a piece of text and returns the text that may be sent now.
// When a stop string is complete it returns the text before it and true;
// the stop string and what follows are dropped.
func (s *stopper) push(piece string) (string, bool) {
	buf := s.held + piece
	s.held = ""
	first := -1
	for _, st := range s.stops {
		if i := strings.Index(buf, st); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		return buf[:first], true
	}
	keep := 0
	for _, st := range s.stops {
		for k := min(len(st)-1, len(buf)); k > keep; k-- {
			if strings.HasSuffix(buf, st[:k]) {
				keep = k
				break
			}
		}
	}
	s.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the text held back (at the end of the generation, when it
// can no longer become a stop string).
func (s *stopper) flush() string {
	h := s.held
	s.held = ""
	return h
}
