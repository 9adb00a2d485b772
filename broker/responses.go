package broker

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// The Responses API (POST /v1/responses) runs the same generation as a
// chat completion: instructions become a system message, input items the
// conversation, function tools the chat tools. Nothing is stored: store
// is accepted (true or false) and has no effect, previous_response_id
// and conversation are refused with a 400, and GET /v1/responses/{id} is
// a 404 that says so. The model's tool calls are function_call output
// items after the message item (call_id is the call's id, to send back
// in a function_call_output item), their arguments streamed as the model
// writes them. text.format json_object and json_schema constrain the
// output as a chat completion's response_format does.

// responseRequest is a decoded POST /v1/responses body.
type responseRequest struct {
	genRequest
	instructions *string
	maxOutput    *int
	tools        []gen.Tool // as given, echoed in the response
	choice       any        // tool_choice as echoed: a string or {"type":"function","name":...}
	metadata     json.RawMessage
	store        bool
	text         map[string]any // text as echoed: the format, the verbosity
}

func decodeResponseRequest(body []byte) (*responseRequest, error) {
	fields, err := objectFields(body, "")
	if err != nil {
		return nil, err
	}
	r := &responseRequest{store: true, choice: gen.ChoiceAuto}
	r.chat = true
	r.Sampling = gen.DefaultSampling()
	r.ParallelToolCalls = true
	var input json.RawMessage
	for _, f := range fields {
		if isNull(f.raw) {
			continue
		}
		s := &r.Sampling
		switch f.name {
		case "input":
			input = f.raw
		case "model":
			r.Model, err = decString(f.raw, f.name)
		case "instructions":
			var in string
			if in, err = decString(f.raw, f.name); err == nil {
				r.instructions = &in
			}
		case "max_output_tokens":
			var n int64
			if n, err = decInt(f.raw, f.name, 1, ipc.MaxTokens-1); err == nil {
				m := int(n)
				r.maxOutput, r.MaxTokens = &m, m
			}
		case "temperature":
			s.Temperature, err = decFloat(f.raw, f.name, 0, ipc.MaxTemperature)
		case "top_p":
			s.TopP, err = decFloat(f.raw, f.name, 0, 1)
		case "stream":
			r.Stream, err = decBool(f.raw, f.name)
		case "store":
			r.store, err = decBool(f.raw, f.name)
		case "tools":
			r.tools, err = decodeResponseTools(f.raw)
			r.Tools = r.tools
		case "tool_choice":
			r.ToolChoice, r.choice, err = decodeResponseToolChoice(f.raw)
			r.choiceSet = true
		case "parallel_tool_calls":
			r.ParallelToolCalls, err = decBool(f.raw, f.name)
			r.parallelSet = true
		case "metadata":
			if err = checkMetadata(f.raw); err == nil {
				r.metadata = f.raw
			}
		case "user", "safety_identifier", "prompt_cache_key":
			_, err = decString(f.raw, f.name)
		case "service_tier":
			err = checkEnum(f.raw, f.name, "auto", "default", "flex", "scale", "priority")
		case "truncation":
			err = checkEnum(f.raw, f.name, "auto", "disabled")
		case "text":
			var format gen.Format
			if format, r.text, err = decodeResponseText(f.raw); err == nil {
				err = r.setFormat(format, "text.format")
			}
		case "background":
			var b bool
			if b, err = decBool(f.raw, f.name); err == nil && b {
				err = invalidCode(f.name, "unsupported_value", "background responses need server-side storage, which this server does not have")
			}
		case "previous_response_id", "conversation":
			err = invalidCode(f.name, "unsupported_value", "%s is not supported: this server stores no responses or conversations; send the whole conversation as input", f.name)
		case "reasoning":
			r.ReasoningEffort, err = decodeResponseReasoning(f.raw)
		case "include", "prompt", "top_logprobs", "max_tool_calls", "stream_options":
			err = invalidCode(f.name, "unsupported_value", "%s is not supported by this server", f.name)
		default:
			err = unknownField(f.name)
		}
		if err != nil {
			return nil, err
		}
	}
	if input == nil {
		return nil, invalid("input", "input is required")
	}
	if r.Messages, err = decodeResponseInput(input); err != nil {
		return nil, err
	}
	if r.instructions != nil {
		r.Messages = append([]gen.Message{{Role: gen.RoleSystem, Content: *r.instructions}}, r.Messages...)
	}
	if len(r.Messages) > gen.MaxMessages {
		return nil, invalid("input", "input has %d items, at most %d", len(r.Messages), gen.MaxMessages)
	}
	if err := r.checkTools(); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeResponseText decodes text: {"format": {...}, "verbosity": ...}.
// The format is OpenAI's Responses shape, the fields of a chat
// completion's response_format.json_schema one level up: {"type":
// "text"}, {"type": "json_object"} or {"type": "json_schema", "name",
// "schema", "description", "strict"}; json_object and json_schema take
// the grammar-constrained sampling chat completions use. It returns the
// format and the text object the Response echoes.
func decodeResponseText(raw json.RawMessage) (gen.Format, map[string]any, error) {
	var format gen.Format
	echo := map[string]any{"format": map[string]any{"type": gen.FormatText}}
	fields, err := objectFields(raw, "text")
	if err != nil {
		return format, nil, err
	}
	for _, f := range fields {
		p := "text." + f.name
		if isNull(f.raw) {
			continue
		}
		switch f.name {
		case "verbosity":
			var v string
			if err = checkEnum(f.raw, p, "low", "medium", "high"); err == nil {
				v, err = decString(f.raw, p)
				echo["verbosity"] = v
			}
		case "format":
			var shown map[string]any
			if format, shown, err = decodeTextFormat(f.raw); err == nil {
				echo["format"] = shown
			}
		default:
			err = unknownField(p)
		}
		if err != nil {
			return format, nil, err
		}
	}
	return format, echo, nil
}

// decodeTextFormat decodes text.format and returns it with its echo.
func decodeTextFormat(raw json.RawMessage) (gen.Format, map[string]any, error) {
	const param = "text.format"
	var f gen.Format
	fields, err := objectFields(raw, param)
	if err != nil {
		return f, nil, err
	}
	// The type decides which other fields are allowed: read it first.
	for _, fl := range fields {
		if fl.name != "type" {
			continue
		}
		if f.Type, err = decString(fl.raw, param+".type"); err != nil {
			return f, nil, err
		}
		switch f.Type {
		case gen.FormatText, gen.FormatJSONObject, gen.FormatJSONSchema:
		default:
			return f, nil, invalidCode(param+".type", "unsupported_value", "text.format.type must be \"text\", \"json_object\" or \"json_schema\", got %q", abbreviate(f.Type))
		}
	}
	if f.Type == "" {
		return f, nil, invalid(param+".type", "text.format.type is required")
	}
	shown := map[string]any{"type": f.Type}
	var haveName, haveSchema bool
	for _, fl := range fields {
		p := param + "." + fl.name
		if fl.name == "type" {
			continue
		}
		if f.Type != gen.FormatJSONSchema {
			return f, nil, invalid(p, "%s is only allowed with text.format.type \"json_schema\"", p)
		}
		if isNull(fl.raw) && fl.name != "name" && fl.name != "schema" {
			continue
		}
		switch fl.name {
		case "name":
			f.Name, err = decodeName(fl.raw, p)
			shown["name"], haveName = f.Name, true
		case "description":
			var d string
			if d, err = decString(fl.raw, p); err == nil && len(d) > gen.MaxTextBytes {
				err = invalid(p, "%s has %d bytes, at most %d", p, len(d), gen.MaxTextBytes)
			}
			shown["description"] = d
		case "schema":
			f.Schema, err = decodeSchema(fl.raw, p)
			shown["schema"], haveSchema = json.RawMessage(f.Schema), true
		case "strict":
			f.Strict, err = decBool(fl.raw, p)
			shown["strict"] = f.Strict
		default:
			err = unknownField(p)
		}
		if err != nil {
			return f, nil, err
		}
	}
	if f.Type == gen.FormatJSONSchema {
		switch {
		case !haveName:
			return f, nil, invalid(param+".name", "text.format.name is required with type \"json_schema\"")
		case !haveSchema:
			return f, nil, invalid(param+".schema", "text.format.schema is required with type \"json_schema\"")
		}
		if _, ok := shown["strict"]; !ok {
			shown["strict"] = false
		}
	}
	return f, shown, nil
}

// responseParams maps the chat request fields the engine names in its
// errors to the Responses API's own.
var responseParams = []struct{ chat, resp string }{
	{"response_format.json_schema.schema", "text.format.schema"},
	{"response_format", "text.format"},
	{"max_tokens", "max_output_tokens"},
}

// responseError renames the param of err, a refusal of the request, from
// the chat completion field the generation names to the Responses API's.
func responseError(err error) error {
	if err == nil {
		return nil
	}
	ae := toAPIError(err)
	for _, m := range responseParams {
		if ae.Param == m.chat || strings.HasPrefix(ae.Param, m.chat+".") {
			c := *ae
			c.Param = m.resp + strings.TrimPrefix(ae.Param, m.chat)
			return &c
		}
	}
	return err
}

// decodeResponseTools decodes [{"type":"function","name",...}]; other
// tool types (web search, file search, computer use) are refused.
func decodeResponseTools(raw json.RawMessage) ([]gen.Tool, error) {
	items, err := arrayItems(raw, "tools")
	if err != nil {
		return nil, err
	}
	if len(items) > gen.MaxTools {
		return nil, invalid("tools", "tools has %d entries, at most %d", len(items), gen.MaxTools)
	}
	tools := make([]gen.Tool, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("tools[%d]", i)
		fields, err := objectFields(it, p)
		if err != nil {
			return nil, err
		}
		var t gen.Tool
		var haveType, haveName bool
		for _, f := range fields {
			q := p + "." + f.name
			if isNull(f.raw) && f.name != "name" && f.name != "type" {
				continue
			}
			switch f.name {
			case "type":
				if err = expectString(f.raw, q, "function"); err != nil {
					err = invalidCode(q, "unsupported_value", "only tools of type \"function\" are supported")
				}
				haveType = true
			case "name":
				t.Name, err = decodeName(f.raw, q)
				haveName = true
			case "description":
				if t.Description, err = decString(f.raw, q); err == nil && len(t.Description) > gen.MaxTextBytes {
					err = invalid(q, "%s has %d bytes, at most %d", q, len(t.Description), gen.MaxTextBytes)
				}
			case "parameters":
				t.Parameters, err = decodeSchema(f.raw, q)
			case "strict":
				t.Strict, err = decBool(f.raw, q)
			default:
				err = unknownField(q)
			}
			if err != nil {
				return nil, err
			}
		}
		if !haveType {
			return nil, invalid(p+".type", "%s.type is required", p)
		}
		if !haveName {
			return nil, invalid(p+".name", "%s.name is required", p)
		}
		tools = append(tools, t)
	}
	if err := checkToolNames(tools, "tools"); err != nil {
		return nil, err
	}
	return tools, nil
}

// decodeResponseToolChoice decodes "none", "auto", "required" or
// {"type":"function","name":...}, and returns it as it is echoed.
func decodeResponseToolChoice(raw json.RawMessage) (gen.ToolChoice, any, error) {
	const param = "tool_choice"
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, param)
		if err != nil {
			return gen.ToolChoice{}, nil, err
		}
		switch s {
		case gen.ChoiceNone, gen.ChoiceAuto, gen.ChoiceRequired:
			return gen.ToolChoice{Mode: s}, s, nil
		}
		return gen.ToolChoice{}, nil, invalid(param, "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"name\": ...}, got %q", abbreviate(s))
	}
	fields, err := objectFields(raw, param)
	if err != nil {
		return gen.ToolChoice{}, nil, err
	}
	c := gen.ToolChoice{Mode: gen.ChoiceFunction}
	var haveType bool
	for _, f := range fields {
		p := param + "." + f.name
		switch f.name {
		case "type":
			if err = expectString(f.raw, p, "function"); err != nil {
				err = invalidCode(p, "unsupported_value", "only a function tool_choice is supported")
			}
			haveType = true
		case "name":
			c.Name, err = decodeName(f.raw, p)
		default:
			err = unknownField(p)
		}
		if err != nil {
			return c, nil, err
		}
	}
	switch {
	case !haveType:
		return c, nil, invalid(param+".type", "tool_choice.type is required")
	case c.Name == "":
		return c, nil, invalid(param+".name", "tool_choice.name is required")
	}
	return c, map[string]string{"type": "function", "name": c.Name}, nil
}

