package ipc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lisa-llm/lisa/gen"
)

// Version is the protocol version carried by hello and ready; both sides
// must agree on it.
const Version = 2

// Limits that decoding enforces on values, besides MaxFrame.
const (
	MaxTokens     = 1 << 24 // context size, vocabulary size, token counts and ids stay below this
	MaxListLen    = 1 << 17 // special tokens in ready
	MaxLayers     = 64      // sandbox layers in ready
	MaxTensors    = 1 << 20 // tensors in progress and ready
	MaxLoadMicros = 1 << 50 // load times in microseconds in progress and ready (about 35 years)
)

// The message types. Broker→worker: hello, generate, tokenize, detokenize,
// cancel. Worker→broker: progress, ready, tokens, done, error, tokenized,
// detokenized.
const (
	TypeHello       = "hello"
	TypeGenerate    = "generate"
	TypeTokenize    = "tokenize"
	TypeDetokenize  = "detokenize"
	TypeCancel      = "cancel"
	TypeProgress    = "progress"
	TypeReady       = "ready"
	TypeTokens      = "tokens"
	TypeDone        = "done"
	TypeError       = "error"
	TypeTokenized   = "tokenized"
	TypeDetokenized = "detokenized"
)

// Message is one IPC message. On the wire it is a JSON object whose "type"
// member is Type() and whose other members are the struct's fields.
type Message interface {
	// Type is the message's "type" member.
	Type() string
	// RequestID is the message's "id" member.
	RequestID() uint64
	// validate checks value ranges after a strict decode.
	validate() error
}

// Hello is the broker's first message: the worker's settings. The worker
// answers with Ready (naming Hello's id) once the model is loaded, or Error.
type Hello struct {
	ID        uint64 `json:"id" ipc:"required"`
	Protocol  int    `json:"protocol" ipc:"required"` // Version
	ModelName string `json:"model_name"`              // served model name; empty: the worker uses general.name
	Threads   int    `json:"threads"`                 // compute threads (0: one per core)
	CtxSize   int    `json:"ctx_size"`                // tokens per slot (0: the model's training context)
	Parallel  int    `json:"parallel"`                // generation slots (0: 1)
	KVType    string `json:"kv_type"`                 // KV cache element type of keys and values ("f16", "f32", "q8_0"; empty: the engine's default)
	// CacheTypeK and CacheTypeV, when set, are the key and the value cache
	// element types (llama.cpp's --cache-type-k/--cache-type-v), each
	// overriding KVType for its half.
	CacheTypeK string `json:"cache_type_k"`
	CacheTypeV string `json:"cache_type_v"`
}

// CacheTypes are the KV cache element types a Hello may name.
var CacheTypes = []string{"f16", "f32", "q8_0"}

// checkCacheType validates an optional cache element type.
func checkCacheType(typ, field, v string) error {
	if v == "" || slices.Contains(CacheTypes, v) {
		return nil
	}
	return bad(typ, field, "%q is not one of %s", v, strings.Join(CacheTypes, ", "))
}

// Generate starts one generation. The worker answers with zero or more
// Tokens, then one Done or Error, all naming Generate's id; at most
// Request.MaxTokens Tokens.
type Generate struct {
	ID      uint64      `json:"id" ipc:"required"`
	Request gen.Request `json:"request" ipc:"required"`
}

// Tokenize asks for text's token ids; the answer is Tokenized or Error.
type Tokenize struct {
	ID      uint64 `json:"id" ipc:"required"`
	Text    string `json:"text" ipc:"required"`
	Special bool   `json:"special"` // parse special-token texts into their ids
}

// Detokenize asks for the text of ids; the answer is Detokenized or Error.
type Detokenize struct {
	ID  uint64  `json:"id" ipc:"required"`
	IDs []int32 `json:"ids" ipc:"required"`
}

// Cancel stops the generation whose Generate had this id. It is not a
// request of its own: the worker still ends that generation with Done or
// Error, and a Cancel for a finished generation is ignored.
type Cancel struct {
	ID uint64 `json:"id" ipc:"required"`
}

// Layer is one sandbox layer as the worker reports it (sandbox.Layer).
type Layer struct {
	Name      string `json:"name" ipc:"required"`
	Requested bool   `json:"requested"`
	Applied   bool   `json:"applied"`
	Detail    string `json:"detail,omitempty"`
}

