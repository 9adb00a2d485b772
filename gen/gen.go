// Package gen is the one shape of a generation request and of its answer,
// shared by the broker, the IPC protocol, the worker and the engine: the
// request (its input, sampling, limits and output constraints), the
// chunks of text it produces, how it ends, and the typed errors it may end
// with. It holds plain data and the limits every side enforces; it checks
// nothing itself: the broker validates what a client sends (400s naming the
// field), package ipc validates what crosses the process line, and the
// engine what the model can do.
//
// The struct tags are the IPC wire shape: package ipc decodes these types
// strictly (unknown, duplicate, null and mistyped members refused) and
// `ipc:"required"` marks the members that must be present.
package gen

// Limits on a request, one place for every side: the broker refuses a
// request outside them with a 400 naming the field, and package ipc
// refuses a generate message outside them.
const (
	MaxStop         = 4       // stop strings per request (OpenAI's limit)
	MaxStopBytes    = 256     // bytes of one stop string
	MaxTopLogprobs  = 20      // alternatives per token (OpenAI's chat limit)
	MaxMessages     = 4096    // chat messages per request
	MaxLogitBias    = 1024    // logit_bias entries per request
	MaxBias         = 100     // logit_bias values lie in -MaxBias..MaxBias (OpenAI's range)
	MaxTools        = 128     // tool definitions per request (OpenAI's limit)
	MaxToolCalls    = 128     // tool calls in one assistant message of the history
	MaxNameBytes    = 64      // a function name: [a-zA-Z0-9_-], OpenAI's 64
	MaxIDBytes      = 256     // a tool call id
	MaxSchemaBytes  = 1 << 16 // a JSON Schema (tool parameters, response format), as JSON text
	MaxSchemaDepth  = 32      // nesting of arrays and objects in a schema
	MaxGrammarBytes = 1 << 16 // a GBNF grammar
	MaxTextBytes    = 1 << 16 // a description, or a call's arguments in the history
	MaxChoices      = 128     // n: choices per request (OpenAI's limit; the engine's slots bound it further)
)

// Message is one chat message. Content is text; an assistant message of
// the history may carry the tool calls it made instead of (or beside)
// text, and a tool message answers the call ToolCallID names.
type Message struct {
	Role       string     `json:"role" ipc:"required"` // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content    string     `json:"content" ipc:"required"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant only
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool only
	// ReasoningContent is an assistant message's reasoning (OpenAI's
	// reasoning_content), given to the template as llama.cpp gives it.
	ReasoningContent string `json:"reasoning_content,omitempty"` // assistant only
}

// The chat roles. OpenAI's "developer" arrives as RoleSystem.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is one function call an assistant message made.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name" ipc:"required"`
	Arguments string `json:"arguments" ipc:"required"` // JSON text as the model wrote it (not necessarily valid)
}

// Tool is one function the model may call.
type Tool struct {
	Name        string `json:"name" ipc:"required"`
	Description string `json:"description,omitempty"`
	Parameters  string `json:"parameters,omitempty"` // a JSON Schema as JSON text, "" for none
	Strict      bool   `json:"strict,omitempty"`
}

// ToolChoice says whether and which tool the model must call. The zero
// value (Mode "") means ChoiceAuto when tools are given.
type ToolChoice struct {
	Mode string `json:"mode,omitempty"` // ChoiceNone, ChoiceAuto, ChoiceRequired or ChoiceFunction
	Name string `json:"name,omitempty"` // ChoiceFunction: the function to call
}

// The tool choice modes.
const (
	ChoiceNone     = "none"
	ChoiceAuto     = "auto"
	ChoiceRequired = "required"
	ChoiceFunction = "function"
)

// Format constrains the output. The zero value (Type "") is free text.
type Format struct {
	Type    string `json:"type,omitempty"`    // FormatText, FormatJSONObject, FormatJSONSchema or FormatGrammar
	Name    string `json:"name,omitempty"`    // FormatJSONSchema: the schema's name
	Schema  string `json:"schema,omitempty"`  // FormatJSONSchema: the JSON Schema as JSON text
	Strict  bool   `json:"strict,omitempty"`  // FormatJSONSchema: OpenAI's strict flag
	Grammar string `json:"grammar,omitempty"` // FormatGrammar: GBNF text
}

// The output formats.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
	FormatGrammar    = "grammar"
)

// Bias adds Bias to the logit of Token before sampling (OpenAI's
// logit_bias: -100 bans the token, 100 all but forces it).
type Bias struct {
	Token int32   `json:"token" ipc:"required"`
	Bias  float32 `json:"bias" ipc:"required"`
}

