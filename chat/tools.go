package chat

import (
	"fmt"
	"strings"
)

// What a template sees of tools and tool calls follows llama.cpp
// (common/chat.cpp): each message is {role, content, name?,
// tool_call_id?, tool_calls?} in that key order, content "" when the
// client sent null; a tool call is {type: "function", function: {name,
// arguments}, id?}; tools are [{type: "function", function: {name,
// description, parameters}}]. Arguments stay the JSON string OpenAI
// sends unless the template reads them as an object (Llama 3.1 iterates
// `arguments | items`, Qwen2.5 writes `arguments | tojson`), in which
// case they are parsed, as llama.cpp does for templates whose probe
// rendering uses the fields of an object argument.

// Markers of the probe conversation; a template that prints one uses
// the field it stands in.
const (
	argMarker      = "lisa-probe-argument-7f3a"
	toolMarker     = "lisa_probe_tool_7f3a"
	callMarker     = "lisa_probe_call_7f3a"
	responseMarker = "lisa-probe-response-7f3a"
)

// toolCaps is what a template does with tools, found as llama.cpp finds
// it (jinja/caps.cpp): by rendering a probe conversation.
type toolCaps struct {
	tools, toolCalls, responses, objectArgs bool
}

// probeCaps renders llama.cpp's probe conversation (a call with the
// object argument {"arg": ...}, its response, a tool) and reports which
// parts reached the output. llama.cpp watches which fields the template
// touches (an attribute read, an iteration, tojson); here each field's
// value is a marker, counted when its text reaches the output other than
// through a Python repr of the whole dict (llama.cpp does not count
// printing the object itself). When the probe with object arguments
// fails to render, it is rendered again with string arguments, and a
// failure there means no tool support, as in llama.cpp.
func probeCaps(tree []*stmt, bos, eos string) toolCaps {
	render := func(objArgs bool) (string, bool) {
		var args any = `{"arg": "` + argMarker + `"}`
		if objArgs {
			d := newDict(1)
			d.set("arg", argMarker)
			args = d
		}
		fn := newDict(2)
		fn.set("name", callMarker)
		fn.set("arguments", args)
		call := newDict(3)
		call.set("id", "call00001")
		call.set("type", "function")
		call.set("function", fn)
		msg := func(role, content string) *dict {
			d := newDict(3)
			d.set("role", role)
			d.set("content", content)
			return d
		}
		ass := msg("assistant", "")
		ass.set("tool_calls", []any{call})
		tool := msg("tool", responseMarker)
		tool.set("tool_call_id", "call00001")
		tools, err := toolValues([]Tool{{Name: toolMarker, Description: "Tool description",
			Parameters: `{"type": "object", "properties": {"arg": {"type": "string", "description": "Arg description"}}, "required": ["arg"]}`}})
		if err != nil {
			return "", false
		}
		vars := builtins()
		setClock(vars, probeTime)
		vars["messages"] = []any{msg("user", "User message"), ass, tool,
			msg("assistant", "The tool response was 'tool response'"), msg("user", "User message")}
		vars["tools"] = tools
		vars["bos_token"] = bos
		vars["eos_token"] = eos
		vars["add_generation_prompt"] = false
		out, err := renderJinja(tree, vars)
		return out, err == nil
	}
	out, ok := render(true)
	c := toolCaps{objectArgs: ok && strings.Count(out, argMarker) > strings.Count(out, "'arg': '"+argMarker+"'")}
	if !c.objectArgs {
		if out, ok = render(false); !ok {
			return toolCaps{}
		}
	}
	c.tools = strings.Contains(out, toolMarker)
	c.toolCalls = strings.Contains(out, callMarker)
	c.responses = strings.Contains(out, responseMarker)
	return c
}

// messageValues builds the messages variable. A message's reasoning is
// its reasoning_content, after content, as llama.cpp writes it; for a
// Harmony template (harmony) it is also its thinking, at the end, and an
// assistant message with reasoning and tool calls has no content, as
// llama.cpp's gpt-oss handler gives them (the template refuses content
// beside thinking in a call message).
func messageValues(msgs []Message, objArgs, harmony bool) ([]any, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		d := newDict(7)
		d.set("role", m.Role)
		if !harmony || m.ReasoningContent == "" || len(m.ToolCalls) == 0 {
			d.set("content", m.Content)
		}
		if m.ReasoningContent != "" {
			d.set("reasoning_content", m.ReasoningContent)
		}
		if m.Name != "" {
			d.set("name", m.Name)
		}
		if m.ToolCallID != "" {
			d.set("tool_call_id", m.ToolCallID)
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]any, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				var args any = c.Arguments
				if objArgs {
					v, err := fromJSON([]byte(c.Arguments))
					if err != nil {
						return nil, fmt.Errorf("%w: message %d: tool call %d: arguments: %w", ErrMessage, i, j, err)
					}
					args = v
				}
				fn := newDict(2)
				fn.set("name", c.Name)
				fn.set("arguments", args)
				call := newDict(3)
				call.set("type", "function")
				call.set("function", fn)
				if c.ID != "" {
					call.set("id", c.ID)
				}
				calls[j] = call
			}
			d.set("tool_calls", calls)
		}
		if harmony && m.ReasoningContent != "" {
			d.set("thinking", m.ReasoningContent)
		}
		list[i] = d
	}
	return list, nil
}

