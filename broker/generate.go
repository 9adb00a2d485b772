package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lisa-llm/lisa/gen"
)

// infoTimeout bounds the Backend.Info call of each request.
const infoTimeout = 5 * time.Second

// minOutputCap is the least output a generation may send, in bytes; the
// cap grows with max_tokens (maxBytesPerToken each). A worker sending more
// is treated as failed.
const (
	minOutputCap     = 1 << 20
	maxBytesPerToken = 256
)

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeChatRequest(body)
	if err != nil {
		return err
	}
	return s.generate(w, r, ri, req)
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeCompletionRequest(body)
	if err != nil {
		return err
	}
	return s.generate(w, r, ri, req)
}

// modelInfo asks the backend for its model, with a bounded wait.
func (s *Server) modelInfo(ctx context.Context) (ModelInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	return s.backend.Info(ctx)
}

// servedName is the model name clients must use.
func (s *Server) servedName(info ModelInfo) string {
	if s.cfg.ModelName != "" {
		return s.cfg.ModelName
	}
	return info.Name
}

// checkModel validates req against the loaded model: its name and token
// ids.
func (s *Server) checkModel(req *genRequest, info ModelInfo) error {
	if name := s.servedName(info); req.Model != "" && req.Model != name && !slices.Contains(s.cfg.ModelAliases, req.Model) {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("the model %q does not exist; this server serves %q", abbreviate(req.Model), name)}
	}
	for i, id := range req.PromptIDs {
		if int(id) >= info.VocabSize {
			return invalid(fmt.Sprintf("prompt[%d]", i), "token id %d is not below the vocabulary size %d", id, info.VocabSize)
		}
		// The worker lists the ids text never tokenizes to; a client
		// sending one could forge a turn boundary or end of text. A
		// leading BOS is how every prompt starts (the worker adds none to
		// token-id prompts), so it forges nothing.
		if i == 0 && id == info.BOS {
			continue
		}
		if _, found := slices.BinarySearch(info.ControlIDs, id); found && !s.cfg.AllowControlTokenIDs {
			return invalidCode(fmt.Sprintf("prompt[%d]", i), "control_token_id",
				"prompt[%d] is the control token id %d; control tokens (EOS, turn markers, BOS past the start) are not allowed in token-id prompts unless the server sets allow_control_token_ids", i, id)
		}
	}
	if req.N > 1 && info.Slots > 0 && req.N > info.Slots {
		return invalid("n", "n is %d; this server samples at most %d choices per request (its parallel slots)", req.N, info.Slots)
	}
	for _, b := range req.Sampling.LogitBias {
		if int(b.Token) >= info.VocabSize {
			return invalid(fmt.Sprintf("logit_bias.%d", b.Token), "token id %d is not below the vocabulary size %d", b.Token, info.VocabSize)
		}
	}
	// Chat messages may spell special tokens: the worker tokenizes
	// message content with special parsing off (engine.chatIDs), so such
	// text stays text and cannot forge a turn.
	return nil
}

// admit waits in the FCFS queue for a generation slot.
func (s *Server) admit(ctx context.Context) (func(), error) {
	release, err := s.adm.acquire(ctx, s.cfg.QueueTimeout.D())
	switch {
	case errors.Is(err, errQueueFull):
		return nil, &APIError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "queue_full",
			Message: "too many requests are waiting; retry later", RetryAfter: 1, Err: err}
	case errors.Is(err, errQueueTimeout):
		return nil, &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "queue_timeout",
			Message: "the server is busy; retry later", RetryAfter: 5, Err: err}
	}
	return release, err
}

