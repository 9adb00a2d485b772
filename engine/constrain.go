package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/chat"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/grammar"
	"github.com/lisa-llm/lisa/tokenizer"
	"github.com/lisa-llm/lisa/toolcall"
)

// plan is what a request's tools and output format make of its
// generation: the tools the template shows, the grammar the sampler
// follows, and the parser that finds calls in the output.
type plan struct {
	tools  []chat.Tool
	con    *grammar.Constraint    // nil: free sampling
	reply  *toolcall.ReplyOptions // how the reply is read (calls, reasoning); nil: the output is content alone
	markup map[int32]string       // special tokens the output shows as text; nil: none
}

// initOutputs finds, once per model, the tool-call format of the chat
// template and the special tokens that are call markup (rendered as their
// text in a parsed or constrained output, so that the parser sees
// [TOOL_CALLS] or <|python_tag|> and a forced call's grammar can match
// them).
func (e *Engine) initOutputs() {
	e.callFormat = toolcall.Detect(e.tmpl, e.tmplErr == nil && chat.DescribesTools(e.tmpl))
	e.toolsUntold = e.tmplErr == nil && chat.ToolsUntold(e.tmpl)
	e.thinking = toolcall.DetectThinking(e.tmpl)
	markup := toolcall.Markup()
	if e.callFormat == toolcall.Harmony {
		markup = append(markup, toolcall.HarmonyMarkup()...)
	}
	for _, text := range markup {
		id, ok := e.tok.TokenID(text)
		if !ok || e.tok.IsEOG(id) || len(e.tok.Piece(id)) > 0 {
			continue // absent, an end of generation, or plain text already
		}
		if e.markup == nil {
			e.markup = map[int32]string{}
		}
		e.markup[id] = text
	}
}

// outPiece is the text of token id in a constrained or parsed output: its
// piece, or for call markup its text.
func (e *Engine) outPiece(id int32) []byte {
	if t, ok := e.markup[id]; ok {
		return []byte(t)
	}
	return e.tok.Piece(id)
}

// grammarVocab returns the model's grammar vocabulary, built on first use
// (a trie over every token's text: tens of milliseconds on a large
// vocabulary, which a server that never sees a grammar does not pay).
// Control tokens other than call markup are never allowed by a grammar
// (user-defined tokens are text); the end-of-generation tokens end it
// once it is complete.
func (e *Engine) grammarVocab() (*grammar.Vocab, error) {
	e.vocabOnce.Do(func() {
		n := e.tok.NVocab()
		control := make(map[int32]bool)
		for _, id := range e.tok.ControlIDs() {
			control[id] = true
		}
		var eog []int32
		for id := range int32(n) {
			if e.tok.IsEOG(id) {
				eog = append(eog, id)
			}
		}
		special := func(id int32) bool {
			if _, markup := e.markup[id]; markup {
				return false
			}
			// A user-defined token that ends nothing is text, whatever
			// other role it has: gpt-oss's <|end|> is its end-of-turn
			// token (in ControlIDs) but ends a message, not the
			// generation, and a forced call's analysis message ends
			// with it.
			if e.tok.Type(id) == tokenizer.TypeUserDefined && !e.tok.IsEOG(id) {
				return false
			}
			return control[id]
		}
		e.vocab, e.vocabErr = grammar.NewVocab(n, e.outPiece, special, eog)
	})
	return e.vocab, e.vocabErr
}

// toolsOn reports whether the request lets the model call tools.
func toolsOn(req *gen.Request) bool {
	return len(req.Tools) > 0 && req.ToolChoice.Mode != gen.ChoiceNone
}

// grammarError is the client error for a schema or grammar of field param
// that does not compile.
func grammarError(param string, err error) error {
	ge := gen.Errorf(gen.CodeInvalidRequest, param, "%v", err)
	ge.Err = err
	return fmt.Errorf("%w: %w", ErrPrompt, ge)
}