// Progress tells, while the worker loads the model, how far it has got.
// Zero or more come before the Ready or Error that answers Hello, naming
// Hello's id; the counts never decrease and the totals never change.
type Progress struct {
	ID           uint64 `json:"id" ipc:"required"` // Hello's id
	Tensors      int    `json:"tensors" ipc:"required"`
	TensorsTotal int    `json:"tensors_total" ipc:"required"`
	Bytes        int64  `json:"bytes" ipc:"required"` // tensor data bytes validated
	BytesTotal   int64  `json:"bytes_total" ipc:"required"`
	ElapsedUS    int64  `json:"elapsed_us" ipc:"required"` // since the worker read Hello
}

// Ready answers Hello: the model is loaded and the worker serves. Every
// string in it is untrusted model data.
type Ready struct {
	ID            uint64   `json:"id" ipc:"required"` // Hello's id
	Protocol      int      `json:"protocol" ipc:"required"`
	Name          string   `json:"name"`         // served name, or general.name
	Architecture  string   `json:"architecture"` // general.architecture
	ContextSize   int      `json:"n_ctx" ipc:"required"`
	Slots         int      `json:"n_seq"` // generation slots, the most choices one request may have (0: not reported)
	VocabSize     int      `json:"n_vocab" ipc:"required"`
	SpecialTokens []string `json:"special_tokens,omitempty"` // texts of control tokens
	ControlIDs    []int32  `json:"control_ids,omitempty"`    // ids text never tokenizes to, increasing
	BOS           *int32   `json:"bos,omitempty"`            // the BOS id, absent when the model has none
	Kernels       string   `json:"kernels"`                  // kernel path in use
	LandlockABI   int      `json:"landlock_abi"`             // 0: none applied
	Layers        []Layer  `json:"layers,omitempty"`         // sandbox layers applied in the worker
	Tensors       int      `json:"tensors"`                  // tensors validated (0: not reported)
	TensorBytes   int64    `json:"tensor_bytes"`             // their data bytes, used from the file's mapping
	LoadUS        int64    `json:"load_us"`                  // from reading Hello to the engine being ready
	KVCacheBytes  int64    `json:"kv_cache_bytes"`           // memory of the KV cache allocated (0: not reported)
	CacheTypeK    string   `json:"cache_type_k"`             // key cache element type (empty: not reported)
	CacheTypeV    string   `json:"cache_type_v"`             // value cache element type (empty: not reported)
}

// Tokens is a chunk of generated text, already cut at stop strings and
// whole UTF-8 characters, with one Logprobs entry per token when asked.
type Tokens struct {
	ID       uint64          `json:"id" ipc:"required"`
	Index    int             `json:"index,omitempty"` // the choice (0 .. request.n-1; the receiver checks the bound)
	Text     string          `json:"text" ipc:"required"`
	Logprobs []gen.TokenProb `json:"logprobs,omitempty"`
	// ToolCalls are the pieces of tool calls read with this chunk (see
	// gen.CallDelta), continuing those of the chunks before (the
	// receiver checks the order, which spans messages).
	ToolCalls []gen.CallDelta `json:"tool_calls,omitempty"`
	// Reasoning is reasoning read with this chunk (see gen.Chunk).
	Reasoning string `json:"reasoning,omitempty"`
}

// Done ends a generation normally: gen.End on the wire. Choices holds
// every choice's finish reason for a request with n > 1 (the receiver
// checks that there are n).
type Done struct {
	ID           uint64             `json:"id" ipc:"required"`
	FinishReason gen.FinishReason   `json:"finish_reason" ipc:"required"`
	Usage        gen.Usage          `json:"usage" ipc:"required"`
	Choices      []gen.FinishReason `json:"choices,omitempty"`
}

// Error ends any request with a failure. With Hello's id it says the model
// could not be loaded. A failure the request caused carries its Code (one
// of gen's closed list) and the request field at fault; the broker passes
// those on to the client. Without a Code it is the worker's own failure.
type Error struct {
	ID      uint64   `json:"id" ipc:"required"`
	Message string   `json:"message" ipc:"required"`
	Code    gen.Code `json:"code,omitempty"`
	Param   string   `json:"param,omitempty"`
}

// Tokenized answers Tokenize.
type Tokenized struct {
	ID  uint64  `json:"id" ipc:"required"`
	IDs []int32 `json:"ids" ipc:"required"`
}

// Detokenized answers Detokenize.
type Detokenized struct {
	ID   uint64 `json:"id" ipc:"required"`
	Text string `json:"text" ipc:"required"`
}

// Type returns TypeHello.
func (*Hello) Type() string { return TypeHello }

