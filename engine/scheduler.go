package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/grammar"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/tokenizer"
)

// slot is one sequence of the cache and the request using it.
type slot struct {
	seq     int
	cached  []int32 // tokens whose keys and values the cache holds, in order
	req     *request
	pending []int32 // tokens still to decode: the rest of the prompt, or the last sampled token
	lastUse uint64  // scheduler step at which the slot was last freed
}

// span is how many pending tokens one slot put into a step's batch.
type span struct {
	sl *slot
	n  int
}

// scheduler owns the runner and the cache and runs the steps.
type scheduler struct {
	run      *model.Runner
	cache    *model.Cache
	tok      *tokenizer.Tokenizer
	maxBatch int
	// chunk is the most prompt tokens a step carries while another slot
	// decodes (promptChunk; tests lower it).
	chunk int
	slots []*slot

	mu     sync.Mutex
	queue  []*request  // waiting for a slot, first come first served
	embeds []*embedJob // embeddings waiting for a free slot (embed.go)
	closed bool
	wake   chan struct{} // capacity 1: work arrived or close
	exited chan struct{}

	step     uint64
	admitted int // generations that got a slot
	// evaluated counts the tokens the forward passes carried (read by
	// tests, from other goroutines).
	evaluated atomic.Int64
	// beforeStep, when set (by tests), runs at the start of every step.
	beforeStep func()

	batch  model.Batch
	owners []*slot // per batch entry whose logits are wanted, its slot
	order  []*slot // busy slots of the current step, decoding ones first
	spans  []span  // per slot of the current step, the tokens it put in
	lps    []sample.TokenLogprob
	frow   []float32 // a fork's copy of the prompt's logits
}

func newScheduler(run *model.Runner, cache *model.Cache, tok *tokenizer.Tokenizer, maxBatch int) *scheduler {
	s := &scheduler{run: run, cache: cache, tok: tok, maxBatch: maxBatch, chunk: promptChunk,
		wake: make(chan struct{}, 1), exited: make(chan struct{})}
	for i := range cache.NSeq() {
		s.slots = append(s.slots, &slot{seq: i})
	}
	s.batch = model.Batch{Tokens: make([]int32, 0, maxBatch), Pos: make([]int32, 0, maxBatch),
		Seq: make([]int32, 0, maxBatch), Logits: make([]bool, 0, maxBatch)}
	go s.loop()
	return s
}

// submit queues r for a slot.
func (s *scheduler) submit(r *request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.queue = append(s.queue, r)
	s.signal()
	return nil
}

func (s *scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close ends the loop and every generation, and waits for the loop.
func (s *scheduler) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.signal()
	}
	s.mu.Unlock()
	<-s.exited
}

// loop runs steps while there is work, and sleeps otherwise.
func (s *scheduler) loop() {
	defer close(s.exited)
	for {
		s.mu.Lock()
		closed := s.closed
		var queued []*request
		if closed {
			queued, s.queue = s.queue, nil
		}
		s.mu.Unlock()
		if closed {
			for _, r := range queued {
				r.finishAll(ErrClosed)
			}
			s.failEmbeds(ErrClosed)
			for _, sl := range s.slots {
				if sl.req != nil {
					s.release(sl, gen.End{}, ErrClosed)
				}
			}
			return
		}
		s.runEmbeds()
		s.admit()
		s.dropCancelled()
		if !s.busy() {
			<-s.wake
			continue
		}
		s.stepOnce()
	}
}

// busy reports whether a slot has work.
func (s *scheduler) busy() bool {
	for _, sl := range s.slots {
		if sl.req != nil {
			return true
		}
	}
	return false
}

// admit moves queued requests into free slots, in arrival order. A
// request with several choices waits until it gets a slot for each.
func (s *scheduler) admit() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		r := s.queue[0]
		if s.free() < 1+len(r.forks) {
			s.mu.Unlock()
			return
		}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		s.assign(s.pick(r.prompt), r)
	}
}