// prepare makes the plan of req: the tools for the template (none when
// tool_choice is "none"), the call parser, and the grammar of a forced
// call (tool_choice "required" or a named function) or of the response
// format. Tools and a format together are refused, as llama.cpp does: a
// format's grammar would leave no room for a call.
func (e *Engine) prepare(req *gen.Request) (plan, error) {
	var p plan
	if p.reply = e.replyOptions(req); p.reply != nil {
		p.markup = e.markup
	}
	formatted := req.Format.Type != "" && req.Format.Type != gen.FormatText
	if !toolsOn(req) && !formatted {
		return p, nil
	}
	if toolsOn(req) && formatted {
		return p, promptError(gen.CodeInvalidRequest, "response_format", "an output format cannot be combined with tools the model may call (tool_choice %q)", req.ToolChoice.Mode)
	}
	lim := grammar.DefaultLimits()
	// The grammar's source keys the engine's grammars, so that requests
	// with the same one share a compiled grammar and its masks.
	var key, end string
	var build func() (*grammar.Grammar, error)
	param := "tools"
	if toolsOn(req) {
		text, endText, err := e.prepareTools(req, &p, lim)
		if err != nil {
			return p, err
		}
		end = endText
		if text != "" {
			key = "gbnf:" + text
			build = func() (*grammar.Grammar, error) { return grammar.ParseGBNF(text, lim) }
		}
	} else {
		param = "response_format"
		switch req.Format.Type {
		case gen.FormatJSONObject:
			key, build = "json_object", func() (*grammar.Grammar, error) { return grammar.JSONObject(), nil }
		case gen.FormatJSONSchema:
			if schema := req.Format.Schema; schema == "" {
				// OpenAI's json_schema without a schema: any object.
				key, build = "json_object", func() (*grammar.Grammar, error) { return grammar.JSONObject(), nil }
			} else {
				key = "schema:" + schema
				build = func() (*grammar.Grammar, error) { return grammar.FromJSONSchema([]byte(schema), lim) }
			}
			param = "response_format.json_schema.schema"
		case gen.FormatGrammar:
			param = "grammar"
			text := req.Format.Grammar
			key, build = "gbnf:"+text, func() (*grammar.Grammar, error) { return grammar.ParseGBNF(text, lim) }
		default:
			return p, promptError(gen.CodeInvalidRequest, "response_format", "unknown response format %q", req.Format.Type)
		}
	}
	p.markup = e.markup
	if build == nil {
		return p, nil
	}
	v, err := e.grammarVocab()
	if err != nil {
		return p, promptError(gen.CodeUnsupported, "response_format", "the model's vocabulary cannot carry a grammar: %v", err)
	}
	g, masks, err := e.grammars.get(key, v, build)
	if err != nil {
		return p, grammarError(param, err)
	}
	if p.con, err = grammar.NewConstraint(g, v, e.outPiece, lim); err != nil {
		return p, grammarError("response_format", err)
	}
	if err := p.con.ShareMasks(masks); err != nil {
		return p, fmt.Errorf("engine: %w", err) // cannot happen: the cache is g's over v
	}
	if end != "" {
		// A call that must end with its own end-of-generation token
		// (Harmony's <|call|>, not <|return|>); a vocabulary without it
		// as one ends the call with any.
		if id, ok := e.tok.TokenID(end); ok && e.tok.IsEOG(id) {
			if err := p.con.EndWith([]int32{id}); err != nil {
				return p, fmt.Errorf("engine: %w", err) // cannot happen: the grammar vocabulary's ends are the tokenizer's
			}
		}
	}
	return p, nil
}

// Bounds of the engine's grammar cache: grammars kept, and the bytes of
// masks each shares (a mask is an eighth of a byte per token: 512 masks
// of a 32k vocabulary).
const (
	maxCachedGrammars = 16
	maskCacheBytes    = 2 << 20
)

// grammarCache keeps the grammars of recent requests by source, each with
// the MaskCache its requests share: a server asked again and again for
// json_object or for one schema compiles it once and walks the
// vocabulary once per grammar state, not once per request. It is safe for
// concurrent use; when full it starts afresh.
type grammarCache struct {
	mu sync.Mutex
	m  map[string]cachedGrammar
}

type cachedGrammar struct {
	g     *grammar.Grammar
	masks *grammar.MaskCache
}