// Type returns TypeGenerate.
func (*Generate) Type() string { return TypeGenerate }

// Type returns TypeTokenize.
func (*Tokenize) Type() string { return TypeTokenize }

// Type returns TypeDetokenize.
func (*Detokenize) Type() string { return TypeDetokenize }

// Type returns TypeCancel.
func (*Cancel) Type() string { return TypeCancel }

// Type returns TypeProgress.
func (*Progress) Type() string { return TypeProgress }

// Type returns TypeReady.
func (*Ready) Type() string { return TypeReady }

// Type returns TypeTokens.
func (*Tokens) Type() string { return TypeTokens }

// Type returns TypeDone.
func (*Done) Type() string { return TypeDone }

// Type returns TypeError.
func (*Error) Type() string { return TypeError }

// Type returns TypeTokenized.
func (*Tokenized) Type() string { return TypeTokenized }

// Type returns TypeDetokenized.
func (*Detokenized) Type() string { return TypeDetokenized }

// RequestID returns the Hello's id.
func (m *Hello) RequestID() uint64 { return m.ID }

// RequestID returns the Generate's id.
func (m *Generate) RequestID() uint64 { return m.ID }

// RequestID returns the Tokenize's id.
func (m *Tokenize) RequestID() uint64 { return m.ID }

// RequestID returns the Detokenize's id.
func (m *Detokenize) RequestID() uint64 { return m.ID }

// RequestID returns the Cancel's id.
func (m *Cancel) RequestID() uint64 { return m.ID }

// RequestID returns the Progress's id.
func (m *Progress) RequestID() uint64 { return m.ID }

// RequestID returns the Ready's id.
func (m *Ready) RequestID() uint64 { return m.ID }

// RequestID returns the Tokens's id.
func (m *Tokens) RequestID() uint64 { return m.ID }

// RequestID returns the Done's id.
func (m *Done) RequestID() uint64 { return m.ID }

// RequestID returns the Error's id.
func (m *Error) RequestID() uint64 { return m.ID }

// RequestID returns the Tokenized's id.
func (m *Tokenized) RequestID() uint64 { return m.ID }

// RequestID returns the Detokenized's id.
func (m *Detokenized) RequestID() uint64 { return m.ID }

// bad builds a KindBadValue error.
func bad(typ, field, format string, args ...any) error {
	return violation(KindBadValue, typ, field, format, args...)
}

func checkID(typ string, id uint64) error {
	if id == 0 {
		return bad(typ, "id", "id 0 is never issued")
	}
	return nil
}

func checkCount(typ, field string, v, lo int) error {
	if v < lo || v >= MaxTokens {
		return bad(typ, field, "%d outside %d..%d", v, lo, MaxTokens-1)
	}
	return nil
}

func checkIDs(typ, field string, ids []int32) error {
	for i, id := range ids {
		if id < 0 || id >= MaxTokens {
			return bad(typ, fmt.Sprintf("%s[%d]", field, i), "token id %d out of range", id)
		}
	}
	return nil
}

func (m *Hello) validate() error {
	switch {
	case m.Protocol != Version:
		return bad(TypeHello, "protocol", "version %d, want %d", m.Protocol, Version)
	case m.Threads < 0 || m.Threads > 1024:
		return bad(TypeHello, "threads", "%d outside 0..1024", m.Threads)
	case m.Parallel < 0 || m.Parallel > 1024:
		return bad(TypeHello, "parallel", "%d outside 0..1024", m.Parallel)
	}
	if err := checkCount(TypeHello, "ctx_size", m.CtxSize, 0); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"kv_type", m.KVType}, {"cache_type_k", m.CacheTypeK}, {"cache_type_v", m.CacheTypeV}} {
		if err := checkCacheType(TypeHello, f.name, f.v); err != nil {
			return err
		}
	}
	return checkID(TypeHello, m.ID)
}

func (m *Generate) validate() error {
	if err := validateRequest(&m.Request); err != nil {
		return err
	}
	return checkID(TypeGenerate, m.ID)
}

func (m *Tokenize) validate() error    { return checkID(TypeTokenize, m.ID) }
func (m *Cancel) validate() error      { return checkID(TypeCancel, m.ID) }
func (m *Detokenized) validate() error { return checkID(TypeDetokenized, m.ID) }

func (m *Detokenize) validate() error {
	if err := checkIDs(TypeDetokenize, "ids", m.IDs); err != nil {
		return err
	}
	return checkID(TypeDetokenize, m.ID)
}

