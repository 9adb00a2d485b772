package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/lisa-llm/lisa/chat"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/grammar"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/tokenizer"
	"github.com/lisa-llm/lisa/toolcall"
	"github.com/lisa-llm/lisa/worker"
)

const (
	// DefaultCtxSize caps the tokens per slot when the configuration
	// leaves the context size to the model (models that train on 128k
	// tokens would otherwise need gigabytes of cache per slot).
	DefaultCtxSize = 4096
	// DefaultBatchSize is the most tokens one forward pass carries.
	DefaultBatchSize = 512
	// MaxParallel bounds the slots.
	MaxParallel = 256
)

// ErrClosed is returned by Generate once the engine is closed.
var ErrClosed = errors.New("engine: closed")

// ErrPrompt is returned (wrapped) for a prompt the engine cannot serve.
var ErrPrompt = errors.New("engine: bad prompt")

// Options configure an Engine.
type Options struct {
	Threads     int          // matrix-product threads (0: GOMAXPROCS)
	CtxSize     int          // tokens per slot (0: the model's training context, at most DefaultCtxSize)
	Parallel    int          // slots (0: 1)
	KV          model.KVType // key cache element type (the zero value is F16)
	KVV         model.KVType // value cache element type (the zero value is F16)
	BatchSize   int          // tokens per forward pass at most (0: DefaultBatchSize)
	MemoryLimit int64        // bytes the cache and scratch must fit in with the rest (0: the Go memory limit in force)
	// Progress, when set, is called as the model's tensors are validated
	// (model.LoadWithProgress).
	Progress func(model.LoadProgress)
	// Now is the clock chat templates read (strftime_now); nil: time.Now.
	Now func() time.Time
	// Arithmetic chooses the runner's summation orders (the zero value is
	// model.ArithAuto).
	Arithmetic model.Arithmetic
}

// progressEvery is how often Load passes intermediate progress on.
const progressEvery = time.Second

// Engine is the loaded model with its slots. Its methods are safe for
// concurrent use.
type Engine struct {
	fhs     []*os.File // the model files of Load, kept open (and reachable) for the engine's life
	file    *gguf.File
	tok     *tokenizer.Tokenizer
	model   *model.Model
	tmpl    string
	tmplErr error            // why the model's chat template cannot be used
	clock   func() time.Time // Options.Now
	info    worker.Info
	pool    *kernels.Pool
	sched   *scheduler

	callFormat  toolcall.Format   // how the model writes tool calls
	toolsUntold bool              // the template shows no tools: an unforced reply is content
	thinking    toolcall.Thinking // how the model marks its reasoning
	markup      map[int32]string  // call markup tokens, shown as text in parsed and constrained outputs
	vocabOnce   sync.Once         // builds vocab on first use
	vocab       *grammar.Vocab
	vocabErr    error
	grammars    grammarCache // recent requests' grammars and their shared masks
}

// Load is the worker's worker.EngineLoader: it reads the model from the
// files the broker verified (one, or a split model's shards, the first
// first) and sizes the engine from the hello. It passes
// progress the end of the tensor validation and, for a slow load, a report
// about once a second before it.
func Load(fhs []*os.File, hello ipc.Hello, progress func(worker.LoadProgress)) (worker.Engine, error) {
	kk, kv, err := cacheTypes(hello)
	if err != nil {
		return nil, err
	}
	o := Options{Threads: hello.Threads, CtxSize: hello.CtxSize, Parallel: hello.Parallel, KV: kk, KVV: kv}
	f, err := openModel(fhs, o)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		o.Progress = model.Throttle(func(p model.LoadProgress) {
			progress(worker.LoadProgress{Tensors: p.Tensors, TensorsTotal: p.TensorsTotal, Bytes: p.Bytes, BytesTotal: p.BytesTotal})
		}, progressEvery)
	}
	e, err := New(f, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	// Were fhs collected, their cleanup would close the model's fds, a
	// call the worker's serving filter kills it for.
	e.fhs = fhs
	return e, nil
}