// free counts the slots without a generation.
func (s *scheduler) free() int {
	n := 0
	for _, sl := range s.slots {
		if sl.req == nil {
			n++
		}
	}
	return n
}

// pick returns a free slot for prompt, or nil when none is free: the one
// whose cache shares the longest prefix with the prompt when that prefix
// is at least half of it (a chat that grows by a turn), otherwise the
// least recently used one (an empty slot first), so that an unrelated
// request does not destroy a cache a conversation will come back to.
func (s *scheduler) pick(prompt []int32) *slot {
	var best, lru *slot
	bestLen := 0
	for _, sl := range s.slots {
		if sl.req != nil {
			continue
		}
		if lru == nil || sl.lastUse < lru.lastUse {
			lru = sl
		}
		if n := commonPrefix(sl.cached, prompt); n > bestLen {
			best, bestLen = sl, n
		}
	}
	if best != nil && 2*bestLen >= len(prompt) {
		return best
	}
	return lru
}

// commonPrefix returns how many leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// assign starts r in the free slot sl, reusing the cached prefix. At
// least the prompt's last token is computed again, for its logits.
//
// The other choices of r (its forks) each take a free slot too, where
// they wait without work until r's prompt is evaluated (fork); a fork's
// slot keeps the prefix of its cache the prompt shares, which fork then
// need not copy.
func (s *scheduler) assign(sl *slot, r *request) {
	if err := r.ctx.Err(); err != nil {
		r.finishAll(err)
		return
	}
	n := min(commonPrefix(sl.cached, r.prompt), len(r.prompt)-1)
	if err := s.cache.Truncate(sl.seq, n); err != nil {
		r.finishAll(err)
		return
	}
	sl.cached = sl.cached[:n]
	sl.req, r.cached = r, n
	s.admitted++
	sl.pending = r.prompt[n:]
	r.slots = r.slots[:0]
	for _, f := range r.forks {
		fs := s.pick(r.prompt)
		k := commonPrefix(fs.cached, r.prompt)
		// Truncate cannot fail: the slot's index is the cache's own.
		_ = s.cache.Truncate(fs.seq, k)
		fs.cached = fs.cached[:k]
		fs.req, fs.pending, f.cached = f, nil, n
		r.slots = append(r.slots, fs)
	}
}

// fork starts the forks of r, whose prompt the slot sl has just
// evaluated, row being the logits of its last token: each fork's slot
// gets a copy of the prompt's cache and samples its first token from a
// copy of row (before r's own sampling adds its biases to row).
func (s *scheduler) fork(sl *slot, row []float32) {
	r := sl.req
	forks, slots := r.forks, r.slots
	r.forks, r.slots = nil, nil
	for i, fs := range slots {
		if fs.req != forks[i] {
			continue // ended already (cancelled), the slot maybe reused
		}
		n := len(r.prompt)
		if err := s.cache.CopyPrefix(fs.seq, sl.seq, n); err != nil {
			s.release(fs, gen.End{}, fmt.Errorf("engine: share the prompt: %w", err))
			continue
		}
		fs.cached = append(fs.cached, r.prompt[len(fs.cached):n]...)
		s.frow = append(s.frow[:0], row...)
		s.advance(fs, s.frow)
	}
}

// dropCancelled ends the generations whose context is done.
func (s *scheduler) dropCancelled() {
	for _, sl := range s.slots {
		if sl.req != nil {
			if err := sl.req.ctx.Err(); err != nil {
				s.release(sl, gen.End{}, err)
			}
		}
	}
}

// release ends the slot's generation and frees the slot; its cache stays
// for prefix reuse. Forks still waiting for the generation's prompt end
// with it (with err, or errForkOrphan when it ended without one).
func (s *scheduler) release(sl *slot, info gen.End, err error) {
	r := sl.req
	r.finish(info, err)
	sl.req, sl.pending, sl.lastUse = nil, nil, s.step
	forks, slots := r.forks, r.slots
	r.forks, r.slots = nil, nil
	if err == nil {
		err = errForkOrphan
	}
	for i, fs := range slots {
		if fs.req == forks[i] {
			s.release(fs, gen.End{}, err)
		}
	}
}

