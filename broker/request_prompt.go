package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lisa-llm/lisa/gen"
)

// decodeMessages decodes the messages of a chat request: every field of
// OpenAI's message types is accepted, checked by type, so a client can
// send back what it got (refusal, annotations, audio, tool_calls: null).
// Roles are system, developer (as system), user, assistant, tool and the
// deprecated function (as tool). Content is a string or an array of text
// parts, joined without separator (an assistant's refusal parts are
// dropped); name, refusal, annotations and audio change nothing here.
func decodeMessages(raw json.RawMessage) ([]gen.Message, error) {
	items, err := arrayItems(raw, "messages")
	if err != nil {
		return nil, err
	}
	if len(items) > gen.MaxMessages {
		return nil, invalid("messages", "%d messages, at most %d are allowed", len(items), gen.MaxMessages)
	}
	msgs := make([]gen.Message, 0, len(items))
	for i, it := range items {
		m, err := decodeMessage(it, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// messageFields lists the fields each role may carry besides role and
// content (OpenAI's message parameter types, plus what its responses
// carry so a client can send them back).
var messageFields = map[string][]string{
	"system":    {"name"},
	"developer": {"name"},
	"user":      {"name"},
	"assistant": {"name", "refusal", "annotations", "audio", "tool_calls", "function_call", "reasoning_content"},
	"tool":      {"tool_call_id"},
	"function":  {"name"},
}

func decodeMessage(raw json.RawMessage, param string) (gen.Message, error) {
	var m gen.Message
	fields, err := objectFields(raw, param)
	if err != nil {
		return m, err
	}
	role := ""
	for _, f := range fields {
		if f.name == "role" {
			if role, err = decString(f.raw, param+".role"); err != nil {
				return m, err
			}
		}
	}
	allowed, ok := messageFields[role]
	switch {
	case role == "":
		return m, invalid(param+".role", "%s.role is required", param)
	case !ok:
		return m, invalid(param+".role", "unsupported role %q (system, developer, user, assistant or tool)", abbreviate(role))
	}
	m.Role = role
	switch role {
	case "developer":
		m.Role = gen.RoleSystem
	case "function":
		m.Role = gen.RoleTool
	}
	var haveContent, haveCallID bool
	for _, f := range fields {
		p := param + "." + f.name
		if f.name == "role" || isNull(f.raw) {
			continue
		}
		if f.name != "content" && !slices.Contains(allowed, f.name) {
			return m, unknownField(p)
		}
		switch f.name {
		case "content":
			m.Content, err = decodeContent(f.raw, p, role == "assistant")
			haveContent = true
		case "name", "refusal":
			_, err = decString(f.raw, p)
		case "reasoning_content":
			// The reply's reasoning as this server (and llama-server)
			// returns it: the template shows it where it shows reasoning.
			m.ReasoningContent, err = decString(f.raw, p)
		case "annotations":
			_, err = arrayItems(f.raw, p)
		case "audio":
			err = checkAudioRef(f.raw, p)
		case "tool_calls":
			m.ToolCalls, err = decodeToolCalls(f.raw, p)
		case "function_call":
			var c gen.ToolCall
			if c, err = decodeCallFunction(f.raw, p); err == nil {
				m.ToolCalls = append(m.ToolCalls, c)
			}
		case "tool_call_id":
			if m.ToolCallID, err = decString(f.raw, p); err == nil && (m.ToolCallID == "" || len(m.ToolCallID) > gen.MaxIDBytes) {
				err = invalid(p, "%s must have 1 to %d bytes", p, gen.MaxIDBytes)
			}
			haveCallID = true
		}
		if err != nil {
			return m, err
		}
	}
	switch {
	case !haveContent && role != "assistant": // an assistant may have said nothing, or only refused or called
		return m, invalid(param+".content", "%s.content is required", param)
	case role == "tool" && !haveCallID:
		return m, invalid(param+".tool_call_id", "%s.tool_call_id is required", param)
	case len(m.ToolCalls) > gen.MaxToolCalls:
		return m, invalid(param+".tool_calls", "%d tool calls, at most %d", len(m.ToolCalls), gen.MaxToolCalls)
	}
	return m, nil
}

// checkAudioRef checks an assistant's {"id": ...} audio reference.
func checkAudioRef(raw json.RawMessage, param string) error {
	fields, err := objectFields(raw, param)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if f.name != "id" {
			return unknownField(param + "." + f.name)
		}
		if _, err := decString(f.raw, param+".id"); err != nil {
			return err
		}
	}
	return nil
}

// decodeToolCalls decodes an assistant's tool calls:
// [{"id","type":"function","function":{"name","arguments"}}].
func decodeToolCalls(raw json.RawMessage, param string) ([]gen.ToolCall, error) {
	items, err := arrayItems(raw, param)
	if err != nil {
		return nil, err
	}
	if len(items) > gen.MaxToolCalls {
		return nil, invalid(param, "%d tool calls, at most %d", len(items), gen.MaxToolCalls)
	}
	calls := make([]gen.ToolCall, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s[%d]", param, i)
		fields, err := objectFields(it, p)
		if err != nil {
			return nil, err
		}
		var c gen.ToolCall
		var haveFunction bool
		for _, f := range fields {
			fp := p + "." + f.name
			switch f.name {
			case "id":
				if c.ID, err = decString(f.raw, fp); err == nil && len(c.ID) > gen.MaxIDBytes {
					err = invalid(fp, "%s has %d bytes, at most %d", fp, len(c.ID), gen.MaxIDBytes)
				}
			case "type":
				err = expectString(f.raw, fp, "function")
			case "function":
				var fc gen.ToolCall
				if fc, err = decodeCallFunction(f.raw, fp); err == nil {
					c.Name, c.Arguments, haveFunction = fc.Name, fc.Arguments, true
				}
			default:
				return nil, unknownField(fp)
			}
			if err != nil {
				return nil, err
			}
		}
		if !haveFunction {
			return nil, invalid(p+".function", "%s.function is required", p)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

// decodeCallFunction decodes {"name","arguments"}; the arguments are kept
// as the text the model wrote, valid JSON or not (OpenAI's own note).
func decodeCallFunction(raw json.RawMessage, param string) (gen.ToolCall, error) {
	var c gen.ToolCall
	fields, err := objectFields(raw, param)
	if err != nil {
		return c, err
	}
	var haveName, haveArgs bool
	for _, f := range fields {
		p := param + "." + f.name
		switch f.name {
		case "name":
			c.Name, err = decodeName(f.raw, p)
			haveName = true
		case "arguments":
			if c.Arguments, err = decString(f.raw, p); err == nil && len(c.Arguments) > gen.MaxTextBytes {
				err = invalid(p, "%s has %d bytes, at most %d", p, len(c.Arguments), gen.MaxTextBytes)
			}
			haveArgs = true
		default:
			return c, unknownField(p)
		}
		if err != nil {
			return c, err
		}
	}
	switch {
	case !haveName:
		return c, invalid(param+".name", "%s.name is required", param)
	case !haveArgs:
		return c, invalid(param+".arguments", "%s.arguments is required", param)
	}
	return c, nil
}

// decodeContent decodes a string or an array of text parts (and, for an
// assistant, refusal parts, which are dropped).
func decodeContent(raw json.RawMessage, param string, refusals bool) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return decString(raw, param)
	}
	items, err := arrayItems(raw, param)
	if err != nil {
		return "", invalid(param, "%s must be a string or an array of text parts", param)
	}
	var b strings.Builder
	for j, it := range items {
		pp := fmt.Sprintf("%s[%d]", param, j)
		fields, err := objectFields(it, pp)
		if err != nil {
			return "", err
		}
		var typ, text string
		var haveText, haveRefusal bool
		for _, f := range fields {
			switch f.name {
			case "type":
				if typ, err = decString(f.raw, pp+".type"); err != nil {
					return "", err
				}
			case "text":
				if text, err = decString(f.raw, pp+".text"); err != nil {
					return "", err
				}
				haveText = true
			case "refusal":
				if _, err = decString(f.raw, pp+".refusal"); err != nil {
					return "", err
				}
				haveRefusal = true
			default:
				return "", unknownField(pp + "." + f.name)
			}
		}
		switch {
		case typ == "refusal" && refusals:
			if !haveRefusal || haveText {
				return "", invalid(pp+".refusal", "a refusal part has a refusal and no text")
			}
			continue
		case typ != "text":
			return "", invalidCode(pp+".type", "unsupported_value", "only content parts of type \"text\" are supported, got %q", abbreviate(typ))
		case !haveText || haveRefusal:
			return "", invalid(pp+".text", "%s.text is required", pp)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// decodePrompt accepts what OpenAI allows for one prompt: a string, an
// array holding one string, an array of token ids, or an array holding one
// array of token ids. Several prompts (batches) are refused: n is 1.
func (r *genRequest) decodePrompt(raw json.RawMessage) error {
	if len(raw) > 0 && raw[0] == '"' {
		// An empty string is allowed: the model starts from BOS alone, as
		// in llama.cpp's server.
		s, err := decString(raw, "prompt")
		r.Prompt = &s
		return err
	}
	items, err := arrayItems(raw, "prompt")
	if err != nil {
		return invalid("prompt", "prompt must be a string, an array of token ids, or an array of one of these")
	}
	if len(items) == 0 {
		return invalid("prompt", "prompt must not be an empty array")
	}
	first := items[0]
	if len(first) > 0 && (first[0] == '"' || first[0] == '[') {
		if len(items) != 1 {
			return invalidCode("prompt", "unsupported_value", "prompt holds %d prompts; only one per request is supported", len(items))
		}
		if first[0] == '"' {
			return r.decodePrompt(first)
		}
		if items, err = arrayItems(first, "prompt[0]"); err != nil {
			return err
		}
		if len(items) == 0 {
			return invalid("prompt[0]", "prompt[0] must not be an empty array")
		}
	}
	r.PromptIDs, err = decodeIDs(items, "prompt")
	return err
}

// decodeIDs decodes token ids (range-checked against the vocabulary later).
func decodeIDs(items []json.RawMessage, param string) ([]int32, error) {
	ids := make([]int32, len(items))
	for i, it := range items {
		n, err := decInt(it, fmt.Sprintf("%s[%d]", param, i), 0, math.MaxInt32)
		if err != nil {
			return nil, err
		}
		ids[i] = int32(n)
	}
	return ids, nil
}