// cacheTypes returns the key and value cache types a hello asks for:
// kv_type for both, each overridden by cache_type_k or cache_type_v, F16
// where none is given.
func cacheTypes(hello ipc.Hello) (k, v model.KVType, err error) {
	parse := func(s string, def model.KVType) (model.KVType, error) {
		if s == "" {
			return def, nil
		}
		return model.ParseKVType(s)
	}
	both, err := parse(hello.KVType, model.KVF16)
	if err != nil {
		return 0, 0, fmt.Errorf("engine: kv_type: %w", err)
	}
	if k, err = parse(hello.CacheTypeK, both); err != nil {
		return 0, 0, fmt.Errorf("engine: cache_type_k: %w", err)
	}
	if v, err = parse(hello.CacheTypeV, both); err != nil {
		return 0, 0, fmt.Errorf("engine: cache_type_v: %w", err)
	}
	return k, v, nil
}

// openModel opens the model for o from its files (one, or a split
// model's shards, each checked as a file of its own):
// model.OpenWithinLimit, with a private in-memory copy when it fits in
// the share of the memory limit beside the KV cache and scratch o needs,
// mapped otherwise.
func openModel(fhs []*os.File, o Options) (*gguf.File, error) {
	return model.OpenWithinLimit(fhs, o.memoryLimit(), o.planFor)
}

// planFor resolves o for cfg and returns its memory plan.
func (o *Options) planFor(cfg model.Config) (model.MemoryPlan, error) {
	err := o.resolve(cfg)
	return o.memoryPlan(), err
}

// New builds an Engine on the open model file f, which it then owns (Close
// closes it).
func New(f *gguf.File, o Options) (*Engine, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	m, err := model.LoadWithProgress(f, o.Progress)
	if err != nil {
		return nil, err
	}
	cfg := m.Config
	if tok.NVocab() != cfg.NVocab {
		return nil, fmt.Errorf("engine: the tokenizer has %d tokens, the model %d", tok.NVocab(), cfg.NVocab)
	}
	if err := o.resolve(cfg); err != nil {
		return nil, err
	}
	needCache, needScratch := o.memoryNeed(cfg)
	if err := o.checkNeed(needCache, needScratch, o.memoryLimit()); err != nil {
		return nil, err
	}
	tmpl, err := tokenizer.ChatTemplate(f)
	if err != nil {
		return nil, err
	}
	cache, err := model.NewCacheTypes(cfg, o.KV, o.KVV, o.Parallel, o.CtxSize)
	if err != nil {
		return nil, err
	}
	e := &Engine{file: f, tok: tok, model: m, tmpl: tmpl, tmplErr: chat.Validate(tmpl), clock: o.Now,
		pool: kernels.NewPool(o.Threads)}
	e.info = worker.Info{Name: modelName(f), Architecture: cfg.Arch, ContextSize: o.CtxSize, Slots: o.Parallel,
		VocabSize: cfg.NVocab, SpecialTokens: tok.SpecialTexts(), ControlIDs: tok.ControlIDs(), BOS: tok.BOS(),
		Kernels:      kernels.Describe() + "; arithmetic " + o.Arithmetic.String(),
		KVCacheBytes: cache.Bytes(), CacheTypeK: cache.TypeK().String(), CacheTypeV: cache.TypeV().String()}
	e.initOutputs()
	run := model.NewRunner(m, cache, e.pool, o.BatchSize)
	run.SetArithmetic(o.Arithmetic)
	e.sched = newScheduler(run, cache, tok, o.BatchSize)
	return e, nil
}

