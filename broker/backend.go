package broker

import (
	"context"

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
	Finish    gen.FinishReason // EventDone: choice 0's
	Usage     gen.Usage        // EventDone: the prompt once, the completion tokens of every choice
	// Choices is, for EventDone of a request with n > 1, every choice's
	// finish reason in order (none for n = 1).
	Choices []gen.FinishReason
	Err     error // EventError
}
