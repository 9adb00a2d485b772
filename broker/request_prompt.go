package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/lisa-llm/lisa/gen"
)

// decodeMessages decodes the messages of a chat request. Roles are system,
// developer (treated as system), user and assistant; content is a string
// or an array of {"type":"text","text":...} parts, joined without
// separator; "name" is accepted and ignored. Anything else is refused.
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

func decodeMessage(raw json.RawMessage, param string) (gen.Message, error) {
	var m gen.Message
	fields, err := objectFields(raw, param)
	if err != nil {
		return m, err
	}
	var haveContent bool
	for _, f := range fields {
		p := param + "." + f.name
		switch f.name {
		case "role":
			role, err := decString(f.raw, p)
			if err != nil {
				return m, err
			}
			switch role {
			case "system", "user", "assistant":
				m.Role = role
			case "developer":
				m.Role = "system"
			default:
				return m, invalid(p, "unsupported role %q (system, developer, user or assistant)", abbreviate(role))
			}
		case "content":
			if isNull(f.raw) {
				continue
			}
			if m.Content, err = decodeContent(f.raw, p); err != nil {
				return m, err
			}
			haveContent = true
		case "name":
			if !isNull(f.raw) {
				if _, err := decString(f.raw, p); err != nil {
					return m, err
				}
			}
		default:
			return m, invalidCode(p, "unknown_parameter", "unknown field %q", p)
		}
	}
	if m.Role == "" {
		return m, invalid(param+".role", "%s.role is required", param)
	}
	if !haveContent {
		return m, invalid(param+".content", "%s.content is required", param)
	}
	return m, nil
}

func decodeContent(raw json.RawMessage, param string) (string, error) {
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
		var haveText bool
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
			default:
				return "", invalidCode(pp+"."+f.name, "unknown_parameter", "unknown field %q", pp+"."+f.name)
			}
		}
		if typ != "text" {
			return "", invalidCode(pp+".type", "unsupported_value", "only content parts of type \"text\" are supported, got %q", abbreviate(typ))
		}
		if !haveText {
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