// decodeResponseReasoning decodes the reasoning configuration: its effort
// goes to the template (as llama-server gives it); a summary is accepted
// and not made (the reasoning item carries the reasoning itself).
func decodeResponseReasoning(raw json.RawMessage) (string, error) {
	fields, err := objectFields(raw, "reasoning")
	if err != nil {
		return "", err
	}
	effort := ""
	for _, f := range fields {
		p := "reasoning." + f.name
		if isNull(f.raw) {
			continue
		}
		switch f.name {
		case "effort":
			if err = checkEnum(f.raw, p, "minimal", "low", "medium", "high"); err == nil {
				effort, err = decString(f.raw, p)
			}
		case "summary", "generate_summary":
			err = checkEnum(f.raw, p, "auto", "concise", "detailed")
		default:
			err = unknownField(p)
		}
		if err != nil {
			return "", err
		}
	}
	return effort, nil
}

// decodeResponseInput turns input — a string, or a list of items — into
// chat messages. Items: messages {"role", "content", "type": "message"}
// whose content is a string or input_text/output_text parts;
// function_call items (joined into the assistant message before them),
// function_call_output items (tool messages) and reasoning items (the
// reasoning_content of the assistant message before them, or of one of
// their own, as llama-server reads them).
func decodeResponseInput(raw json.RawMessage) ([]gen.Message, error) {
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, "input")
		if err != nil {
			return nil, err
		}
		return []gen.Message{{Role: gen.RoleUser, Content: s}}, nil
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid("input", "input must be a string or an array of input items")
	}
	items, err := arrayItems(raw, "input")
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, invalid("input", "input must not be an empty array")
	}
	if len(items) > gen.MaxMessages {
		return nil, invalid("input", "input has %d items, at most %d", len(items), gen.MaxMessages)
	}
	var msgs []gen.Message
	for i, it := range items {
		p := fmt.Sprintf("input[%d]", i)
		fields, err := objectFields(it, p)
		if err != nil {
			return nil, err
		}
		kind := "message"
		for _, f := range fields {
			if f.name == "type" {
				if kind, err = decString(f.raw, p+".type"); err != nil {
					return nil, err
				}
			}
		}
		switch kind {
		case "message":
			m, err := decodeResponseMessage(fields, p)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		case "function_call":
			call, err := decodeResponseCall(fields, p)
			if err != nil {
				return nil, err
			}
			if n := len(msgs); n > 0 && msgs[n-1].Role == gen.RoleAssistant && len(msgs[n-1].ToolCalls) < gen.MaxToolCalls {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			} else {
				msgs = append(msgs, gen.Message{Role: gen.RoleAssistant, ToolCalls: []gen.ToolCall{call}})
			}
		case "function_call_output":
			m, err := decodeResponseCallOutput(fields, p)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, m)
		case "reasoning":
			text, err := decodeResponseReasoningItem(fields, p)
			if err != nil {
				return nil, err
			}
			if n := len(msgs); n > 0 && msgs[n-1].Role == gen.RoleAssistant {
				msgs[n-1].ReasoningContent += text
			} else {
				msgs = append(msgs, gen.Message{Role: gen.RoleAssistant, ReasoningContent: text})
			}
		default:
			return nil, invalidCode(p+".type", "unsupported_value", "input items of type %q are not supported (message, function_call, function_call_output and reasoning are)", abbreviate(kind))
		}
	}
	return msgs, nil
}