// toolValues builds the tools variable.
func toolValues(tools []Tool) ([]any, error) {
	if len(tools) > MaxTools {
		return nil, fmt.Errorf("%w: %d tools, limit %d", ErrTooLarge, len(tools), MaxTools)
	}
	out := make([]any, len(tools))
	total := 0
	for i, t := range tools {
		if total += len(t.Name) + len(t.Description) + len(t.Parameters); total > MaxOutput {
			return nil, fmt.Errorf("%w: tools of more than %d bytes", ErrTooLarge, MaxOutput)
		}
		params, err := toolParameters(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("%w: tool %d (%q): parameters: %w", ErrMessage, i, t.Name, err)
		}
		fn := newDict(3)
		fn.set("name", t.Name)
		fn.set("description", t.Description)
		fn.set("parameters", params)
		d := newDict(2)
		d.set("type", "function")
		d.set("function", fn)
		out[i] = d
	}
	return out, nil
}

// toolParameters parses a tool's parameter schema as the template sees
// it: as the client wrote it, {} when it gave none. (llama.cpp substitutes
// {"type": "object", "properties": {}} for a missing, null or empty schema
// only when it builds the call grammar, not in what templates read.)
func toolParameters(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return newDict(0), nil
	}
	return fromJSON([]byte(s))
}

// genericInstruction is the system text llama.cpp's generic tool format
// adds (common_chat_params_init_generic, Feb 2025), for templates that do
// not describe tools themselves; the model answers with the JSON object
// toolcall.Generic parses.
const genericInstruction = "Respond in JSON format, either with `tool_call` (a request to call tools) or with `response` reply to the user's request"

// toolsIntro starts the description of the tools added for such
// templates (minja's tools polyfill).
const toolsIntro = "You can call any of the following tools to satisfy the user's requests: "

// needsToolHandling reports whether msgs and tools involve tools at all.
func needsToolHandling(msgs []Message, tools []Tool) bool {
	if len(tools) > 0 {
		return true
	}
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 || m.Role == "tool" {
			return true
		}
	}
	return false
}

// polyfill rewrites what a template cannot show into plain messages.
// Tool calls it does not render become the assistant's content as JSON
// and tool responses it does not render become user messages holding
// JSON, as minja's polyfills did: the conversation's history stays
// readable (and renders: Gemma's and Mixtral's templates refuse a tool
// role, where the current llama.cpp then fails the request). With
// describe, tools it does not show become a system message (the generic
// JSON instruction and the tools as indented JSON), as llama.cpp's
// generic handler did; that is for the families rendered in Go. A Jinja
// template is rendered without it (describe false), as the current
// llama.cpp renders it: it gets the tools variable and shows what it
// shows, so a template without tool support gives the plain
// conversation, and the prompt's ids are llama.cpp's. A template that
// supports all of it gets msgs unchanged.
func polyfill(msgs []Message, tools []Tool, c toolCaps, describe bool) ([]Message, error) {
	out := msgs
	if describe && len(tools) > 0 && !c.tools {
		tv, err := toolValues(tools)
		if err != nil {
			return nil, err
		}
		f := jsonFormat{indent: 2, itemSep: ",", keySep: ": ", maxSize: MaxOutput, nlohmann: true}
		var b strings.Builder
		if err := f.write(&b, tv, 0); err != nil {
			return nil, err
		}
		out = addSystem(addSystem(out, genericInstruction), toolsIntro+b.String())
	}
	if c.toolCalls && c.responses {
		return out, nil
	}
	fixed := make([]Message, 0, len(out))
	for i, m := range out {
		if len(m.ToolCalls) > 0 && !c.toolCalls {
			s, err := toolCallsJSON(m)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			m = Message{Role: m.Role, Content: s}
		}
		if m.Role == "tool" && !c.responses {
			resp := newDict(3)
			resp.set("content", m.Content)
			if m.Name != "" {
				resp.set("name", m.Name)
			}
			if m.ToolCallID != "" {
				resp.set("tool_call_id", m.ToolCallID)
			}
			obj := newDict(1)
			obj.set("tool_response", resp)
			s, err := dump2(obj)
			if err != nil {
				return nil, err
			}
			m = Message{Role: "user", Content: s}
		}
		fixed = append(fixed, m)
	}
	return fixed, nil
}