// budget settles the output budget. The worker renders and tokenizes the
// prompt once and refuses one that does not fit (a *gen.Error the client
// gets as a 400); here only what needs no tokenization is checked: a
// token-id prompt and a max_tokens that fill the context alone. A request
// without max_tokens gets the rest of the context (chat) or OpenAI's
// default for completions, clipped to the context's room by the worker.
func budget(req *genRequest, info ModelInfo) error {
	ctxSize := info.ContextSize
	if n := len(req.PromptIDs); n >= ctxSize {
		return invalidCode("prompt", "context_length_exceeded",
			"the prompt has %d tokens; the context holds %d, leaving no room to generate", n, ctxSize)
	}
	switch {
	case req.MaxTokens == 0 && req.chat:
		req.MaxTokens, req.FitContext = ctxSize, true
	case req.MaxTokens == 0:
		req.MaxTokens, req.FitContext = DefaultCompletionTokens, true
	case req.MaxTokens+max(1, len(req.PromptIDs)) > ctxSize:
		return invalidCode("max_tokens", "context_length_exceeded",
			"the context holds %d tokens, but max_tokens is %d and the prompt needs at least %d", ctxSize, req.MaxTokens, max(1, len(req.PromptIDs)))
	}
	return nil
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request, ri *reqInfo, req *genRequest) error {
	return s.serveGeneration(w, r, ri, req, func(g *generation, rc *http.ResponseController, info ModelInfo) error {
		g.shape = newShaper(req.chat, s.servedName(info), time.Now().Unix())
		if req.Stream {
			return g.stream(w, rc)
		}
		return g.collect(w)
	})
}

// serveGeneration takes a decoded generation request through what every
// generation route does before its reply: the deadlines extended, the
// prompt logged (log_prompts), the model checked, a queue slot taken, the
// output budgeted, the echo text read (echo), and the backend's
// generation started under request_timeout, with the configured
// reasoning format where a chat request names none. It then calls reply
// with the generation, the response controller and the model's info;
// when reply returns, the generation is cancelled and drained and the
// slot given back.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, ri *reqInfo, req *genRequest,
	reply func(g *generation, rc *http.ResponseController, info ModelInfo) error) error {
	rc := s.extendDeadlines(w)
	ri.stream = req.Stream
	if s.cfg.LogPrompts {
		ri.prompt = promptText(req)
	}
	info, err := s.modelInfo(r.Context())
	if err != nil {
		return err
	}
	if err := s.checkModel(req, info); err != nil {
		return err
	}
	release, err := s.admit(r.Context())
	if err != nil {
		return err
	}
	defer release()
	if err := budget(req, info); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout.D())
	defer cancel()
	echo, err := s.echoText(ctx, req)
	if err != nil {
		return err
	}
	if req.chat && req.ReasoningFormat == "" {
		req.ReasoningFormat = s.cfg.ReasoningFormat
	}
	events, err := s.backend.Generate(ctx, req.Request)
	if err != nil {
		return err
	}
	g := &generation{s: s, ri: ri, req: req, ctx: ctx, events: events, cancel: cancel,
		limit: max(minOutputCap, req.Choices()*req.MaxTokens*maxBytesPerToken), echo: echo}
	defer g.drain()
	return reply(g, rc, info)
}

// echoText is the prompt's text when the request asks for it back (echo
// on completions): the text given, or the text of the token ids.
func (s *Server) echoText(ctx context.Context, req *genRequest) (string, error) {
	switch {
	case !req.Echo:
		return "", nil
	case req.PromptIDs != nil:
		return s.backend.Detokenize(ctx, req.PromptIDs)
	}
	return req.PromptText(), nil
}

// extendDeadlines is called once the body is read, before the wait for
// the worker: no read deadline may now cancel the request (net/http clears
// it too when it starts the background read that notices a client that
// leaves; this does not rely on it), and the response
// may be written until the queue and request timeouts have passed.
// Streams then set a deadline per event.
func (s *Server) extendDeadlines(w http.ResponseWriter) *http.ResponseController {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.QueueTimeout.D() + s.cfg.RequestTimeout.D() + s.cfg.WriteTimeout.D()))
	return rc
}

func promptText(req *genRequest) string {
	switch {
	case req.Prompt != nil:
		return *req.Prompt
	case req.PromptIDs != nil:
		return fmt.Sprint(req.PromptIDs)
	}
	var b strings.Builder
	for _, m := range req.Messages {
		fmt.Fprintf(&b, "[%s] %s\n", m.Role, m.Content)
	}
	return b.String()
}

// generation follows one Backend generation to its response.
type generation struct {
	s      *Server
	ri     *reqInfo
	req    *genRequest
	ctx    context.Context
	events <-chan Event
	cancel context.CancelFunc
	shape  *shaper
	limit  int    // output bytes allowed
	echo   string // the prompt's text, sent before the output (echo)
	sent   int
	first  time.Time
}