// resolve fills the defaults of o and checks its ranges against cfg.
func (o *Options) resolve(cfg model.Config) error {
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.Parallel <= 0 {
		o.Parallel = 1
	}
	if o.Parallel > MaxParallel {
		return fmt.Errorf("engine: parallel %d, at most %d", o.Parallel, MaxParallel)
	}
	if o.CtxSize <= 0 {
		o.CtxSize = min(cfg.NCtxTrain, DefaultCtxSize)
	}
	if o.CtxSize < 2 || o.CtxSize >= ipc.MaxTokens || o.CtxSize > model.MaxCtx {
		return fmt.Errorf("engine: ctx_size %d out of range [2, %d)", o.CtxSize, min(ipc.MaxTokens, model.MaxCtx+1))
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	// Every decoding slot contributes one token per step.
	o.BatchSize = min(max(o.BatchSize, o.Parallel), model.MaxBatch)
	return nil
}

// Plan returns o resolved for the model of f (ctx_size 0: the model's
// training context, at most DefaultCtxSize; parallel 0: 1) and the bytes
// of the KV cache and of the scratch that New allocates beside the
// model's weights. It reads f's metadata only. A setting out of range,
// and with o.MemoryLimit above 0 a cache and scratch that do not fit that
// limit, are the errors New gives: a broker learns them before it starts
// a serving worker.
func Plan(f *gguf.File, o Options) (resolved Options, cache, scratch float64, err error) {
	cfg, err := model.ConfigFromGGUF(f)
	if err != nil {
		return o, 0, 0, err
	}
	if err := o.resolve(cfg); err != nil {
		return o, 0, 0, err
	}
	cache, scratch = o.memoryNeed(cfg)
	if err := o.checkNeed(cache, scratch, o.MemoryLimit); err != nil {
		return o, 0, 0, err
	}
	return o, cache, scratch, nil
}

// memoryPlan is the plan of the cache and runner New makes for o
// (resolved), with the grammar cache's masks, which grow while serving,
// counted as scratch.
func (o *Options) memoryPlan() model.MemoryPlan {
	return model.MemoryPlan{TypeK: o.KV, TypeV: o.KVV, Seqs: o.Parallel, Ctx: o.CtxSize, Batch: o.BatchSize,
		Threads: o.Threads, Extra: grammarMaskBytes}
}

// memoryNeed returns the bytes of the KV cache and of the rest New and
// serving allocate for cfg beside the model (an upper bound): the
// runner's scratch, the attention's per-thread tiles and partials, and
// the grammar cache's shared masks.
func (o *Options) memoryNeed(cfg model.Config) (cache, scratch float64) {
	return o.memoryPlan().Need(cfg)
}

// grammarMaskBytes bounds the masks the grammar cache keeps: every cached
// grammar's mask cache full.
const grammarMaskBytes = maxCachedGrammars * maskCacheBytes

// memoryLimit is o.MemoryLimit, or when unset the Go runtime's limit in
// force (which the sandbox sets).
func (o *Options) memoryLimit() int64 {
	if o.MemoryLimit > 0 {
		return o.MemoryLimit
	}
	return debug.SetMemoryLimit(-1)
}

// checkNeed refuses a KV cache beyond model.MaxCacheBytes and, with limit
// above 0, a cache and scratch (memoryNeed's) that do not fit limit.
func (o *Options) checkNeed(cache, scratch float64, limit int64) error {
	if cache > model.MaxCacheBytes {
		return fmt.Errorf("engine: a KV cache of %.0f bytes (%d slots × %d tokens) is beyond %d bytes", cache, o.Parallel, o.CtxSize, int64(model.MaxCacheBytes))
	}
	if limit > 0 && !model.FitsShare(cache+scratch, limit) {
		return fmt.Errorf("engine: %d slots × %d tokens need a %s/%s KV cache of %.0f MiB plus %.0f MiB of scratch, more than %.0f%% of the memory limit of %.0f MiB: lower parallel or ctx_size, or raise memory_limit_bytes",
			o.Parallel, o.CtxSize, o.KV, o.KVV, cache/(1<<20), scratch/(1<<20), 100*model.MemoryShare, float64(limit)/(1<<20))
	}
	return nil
}

// modelName is general.name, or "" when absent or not a string.
func modelName(f *gguf.File) string {
	s, err := f.String("general.name")
	if err != nil {
		return ""
	}
	return s
}

// now is the time chat templates see.
func (e *Engine) now() time.Time {
	if e.clock != nil {
		return e.clock()
	}
	return time.Now()
}

// Info describes the model and the slots.
func (e *Engine) Info() worker.Info { return e.info }

// Tokenize returns the ids of text without BOS or EOS (as llama.cpp's
// /tokenize); with special, the texts of special tokens become their ids.
func (e *Engine) Tokenize(text string, special bool) ([]int32, error) {
	return e.tok.Encode(text, false, special), nil
}

// Detokenize returns the text of ids as llama.cpp's detokenizer does.
func (e *Engine) Detokenize(ids []int32) (string, error) {
	if err := e.checkIDs(ids); err != nil {
		return "", err
	}
	return e.tok.Decode(ids), nil
}

// checkIDs checks that every id is in the vocabulary.
func (e *Engine) checkIDs(ids []int32) error {
	for i, id := range ids {
		if id < 0 || int(id) >= e.tok.NVocab() {
			return promptError(gen.CodeInvalidPrompt, "prompt", "token %d is %d, outside the vocabulary of %d", i, id, e.tok.NVocab())
		}
	}
	return nil
}

// PromptIDs is the prompt the engine evaluates for req: its input turned
// into token ids once — chat messages through the model's template
// (special tokens parsed in the template's text but never in message
// content, a BOS or EOS text the tokenizer adds itself trimmed off as
// llama.cpp does), raw text with special-token parsing off and BOS added
// as the vocabulary asks, token ids as given; an empty prompt is BOS
// alone — or the *gen.Error (wrapping ErrPrompt) a generation of req ends
// with before it starts.
func (e *Engine) PromptIDs(req gen.Request) ([]int32, error) {
	var ids []int32
	param := "prompt"
	switch {
	case req.Messages != nil:
		param = "messages"
		msgs := chatMessages(req.Messages)
		if e.tmplErr != nil {
			return nil, promptError(gen.CodeUnsupported, param, "the model's chat template cannot be used: %v", e.tmplErr)
		}
		tools := chatTools(&req)
		if err := e.checkToolStrings(msgs, tools); err != nil {
			return nil, err
		}
		var err error
		ids, err = chatIDs(e.tok, e.tmpl, msgs, tools, e.now(), req.ReasoningEffort)
		if errors.Is(err, chat.ErrUntraceable) && usesTools(msgs, tools) {
			ids, err = e.chatIDsUntraced(msgs, tools, req.ReasoningEffort)
		}
		if err != nil {
			return nil, err
		}
	case req.PromptIDs != nil:
		if err := e.checkIDs(req.PromptIDs); err != nil {
			return nil, err
		}
		ids = append([]int32(nil), req.PromptIDs...)
	default:
		ids = e.tok.Encode(req.PromptText(), true, false)
	}
	if len(ids) == 0 {
		ids = []int32{e.tok.BOS()}
	}
	if len(ids) >= e.info.ContextSize {
		return nil, promptError(gen.CodeContextLength, param, "the prompt has %d tokens; the context holds %d, leaving no room to generate", len(ids), e.info.ContextSize)
	}
	return ids, nil
}

// promptError is a *gen.Error that also matches ErrPrompt.
func promptError(code gen.Code, param, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrPrompt, gen.Errorf(code, param, format, args...))
}