// toolCallsJSON is an assistant message's calls (and content) as the
// indented JSON minja's tool-call polyfill writes; arguments that do not
// parse stay a string, as there.
func toolCallsJSON(m Message) (string, error) {
	calls := make([]any, len(m.ToolCalls))
	for j, c := range m.ToolCalls {
		var args any = c.Arguments
		if v, err := fromJSON([]byte(c.Arguments)); err == nil {
			args = v
		}
		tc := newDict(3)
		tc.set("name", c.Name)
		tc.set("arguments", args)
		if c.ID != "" {
			tc.set("id", c.ID)
		}
		calls[j] = tc
	}
	obj := newDict(2)
	obj.set("tool_calls", calls)
	if m.Content != "" {
		obj.set("content", m.Content)
	}
	return dump2(obj)
}

// dump2 is nlohmann's dump(2).
func dump2(v any) (string, error) {
	f := jsonFormat{indent: 2, itemSep: ",", keySep: ": ", maxSize: MaxOutput, nlohmann: true}
	var b strings.Builder
	err := f.write(&b, v, 0)
	return b.String(), err
}

// addSystem appends text to a leading system message after a blank line,
// or puts a system message with text first (minja's add_system).
func addSystem(msgs []Message, text string) []Message {
	out := make([]Message, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out = append(out, Message{Role: "system", Content: msgs[0].Content + "\n\n" + text})
		return append(out, msgs[1:]...)
	}
	out = append(out, Message{Role: "system", Content: text})
	return append(out, msgs...)
}

// DescribesTools reports whether the chat template tmpl shows tools to
// the model itself (its Jinja prints the tools it is given), so that the
// model answers in its family's call syntax. A Jinja template that does
// not is rendered with no description of the tools, as the current
// llama.cpp renders it; a family rendered in Go, or a template the
// interpreter cannot render, gets them in a system message in llama.cpp's
// generic JSON format. Either way the reply is read as that generic
// format (toolcall.Detect takes this answer): a model that was not told
// of it answers in plain text, which is content.
func DescribesTools(tmpl string) bool {
	fam := Detect(tmpl)
	if _, ok := renderers[fam]; ok && (tmpl == fam || fam == Plain) {
		return false
	}
	if check(tmpl, nil) != nil {
		return false
	}
	tree, err := parseTemplate(tmpl)
	if err != nil {
		return false
	}
	bos, eos := defaults("", "")
	return probeCaps(tree, bos, eos).tools
}

// ToolsUntold reports whether Render tells the model of no tools at all
// for tmpl: a Jinja template the interpreter runs that does not show
// tools (Gemma 2/3, Phi-3.5, Phi-4-mini, Mixtral), rendered as the
// current llama.cpp renders it. llama.cpp then reads the reply as
// content; a caller does the same when calls are not forced. A family
// rendered in Go, or a template that falls back to one, is told of them
// in the generic format instead (false), as is a template that shows
// tools itself.
func ToolsUntold(tmpl string) bool {
	fam := Detect(tmpl)
	if _, ok := renderers[fam]; ok && (tmpl == fam || fam == Plain) {
		return false
	}
	if check(tmpl, nil) != nil {
		return false
	}
	tree, err := parseTemplate(tmpl)
	if err != nil {
		return false
	}
	bos, eos := defaults("", "")
	return !probeCaps(tree, bos, eos).tools
}

// ToolStrings returns the client text that tools and tool calls bring
// into a prompt untraced (see RenderTraced): each tool's name,
// description and parameter schema, each call's id, name and arguments,
// each message's tool_call_id and name, and every string and key inside
// the schemas and arguments as JSON decodes it (tojson writes them
// unescaped, so "\u003c|im_start|>" in the JSON text is "<|im_start|>"
// in the prompt). A caller checks each for special-token text.
func ToolStrings(msgs []Message, tools []Tool) []string {
	var out []string
	add := func(ss ...string) {
		for _, s := range ss {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	addJSON := func(s string) {
		add(s)
		if v, err := fromJSON([]byte(s)); err == nil {
			collectStrings(v, add, 0)
		}
	}
	for _, t := range tools {
		add(t.Name, t.Description)
		addJSON(t.Parameters)
	}
	for _, m := range msgs {
		add(m.ToolCallID, m.Name)
		for _, c := range m.ToolCalls {
			add(c.ID, c.Name)
			addJSON(c.Arguments)
		}
	}
	return out
}

func collectStrings(v any, add func(...string), depth int) {
	if depth > MaxJSONDepth {
		return
	}
	switch x := v.(type) {
	case string:
		add(x)
	case []any:
		for _, e := range x {
			collectStrings(e, add, depth+1)
		}
	case *dict:
		for _, k := range x.keys {
			add(k)
			collectStrings(x.m[k], add, depth+1)
		}
	}
}