// drain cancels the generation and empties the channel in the background
// so a backend never blocks on a request that has gone.
func (g *generation) drain() {
	g.cancel()
	go func(ch <-chan Event) {
		for range ch {
		}
	}(g.events)
}

// next returns the next event; a channel closed without a final event or
// an oversized output is a worker failure.
func (g *generation) next() (Event, error) {
	ev, ok := <-g.events
	if !ok {
		if err := g.ctx.Err(); err != nil {
			return ev, err // the client left or request_timeout passed
		}
		return ev, fmt.Errorf("%w: the event stream ended without a result", ErrWorkerFailed)
	}
	switch ev.Kind {
	case EventText:
		if ev.Index < 0 || ev.Index >= g.req.Choices() {
			return ev, fmt.Errorf("%w: output for choice %d of %d", ErrWorkerFailed, ev.Index, g.req.Choices())
		}
		g.sent += len(ev.Text) + len(ev.Reasoning)
		for _, c := range ev.ToolCalls {
			g.sent += len(c.Name) + len(c.ID) + len(c.Arguments)
		}
		if g.sent > g.limit {
			return ev, fmt.Errorf("%w: more than %d bytes of output", ErrWorkerFailed, g.limit)
		}
		if g.first.IsZero() {
			g.first = time.Now()
			g.ri.ttft = g.first.Sub(g.ri.start)
			g.s.metrics.ttft.observeN(g.ri.ttft.Seconds(), 1)
		}
	case EventDone:
		if !ev.Finish.Valid() {
			return ev, fmt.Errorf("%w: unknown finish reason", ErrWorkerFailed)
		}
		if n := g.req.Choices(); n > 1 && len(ev.Choices) != n || n == 1 && len(ev.Choices) != 0 {
			return ev, fmt.Errorf("%w: %d finish reasons for %d choices", ErrWorkerFailed, len(ev.Choices), n)
		}
		g.finish(ev.Usage)
	case EventError:
		if ev.Err == nil {
			ev.Err = ErrWorkerFailed
		}
		return ev, ev.Err
	default:
		return ev, fmt.Errorf("%w: unknown event kind %d", ErrWorkerFailed, ev.Kind)
	}
	return ev, nil
}

func (g *generation) finish(u gen.Usage) {
	g.ri.completionTokens = u.CompletionTokens
	if u.PromptTokens > 0 {
		g.ri.promptTokens = u.PromptTokens
	}
	m := g.s.metrics
	m.generated.Add(uint64(max(0, u.CompletionTokens)))
	m.prompt.Add(uint64(max(0, g.ri.promptTokens)))
	// The choices of one request decode side by side: a token's time is
	// that of a step, over the tokens of one choice.
	if steps := u.CompletionTokens / g.req.Choices(); steps > 1 && !g.first.IsZero() {
		per := time.Since(g.first).Seconds() / float64(steps-1)
		m.perToken.observeN(per, uint64(steps-1))
	}
}

// collect gathers the whole generation into one response.
func (g *generation) collect(w http.ResponseWriter) error {
	n := g.req.Choices()
	texts := make([]strings.Builder, n)
	outs := make([]choiceOut, n)
	for i := range texts {
		texts[i].WriteString(g.echo)
	}
	for {
		ev, err := g.next()
		if err != nil {
			return err
		}
		if ev.Kind == EventText {
			o := &outs[ev.Index]
			texts[ev.Index].WriteString(ev.Text)
			o.reasoning += ev.Reasoning
			o.lps = append(o.lps, ev.Logprobs...)
			for _, c := range ev.ToolCalls {
				o.calls = gen.JoinCall(o.calls, c)
			}
			continue
		}
		u := ev.Usage
		if u.PromptTokens == 0 {
			u.PromptTokens = g.ri.promptTokens
		}
		end := gen.End{Finish: ev.Finish, Choices: ev.Choices}
		for i := range outs {
			outs[i].text, outs[i].finish = texts[i].String(), end.Reason(i)
		}
		b, err := marshal(g.shape.whole(outs, u, g.req.Logprobs))
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, err = w.Write(append(b, '\n'))
		return err
	}
}
