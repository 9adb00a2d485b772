package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/supervisor"
	"github.com/lisa-llm/lisa/tokenizer"
	"github.com/lisa-llm/lisa/worker"
)

// runPromptBatch is how many prompt tokens `lisa run` evaluates per step.
const runPromptBatch = 512

// runMaxTeacherForce bounds the ids --teacher-force accepts.
const runMaxTeacherForce = 1 << 16

// runOptions are the flags of `lisa run`.
type runOptions struct {
	model       string
	prompt      string
	n           int
	temp        float64
	topK        int
	topP        float64
	minP        float64
	repeat      float64
	seed        int64
	threads     int
	json        bool
	topLogits   int
	ignoreEOS   bool
	teacher     []int32
	teacherFlag bool
	noSandbox   bool
	arith       model.Arithmetic
	ctxSize     int
	stops       []string
	progress    io.Writer // where load progress goes (io.Discard: nowhere)
}

// stopFlags collects repeated --stop flags.
type stopFlags struct{ o *runOptions }

func (f stopFlags) String() string { return strings.Join(f.o.stops, ",") }
func (f stopFlags) Set(s string) error {
	if len(f.o.stops) >= gen.MaxStop {
		return fmt.Errorf("at most %d stop strings", gen.MaxStop)
	}
	f.o.stops = append(f.o.stops, s)
	return nil
}

// parseIDs parses a comma-separated list of token ids.
func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > runMaxTeacherForce {
		return nil, fmt.Errorf("%d ids, at most %d", len(parts), runMaxTeacherForce)
	}
	ids := make([]int32, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("id %d %q is not a non-negative integer", i, p)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}

// parseRunFlags parses the arguments of `lisa run`; it returns the exit
// status to use when parsing ends the command.
func parseRunFlags(args []string, stdout, stderr io.Writer) (runOptions, int, bool) {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.model, "m", "", "GGUF model `file` (required)")
	fs.StringVar(&o.prompt, "p", "", "prompt `text`; an empty prompt means BOS alone")
	fs.IntVar(&o.n, "n", 64, "number of tokens to generate")
	fs.Float64Var(&o.temp, "temp", 0.8, "sampling temperature; 0 means greedy")
	fs.IntVar(&o.topK, "top-k", 40, "keep the K most likely tokens (0 = off)")
	fs.Float64Var(&o.topP, "top-p", 0.95, "nucleus sampling threshold (1 = off)")
	fs.Float64Var(&o.minP, "min-p", 0.05, "drop tokens below this fraction of the top probability (0 = off)")
	fs.Float64Var(&o.repeat, "repeat-penalty", 1, "penalty for tokens among the last 64 (1 = off)")
	fs.Int64Var(&o.seed, "seed", -1, "random seed (-1 = pick one)")
	fs.IntVar(&o.threads, "threads", runtime.NumCPU(), "threads for the matrix products")
	fs.BoolVar(&o.json, "json", false, "print prompt ids, generated ids, text and per-position top logits as JSON")
	fs.IntVar(&o.topLogits, "top-logits", 10, "[id, logit] pairs per position in --json output")
	fs.BoolVar(&o.ignoreEOS, "ignore-eos", false, "with --json: do not stop at end-of-generation tokens")
	fs.BoolVar(&o.noSandbox, "no-sandbox", false, "parse and run the model in this process instead of the sandboxed worker (a hostile model file gets your user's rights)")
	fs.IntVar(&o.ctxSize, "ctx-size", 0, "context size in tokens (0: the model's, at most 4096)")
	fs.Var(stopFlags{&o}, "stop", "stop `text`: generation ends before it (repeatable)")
	tf := fs.String("teacher-force", "", "comma-separated token `ids` to evaluate instead of sampling")
	arith := fs.String("arith", "auto", "with --json or --teacher-force: summation orders of attention, softmax and SiLU: auto (ggml's for all-F32 models), ggml (llama.cpp's) or kernels")
	pos, status, done := parseCommand("run", fs, args, false, stdout, stderr)
	if done {
		return o, status, true
	}
	bad := func(format string, a ...any) (runOptions, int, bool) {
		return o, badUsage(stderr, "run", fmt.Sprintf(format, a...)), true
	}
	switch {
	case len(pos) != 0:
		return bad("unexpected argument %q", pos[0])
	case o.model == "":
		return bad("-m MODEL is required")
	case o.n < 0 || o.n > model.MaxCtx:
		return bad("-n %d out of range [0, %d]", o.n, model.MaxCtx)
	case o.threads < 1 || o.threads > 1024:
		return bad("--threads %d out of range [1, 1024]", o.threads)
	case o.topLogits < 0 || o.topLogits > sample.MaxTopLogprobs:
		return bad("--top-logits %d out of range [0, %d]", o.topLogits, sample.MaxTopLogprobs)
	case o.ctxSize < 0 || o.ctxSize > model.MaxCtx:
		return bad("--ctx-size %d out of range [0, %d]", o.ctxSize, model.MaxCtx)
	}
	a, err := model.ParseArithmetic(*arith)
	if err != nil {
		return bad("--arith: %v", err)
	}
	o.arith = a
	if *tf != "" {
		ids, err := parseIDs(*tf)
		if err != nil {
			return bad("--teacher-force: %v", err)
		}
		o.teacher, o.teacherFlag = ids, true
	}
	if !o.evaluates() && o.arith != model.ArithAuto {
		return bad("--arith needs --json or --teacher-force (generation uses the engine's arithmetic)")
	}
	if o.evaluates() && len(o.stops) > 0 {
		return bad("--stop applies to generation, not to --json or --teacher-force")
	}
	if !o.evaluates() && o.ignoreEOS {
		return bad("--ignore-eos needs --json or --teacher-force (generation stops where lisa serve stops)")
	}
	if !o.evaluates() && o.n == 0 {
		return bad("-n 0: nothing to generate")
	}
	return o, 0, false
}

