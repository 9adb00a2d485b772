package broker

import (
	"crypto/rand"
	"encoding/hex"

	"github.com/lisa-llm/lisa/gen"
)

// Response shapes of the OpenAI API, for chat completions and (legacy)
// completions, whole and streamed.

type usageJSON struct {
	PromptTokens        int             `json:"prompt_tokens"`
	CompletionTokens    int             `json:"completion_tokens"`
	TotalTokens         int             `json:"total_tokens"`
	PromptTokensDetails *promptTokensJS `json:"prompt_tokens_details,omitempty"`
}

type promptTokensJS struct {
	CachedTokens int `json:"cached_tokens"`
}

func toUsage(u gen.Usage) *usageJSON {
	return &usageJSON{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TotalTokens: u.PromptTokens + u.CompletionTokens, PromptTokensDetails: &promptTokensJS{u.CachedTokens}}
}

// chatMessageJSON is the assistant's message. Refusal (always null: the
// server never refuses in words of its own) and Annotations (always
// empty) are in OpenAI's shape, so a client that sends the message back
// as history sends what OpenAI's clients send. Content is null when the
// reply is tool calls alone, as OpenAI's is.
type chatMessageJSON struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	Refusal *string `json:"refusal"`
	// ReasoningContent is the reply's reasoning, llama-server's field.
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
	Annotations      []emptyJSON    `json:"annotations"`
}

// toolCallJSON is one tool call of a whole reply.
type toolCallJSON struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function toolFunctionJSON `json:"function"`
}

type toolFunctionJSON struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolCallDeltaJSON is a piece of a streamed tool call, as OpenAI streams
// one: the first piece of a call has its index, id, type, name and the
// start of its arguments (perhaps ""), later ones its index and more
// argument text alone (a client joins them; names are not repeated, as
// clients that append every name piece would double them).
type toolCallDeltaJSON struct {
	Index    int                   `json:"index"`
	ID       string                `json:"id,omitempty"`
	Type     string                `json:"type,omitempty"`
	Function toolFunctionDeltaJSON `json:"function"`
}

type toolFunctionDeltaJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// toolCalls converts the calls of a whole reply.
func toolCalls(calls []gen.CallDelta) []toolCallJSON {
	if len(calls) == 0 {
		return nil
	}
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallJSON{ID: c.ID, Type: "function", Function: toolFunctionJSON{Name: c.Name, Arguments: c.Arguments}}
	}
	return out
}

// toolCallDeltas converts streamed pieces of calls.
func toolCallDeltas(calls []gen.CallDelta) []toolCallDeltaJSON {
	out := make([]toolCallDeltaJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallDeltaJSON{Index: c.Index, ID: c.ID, Function: toolFunctionDeltaJSON{Name: c.Name, Arguments: c.Arguments}}
		if c.ID != "" {
			out[i].Type = "function"
		}
	}
	return out
}

// emptyJSON is an element of a list that is always empty.
type emptyJSON struct{}

type chatDeltaJSON struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
	// ReasoningContent is llama-server's field for the reasoning.
	ReasoningContent string              `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallDeltaJSON `json:"tool_calls,omitempty"`
}

type chatTopJSON struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatTokenJSON struct {
	Token       string        `json:"token"`
	Logprob     float32       `json:"logprob"`
	Bytes       []int         `json:"bytes"`
	TopLogprobs []chatTopJSON `json:"top_logprobs"`
}

type chatLogprobsJSON struct {
	Content []chatTokenJSON `json:"content"`
}

type chatChoiceJSON struct {
	Index        int               `json:"index"`
	Message      *chatMessageJSON  `json:"message,omitempty"`
	Delta        *chatDeltaJSON    `json:"delta,omitempty"`
	Logprobs     *chatLogprobsJSON `json:"logprobs"`
	FinishReason *string           `json:"finish_reason"`
}

type completionLogprobsJSON struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float32            `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoiceJSON struct {
	Text         string                  `json:"text"`
	Index        int                     `json:"index"`
	Logprobs     *completionLogprobsJSON `json:"logprobs"`
	FinishReason *string                 `json:"finish_reason"`
}

// responseJSON is a whole response or one streamed chunk of either API.
type responseJSON struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	SystemFingerprint string     `json:"system_fingerprint"`
	Choices           any        `json:"choices"`
	Usage             *usageJSON `json:"usage,omitempty"`
}

func bytesOf(s string) []int {
	b := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		b[i] = int(s[i])
	}
	return b
}

func chatLogprobs(lps []gen.TokenProb) *chatLogprobsJSON {
	if lps == nil {
		return nil
	}
	out := &chatLogprobsJSON{Content: make([]chatTokenJSON, 0, len(lps))}
	for _, p := range lps {
		t := chatTokenJSON{Token: p.Token, Logprob: p.Logprob, Bytes: bytesOf(p.Token), TopLogprobs: []chatTopJSON{}}
		for _, a := range p.Top {
			t.TopLogprobs = append(t.TopLogprobs, chatTopJSON{Token: a.Token, Logprob: a.Logprob, Bytes: bytesOf(a.Token)})
		}
		out.Content = append(out.Content, t)
	}
	return out
}