// decodeResponseReasoningItem decodes a reasoning item this server
// returned (or OpenAI's shape of one): its content's reasoning_text
// parts, joined; its id, summary, status and encrypted_content change
// nothing.
func decodeResponseReasoningItem(fields []field, p string) (string, error) {
	var text strings.Builder
	for _, f := range fields {
		q := p + "." + f.name
		if isNull(f.raw) {
			continue
		}
		var err error
		switch f.name {
		case "type", "id", "status", "encrypted_content":
			_, err = decString(f.raw, q)
		case "summary":
			_, err = arrayItems(f.raw, q)
		case "content":
			var parts []json.RawMessage
			if parts, err = arrayItems(f.raw, q); err != nil {
				return "", err
			}
			for j, part := range parts {
				pq := fmt.Sprintf("%s[%d]", q, j)
				pf, err := objectFields(part, pq)
				if err != nil {
					return "", err
				}
				for _, g := range pf {
					switch g.name {
					case "type":
						err = checkEnum(g.raw, pq+".type", "reasoning_text")
					case "text":
						var s string
						if s, err = decString(g.raw, pq+".text"); err == nil {
							text.WriteString(s)
						}
					default:
						err = unknownField(pq + "." + g.name)
					}
					if err != nil {
						return "", err
					}
				}
			}
		default:
			err = unknownField(q)
		}
		if err != nil {
			return "", err
		}
	}
	return text.String(), nil
}