// Sampling holds the sampling parameters of one request.
type Sampling struct {
	Temperature      float32 `json:"temperature"`       // 0 means greedy
	TopK             int     `json:"top_k"`             // 0 disables
	TopP             float32 `json:"top_p"`             // 1 disables
	MinP             float32 `json:"min_p"`             // 0 disables
	RepeatPenalty    float32 `json:"repeat_penalty"`    // 1 disables
	RepeatLastN      int     `json:"repeat_last_n"`     // tokens the penalties look back on
	PresencePenalty  float32 `json:"presence_penalty"`  // 0 disables
	FrequencyPenalty float32 `json:"frequency_penalty"` // 0 disables
	Seed             uint64  `json:"seed"`
	HasSeed          bool    `json:"has_seed"`             // false: the engine picks a seed
	LogitBias        []Bias  `json:"logit_bias,omitempty"` // distinct tokens
}

// DefaultSampling is what a request that sets nothing samples with
// (OpenAI's defaults: temperature 1, no truncation, no penalties).
func DefaultSampling() Sampling {
	return Sampling{Temperature: 1, TopP: 1, RepeatPenalty: 1, RepeatLastN: DefaultRepeatLastN}
}

// DefaultRepeatLastN is the penalty window when the request does not say.
const DefaultRepeatLastN = 64

// Request is one generation. Exactly one input is set: Messages when it is
// non-nil, else PromptIDs when it is non-nil, else Prompt (nil on the wire
// means "", which the engine starts from BOS alone).
//
// The engine renders and tokenizes the input once, and refuses with
// CodeContextLength a prompt that leaves no room: with FitContext the
// output budget is MaxTokens clipped to the context's room (a client that
// set no limit), without it a prompt plus MaxTokens beyond the context is
// refused (a client that asked for MaxTokens).
type Request struct {
	Prompt      *string    `json:"prompt,omitempty"`     // raw text, tokenized with special parsing off
	PromptIDs   []int32    `json:"prompt_ids,omitempty"` // pre-tokenized prompt
	Messages    []Message  `json:"messages,omitempty"`   // formatted by the model's chat template
	MaxTokens   int        `json:"max_tokens" ipc:"required"`
	FitContext  bool       `json:"fit_context,omitempty"`
	Stop        []string   `json:"stop,omitempty"`
	Sampling    Sampling   `json:"sampling" ipc:"required"`
	Logprobs    bool       `json:"logprobs,omitempty"`
	TopLogprobs int        `json:"top_logprobs,omitempty"`
	Tools       []Tool     `json:"tools,omitempty"`
	ToolChoice  ToolChoice `json:"tool_choice"`
	// ParallelToolCalls allows more than one call per answer (OpenAI's
	// default is true; the broker sets it so).
	ParallelToolCalls bool   `json:"parallel_tool_calls,omitempty"`
	Format            Format `json:"format"`
	// N is how many choices to sample from the prompt (OpenAI's n); 0
	// means 1. The prompt is evaluated once and its cache shared by the
	// choices; each choice has its own sampler (seeded ChoiceSeed), stop
	// strings, output constraint and tool-call parser, and its own slot
	// of the context (MaxTokens is per choice).
	N int `json:"n,omitempty"`
	// ReasoningFormat is how a chat reply's reasoning is returned, as
	// llama-server's --reasoning-format: ReasoningNone leaves it in the
	// text as the model wrote it; ReasoningAuto and ReasoningDeepSeek
	// (and "") separate it into the chunks' Reasoning (thinking
	// templates' <think>…</think>, Harmony's analysis channel).
	ReasoningFormat string `json:"reasoning_format,omitempty"`
	// ReasoningEffort is given to the chat template as reasoning_effort
	// (gpt-oss's "Reasoning: low|medium|high"); "" gives none.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
}

// The reasoning formats.
const (
	ReasoningNone     = "none"
	ReasoningAuto     = "auto"
	ReasoningDeepSeek = "deepseek"
)

// MaxEffortBytes bounds ReasoningEffort.
const MaxEffortBytes = 32

// Choices is how many choices the request asks for: N, at least 1.
func (r *Request) Choices() int {
	return max(1, r.N)
}

// ChoiceSeed is the seed choice i of a request seeded with seed samples
// with: seed+i (wrapping), so choice 0 is what the same request with n = 1
// gives, and choice i what a request with n = 1 and seed+i gives.
func ChoiceSeed(seed uint64, i int) uint64 {
	return seed + uint64(i)
}