// evaluates reports whether the command evaluates (ids and raw logits per
// position, teacher forcing) rather than generates text.
func (o runOptions) evaluates() bool { return o.json || o.teacherFlag }

// samplerParams turns the flags into sampling parameters.
func (o runOptions) samplerParams() sample.Params {
	seed := uint64(o.seed)
	if o.seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return sample.Params{
		Temperature: float32(o.temp), TopK: o.topK, TopP: float32(o.topP), MinP: float32(o.minP),
		MinKeep: 1, RepeatPenalty: float32(o.repeat), PenaltyLastN: 64, Seed: seed,
	}
}

// runRun implements `lisa run`. Text generation goes through the same
// engine as lisa serve: in the sandboxed worker the supervisor starts
// (with --no-sandbox, an engine in this process). --json and
// --teacher-force evaluate the prompt and each step's raw logits, which
// the serving engine never exposes: the evaluation runs in a sandboxed
// worker of its own (runeval.go), or here with --no-sandbox.
func runRun(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == runWorkerArg {
		return runWorkerMain(args[1:])
	}
	o, code, done := parseRunFlags(args, stdout, stderr)
	if done {
		return code
	}
	if o.noSandbox {
		fmt.Fprintln(stderr, "lisa run: warning: --no-sandbox: the model is parsed in this process; a malicious model file gets your user's rights")
	}
	o.progress = progressOut(stderr, isTerminal)
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case o.evaluates() && o.noSandbox:
		err = evaluate(o, w)
	case o.evaluates():
		err = evaluateSandboxed(o, w, stderr)
	default:
		err = generateText(ctx, o, w, stderr)
	}
	if err != nil {
		w.Flush()
		fmt.Fprintf(stderr, "lisa run: %v\n", err)
		return 1
	}
	return 0
}

