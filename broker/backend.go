package broker

import "context"

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
	Generate(ctx context.Context, req GenerateRequest) (<-chan Event, error)
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
	VocabSize     int      // tokens in the vocabulary
	SpecialTokens []string // texts of control/special tokens (informational: chat content is never parsed for them)
	ControlIDs    []int32  // ids plain text never tokenizes to (BOS, EOS, turn markers), increasing
	BOS           int32    // the BOS id, allowed first in a token-id prompt; -1: none
	Kernels       string   // kernel path chosen in the worker
	LandlockABI   int      // Landlock ABI applied in the worker (0: none)
}

// Message is one chat message.
type Message struct {
	Role    string // "system", "user" or "assistant"
	Content string
}

// Sampling holds the sampling parameters of one request, already validated.
type Sampling struct {
	Temperature      float32 // 0 means greedy
	TopK             int     // 0 disables
	TopP             float32 // 1 disables
	MinP             float32 // 0 disables
	RepeatPenalty    float32 // 1 disables
	RepeatLastN      int     // tokens considered by the penalties
	PresencePenalty  float32
	FrequencyPenalty float32
	Seed             uint64
	HasSeed          bool // false: the worker picks a seed
}

// GenerateRequest is one completion or chat completion, validated by the
// broker. Exactly one of Prompt, PromptIDs and Messages is set.
type GenerateRequest struct {
	Prompt      string    // raw prompt text, tokenized with special parsing off
	PromptIDs   []int32   // pre-tokenized prompt
	Messages    []Message // chat messages, formatted by the model's template in the worker
	MaxTokens   int       // generated tokens at most (> 0)
	Stop        []string  // stop strings, at most 4
	Sampling    Sampling
	TopLogprobs int  // alternatives to report per token (0: none)
	Logprobs    bool // report the chosen token's log-probability
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
	Text     string      // EventText: valid UTF-8 text, already cut at stop strings
	Logprobs []TokenProb // EventText, when requested: one entry per token of Text
	Finish   string      // EventDone: "stop" or "length"
	Usage    Usage       // EventDone
	Err      error       // EventError
}

// TokenProb is the log-probability of one generated token and its alternatives.
type TokenProb struct {
	Token   string
	Logprob float32
	Top     []TokenAlt
}

// TokenAlt is one alternative token and its log-probability.
type TokenAlt struct {
	Token   string
	Logprob float32
}

// Usage counts the tokens of one generation.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int // prompt tokens reused from the KV cache
}