func (m *Tokenized) validate() error {
	if err := checkIDs(TypeTokenized, "ids", m.IDs); err != nil {
		return err
	}
	return checkID(TypeTokenized, m.ID)
}

func (m *Ready) validate() error {
	switch {
	case m.Protocol != Version:
		return bad(TypeReady, "protocol", "version %d, want %d", m.Protocol, Version)
	case len(m.SpecialTokens) > MaxListLen:
		return bad(TypeReady, "special_tokens", "%d entries, at most %d", len(m.SpecialTokens), MaxListLen)
	case len(m.Layers) > MaxLayers:
		return bad(TypeReady, "layers", "%d entries, at most %d", len(m.Layers), MaxLayers)
	case m.LandlockABI < 0 || m.LandlockABI > 1000:
		return bad(TypeReady, "landlock_abi", "%d outside 0..1000", m.LandlockABI)
	case m.Tensors < 0 || m.Tensors > MaxTensors:
		return bad(TypeReady, "tensors", "%d outside 0..%d", m.Tensors, MaxTensors)
	case m.TensorBytes < 0:
		return bad(TypeReady, "tensor_bytes", "%d is negative", m.TensorBytes)
	case m.LoadUS < 0 || m.LoadUS > MaxLoadMicros:
		return bad(TypeReady, "load_us", "%d outside 0..%d", m.LoadUS, int64(MaxLoadMicros))
	case m.Slots < 0 || m.Slots > 1024:
		return bad(TypeReady, "n_seq", "%d outside 0..1024", m.Slots)
	case m.KVCacheBytes < 0:
		return bad(TypeReady, "kv_cache_bytes", "%d is negative", m.KVCacheBytes)
	}
	if err := checkCacheType(TypeReady, "cache_type_k", m.CacheTypeK); err != nil {
		return err
	}
	if err := checkCacheType(TypeReady, "cache_type_v", m.CacheTypeV); err != nil {
		return err
	}
	if err := checkCount(TypeReady, "n_ctx", m.ContextSize, 1); err != nil {
		return err
	}
	if err := checkCount(TypeReady, "n_vocab", m.VocabSize, 1); err != nil {
		return err
	}
	if err := m.checkControlIDs(); err != nil {
		return err
	}
	return checkID(TypeReady, m.ID)
}

func (m *Progress) validate() error {
	switch {
	case m.TensorsTotal < 0 || m.TensorsTotal > MaxTensors:
		return bad(TypeProgress, "tensors_total", "%d outside 0..%d", m.TensorsTotal, MaxTensors)
	case m.Tensors < 0 || m.Tensors > m.TensorsTotal:
		return bad(TypeProgress, "tensors", "%d outside 0..tensors_total (%d)", m.Tensors, m.TensorsTotal)
	case m.BytesTotal < 0:
		return bad(TypeProgress, "bytes_total", "%d is negative", m.BytesTotal)
	case m.Bytes < 0 || m.Bytes > m.BytesTotal:
		return bad(TypeProgress, "bytes", "%d outside 0..bytes_total (%d)", m.Bytes, m.BytesTotal)
	case m.ElapsedUS < 0 || m.ElapsedUS > MaxLoadMicros:
		return bad(TypeProgress, "elapsed_us", "%d outside 0..%d", m.ElapsedUS, int64(MaxLoadMicros))
	}
	return checkID(TypeProgress, m.ID)
}

func (m *Error) validate() error {
	switch {
	case m.Code != "" && !m.Code.Known():
		return bad(TypeError, "code", "%.32q is not a known error code", m.Code)
	case len(m.Param) > maxParamBytes:
		return bad(TypeError, "param", "%d bytes, at most %d", len(m.Param), maxParamBytes)
	}
	return checkID(TypeError, m.ID)
}

// maxParamBytes bounds the field path an error names.
const maxParamBytes = 256

func (m *Tokens) validate() error {
	if m.Index < 0 || m.Index >= gen.MaxChoices {
		return bad(TypeTokens, "index", "%d outside 0..%d", m.Index, gen.MaxChoices-1)
	}
	for i, p := range m.Logprobs {
		if len(p.Top) > gen.MaxTopLogprobs {
			return bad(TypeTokens, fmt.Sprintf("logprobs[%d].top", i), "%d alternatives, at most %d", len(p.Top), gen.MaxTopLogprobs)
		}
	}
	if len(m.ToolCalls) > gen.MaxToolCalls {
		return bad(TypeTokens, "tool_calls", "%d calls, at most %d", len(m.ToolCalls), gen.MaxToolCalls)
	}
	for i, c := range m.ToolCalls {
		if err := validateCall(&c, fmt.Sprintf("tool_calls[%d]", i)); err != nil {
			return err
		}
	}
	return checkID(TypeTokens, m.ID)
}

