package brokertest

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
)

// Fake is a broker.Backend whose "model" streams Pieces. Its tokenizer
// maps each byte to its value as id and, with special parsing, each of
// Info.SpecialTokens to 256+index. Set the exported fields before use;
// change readiness and failure with the methods while it runs.
type Fake struct {
	Model      broker.ModelInfo
	Pieces     []string         // text events of one generation, in order
	Endless    bool             // repeat Pieces until cancelled
	FirstDelay time.Duration    // before the first piece (prompt processing)
	Delay      time.Duration    // before every later piece
	FailAfter  int              // > 0: send an EventError after this many pieces
	Finish     gen.FinishReason // finish reason ("" means "stop")
	// Calls, when set, are the tool calls a generation that may call
	// tools makes after Pieces (one event; finish reason tool_calls).
	Calls []gen.CallDelta
	// Reasoning, when set, are reasoning events a chat generation sends
	// before Pieces (one per piece), unless its reasoning_format is
	// none.
	Reasoning []string
	Restarts  uint64 // reported through broker.Stats
	Spent     uint64 // reported as WorkerStats.BudgetSpent
	Deaths    map[string]uint64

	mu        sync.Mutex
	notReady  bool
	infoErr   error
	fail      error
	requests  []gen.Request
	tokenizes int
	active    int
	started   int
	cancelled int
	cancelCh  chan struct{}
}

// New returns a ready fake with a 512-token context and 4 slots.
func New(pieces ...string) *Fake {
	return &Fake{
		Model: broker.ModelInfo{Name: "fake-model", Architecture: "llama", ContextSize: 512, Slots: 4, VocabSize: 300,
			SpecialTokens: []string{"<s>", "</s>", "<|im_end|>"}, ControlIDs: []int32{256, 257, 258}, BOS: 256},
		Pieces: pieces,
	}
}

// SetReady makes Info succeed (true) or fail with broker.ErrNotReady.
func (f *Fake) SetReady(ready bool) {
	f.mu.Lock()
	f.notReady = !ready
	f.mu.Unlock()
}

// SetFail makes Generate fail with err (nil: succeed).
func (f *Fake) SetFail(err error) {
	f.mu.Lock()
	f.fail = err
	f.mu.Unlock()
}

// SetInfoError makes Info (and so /health) fail with err (nil: as SetReady says).
func (f *Fake) SetInfoError(err error) {
	f.mu.Lock()
	f.infoErr = err
	f.mu.Unlock()
}

// Info returns Model, or the error of SetInfoError, or broker.ErrNotReady.
func (f *Fake) Info(ctx context.Context) (broker.ModelInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.infoErr != nil {
		return broker.ModelInfo{}, f.infoErr
	}
	if f.notReady {
		return broker.ModelInfo{}, broker.ErrNotReady
	}
	return f.Model, nil
}

// WorkerStats reports Restarts and Deaths.
func (f *Fake) WorkerStats() broker.WorkerStats {
	return broker.WorkerStats{Restarts: f.Restarts, Deaths: f.Deaths, BudgetSpent: f.Spent}
}

// Tokenize maps bytes to ids (and special texts to 256+index when special).
func (f *Fake) Tokenize(ctx context.Context, text string, special bool) ([]int32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.tokenizes++
	f.mu.Unlock()
	var ids []int32
	for i := 0; i < len(text); {
		if special {
			if j, tok := f.specialAt(text[i:]); tok != "" {
				ids = append(ids, int32(256+j))
				i += len(tok)
				continue
			}
		}
		ids = append(ids, int32(text[i]))
		i++
	}
	return ids, nil
}

func (f *Fake) specialAt(s string) (int, string) {
	for j, tok := range f.Model.SpecialTokens {
		if tok != "" && strings.HasPrefix(s, tok) {
			return j, tok
		}
	}
	return 0, ""
}

// Detokenize inverts Tokenize.
func (f *Fake) Detokenize(ctx context.Context, ids []int32) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id < 256:
			b.WriteByte(byte(id))
		case int(id-256) < len(f.Model.SpecialTokens):
			b.WriteString(f.Model.SpecialTokens[id-256])
		}
	}
	return b.String(), nil
}

// Tokenizes returns the number of Tokenize calls so far.
func (f *Fake) Tokenizes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenizes
}

// Generate streams Pieces on a new goroutine; a request for n choices
// gets each piece once per choice, interleaved: greedy, the same piece,
// sampled (temperature above 0), choice i's is the piece i places further
// on in Pieces (so that choices differ). Like the worker, it counts
// the prompt itself (a token per byte of the text or of each message's
// content, or the ids given) and ends with a *gen.Error a request that
// does not fit Model.ContextSize or asks for tools or a format.
func (f *Fake) Generate(ctx context.Context, req gen.Request) (<-chan broker.Event, error) {
	f.mu.Lock()
	if f.fail != nil {
		err := f.fail
		f.mu.Unlock()
		return nil, err
	}
	f.requests = append(f.requests, req)
	f.active++
	f.started++
	f.mu.Unlock()
	prompt := len(req.PromptIDs) + len(req.PromptText())
	for _, m := range req.Messages {
		prompt += len(m.Content)
	}
	ch := make(chan broker.Event)
	go f.run(ctx, req, prompt, ch)
	return ch, nil
}