// sampling returns the flags' sampling parameters as the engine takes
// them (the seed: -1 lets the engine pick one).
func (o runOptions) sampling() gen.Sampling {
	return gen.Sampling{Temperature: float32(o.temp), TopK: o.topK, TopP: float32(o.topP), MinP: float32(o.minP),
		RepeatPenalty: float32(o.repeat), RepeatLastN: 64, Seed: uint64(o.seed), HasSeed: o.seed >= 0}
}

// request is the generation the flags ask for: -n tokens at most, fewer
// when the context fills first.
func (o runOptions) request() gen.Request {
	return gen.Request{Prompt: &o.prompt, MaxTokens: o.n, FitContext: true, Stop: o.stops, Sampling: o.sampling()}
}

// generateText generates from the prompt through the engine and writes
// the text as it comes.
func generateText(ctx context.Context, o runOptions, w *bufio.Writer, stderr io.Writer) error {
	emit := func(text string) error {
		w.WriteString(text)
		return w.Flush()
	}
	var err error
	if o.noSandbox {
		err = generateInProcess(ctx, o, emit)
	} else {
		err = generateSandboxed(ctx, o, emit, stderr)
	}
	if err != nil {
		return err
	}
	w.WriteString("\n")
	return nil
}

// generateInProcess loads the engine here and generates with it.
func generateInProcess(ctx context.Context, o runOptions, emit func(string) error) error {
	fh, err := os.Open(o.model)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, shards, err := broker.OpenShards(o.model, sandbox.MaxShards)
	if err != nil {
		return err
	}
	defer broker.CloseShards(shards)
	progress := loadProgress(o.progress)
	eng, err := engine.Load(append([]*os.File{fh}, shards...), ipc.Hello{Threads: o.threads, CtxSize: o.ctxSize, Parallel: 1}, func(p worker.LoadProgress) {
		if progress != nil {
			progress(model.LoadProgress{Tensors: p.Tensors, TensorsTotal: p.TensorsTotal, Bytes: p.Bytes, BytesTotal: p.BytesTotal})
		}
	})
	if err != nil {
		return err
	}
	defer eng.(io.Closer).Close()
	_, err = eng.Generate(ctx, o.request(), func(c gen.Chunk) error { return emit(c.Text) })
	return err
}