// decodeResponseMessage decodes a message item's fields.
func decodeResponseMessage(fields []field, p string) (gen.Message, error) {
	var m gen.Message
	var haveContent bool
	var err error
	for _, f := range fields {
		q := p + "." + f.name
		if isNull(f.raw) && f.name != "role" && f.name != "content" {
			continue
		}
		switch f.name {
		case "type":
		case "role":
			var role string
			if role, err = decString(f.raw, q); err == nil {
				switch role {
				case "user":
					m.Role = gen.RoleUser
				case "assistant":
					m.Role = gen.RoleAssistant
				case "system", "developer":
					m.Role = gen.RoleSystem
				default:
					err = invalid(q, "%s must be user, assistant, system or developer, got %q", q, abbreviate(role))
				}
			}
		case "content":
			m.Content, err = decodeResponseContent(f.raw, q)
			haveContent = true
		case "id":
			_, err = decString(f.raw, q)
		case "status":
			err = checkEnum(f.raw, q, "in_progress", "completed", "incomplete")
		default:
			err = unknownField(q)
		}
		if err != nil {
			return m, err
		}
	}
	switch {
	case m.Role == "":
		return m, invalid(p+".role", "%s.role is required", p)
	case !haveContent:
		return m, invalid(p+".content", "%s.content is required", p)
	}
	return m, nil
}