// MaxArgumentBytes bounds the arguments of one generated tool call (the
// parser's whole output bound).
const MaxArgumentBytes = 1 << 20

// validateCall checks one piece of a generated tool call: an index among
// the request's calls; on a call's first piece an id and a function name
// in OpenAI's alphabet and length, on a later piece neither; argument
// text within the bound. That the pieces of a call come in a row and in
// index order is the supervisor's to check.
func validateCall(c *gen.CallDelta, field string) error {
	first := c.ID != "" || c.Name != ""
	switch {
	case c.Index < 0 || c.Index >= gen.MaxToolCalls:
		return bad(TypeTokens, field+".index", "%d outside 0..%d", c.Index, gen.MaxToolCalls-1)
	case first && !callWord(c.ID, gen.MaxIDBytes):
		return bad(TypeTokens, field+".id", "%.32q is not 1..%d letters, digits, '_', '-' or '.'", c.ID, gen.MaxIDBytes)
	case first && !callWord(c.Name, gen.MaxNameBytes):
		return bad(TypeTokens, field+".name", "%.32q is not 1..%d letters, digits, '_', '-' or '.'", c.Name, gen.MaxNameBytes)
	case len(c.Arguments) > MaxArgumentBytes:
		return bad(TypeTokens, field+".arguments", "%d bytes, at most %d", len(c.Arguments), MaxArgumentBytes)
	case !first && c.Arguments == "":
		return bad(TypeTokens, field+".arguments", "a later piece of a call without argument text")
	}
	return nil
}

// callWord reports whether s is 1..max bytes of [A-Za-z0-9_.-]: the
// function names and call ids the tool-call parser accepts.
func callWord(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func (m *Done) validate() error {
	if !m.FinishReason.Valid() {
		return bad(TypeDone, "finish_reason", "%.32q is not a finish reason", m.FinishReason)
	}
	switch {
	case len(m.Choices) == 1 || len(m.Choices) > gen.MaxChoices:
		return bad(TypeDone, "choices", "%d entries, want none or 2..%d", len(m.Choices), gen.MaxChoices)
	case len(m.Choices) > 0 && m.Choices[0] != m.FinishReason:
		return bad(TypeDone, "choices[0]", "%.32q is not finish_reason %.32q", m.Choices[0], m.FinishReason)
	}
	for i, f := range m.Choices {
		if !f.Valid() {
			return bad(TypeDone, fmt.Sprintf("choices[%d]", i), "%.32q is not a finish reason", f)
		}
	}
	u := m.Usage
	if err := checkCount(TypeDone, "usage.prompt_tokens", u.PromptTokens, 0); err != nil {
		return err
	}
	if err := checkCount(TypeDone, "usage.completion_tokens", u.CompletionTokens, 0); err != nil {
		return err
	}
	if u.CachedTokens < 0 || u.CachedTokens > u.PromptTokens {
		return bad(TypeDone, "usage.cached_tokens", "%d outside 0..prompt_tokens (%d)", u.CachedTokens, u.PromptTokens)
	}
	return checkID(TypeDone, m.ID)
}

// checkControlIDs checks that control_ids is strictly increasing within
// the vocabulary (so a broker can binary-search it) and bounded, and that
// bos is inside the vocabulary.
func (m *Ready) checkControlIDs() error {
	if m.BOS != nil && (*m.BOS < 0 || int(*m.BOS) >= m.VocabSize) {
		return bad(TypeReady, "bos", "token id %d outside the vocabulary of %d", *m.BOS, m.VocabSize)
	}
	if len(m.ControlIDs) > MaxListLen {
		return bad(TypeReady, "control_ids", "%d entries, at most %d", len(m.ControlIDs), MaxListLen)
	}
	for i, id := range m.ControlIDs {
		if id < 0 || int(id) >= m.VocabSize {
			return bad(TypeReady, fmt.Sprintf("control_ids[%d]", i), "token id %d outside the vocabulary of %d", id, m.VocabSize)
		}
		if i > 0 && id <= m.ControlIDs[i-1] {
			return bad(TypeReady, fmt.Sprintf("control_ids[%d]", i), "%d does not increase on %d", id, m.ControlIDs[i-1])
		}
	}
	return nil
}