// generateSandboxed starts the serving worker in the sandbox, as lisa
// serve does, and generates through it.
func generateSandboxed(ctx context.Context, o runOptions, emit func(string) error, stderr io.Writer) error {
	path, err := filepath.Abs(o.model)
	if err != nil {
		return err
	}
	fh, err := broker.OpenModel(path, "")
	if err != nil {
		return err
	}
	defer fh.Close()
	shardPaths, shards, err := broker.OpenShards(path, sandbox.MaxShards)
	if err != nil {
		return err
	}
	defer broker.CloseShards(shards)
	// On a terminal the supervisor's loading and ready lines are the
	// progress; piped, only warnings and errors.
	level := slog.LevelWarn
	if o.progress != io.Discard {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	sup := supervisor.New(supervisor.Config{Threads: o.threads, CtxSize: o.ctxSize, Parallel: 1, Logger: logger},
		supervisor.SandboxLauncher{Config: sandbox.Config{Enabled: true, ModelPath: path, Model: fh, ShardPaths: shardPaths, Shards: shards,
			MemoryLimit: config.Default().MemoryLimitBytes, Threads: o.threads, Stderr: stderr}})
	defer sup.Close()
	if err := sup.Start(ctx); err != nil {
		return err
	}
	events, err := sup.Generate(ctx, o.request())
	if err != nil {
		return err
	}
	for ev := range events {
		switch ev.Kind {
		case broker.EventText:
			if err := emit(ev.Text); err != nil {
				return err
			}
		case broker.EventError:
			return ev.Err
		}
	}
	return ctx.Err()
}

// runPosition is one entry of the JSON "positions" list.
type runPosition struct {
	Position int         `json:"position"`
	Top      []runLogits `json:"top"`
}

// runLogits is an [id, logit] pair; non-finite logits print as null.
type runLogits struct {
	ID    int32
	Logit float32
}

// MarshalJSON writes the pair as a two-element array.
func (p runLogits) MarshalJSON() ([]byte, error) {
	l := "null"
	if f := float64(p.Logit); !math.IsNaN(f) && !math.IsInf(f, 0) {
		l = strconv.FormatFloat(f, 'g', -1, 32)
	}
	return []byte("[" + strconv.Itoa(int(p.ID)) + "," + l + "]"), nil
}

// runOutput is the --json document.
type runOutput struct {
	PromptIDs    []int32       `json:"prompt_ids"`
	GeneratedIDs []int32       `json:"generated_ids"`
	Text         string        `json:"text"`
	Positions    []runPosition `json:"positions"`
}

// runEngine is what one `lisa run` evaluates with.
type runEngine struct {
	m     *model.Model
	tok   *tokenizer.Tokenizer
	cache *model.Cache
	run   *model.Runner
	pool  *kernels.Pool
}

// next decodes tokens at the end of sequence 0 and returns the last row.
func (e *runEngine) next(tokens []int32) ([]float32, error) {
	var row []float32
	for len(tokens) > 0 {
		n := min(len(tokens), runPromptBatch)
		start := e.cache.Len(0)
		b := model.Batch{Tokens: tokens[:n], Pos: make([]int32, n), Seq: make([]int32, n)}
		for i := range n {
			b.Pos[i] = int32(start + i)
		}
		rows, err := e.run.Decode(b)
		if err != nil {
			return nil, err
		}
		row = rows[0]
		tokens = tokens[n:]
	}
	return row, nil
}

// topPairs returns the k highest logits of row as [id, logit] pairs.
func topPairs(row []float32, k int, buf []sample.TokenLogprob) ([]runLogits, []sample.TokenLogprob, error) {
	_, top, err := sample.Logprobs(row, 0, k, buf)
	if err != nil {
		return nil, buf, err
	}
	out := make([]runLogits, len(top))
	for i, t := range top {
		out[i] = runLogits{ID: t.ID, Logit: row[t.ID]}
	}
	return out, top, nil
}

// openEngine loads the model of f, checks it against its tokenizer and
// makes a cache of nCtx positions; load progress goes to progress.
func openEngine(f *gguf.File, tok *tokenizer.Tokenizer, threads, nCtx int, arith model.Arithmetic, progress io.Writer) (*runEngine, error) {
	m, err := model.LoadWithProgress(f, loadProgress(progress))
	if err != nil {
		return nil, err
	}
	if tok.NVocab() != m.Config.NVocab {
		return nil, fmt.Errorf("the tokenizer has %d tokens, the model %d", tok.NVocab(), m.Config.NVocab)
	}
	c, err := model.NewCache(m.Config, model.KVF16, 1, nCtx)
	if err != nil {
		return nil, err
	}
	pool := kernels.NewPool(threads)
	r := model.NewRunner(m, c, pool, runPromptBatch)
	r.SetLlamaOrder(true) // one prompt, batched as llama.cpp does: its exact orders
	r.SetArithmetic(arith)
	return &runEngine{m: m, tok: tok, cache: c, pool: pool, run: r}, nil
}

// promptIDs tokenizes the prompt as llama.cpp does for raw text: special
// tokens added, special-token parsing off; an empty prompt is BOS alone.
func promptIDs(tok *tokenizer.Tokenizer, prompt string) []int32 {
	ids := tok.Encode(prompt, true, false)
	if len(ids) == 0 || prompt == "" {
		return []int32{tok.BOS()}
	}
	return ids
}

// evaluate runs the prompt and then the greedy or sampled steps or the
// teacher-forced ids in this process, writing the JSON document (or the
// text) to w.
func evaluate(o runOptions, w *bufio.Writer) error {
	f, err := gguf.Load(o.model, gguf.DefaultLimits())
	if err != nil {
		return err
	}
	defer f.Close()
	return evaluateFile(f, o, w)
}

// evaluateFile is evaluate on an open model file.
func evaluateFile(f *gguf.File, o runOptions, w *bufio.Writer) error {
	ev, err := prepareEval(f, o)
	if err != nil {
		return err
	}
	defer ev.close()
	return ev.run(w)
}

// evaluation is an evaluation ready to run: the model bound, the cache and
// the sampler made, the prompt tokenized.
type evaluation struct {
	e      *runEngine
	o      runOptions
	smp    *sample.Sampler
	prompt []int32
	steps  int
}

// run evaluates and writes the output to w.
func (ev *evaluation) run(w *bufio.Writer) error {
	return ev.e.loop(ev.o, ev.smp, ev.prompt, ev.steps, w)
}

// close releases the evaluation's threads.
func (ev *evaluation) close() { ev.e.pool.Close() }

// prepareEval does all of an evaluation's parsing, binding and allocation.
func prepareEval(f *gguf.File, o runOptions) (*evaluation, error) {
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, err
	}
	prompt := promptIDs(tok, o.prompt)
	steps := o.n
	if o.teacherFlag {
		steps = len(o.teacher)
		for i, id := range o.teacher {
			if int(id) >= tok.NVocab() {
				return nil, fmt.Errorf("--teacher-force: id %d (%d) outside the vocabulary of %d", i, id, tok.NVocab())
			}
		}
	}
	e, err := openEngine(f, tok, o.threads, max(len(prompt)+steps, 1), o.arith, o.progress)
	if err != nil {
		return nil, err
	}
	smp, err := sample.New(o.samplerParams(), e.m.Config.NVocab)
	if err == nil {
		for _, id := range prompt {
			if err = smp.Accept(id); err != nil {
				break
			}
		}
	}
	if err != nil {
		e.pool.Close()
		return nil, err
	}
	return &evaluation{e: e, o: o, smp: smp, prompt: prompt, steps: steps}, nil
}

