package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Detect returns the call format of a chat template: the family's own
// when the template describes tools itself (native, as chat.DescribesTools
// reports), else Generic, the format chat.Render describes to a family it
// renders in Go, and the syntax of a forced call for a Jinja template
// that shows no tools (its model is told of none, as in the current
// llama.cpp, and its unforced reply is content: chat.ToolsUntold).
func Detect(tmpl string, native bool) Format {
	if strings.Contains(tmpl, "<|channel|>") {
		return Harmony // gpt-oss: its replies are channels, whatever its tools
	}
	if !native {
		return Generic
	}
	switch {
	case strings.Contains(tmpl, "<tool_call>"):
		return Hermes
	case strings.Contains(tmpl, "[TOOL_CALLS]"):
		return Mistral
	case strings.Contains(tmpl, "<|start_header_id|>") || strings.Contains(tmpl, "<|python_tag|>"):
		return Llama3
	}
	return Generic
}

// Tool is a function a forced call may name.
type Tool struct {
	Name string
	// Parameters is the JSON Schema of the arguments; empty, null or {}
	// mean {"type": "object", "properties": {}}.
	Parameters json.RawMessage
}

// MaxSchema is the largest parameter schema Forced accepts, in bytes.
const MaxSchema = 256 << 10

// Constraint is the syntax a forced call must follow: Prefix, a JSON
// value matching Schema, Suffix; with Repeat, further calls follow, each
// after Separator. The literals may contain the text of special tokens
// ([TOOL_CALLS], <|python_tag|>, <tool_call> is plain text in Qwen's
// vocabulary); a grammar compiler matches them as text against the
// tokens' pieces.
type Constraint struct {
	Prefix, Suffix string
	Schema         json.RawMessage
	Repeat         bool
	Separator      string
}

// Forced returns the constraint that makes a model of format f call one
// of tools (tool_choice "required"; for a named function pass only that
// tool). With parallel false (parallel_tool_calls: false) exactly one
// call is allowed. The argument schemas are the clients' own: they are
// checked to be JSON and bounded here, compiled (and refused when
// unsupported) by the grammar package.
func Forced(f Format, tools []Tool, parallel bool) (Constraint, error) {
	if f == Harmony {
		// The function's name is in the message header, before the
		// arguments: one prefix and one schema cannot say it.
		return Constraint{}, fmt.Errorf("toolcall: a forced call (tool_choice required or a named function) is not supported in the Harmony format")
	}
	if err := check(f, 0); err != nil {
		return Constraint{}, err
	}
	if len(tools) == 0 {
		return Constraint{}, fmt.Errorf("toolcall: a forced call needs at least one tool")
	}
	argKey := "arguments"
	if f == Llama3 {
		argKey = "parameters"
	}
	calls := make([]json.RawMessage, len(tools))
	total := 0
	for i, t := range tools {
		if !validName(t.Name) {
			return Constraint{}, fmt.Errorf("toolcall: tool %d: bad function name %q", i, truncate(t.Name))
		}
		if total += len(t.Parameters); total > MaxSchema {
			return Constraint{}, fmt.Errorf("%w: parameter schemas of more than %d bytes", ErrTooLarge, MaxSchema)
		}
		params, err := parameters(t.Parameters)
		if err != nil {
			return Constraint{}, fmt.Errorf("toolcall: tool %d (%s): parameters: %w", i, t.Name, err)
		}
		props := []kv{{"name", obj(kv{"type", "string"}, kv{"const", t.Name})}, {argKey, params}}
		required := []string{"name", argKey}
		switch {
		case f == Mistral:
			// Mistral Nemo's template requires 9-character ids. The
			// grammar compiler has no pattern: the length is forced, and
			// an id of other characters is replaced by the parser.
			props = append(props, kv{"id", obj(kv{"type", "string"}, kv{"minLength", 9}, kv{"maxLength", 9})})
			required = append(required, "id")
		case f == Generic && parallel:
			// Bounded, as every string of the envelope: a weak model
			// would otherwise write an id until the budget ends.
			props = append(props, kv{"id", obj(kv{"type", "string"}, kv{"minLength", 4}, kv{"maxLength", 32})})
			required = append(required, "id")
		}
		// The envelope takes no other keys: they would be text the model
		// writes instead of the call.
		calls[i] = obj(kv{"type", "object"}, kv{"properties", obj(props...)}, kv{"required", required}, kv{"additionalProperties", false})
	}
	call := calls[0]
	if len(calls) > 1 {
		call = obj(kv{"anyOf", calls})
	}
	switch f {
	case Hermes:
		return Constraint{Prefix: "<tool_call>\n", Schema: call, Suffix: "\n</tool_call>", Repeat: parallel, Separator: "\n"}, nil
	case Mistral:
		arr := []kv{{"type", "array"}, {"items", call}, {"minItems", 1}}
		if !parallel {
			arr = append(arr, kv{"maxItems", 1})
		}
		return Constraint{Prefix: "[TOOL_CALLS]", Schema: obj(arr...)}, nil
	case Llama3:
		// Llama 3.x templates refuse more than one call per message.
		return Constraint{Schema: call}, nil
	}
	if parallel {
		return Constraint{Schema: obj(kv{"type", "object"}, kv{"properties", obj(kv{"tool_calls",
			obj(kv{"type", "array"}, kv{"items", call}, kv{"minItems", 1})})}, kv{"required", []string{"tool_calls"}},
			kv{"additionalProperties", false})}, nil
	}
	return Constraint{Schema: obj(kv{"type", "object"}, kv{"properties", obj(kv{"tool_call", call})},
		kv{"required", []string{"tool_call"}}, kv{"additionalProperties", false})}, nil
}

// GBNF writes the constraint as a GBNF root rule over valueRule, the
// rule the grammar compiler made of Schema.
func (c Constraint) GBNF(valueRule string) string {
	one := strings.TrimSpace(strings.Join([]string{gbnfLiteral(c.Prefix), valueRule, gbnfLiteral(c.Suffix)}, " "))
	one = strings.Join(strings.Fields(one), " ")
	if !c.Repeat {
		return "root ::= " + one + "\n"
	}
	sep := gbnfLiteral(c.Separator)
	return "root ::= " + one + " (" + strings.TrimSpace(sep+" "+one) + ")*\n"
}

// gbnfLiteral quotes s as a GBNF string ("" for an empty s).
func gbnfLiteral(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parameters checks a parameter schema, with llama.cpp's default for a
// missing, null or empty one.
func parameters(p json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(p)
	if len(t) == 0 || string(t) == "null" {
		return obj(kv{"type", "object"}, kv{"properties", obj()}), nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(t, &v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if len(v) == 0 {
		return obj(kv{"type", "object"}, kv{"properties", obj()}), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj writes an object with its members in the given order (a schema's
// property order is the order a model is asked to write them in).
func obj(members ...kv) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, _ := json.Marshal(m.v) // strings, numbers, slices and RawMessage only
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Markup returns the texts of call markup that a vocabulary may hold as
// special tokens (Mistral's [TOOL_CALLS], Llama's <|python_tag|>, the
// Hermes tags): an engine renders these tokens as their text in the
// output it parses, and lets a forced call's grammar match them.
func Markup() []string {
	return []string{"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>"}
}

// HarmonyMarkup returns the texts of Harmony's special tokens a reply is
// read by (gpt-oss's <|channel|>, <|message|>, …): an engine renders them
// as their text in the output of a Harmony model only (another model's
// <|end|> or <|start|> means something else).
func HarmonyMarkup() []string {
	return []string{hChannel, hMessage, "<|start|>", hEnd, hConstrain, hCall}
}