// chatMessages converts the request's messages for the template
// renderer, with the tool calls of the history and the ids tool results
// answer.
func chatMessages(in []gen.Message) []chat.Message {
	msgs := make([]chat.Message, len(in))
	for i, m := range in {
		msgs[i] = chat.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, ReasoningContent: m.ReasoningContent}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, chat.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
	}
	return msgs
}

// chatTools are the tools the template shows: none when tool_choice is
// "none" (the model is not to call any).
func chatTools(req *gen.Request) []chat.Tool {
	if !toolsOn(req) {
		return nil
	}
	tools := make([]chat.Tool, len(req.Tools))
	for i, t := range req.Tools {
		tools[i] = chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
	}
	return tools
}

// budget is the request's output budget for a prompt of n tokens: within
// the context's room, clipped to it when the client set no limit, else
// refused when the two do not fit.
func (e *Engine) budget(req *gen.Request, n int) (int, error) {
	room := e.info.ContextSize - n
	switch {
	case req.MaxTokens <= 0:
		return 0, promptError(gen.CodeInvalidRequest, "max_tokens", "max_tokens %d is not positive", req.MaxTokens)
	case req.FitContext:
		// The last token sampled is never fed back, so it takes no
		// place in the cache: a full context yields one token more.
		return min(req.MaxTokens, room+1), nil
	case req.MaxTokens > room:
		return 0, promptError(gen.CodeContextLength, "max_tokens",
			"the context holds %d tokens, but %d were requested (%d in the prompt, %d to generate)", e.info.ContextSize, n+req.MaxTokens, n, req.MaxTokens)
	}
	return req.MaxTokens, nil
}

// checkConstraints refuses logit biases outside the vocabulary (the
// tools and the output format are prepare's).
func (e *Engine) checkConstraints(req *gen.Request) error {
	for i, b := range req.Sampling.LogitBias {
		if int(b.Token) >= e.tok.NVocab() {
			return promptError(gen.CodeInvalidRequest, "logit_bias", "logit_bias[%d]: token id %d is outside the vocabulary of %d", i, b.Token, e.tok.NVocab())
		}
	}
	return nil
}