// PromptText is the request's raw-text prompt ("" when it has none).
func (r *Request) PromptText() string {
	if r.Prompt == nil {
		return ""
	}
	return *r.Prompt
}

// Constrained reports whether the request asks for output the model must
// be steered to: tools it may call, or a format other than free text.
func (r *Request) Constrained() bool {
	return (len(r.Tools) > 0 && r.ToolChoice.Mode != ChoiceNone) || (r.Format.Type != "" && r.Format.Type != FormatText)
}

// TokenAlt is one alternative token with its log-probability.
type TokenAlt struct {
	Token   string  `json:"token" ipc:"required"`
	Logprob float32 `json:"logprob" ipc:"required"`
}

// TokenProb is one generated token's log-probability and alternatives.
type TokenProb struct {
	Token   string     `json:"token" ipc:"required"`
	Logprob float32    `json:"logprob" ipc:"required"`
	Top     []TokenAlt `json:"top,omitempty"`
}

// Chunk is a piece of generated text: whole UTF-8 characters, already cut
// at stop strings, with one Logprobs entry per token when they were asked
// for.
type Chunk struct {
	// Index is the choice the chunk belongs to (0 .. N-1).
	Index    int         `json:"index,omitempty"`
	Text     string      `json:"text" ipc:"required"`
	Logprobs []TokenProb `json:"logprobs,omitempty"`
	// ToolCalls are the pieces of tool calls the output made since the
	// last chunk, in order (a request with tools: the text is then only
	// the output that is not call markup).
	ToolCalls []CallDelta `json:"tool_calls,omitempty"`
	// Reasoning is the reply's reasoning read with this chunk (a chat
	// request whose template thinks, unless ReasoningFormat is none):
	// that text is then not in Text.
	Reasoning string `json:"reasoning,omitempty"`
}

// CallDelta is a piece of a tool call of the output: the engine sends a
// call's arguments as the model writes them. Index is the call's place
// among the reply's calls (0, 1, … in the order begun), as OpenAI's
// tool_calls[].index. A call's first piece carries its ID and Name and
// the start of its Arguments (perhaps ""); later pieces of the same Index
// carry only more Arguments text (ID and Name ""). A call's pieces come
// in a row, and their Arguments join to the call's arguments: a compact
// JSON object, but for the last call of an output that broke off inside
// it (the token budget ended), whose arguments stop where the output did.
type CallDelta struct {
	Index     int    `json:"index" ipc:"required"`
	ID        string `json:"id,omitempty"`   // first piece only
	Name      string `json:"name,omitempty"` // first piece only
	Arguments string `json:"arguments,omitempty"`
}

// JoinCall adds the piece d to calls: a new call, or argument text joined
// to the last call's (a piece of the same index).
func JoinCall(calls []CallDelta, d CallDelta) []CallDelta {
	if n := len(calls); n > 0 && calls[n-1].Index == d.Index && d.ID == "" {
		calls[n-1].Arguments += d.Arguments
		return calls
	}
	return append(calls, d)
}

// FinishReason says why a generation ended.
type FinishReason string

// The finish reasons.
const (
	FinishStop      FinishReason = "stop"       // an end-of-generation token or a stop string
	FinishLength    FinishReason = "length"     // the output budget or the context ran out
	FinishToolCalls FinishReason = "tool_calls" // the output is tool calls
)

// Valid reports whether f is one of the finish reasons.
func (f FinishReason) Valid() bool {
	return f == FinishStop || f == FinishLength || f == FinishToolCalls
}

// Usage counts a generation's tokens. With several choices the prompt is
// counted once and the completion tokens are summed over the choices.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens" ipc:"required"`
	CompletionTokens int `json:"completion_tokens" ipc:"required"`
	CachedTokens     int `json:"cached_tokens"` // prompt tokens reused from the KV cache
}

// End is how a generation ended normally. Finish is choice 0's reason;
// a request with N > 1 also has every choice's reason in Choices, in
// order (N entries, the first equal to Finish), and none otherwise.
type End struct {
	Finish  FinishReason   `json:"finish_reason" ipc:"required"`
	Usage   Usage          `json:"usage" ipc:"required"`
	Choices []FinishReason `json:"choices,omitempty"`
}

// Reason returns choice i's finish reason.
func (e *End) Reason(i int) FinishReason {
	if i < len(e.Choices) {
		return e.Choices[i]
	}
	return e.Finish
}