// get returns the grammar of key and its mask cache over v, building the
// grammar on a miss (a build error is returned, and not kept).
func (c *grammarCache) get(key string, v *grammar.Vocab, build func() (*grammar.Grammar, error)) (*grammar.Grammar, *grammar.MaskCache, error) {
	c.mu.Lock()
	if cg, ok := c.m[key]; ok {
		c.mu.Unlock()
		return cg.g, cg.masks, nil
	}
	c.mu.Unlock()
	g, err := build() // outside the lock: a large schema takes a while
	if err != nil {
		return nil, nil, err
	}
	cg := cachedGrammar{g: g, masks: grammar.NewMaskCache(g, v, maskCacheBytes)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[key]; ok {
		return old.g, old.masks, nil // built meanwhile by another request
	}
	if c.m == nil || len(c.m) >= maxCachedGrammars {
		c.m = map[string]cachedGrammar{}
	}
	c.m[key] = cg
	return g, cg.masks, nil
}

// prepareTools fills p's tools and call parser and returns the GBNF text
// of a forced call's grammar, or "" for tool_choice "auto", and the text
// of the end-of-generation token that must end the call ("": any).
func (e *Engine) prepareTools(req *gen.Request, p *plan, lim grammar.Limits) (text, end string, err error) {
	names := make([]string, len(req.Tools))
	p.tools = make([]chat.Tool, len(req.Tools))
	forced := -1 // the named function's index
	for i, t := range req.Tools {
		names[i] = t.Name
		p.tools[i] = chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		if req.ToolChoice.Mode == gen.ChoiceFunction && t.Name == req.ToolChoice.Name {
			forced = i
		}
	}
	maxCalls := 0
	if !req.ParallelToolCalls {
		maxCalls = 1
	}
	// A model told of no tools (its template shows none) answers in
	// plain text, read as content as llama.cpp reads it, unless a call
	// is forced: then the grammar writes one in the generic format
	// (llama.cpp sets no grammar there and ignores tool_choice).
	p.reply.Calls = !e.toolsUntold || req.ToolChoice.Mode == gen.ChoiceRequired || req.ToolChoice.Mode == gen.ChoiceFunction
	p.reply.Options = toolcall.Options{Tools: names, MaxCalls: maxCalls, NewID: callID}
	var offered []int // the tools a forced call may name
	switch req.ToolChoice.Mode {
	case gen.ChoiceRequired:
		for i := range req.Tools {
			offered = append(offered, i)
		}
	case gen.ChoiceFunction:
		if forced < 0 {
			return "", "", promptError(gen.CodeInvalidRequest, "tool_choice", "tool_choice names the function %q, which is not among the tools", req.ToolChoice.Name)
		}
		offered = []int{forced}
	default:
		return "", "", nil
	}
	tools := make([]toolcall.Tool, len(offered))
	for k, i := range offered {
		t := req.Tools[i]
		// Each schema compiles on its own first, so that an error names
		// the tool whose schema it is.
		if t.Parameters != "" {
			if _, _, err := grammar.SchemaRules([]byte(t.Parameters), lim); err != nil {
				return "", "", grammarError(fmt.Sprintf("tools[%d].function.parameters", i), err)
			}
		}
		tools[k] = toolcall.Tool{Name: t.Name, Parameters: json.RawMessage(t.Parameters)}
	}
	c, err := toolcall.Forced(e.callFormat, tools, req.ParallelToolCalls)
	if err != nil {
		return "", "", grammarError("tools", err)
	}
	starts, rules, err := grammar.SchemasRules(c.Schemas(), lim)
	if err != nil {
		return "", "", grammarError("tools", err)
	}
	return c.GBNF(starts...) + rules, c.EndToken, nil
}

// checkToolStrings refuses client text that reaches the prompt untraced
// (tool definitions and the calls of the history go through the
// template's tojson) when it holds the text of a special token: it would
// be tokenized as that token.
func (e *Engine) checkToolStrings(msgs []chat.Message, tools []chat.Tool) error {
	strs := chat.ToolStrings(msgs, tools)
	if len(strs) == 0 {
		return nil
	}
	specials := e.tok.SpecialTexts()
	for _, s := range strs {
		for _, sp := range specials {
			if strings.Contains(s, sp) {
				return promptError(gen.CodeInvalidPrompt, "tools", "a tool definition or tool call holds the text of the model's special token %q", sp)
			}
		}
	}
	return nil
}

// callID makes a call id as OpenAI's look: "call_" and 24 letters and
// digits. The ids name calls within a conversation, no secret: they come
// from math/rand, because crypto/rand's vDSO getrandom maps its state
// with a flag (MAP_DROPPABLE) the worker's seccomp filter refuses.
func callID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 5+24)
	copy(b, "call_")
	for i := 5; i < len(b); i++ {
		b[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(b)
}

// errCallParse marks a failure of the tool-call parser on the model's
// output (an internal error: the output is bounded by the budget).
var errCallParse = errors.New("engine: tool-call parser")

// replyOptions says how the reply to req is read: calls when the model
// may call tools, and for a chat, the reasoning of a thinking template
// (separated unless reasoning_format is none) and Harmony's channels
// (always read: gpt-oss's reply is its final channel). nil: the output is
// content as generated.
func (e *Engine) replyOptions(req *gen.Request) *toolcall.ReplyOptions {
	o := &toolcall.ReplyOptions{Format: e.callFormat, KeepReasoning: req.ReasoningFormat == gen.ReasoningNone}
	isChat := req.Messages != nil
	if isChat {
		o.Thinking = e.thinking
	}
	if toolsOn(req) || isChat && (o.Format == toolcall.Harmony || o.Thinking != toolcall.NoThinking) {
		return o
	}
	return nil
}

// thinkingOpen reports whether the prompt ids end inside a <think> block
// (a template whose generation prompt opens it), read from the text of
// their last tokens.
func (e *Engine) thinkingOpen(ids []int32) bool {
	if e.thinking == toolcall.NoThinking {
		return false
	}
	var b strings.Builder
	for _, id := range ids[max(0, len(ids)-8):] {
		b.WriteString(e.tok.TokenText(id))
	}
	return toolcall.ThinkingOpen(b.String())
}

// parseChunk runs a chunk's text through the reply reader: the content
// it lets through stays text, its reasoning becomes c's Reasoning, the
// pieces of calls it reads c's ToolCalls.
func parseChunk(s *toolcall.ReplyStream, c *gen.Chunk) error {
	deltas, err := s.Write(c.Text)
	if err != nil {
		return fmt.Errorf("%w: %w", errCallParse, err)
	}
	c.Text = ""
	addDeltas(c, deltas)
	return nil
}

// addDeltas appends the parser's deltas to c.
func addDeltas(c *gen.Chunk, deltas []toolcall.Delta) {
	for _, d := range deltas {
		if d.Call == nil {
			c.Text += d.Content
			c.Reasoning += d.Reasoning
			continue
		}
		c.ToolCalls = gen.JoinCall(c.ToolCalls, gen.CallDelta{Index: d.Index, ID: d.Call.ID, Name: d.Call.Name, Arguments: d.Call.Arguments})
	}
}

// usesTools reports whether a chat prompt shows tools, calls or tool
// results.
func usesTools(msgs []chat.Message, tools []chat.Tool) bool {
	if len(tools) > 0 {
		return true
	}
	for _, m := range msgs {
		if m.Role == gen.RoleTool || len(m.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// chatIDsUntraced renders a chat prompt whose message content cannot be
// traced through the rendering: a template that does not show tool
// results itself gets them as JSON text (chat's polyfill), which no
// content marker survives. Every content is then held to the rule tool
// text is held to, no special token's text in it, and the prompt is
// tokenized with special parsing throughout: what it parses as special
// tokens is the template's own.
func (e *Engine) chatIDsUntraced(msgs []chat.Message, tools []chat.Tool, effort string) ([]int32, error) {
	specials := e.tok.SpecialTexts()
	for i, m := range msgs {
		for _, sp := range specials {
			if strings.Contains(m.Content, sp) {
				return nil, promptError(gen.CodeInvalidPrompt, fmt.Sprintf("messages[%d].content", i),
					"with tool results in the history, message content cannot hold the text of the model's special token %q", sp)
			}
		}
	}
	bos, eos := e.tok.TokenText(e.tok.BOS()), e.tok.TokenText(e.tok.EOS())
	text, err := chat.Render(e.tmpl, msgs, chat.Options{AddGenerationPrompt: true, BOS: bos, EOS: eos, Now: e.now(), Tools: tools, ReasoningEffort: effort})
	if err != nil {
		ge := gen.Errorf(gen.CodeInvalidPrompt, "messages", "the model's chat template failed on these messages: %v", err)
		ge.Err = err
		return nil, fmt.Errorf("%w: %w", ErrPrompt, ge)
	}
	text = chat.TrimAdded(text, bos, eos, e.tok.AddBOS(), e.tok.AddEOS())
	return e.tok.Encode(text, true, true), nil
}