// errForkOrphan ends a choice whose first choice ended before its prompt
// was evaluated without an error of its own (which cannot happen: the
// prompt's evaluation precedes any end but a failure).
var errForkOrphan = errors.New("engine: the choice's prompt was never evaluated")

// promptChunk is the most prompt tokens one step carries while some slot
// is decoding. A step costs about its tokens' worth of prompt work, and
// every decoding stream waits for the whole step for its next token: a
// long prompt taken a full batch (512 tokens) at a time would stall them
// for seconds per step. 128 tokens keep that wait near a second on two
// threads while the prompt's products still reuse each weight tile for
// many tokens (their cost per token hardly grows from 512 to 128); a
// prompt of up to 128 tokens still goes in one step, so its time to the
// first token is the idle one plus the step it waited for. (A prompt's
// rest of up to an eighth more than the chunk goes in whole.)
const promptChunk = 128

// stepOnce runs one forward pass over the next tokens of every busy slot
// and advances each slot whose last pending token it computed. Decoding
// slots (one pending token) each put their token in; the prompts fill
// the rest of the batch, at most s.chunk tokens of them when a slot
// decodes, so that a long prompt does not stall the streams (chunked
// prefill).
func (s *scheduler) stepOnce() {
	s.step++
	if s.beforeStep != nil {
		s.beforeStep()
	}
	b := &s.batch
	b.Tokens, b.Pos, b.Seq, b.Logits = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
	s.owners = s.owners[:0]
	// Decoding slots (one pending token) first, then prompt chunks.
	s.order = s.order[:0]
	for _, sl := range s.slots {
		if sl.req != nil {
			s.order = append(s.order, sl)
		}
	}
	slices.SortStableFunc(s.order, func(a, b *slot) int { return len(a.pending) - len(b.pending) })
	s.spans = s.spans[:0]
	budget, prompt := s.maxBatch, s.maxBatch
	if len(s.order) > 0 && len(s.order[0].pending) == 1 {
		prompt = max(s.chunk, 1)
	}
	for _, sl := range s.order {
		n := min(len(sl.pending), budget)
		if n > 1 {
			// A rest of at most an eighth more than the chunk goes whole:
			// the next step would carry a few tokens only.
			if n > prompt+prompt/8 {
				n = prompt
			}
			prompt = max(prompt-n, 0)
		}
		if n == 0 {
			continue
		}
		budget -= n
		start := len(sl.cached)
		for i := range n {
			b.Tokens = append(b.Tokens, sl.pending[i])
			b.Pos = append(b.Pos, int32(start+i))
			b.Seq = append(b.Seq, int32(sl.seq))
			// Logits for the slot's last pending token only.
			b.Logits = append(b.Logits, i == len(sl.pending)-1)
		}
		if n == len(sl.pending) {
			s.owners = append(s.owners, sl)
		}
		s.spans = append(s.spans, span{sl, n})
	}
	if len(b.Tokens) == 0 {
		return // only forks waiting for a prompt that has ended
	}
	s.evaluated.Add(int64(len(b.Tokens)))
	rows, err := s.run.Decode(*b)
	if err != nil {
		err = fmt.Errorf("engine: decode step: %w", err)
		for _, sp := range s.spans {
			s.release(sp.sl, gen.End{}, err)
		}
		return
	}
	for _, sp := range s.spans {
		sp.sl.cached = append(sp.sl.cached, sp.sl.pending[:sp.n]...)
		sp.sl.pending = sp.sl.pending[sp.n:]
	}
	for i, sl := range s.owners {
		if len(sl.req.slots) > 0 {
			s.fork(sl, rows[i])
		}
		s.advance(sl, rows[i])
	}
}