// loop evaluates the prompt, then picks (or takes) steps tokens, writing
// text as it goes, or the JSON document at the end.
func (e *runEngine) loop(o runOptions, smp *sample.Sampler, prompt []int32, steps int, w *bufio.Writer) error {
	out := runOutput{PromptIDs: prompt, GeneratedIDs: []int32{}, Positions: []runPosition{}}
	row, err := e.next(prompt)
	if err != nil {
		return err
	}
	stream := e.tok.NewStreamDecoder()
	stream.Add(prompt[len(prompt)-1]) // so the first generated piece keeps its leading space
	var text []byte
	var buf []sample.TokenLogprob
	for step := range steps {
		var id int32
		if o.teacherFlag {
			id = o.teacher[step]
		} else if id, err = smp.Sample(row); err != nil {
			return err
		}
		if o.json {
			var top []runLogits
			if top, buf, err = topPairs(row, o.topLogits, buf); err != nil {
				return err
			}
			out.Positions = append(out.Positions, runPosition{Position: e.cache.Len(0) - 1, Top: top})
		}
		out.GeneratedIDs = append(out.GeneratedIDs, id)
		text = append(text, e.tok.Piece(id)...)
		if !o.json {
			w.WriteString(stream.Add(id))
			w.Flush()
		}
		if !o.teacherFlag && !o.ignoreEOS && e.tok.IsEOG(id) {
			break
		}
		if err := smp.Accept(id); err != nil {
			return err
		}
		if step+1 < steps {
			if row, err = e.next([]int32{id}); err != nil {
				return err
			}
		}
	}
	if !o.json {
		w.WriteString(stream.Flush())
		w.WriteString("\n")
		return nil
	}
	out.Text = strings.ToValidUTF8(string(text), "\uFFFD")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