// chatIDs renders msgs with the chat template tmpl as llama-server does
// and tokenizes the result with tok: the template's own text with special
// parsing, the client's content without (chat.RenderTraced finds it,
// tokenizer.EncodeGuarded keeps it apart only when a special token would
// take some of it), so benign prompts get llama.cpp's ids and no byte of
// content ever becomes part of a control token.
func chatIDs(tok *tokenizer.Tokenizer, tmpl string, msgs []chat.Message, tools []chat.Tool, now time.Time, effort string) ([]int32, error) {
	bos, eos := tok.TokenText(tok.BOS()), tok.TokenText(tok.EOS())
	o := chat.Options{AddGenerationPrompt: true, BOS: bos, EOS: eos, Now: now, Tools: tools, ReasoningEffort: effort}
	text, spans, err := chat.RenderTraced(tmpl, msgs, o, tok.InSpecialText)
	if err != nil {
		ge := gen.Errorf(gen.CodeInvalidPrompt, "messages", "the model's chat template failed on these messages: %v", err)
		ge.Err = err
		return nil, fmt.Errorf("%w: %w", ErrPrompt, ge)
	}
	text, spans = chat.TrimAddedTraced(text, spans, bos, eos, tok.AddBOS(), tok.AddEOS())
	plain := make([]tokenizer.Range, len(spans))
	for i, s := range spans {
		plain[i] = tokenizer.Range{A: s.A, B: s.B}
	}
	return tok.EncodeGuarded(text, true, plain), nil
}

// samplerParams converts the request's sampling parameters for a sampler
// seeded with seed.
func samplerParams(s gen.Sampling, seed uint64) sample.Params {
	return sample.Params{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP, MinKeep: 1,
		RepeatPenalty: s.RepeatPenalty, PresencePenalty: s.PresencePenalty, FrequencyPenalty: s.FrequencyPenalty,
		PenaltyLastN: s.RepeatLastN, Seed: seed}
}

// Generate runs one generation, calling emit with each piece of text (at
// most once per generated token of each choice) from the calling
// goroutine. The prompt is rendered and tokenized once, here. A request
// for n > 1 choices takes n slots at once: the prompt is evaluated in one
// and its cache copied to the others; choice i samples with the seed
// gen.ChoiceSeed(seed, i), and with its own output constraint and
// tool-call parser.
func (e *Engine) Generate(ctx context.Context, req gen.Request, emit func(gen.Chunk) error) (gen.End, error) {
	n := req.Choices()
	if slots := len(e.sched.slots); n > slots || n > gen.MaxChoices {
		return gen.End{}, promptError(gen.CodeInvalidRequest, "n", "n is %d; this server samples at most %d choices per request", n, min(slots, gen.MaxChoices))
	}
	if err := e.checkConstraints(&req); err != nil {
		return gen.End{}, err
	}
	plans := make([]plan, n)
	for i := range plans {
		// Every choice gets a grammar and a parser of its own: both
		// hold the state of one output.
		var err error
		if plans[i], err = e.prepare(&req); err != nil {
			return gen.End{}, err
		}
	}
	ids, err := e.PromptIDs(req)
	if err != nil {
		return gen.End{}, err
	}
	maxTokens, err := e.budget(&req, len(ids))
	if err != nil {
		return gen.End{}, err
	}
	seed := req.Sampling.Seed
	if !req.Sampling.HasSeed {
		seed = rand.Uint64()
	}
	open := e.thinkingOpen(ids)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rs := make([]*request, n)
	var ready chan struct{}
	for i, p := range plans {
		smp, err := sample.New(samplerParams(req.Sampling, gen.ChoiceSeed(seed, i)), e.model.Config.NVocab)
		if err != nil {
			return gen.End{}, promptError(gen.CodeInvalidRequest, "", "sampling parameters: %v", err)
		}
		for _, id := range ids {
			if err := smp.Accept(id); err != nil {
				return gen.End{}, err
			}
		}
		if p.con != nil {
			smp.SetConstraint(p.con)
		}
		r := newRequest(ctx, ids, maxTokens, &req, smp, e.tok.NewContinuationDecoder(), ready)
		r.con, r.markup = p.con, p.markup
		if p.reply != nil {
			o := *p.reply
			o.ThinkingOpen = open
			if r.calls, err = toolcall.NewReplyStream(o); err != nil {
				return gen.End{}, fmt.Errorf("engine: %w", err)
			}
		}
		rs[i], ready = r, r.ready
	}
	rs[0].forks = rs[1:]
	if err := e.sched.submit(rs[0]); err != nil {
		return gen.End{}, err
	}
	return wait(ctx, cancel, rs, emit)
}

// Close stops the scheduler (ending every queued and running generation
// with ErrClosed) and releases the threads and the model file.
func (e *Engine) Close() error {
	e.sched.close()
	e.pool.Close()
	return e.file.Close()
}