// advance samples the slot's next token from its logits row, hands its
// text to the request and decides whether the generation goes on.
func (s *scheduler) advance(sl *slot, row []float32) {
	r := sl.req
	for _, b := range r.bias {
		row[b.Token] += b.Bias
	}
	id, err := r.smp.Sample(row)
	if err == nil && r.con != nil {
		err = r.con.Accept(id)
	}
	if err == nil {
		err = r.smp.Accept(id)
	}
	if err != nil {
		s.release(sl, gen.End{}, sampleError(r, err))
		return
	}
	var lp *gen.TokenProb
	if r.logprobs {
		if lp, err = s.logprob(row, id, r.topN); err != nil {
			s.release(sl, gen.End{}, err)
			return
		}
	}
	r.generated++
	var finish gen.FinishReason
	var text string
	markup, isMarkup := r.markup[id]
	if s.tok.IsEOG(id) {
		finish = gen.FinishStop
		text, _ = r.stop.push(r.dec.Flush())
		text += r.stop.flush()
	} else {
		var hit bool
		piece := ""
		if isMarkup {
			// Call markup shows as its text, after what the decoder
			// held (a control token ends any partial character).
			piece = r.dec.Flush() + markup
		} else {
			piece = r.dec.Add(id)
		}
		if text, hit = r.stop.push(piece); hit {
			finish = gen.FinishStop
		} else if r.con != nil && r.con.Matcher().Done() {
			// The grammar can take nothing more: the output is whole.
			finish = gen.FinishStop
			text += r.stop.flush()
		} else if r.generated >= r.maxTokens || len(sl.cached) >= s.cache.NCtx() {
			finish = gen.FinishLength
			tail, hit := r.stop.push(r.dec.Flush())
			text += tail
			if hit {
				finish = gen.FinishStop
			} else {
				text += r.stop.flush()
			}
		}
	}
	if finish == "" {
		r.push(text, lp)
		sl.pending = append(sl.pending[:0:0], id)
		return
	}
	r.last(text, lp, gen.End{Finish: finish, Usage: gen.Usage{PromptTokens: len(r.prompt),
		CompletionTokens: r.generated, CachedTokens: r.cached}})
	sl.req, sl.pending, sl.lastUse = nil, nil, s.step
}

// sampleError is the error a failed sampling step ends r with: a grammar
// that allows no token here (with the vocabulary and the logit biases
// given) or whose state grew past its limits is the request's fault, a
// typed error the client sees; anything else is the engine's.
func sampleError(r *request, err error) error {
	var lim *grammar.LimitError
	if r.con != nil && (errors.Is(err, sample.ErrNoAllowedToken) || errors.As(err, &lim)) {
		ge := gen.Errorf(gen.CodeInvalidRequest, "", "the output's grammar cannot go on after %d tokens: %v", r.generated, err)
		ge.Err = err
		return ge
	}
	return fmt.Errorf("engine: sample: %w", err)
}

// logprob returns the chosen token's log-probability under row and the
// topN most likely alternatives.
func (s *scheduler) logprob(row []float32, id int32, topN int) (*gen.TokenProb, error) {
	lp, top, err := sample.Logprobs(row, id, topN, s.lps)
	if err != nil {
		return nil, fmt.Errorf("engine: logprobs: %w", err)
	}
	s.lps = top[:0]
	tp := &gen.TokenProb{Token: s.pieceText(id), Logprob: lp}
	for _, t := range top {
		tp.Top = append(tp.Top, gen.TokenAlt{Token: s.pieceText(t.ID), Logprob: t.Logprob})
	}
	return tp, nil
}

// pieceText is the token's piece as valid UTF-8 (a byte token that is
// part of a character becomes U+FFFD).
func (s *scheduler) pieceText(id int32) string {
	return strings.ToValidUTF8(string(s.tok.Piece(id)), "\uFFFD")
}