// completionLogprobs converts lps; offset is where their text starts in the
// completion.
func completionLogprobs(lps []gen.TokenProb, offset int) *completionLogprobsJSON {
	if lps == nil {
		return nil
	}
	out := &completionLogprobsJSON{Tokens: []string{}, TokenLogprobs: []float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, p := range lps {
		out.Tokens = append(out.Tokens, p.Token)
		out.TokenLogprobs = append(out.TokenLogprobs, p.Logprob)
		top := make(map[string]float32, len(p.Top))
		for _, a := range p.Top {
			top[a.Token] = a.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(p.Token)
	}
	return out
}

// shaper builds the response objects of one request. Streamed chunks
// name their choice (OpenAI's choices[].index); a request for n choices
// gets one choice object per chunk, as OpenAI streams them.
type shaper struct {
	chat    bool
	id      string
	created int64
	model   string
	offsets []int // completions: per choice, bytes of text sent so far, for text_offset
}

func newShaper(chat bool, model string, created int64) *shaper {
	var b [12]byte
	_, _ = rand.Read(b[:])
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	return &shaper{chat: chat, id: prefix + hex.EncodeToString(b[:]), created: created, model: model}
}

func (s *shaper) base(stream bool) responseJSON {
	obj := "text_completion"
	if s.chat {
		obj = "chat.completion"
		if stream {
			obj = "chat.completion.chunk"
		}
	}
	return responseJSON{ID: s.id, Object: obj, Created: s.created, Model: s.model, SystemFingerprint: "lisa"}
}

// roleChunk is the first chunk of choice i of a chat stream.
func (s *shaper) roleChunk(i int) any {
	r := s.base(true)
	empty := ""
	r.Choices = []chatChoiceJSON{{Index: i, Delta: &chatDeltaJSON{Role: "assistant", Content: &empty}}}
	return r
}

// textChunk is a streamed piece of choice i's text.
func (s *shaper) textChunk(i int, text string, lps []gen.TokenProb) any {
	r := s.base(true)
	if s.chat {
		r.Choices = []chatChoiceJSON{{Index: i, Delta: &chatDeltaJSON{Content: &text}, Logprobs: chatLogprobs(lps)}}
	} else {
		for len(s.offsets) <= i {
			s.offsets = append(s.offsets, 0)
		}
		r.Choices = []completionChoiceJSON{{Index: i, Text: text, Logprobs: completionLogprobs(lps, s.offsets[i])}}
		s.offsets[i] += len(text)
	}
	return r
}

// callChunk is a streamed piece of choice i's chat reply that carries
// reasoning or pieces of tool calls, with the text read with them, if
// any (delta.reasoning_content, as llama-server streams reasoning).
func (s *shaper) callChunk(i int, text, reasoning string, lps []gen.TokenProb, calls []gen.CallDelta) any {
	r := s.base(true)
	d := &chatDeltaJSON{ReasoningContent: reasoning, ToolCalls: toolCallDeltas(calls)}
	if text != "" {
		d.Content = &text
	}
	r.Choices = []chatChoiceJSON{{Index: i, Delta: d, Logprobs: chatLogprobs(lps)}}
	return r
}

// finishChunk is the streamed chunk carrying choice i's finish reason.
func (s *shaper) finishChunk(i int, reason gen.FinishReason) any {
	finish := string(reason)
	r := s.base(true)
	if s.chat {
		r.Choices = []chatChoiceJSON{{Index: i, Delta: &chatDeltaJSON{}, FinishReason: &finish}}
	} else {
		r.Choices = []completionChoiceJSON{{Index: i, FinishReason: &finish}}
	}
	return r
}

// usageChunk is the last streamed chunk with stream_options.include_usage.
func (s *shaper) usageChunk(u gen.Usage) any {
	r := s.base(true)
	if s.chat {
		r.Choices = []chatChoiceJSON{}
	} else {
		r.Choices = []completionChoiceJSON{}
	}
	r.Usage = toUsage(u)
	return r
}

// choiceOut is one choice of a whole response: its text, the chat
// reply's tool calls, its log-probabilities and why it ended.
type choiceOut struct {
	text      string
	reasoning string
	calls     []gen.CallDelta
	lps       []gen.TokenProb
	finish    gen.FinishReason
}

// whole is the response of a request without stream, its choices in
// order.
func (s *shaper) whole(choices []choiceOut, u gen.Usage, wantLogprobs bool) any {
	r := s.base(false)
	chats := make([]chatChoiceJSON, len(choices))
	comps := make([]completionChoiceJSON, len(choices))
	for i, c := range choices {
		finish := string(c.finish)
		lps := c.lps
		if wantLogprobs && lps == nil {
			lps = []gen.TokenProb{}
		}
		if s.chat {
			text := c.text
			m := &chatMessageJSON{Role: "assistant", Content: &text, ReasoningContent: c.reasoning, ToolCalls: toolCalls(c.calls), Annotations: []emptyJSON{}}
			if text == "" && len(c.calls) > 0 {
				m.Content = nil
			}
			chats[i] = chatChoiceJSON{Index: i, Message: m, Logprobs: chatLogprobs(lps), FinishReason: &finish}
		} else {
			comps[i] = completionChoiceJSON{Index: i, Text: c.text, Logprobs: completionLogprobs(lps, 0), FinishReason: &finish}
		}
	}
	if s.chat {
		r.Choices = chats
	} else {
		r.Choices = comps
	}
	r.Usage = toUsage(u)
	return r
}