// decodeResponseContent decodes a string or a list of text parts
// (input_text, and output_text as an assistant's own answer comes back),
// joined.
func decodeResponseContent(raw json.RawMessage, p string) (string, error) {
	if len(raw) > 0 && raw[0] == '"' {
		return decString(raw, p)
	}
	items, err := arrayItems(raw, p)
	if err != nil {
		return "", invalid(p, "%s must be a string or an array of content parts", p)
	}
	var b strings.Builder
	for i, it := range items {
		q := fmt.Sprintf("%s[%d]", p, i)
		fields, err := objectFields(it, q)
		if err != nil {
			return "", err
		}
		var typ, text string
		var haveText bool
		for _, f := range fields {
			if f.name == "type" {
				if typ, err = decString(f.raw, q+".type"); err != nil {
					return "", err
				}
			}
		}
		if typ != "input_text" && typ != "output_text" {
			return "", invalidCode(q+".type", "unsupported_value", "content parts of type %q are not supported (input_text and output_text are)", abbreviate(typ))
		}
		for _, f := range fields {
			r := q + "." + f.name
			switch f.name {
			case "type":
			case "text":
				text, err = decString(f.raw, r)
				haveText = true
			case "annotations", "logprobs":
				if !isNull(f.raw) {
					_, err = arrayItems(f.raw, r)
				}
			default:
				err = unknownField(r)
			}
			if err != nil {
				return "", err
			}
		}
		if !haveText {
			return "", invalid(q+".text", "%s.text is required", q)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// decodeItemMeta checks the fields every call item may carry besides its
// own: type (checked by the caller), and the id and status an earlier
// response gave it. It reports whether f was one of them.
func decodeItemMeta(f field, q string) (bool, error) {
	switch f.name {
	case "type":
		return true, nil
	case "id":
		if isNull(f.raw) {
			return true, nil
		}
		_, err := decString(f.raw, q)
		return true, err
	case "status":
		if isNull(f.raw) {
			return true, nil
		}
		return true, checkEnum(f.raw, q, "in_progress", "completed", "incomplete")
	}
	return false, nil
}

// decodeCallID decodes a call_id: 1 to gen.MaxIDBytes bytes.
func decodeCallID(raw json.RawMessage, q string) (string, error) {
	id, err := decString(raw, q)
	if err == nil && (id == "" || len(id) > gen.MaxIDBytes) {
		err = invalid(q, "%s must have 1 to %d bytes", q, gen.MaxIDBytes)
	}
	return id, err
}

// decodeResponseCall decodes a function_call item.
func decodeResponseCall(fields []field, p string) (gen.ToolCall, error) {
	var c gen.ToolCall
	var haveArgs bool
	var err error
	for _, f := range fields {
		q := p + "." + f.name
		if ok, merr := decodeItemMeta(f, q); ok {
			if merr != nil {
				return c, merr
			}
			continue
		}
		switch f.name {
		case "call_id":
			c.ID, err = decodeCallID(f.raw, q)
		case "name":
			c.Name, err = decodeName(f.raw, q)
		case "arguments":
			if c.Arguments, err = decString(f.raw, q); err == nil && len(c.Arguments) > gen.MaxTextBytes {
				err = invalid(q, "%s has %d bytes, at most %d", q, len(c.Arguments), gen.MaxTextBytes)
			}
			haveArgs = true
		default:
			err = unknownField(q)
		}
		if err != nil {
			return c, err
		}
	}
	switch {
	case c.ID == "":
		return c, invalid(p+".call_id", "%s.call_id is required", p)
	case c.Name == "":
		return c, invalid(p+".name", "%s.name is required", p)
	case !haveArgs:
		return c, invalid(p+".arguments", "%s.arguments is required", p)
	}
	return c, nil
}

// decodeResponseCallOutput decodes a function_call_output item.
func decodeResponseCallOutput(fields []field, p string) (gen.Message, error) {
	m := gen.Message{Role: gen.RoleTool}
	var haveOutput bool
	var err error
	for _, f := range fields {
		q := p + "." + f.name
		if ok, merr := decodeItemMeta(f, q); ok {
			if merr != nil {
				return m, merr
			}
			continue
		}
		switch f.name {
		case "call_id":
			m.ToolCallID, err = decodeCallID(f.raw, q)
		case "output":
			m.Content, err = decodeResponseContent(f.raw, q)
			haveOutput = true
		default:
			err = unknownField(q)
		}
		if err != nil {
			return m, err
		}
	}
	switch {
	case m.ToolCallID == "":
		return m, invalid(p+".call_id", "%s.call_id is required", p)
	case !haveOutput:
		return m, invalid(p+".output", "%s.output is required", p)
	}
	return m, nil
}

// respObjectJSON is OpenAI's Response object.
type respObjectJSON struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	CreatedAt         int64           `json:"created_at"`
	Status            string          `json:"status"`
	Error             any             `json:"error"`
	IncompleteDetails *incompleteJSON `json:"incomplete_details"`
	Instructions      *string         `json:"instructions"`
	MaxOutputTokens   *int            `json:"max_output_tokens"`
	Model             string          `json:"model"`
	Output            []any           `json:"output"` // outputItemJSON, then functionCallItemJSON

	ParallelToolCalls bool              `json:"parallel_tool_calls"`
	PreviousID        *string           `json:"previous_response_id"`
	Store             bool              `json:"store"`
	Temperature       float32           `json:"temperature"`
	TopP              float32           `json:"top_p"`
	Text              any               `json:"text"`
	ToolChoice        any               `json:"tool_choice"`
	Tools             []responseToolOut `json:"tools"`
	Truncation        string            `json:"truncation"`
	Metadata          json.RawMessage   `json:"metadata"`
	Usage             *respUsageJSON    `json:"usage"`
}

type incompleteJSON struct {
	Reason string `json:"reason"`
}

type responseToolOut struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

type outputItemJSON struct {
	Type    string           `json:"type"`
	ID      string           `json:"id"`
	Status  string           `json:"status"`
	Role    string           `json:"role"`
	Content []outputTextJSON `json:"content"`
}

// functionCallItemJSON is an output item of a call the model made.
type functionCallItemJSON struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// reasoningItemJSON is the output item of the reply's reasoning, in
// llama-server's shape: the text as one reasoning_text part, no summary.
type reasoningItemJSON struct {
	Type             string              `json:"type"`
	ID               string              `json:"id"`
	Summary          []any               `json:"summary"`
	Content          []reasoningTextJSON `json:"content"`
	EncryptedContent string              `json:"encrypted_content"`
	Status           string              `json:"status"`
}

type reasoningTextJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type outputTextJSON struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type respUsageJSON struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// responseShaper builds the Response object and its stream events.
type responseShaper struct {
	req     *responseRequest
	base    respObjectJSON
	itemID  string
	rsID    string   // the reasoning item's id
	callIDs []string // the function_call items' ids, by call index
	seq     int
}

func randomHex() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func newResponseShaper(req *responseRequest, model string, created int64) *responseShaper {
	tools := make([]responseToolOut, 0, len(req.tools))
	for _, t := range req.tools {
		o := responseToolOut{Type: "function", Name: t.Name, Strict: t.Strict, Parameters: json.RawMessage("null")}
		if t.Description != "" {
			o.Description = &t.Description
		}
		if t.Parameters != "" {
			o.Parameters = json.RawMessage(t.Parameters)
		}
		tools = append(tools, o)
	}
	meta := req.metadata
	if meta == nil {
		meta = json.RawMessage("{}")
	}
	text := req.text
	if text == nil {
		text = map[string]any{"format": map[string]any{"type": gen.FormatText}}
	}
	return &responseShaper{req: req, itemID: "msg_" + randomHex(), rsID: "rs_" + randomHex(), base: respObjectJSON{
		ID: "resp_" + randomHex(), Object: "response", CreatedAt: created, Status: "in_progress",
		Instructions: req.instructions, MaxOutputTokens: req.maxOutput, Model: model, Output: []any{},
		ParallelToolCalls: req.ParallelToolCalls, Store: req.store, Temperature: req.Sampling.Temperature, TopP: req.Sampling.TopP,
		Text: text, ToolChoice: req.choice, Tools: tools,
		Truncation: "disabled", Metadata: meta,
	}}
}

func (s *responseShaper) part(text string) outputTextJSON {
	return outputTextJSON{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

func (s *responseShaper) item(status string, content []outputTextJSON) outputItemJSON {
	return outputItemJSON{Type: "message", ID: s.itemID, Status: status, Role: "assistant", Content: content}
}

// call is the output item of a tool call: its own item id, the call's
// id as call_id.
func (s *responseShaper) call(c gen.CallDelta, status string) functionCallItemJSON {
	for len(s.callIDs) <= c.Index {
		s.callIDs = append(s.callIDs, "fc_"+randomHex())
	}
	return functionCallItemJSON{Type: "function_call", ID: s.callIDs[c.Index], CallID: c.ID, Name: c.Name,
		Arguments: c.Arguments, Status: status}
}

// reasoning is the output item of the reply's reasoning.
func (s *responseShaper) reasoning(text, status string) reasoningItemJSON {
	content := []reasoningTextJSON{}
	if text != "" {
		content = append(content, reasoningTextJSON{Type: "reasoning_text", Text: text})
	}
	return reasoningItemJSON{Type: "reasoning", ID: s.rsID, Summary: []any{}, Content: content, Status: status}
}

// final is the whole Response once the generation ended: the message
// item (its text, perhaps empty, at output index 0), then one
// function_call item per call the model made, then the reasoning item
// when the reply had reasoning (last, so that the indexes of the items a
// stream opens as it goes do not depend on reasoning that may come
// later).
func (s *responseShaper) final(text, reasoning string, calls []gen.CallDelta, reason gen.FinishReason, u gen.Usage) respObjectJSON {
	r := s.base
	r.Status = "completed"
	itemStatus := "completed"
	if reason == gen.FinishLength {
		// max_output_tokens or the context ran out: OpenAI says
		// incomplete for both.
		r.Status, itemStatus = "incomplete", "incomplete"
		r.IncompleteDetails = &incompleteJSON{Reason: "max_output_tokens"}
	}
	r.Output = []any{s.item(itemStatus, []outputTextJSON{s.part(text)})}
	for i, c := range calls {
		status := "completed"
		if i == len(calls)-1 && reason == gen.FinishLength {
			status = "incomplete" // the budget may have cut its arguments
		}
		r.Output = append(r.Output, s.call(c, status))
	}
	if reasoning != "" {
		r.Output = append(r.Output, s.reasoning(reasoning, itemStatus))
	}
	r.Usage = &respUsageJSON{InputTokens: u.PromptTokens, InputTokensDetails: map[string]int{"cached_tokens": u.CachedTokens},
		OutputTokens: u.CompletionTokens, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens: u.PromptTokens + u.CompletionTokens}
	return r
}

// event is one stream event: its type, a sequence number, and fields.
func (s *responseShaper) event(typ string, fields map[string]any) map[string]any {
	fields["type"] = typ
	fields["sequence_number"] = s.seq
	s.seq++
	return fields
}

// responses answers POST /v1/responses; a refusal names the Responses
// API's fields.
func (s *Server) responses(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	return responseError(s.respond(w, r, ri))
}

func (s *Server) respond(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	req, err := decodeResponseRequest(body)
	if err != nil {
		return err
	}
	return s.serveGeneration(w, r, ri, &req.genRequest, func(g *generation, rc *http.ResponseController, info ModelInfo) error {
		shape := newResponseShaper(req, s.servedName(info), time.Now().Unix())
		if req.Stream {
			return streamResponse(g, shape, w, rc)
		}
		return collectResponse(g, shape, w)
	})
}

// collectResponse sends the generation as one Response object once it
// has ended.
func collectResponse(g *generation, shape *responseShaper, w http.ResponseWriter) error {
	var text, reasoning strings.Builder
	var calls []gen.CallDelta
	for {
		ev, err := g.next()
		if err != nil {
			return err
		}
		if ev.Kind == EventText {
			text.WriteString(ev.Text)
			reasoning.WriteString(ev.Reasoning)
			for _, c := range ev.ToolCalls {
				calls = gen.JoinCall(calls, c)
			}
			continue
		}
		u := ev.Usage
		if u.PromptTokens == 0 {
			u.PromptTokens = g.ri.promptTokens
		}
		return writeJSON(w, http.StatusOK, shape.final(text.String(), reasoning.String(), calls, ev.Finish, u))
	}
}

// streamResponse sends the generation as the Responses API's events:
// response.created and .in_progress, one message item with one
// output_text part (added, deltas, done), a function_call item per call
// (added, its arguments as they arrive in function_call_arguments.delta
// events, then done), and response.completed (or response.incomplete
// when the output budget ran out). As for chat streams, the headers wait
// for the first event so a refusal is a whole 4xx response; a failure
// after them ends the stream with response.failed, the Response with its
// error and the output so far, then an error event (the SDKs raise it).
func streamResponse(g *generation, shape *responseShaper, w http.ResponseWriter, rc *http.ResponseController) error {
	first, out, err := g.startStream(w, rc)
	if err != nil {
		return err
	}
	st := &responseStream{g: g, shape: shape, out: out, open: -1}
	g.ri.streamError = st.fail
	return st.run(first)
}

// responseStream is the state of a streamed response: the output so far
// and the call whose arguments are arriving.
type responseStream struct {
	g     *generation
	shape *responseShaper
	out   *sse
	text  strings.Builder
	// reasoning is the reply's reasoning so far, sent as its item at the
	// end (see final)
	reasoning strings.Builder
	calls     []gen.CallDelta // the calls so far, their argument pieces joined
	open      int             // the index of the call whose item is open, or -1
}

// send writes one event.
func (st *responseStream) send(typ string, fields map[string]any) error {
	b, err := marshal(st.shape.event(typ, fields))
	if err != nil {
		return err
	}
	if err := st.out.sendNamed(typ, b); err != nil {
		return st.g.clientGone(err)
	}
	return nil
}

type respStep struct {
	typ    string
	fields map[string]any
}

func (st *responseStream) sendAll(steps ...respStep) error {
	for _, s := range steps {
		if err := st.send(s.typ, s.fields); err != nil {
			return err
		}
	}
	return nil
}

// at gives the fields that place an event in the message item's text.
func (st *responseStream) at(extra map[string]any) map[string]any {
	extra["item_id"], extra["output_index"], extra["content_index"] = st.shape.itemID, 0, 0
	return extra
}

func (st *responseStream) run(first Event) error {
	base := st.shape.base
	if err := st.sendAll(
		respStep{"response.created", map[string]any{"response": base}},
		respStep{"response.in_progress", map[string]any{"response": base}},
		respStep{"response.output_item.added", map[string]any{"output_index": 0, "item": st.shape.item("in_progress", []outputTextJSON{})}},
		respStep{"response.content_part.added", st.at(map[string]any{"part": st.shape.part("")})},
	); err != nil {
		return err
	}
	for ev := first; ; {
		if ev.Kind != EventText {
			return st.finish(ev)
		}
		st.text.WriteString(ev.Text)
		st.reasoning.WriteString(ev.Reasoning)
		if ev.Text != "" {
			if err := st.send("response.output_text.delta", st.at(map[string]any{"delta": ev.Text, "logprobs": []any{}})); err != nil {
				return err
			}
		}
		for _, c := range ev.ToolCalls {
			if err := st.callPiece(c); err != nil {
				return err
			}
		}
		var err error
		if ev, err = st.g.next(); err != nil {
			return err
		}
	}
}

// callPiece sends a piece of a call: a new call's item (added with
// empty arguments, as OpenAI's), after closing the one before, and the
// piece's argument text as a delta.
func (st *responseStream) callPiece(c gen.CallDelta) error {
	if c.Index != st.open {
		if err := st.closeCall("completed"); err != nil {
			return err
		}
		st.open = c.Index
		st.calls = append(st.calls, gen.CallDelta{Index: c.Index, ID: c.ID, Name: c.Name})
		pending := st.shape.call(st.calls[len(st.calls)-1], "in_progress")
		if err := st.send("response.output_item.added", map[string]any{"output_index": 1 + c.Index, "item": pending}); err != nil {
			return err
		}
	}
	if c.Arguments == "" {
		return nil
	}
	cur := &st.calls[len(st.calls)-1]
	cur.Arguments += c.Arguments
	return st.send("response.function_call_arguments.delta", map[string]any{"item_id": st.shape.call(*cur, "").ID, "output_index": 1 + c.Index, "delta": c.Arguments})
}

// closeCall ends the open call's item, if any, with status.
func (st *responseStream) closeCall(status string) error {
	if st.open < 0 {
		return nil
	}
	c := st.calls[len(st.calls)-1]
	st.open = -1
	done := st.shape.call(c, status)
	return st.sendAll(
		respStep{"response.function_call_arguments.done", map[string]any{"item_id": done.ID, "output_index": 1 + c.Index, "arguments": c.Arguments}},
		respStep{"response.output_item.done", map[string]any{"output_index": 1 + c.Index, "item": done}},
	)
}

// finish ends the stream after the generation's last event.
func (st *responseStream) finish(ev Event) error {
	status := "completed"
	if ev.Finish == gen.FinishLength {
		status = "incomplete"
	}
	if err := st.closeCall(status); err != nil {
		return err
	}
	u := ev.Usage
	if u.PromptTokens == 0 {
		u.PromptTokens = st.g.ri.promptTokens
	}
	final := st.shape.final(st.text.String(), st.reasoning.String(), st.calls, ev.Finish, u)
	msg := final.Output[0].(outputItemJSON)
	part := msg.Content[0]
	last := "response.completed"
	if final.Status == "incomplete" {
		last = "response.incomplete"
	}
	steps := []respStep{
		{"response.output_text.done", st.at(map[string]any{"text": part.Text, "logprobs": []any{}})},
		{"response.content_part.done", st.at(map[string]any{"part": part})},
		{"response.output_item.done", map[string]any{"output_index": 0, "item": msg}},
	}
	if rs := st.reasoning.String(); rs != "" {
		// The reasoning item, last of the output (llama-server's events:
		// its text in response.reasoning_text.delta).
		i := len(final.Output) - 1
		done := final.Output[i].(reasoningItemJSON)
		steps = append(steps,
			respStep{"response.output_item.added", map[string]any{"output_index": i, "item": st.shape.reasoning("", "in_progress")}},
			respStep{"response.reasoning_text.delta", map[string]any{"item_id": done.ID, "output_index": i, "content_index": 0, "delta": rs}},
			respStep{"response.reasoning_text.done", map[string]any{"item_id": done.ID, "output_index": i, "content_index": 0, "text": rs}},
			respStep{"response.output_item.done", map[string]any{"output_index": i, "item": done}})
	}
	return st.sendAll(append(steps, respStep{last, map[string]any{"response": final}})...)
}

// responseErrorJSON is the Response object's error: code is one of
// OpenAI's closed list for a failed response.
type responseErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fail ends a stream that failed after its headers: response.failed with
// the Response as far as it got (status failed, its error, the output
// items so far incomplete), then an error event with the error's code,
// message and param.
func (st *responseStream) fail(e *APIError) {
	if e.Status == 499 {
		return // nobody is reading
	}
	r := st.shape.base
	r.Status = "failed"
	code := "server_error"
	switch {
	case e.Status == http.StatusTooManyRequests:
		code = "rate_limit_exceeded"
	case e.Status >= 400 && e.Status < 500:
		code = "invalid_prompt"
	}
	r.Error = responseErrorJSON{Code: code, Message: e.Message}
	r.Output = []any{st.shape.item("incomplete", []outputTextJSON{st.shape.part(st.text.String())})}
	for i, c := range st.calls {
		status := "completed"
		if i == len(st.calls)-1 && st.open >= 0 {
			status = "incomplete"
		}
		r.Output = append(r.Output, st.shape.call(c, status))
	}
	_ = st.sendAll(
		respStep{"response.failed", map[string]any{"response": r}},
		respStep{"error", map[string]any{"code": optional(e.Code), "message": e.Message, "param": optional(e.Param)}},
	)
}

// getResponse answers GET /v1/responses/{id}: nothing is stored.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request, ri *reqInfo) error {
	id := ri.params.ByName("id")
	return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "response_not_found",
		Message: "response " + strconv.Quote(abbreviate(id)) + " not found: this server stores no responses (store is accepted but has no effect)"}
}