// refusal is the *gen.Error the worker would end req with, or nil.
func (f *Fake) refusal(req *gen.Request, prompt int) error {
	ctxSize := f.Model.ContextSize
	switch {
	case req.Constrained() && len(req.Tools) > 0 && len(f.Calls) > 0 && req.Format.Type == "":
	case req.Constrained() && len(req.Tools) > 0:
		return gen.Errorf(gen.CodeUnsupported, "tools", "the fake model follows no tools")
	case req.Constrained():
		return gen.Errorf(gen.CodeUnsupported, "response_format", "the fake model follows no formats")
	case prompt >= ctxSize:
		param := "prompt"
		if req.Messages != nil {
			param = "messages"
		}
		return gen.Errorf(gen.CodeContextLength, param, "the prompt has %d tokens; the context holds %d", prompt, ctxSize)
	case req.FitContext:
		req.MaxTokens = min(req.MaxTokens, ctxSize-prompt)
	case prompt+req.MaxTokens > ctxSize:
		return gen.Errorf(gen.CodeContextLength, "max_tokens", "%d prompt tokens and %d to generate exceed the context of %d", prompt, req.MaxTokens, ctxSize)
	}
	return nil
}

func (f *Fake) run(ctx context.Context, req gen.Request, prompt int, ch chan<- broker.Event) {
	defer close(ch)
	completed := false
	defer func() { f.finished(completed) }()
	send := func(ev broker.Event) bool {
		select {
		case ch <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if err := f.refusal(&req, prompt); err != nil {
		completed = send(broker.Event{Kind: broker.EventError, Err: err})
		return
	}
	finish := f.Finish
	if finish == "" {
		finish = gen.FinishStop
	}
	n, choices := 0, req.Choices()
	rotate := 0 // how far choice i's pieces are ahead, per i
	if req.Sampling.Temperature > 0 {
		rotate = 1
	}
	if req.Messages != nil && req.ReasoningFormat != gen.ReasoningNone {
		for _, r := range f.Reasoning {
			for c := range choices {
				if !send(broker.Event{Kind: broker.EventText, Index: c, Reasoning: r}) {
					return
				}
			}
		}
	}
	for i := 0; f.Endless || i < len(f.Pieces); i++ {
		if len(f.Pieces) == 0 || n >= req.MaxTokens {
			finish = gen.FinishLength
			break
		}
		d := f.Delay
		if n == 0 {
			d = f.FirstDelay
		}
		if !sleep(ctx, d) {
			return
		}
		if f.FailAfter > 0 && n == f.FailAfter {
			completed = send(broker.Event{Kind: broker.EventError, Err: broker.ErrWorkerFailed})
			return
		}
		for c := range choices {
			piece := f.Pieces[(i+rotate*c)%len(f.Pieces)]
			ev := broker.Event{Kind: broker.EventText, Index: c, Text: piece}
			if req.Logprobs {
				ev.Logprobs = []gen.TokenProb{{Token: piece, Logprob: -0.5, Top: make([]gen.TokenAlt, req.TopLogprobs)}}
			}
			if !send(ev) {
				return
			}
		}
		n++
	}
	if len(f.Calls) > 0 && req.Constrained() && finish != gen.FinishLength {
		for c := range choices {
			if !send(broker.Event{Kind: broker.EventText, Index: c, ToolCalls: f.Calls}) {
				return
			}
		}
		finish = gen.FinishToolCalls
	}
	end := broker.Event{Kind: broker.EventDone, Finish: finish,
		Usage: gen.Usage{PromptTokens: prompt, CompletionTokens: n * choices}}
	if choices > 1 {
		for range choices {
			end.Choices = append(end.Choices, finish)
		}
	}
	completed = send(end)
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// finished records the end of a generation; completed is false when it
// ended by cancellation.
func (f *Fake) finished(completed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.active--
	if !completed {
		f.cancelled++
		if f.cancelCh != nil {
			close(f.cancelCh)
			f.cancelCh = nil
		}
	}
}

// Cancelled returns a channel closed at the next generation to end by
// cancellation.
func (f *Fake) Cancelled() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cancelCh == nil {
		f.cancelCh = make(chan struct{})
	}
	return f.cancelCh
}

// Counts returns the generations started, still running, and cancelled.
func (f *Fake) Counts() (started, active, cancelled int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started, f.active, f.cancelled
}

// Requests returns the generation requests received so far.
func (f *Fake) Requests() []gen.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gen.Request(nil), f.requests...)
}
