package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lisa-llm/lisa/gen"
)

// Backend is what the HTTP layer asks to do the model's work. The real
// implementation (package supervisor) forwards every call over IPC to the
// sandboxed worker; tests use an in-process fake. Every string a Backend
// returns came from the worker and is untrusted: it is only ever passed on
// as model output.
type Backend interface {
	// Info describes the loaded model. It fails with ErrNotReady until the
	// worker has loaded it.
	Info(ctx context.Context) (ModelInfo, error)
	// Generate starts one generation. Events arrive on the returned
	// channel, which is closed after the final EventDone or EventError.
	// Cancelling ctx cancels the generation within one decode step; the
	// channel is still closed.
	// The worker renders and tokenizes the prompt; a request the model
	// cannot serve ends with an EventError whose Err is a *gen.Error.
	Generate(ctx context.Context, req gen.Request) (<-chan Event, error)
	// Tokenize turns text into token ids. With special set, the text of
	// special tokens is parsed into their ids; otherwise it is plain text.
	Tokenize(ctx context.Context, text string, special bool) ([]int32, error)
	// Detokenize turns token ids into text.
	Detokenize(ctx context.Context, ids []int32) (string, error)
}

// ModelInfo is what the worker reports about its model. Strings are
// untrusted model data.
type ModelInfo struct {
	Name          string   // served model name (from config or general.name)
	Architecture  string   // general.architecture
	ContextSize   int      // tokens per slot
	Slots         int      // generation slots: the most choices (n) one request may have; 0: not reported
	VocabSize     int      // tokens in the vocabulary
	SpecialTokens []string // texts of control/special tokens (informational: chat content is never parsed for them)
	ControlIDs    []int32  // ids plain text never tokenizes to (BOS, EOS, turn markers), increasing
	BOS           int32    // the BOS id, allowed first in a token-id prompt; -1: none
	Kernels       string   // kernel path chosen in the worker
	LandlockABI   int      // Landlock ABI applied in the worker (0: none)
}

// EventKind says what an Event carries.
type EventKind int

// The kinds of Event.
const (
	EventText  EventKind = iota // a chunk of generated text
	EventDone                   // the generation ended normally
	EventError                  // the generation failed
)

// Event is one step of a generation's stream.
type Event struct {
	Kind     EventKind
	Index    int             // EventText: the choice (0 .. n-1)
	Text     string          // EventText: valid UTF-8 text, already cut at stop strings
	Logprobs []gen.TokenProb // EventText, when requested: one entry per token of Text
	// ToolCalls are, for EventText, the pieces of tool calls read with
	// this piece of output (see gen.CallDelta): a call's first piece has
	// its id and name, later ones more arguments; calls begin with
	// indexes 0, 1, … in order over the generation.
	ToolCalls []gen.CallDelta
	// Reasoning is, for EventText, reasoning read with this piece of
	// output (valid UTF-8, not in Text).
	Reasoning string
	Finish    gen.FinishReason // EventDone: choice 0's
	Usage     gen.Usage        // EventDone: the prompt once, the completion tokens of every choice
	// Choices is, for EventDone of a request with n > 1, every choice's
	// finish reason in order (none for n = 1).
	Choices []gen.FinishReason
	Err     error // EventError
}

// Models is the set of models of a server with several (see
// NewMultiServer): each has its own Backend (its own sandboxed worker),
// loaded on first use and evicted when idle to make room. The server
// routes every request to the model its "model" field names.
type Models interface {
	// Acquire returns the backend of the model that name (an id or an
	// alias) names, loading it first when it is not loaded, and release,
	// which the caller calls once the request is done: until then the
	// model is not evicted. A model still loading when ctx ends, one
	// that failed to load, one with no room in the memory budget and an
	// unknown name are *ModelError.
	Acquire(ctx context.Context, name string) (b Backend, release func(), err error)
	// Statuses describes every model, in id order.
	Statuses() []ModelStatus
}

// ModelState is where a model of a Models set is in its life.
type ModelState string

// The states of a model of a Models set.
const (
	ModelUnloaded ModelState = "unloaded" // not loaded: the first request loads it
	ModelLoading  ModelState = "loading"
	ModelLoaded   ModelState = "loaded"
	ModelFailed   ModelState = "failed" // its last load failed (Error says why); a later request tries again once its files changed (or after a pause)
)

// ModelStatus describes one model of a Models set for /v1/models,
// /health and /metrics.
type ModelStatus struct {
	ID      string
	Aliases []string
	State   ModelState
	// Error is why the last load failed (failed), or why the loaded
	// model's worker cannot serve now (loaded: restarting, restart
	// budget spent): one line for operators and clients, without the
	// worker's own words.
	Error    string
	InFlight int   // requests holding the model
	Charge   int64 // bytes the model counts against the budget while loaded
	// CtxSize and Parallel are the model's configured tokens per slot
	// (0: the model's own) and generation slots (0: not known).
	CtxSize, Parallel int
	// Loads, LoadFailures and Evictions count since start; Requests,
	// PromptTokens and CompletionTokens count its generations.
	Loads, LoadFailures, Evictions           uint64
	Requests, PromptTokens, CompletionTokens uint64
	Worker                                   WorkerStats // of its workers since start
}

// The kinds of ModelError.
var (
	ErrModelNotFound   = errors.New("no such model")
	ErrModelLoadFailed = errors.New("model failed to load")
	ErrModelLoading    = errors.New("model still loading")
	ErrModelNoRoom     = errors.New("no room for the model in the memory budget")
)

// ModelError is why a Models set could not give a request its model.
type ModelError struct {
	Model      string // the name asked for
	Kind       error  // ErrModelNotFound, ErrModelLoadFailed, ErrModelLoading or ErrModelNoRoom
	Reason     string // one line shown to the client, naming no path
	RetryAfter time.Duration
	Err        error // the cause, logged only
}

// Error names the model, the kind and the reason.
func (e *ModelError) Error() string {
	s := fmt.Sprintf("model %q: %v", e.Model, e.Kind)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Unwrap returns the kind and the cause.
func (e *ModelError) Unwrap() []error { return []error{e.Kind, e.Err} }
