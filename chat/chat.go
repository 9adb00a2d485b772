package chat

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits on what Apply accepts and produces.
const (
	// MaxTemplate is the largest template, in bytes.
	MaxTemplate = 1 << 20
	// MaxMessages is the largest number of messages.
	MaxMessages = 1 << 14
	// MaxOutput is the largest rendered prompt, in bytes.
	MaxOutput = 1 << 20
	// MaxToolCalls is the largest number of tool calls in one message.
	MaxToolCalls = 128
	// MaxTools is the largest number of tools.
	MaxTools = 512
)

// Message is one chat message. Content is "" for OpenAI's null content
// (llama.cpp gives templates "" for both).
type Message struct {
	Role    string
	Content string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID is the call a "tool" message answers.
	ToolCallID string
	// Name is the name of the tool a "tool" message comes from, when the
	// client gave one.
	Name string
	// ReasoningContent is an assistant message's reasoning (OpenAI's
	// reasoning_content, llama.cpp's field for thinking): templates read it
	// as reasoning_content, gpt-oss's as thinking (see messageValues).
	ReasoningContent string
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	// ID is the call's id ("" when the client gave none).
	ID string
	// Name is the function's name.
	Name string
	// Arguments is the JSON text of the arguments, as OpenAI's API
	// carries it.
	Arguments string
}

// Tool is one function a template describes to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments (JSON text); empty
	// means none, which templates see as {}, as llama.cpp's do.
	Parameters string
}

// Errors returned by Apply (UnsupportedError wraps ErrUnsupported).
var (
	ErrUnsupported = errors.New("chat: unsupported chat template")
	ErrTooLarge    = errors.New("chat: too large")
	ErrMessage     = errors.New("chat: invalid message")
)

// UnsupportedError reports a template Apply will not render: Construct
// names the Jinja construct the interpreter does not support, Family the
// recognised family ("" when none matched).
type UnsupportedError struct {
	Family    string
	Construct string
}

// Error names the construct and the family.
func (e *UnsupportedError) Error() string {
	msg := "chat: unsupported chat template"
	if e.Family != "" {
		msg += fmt.Sprintf(" (family %q)", e.Family)
	}
	if e.Construct != "" {
		msg += ": it uses " + e.Construct
	}
	return msg
}

// Unwrap returns ErrUnsupported.
func (e *UnsupportedError) Unwrap() error { return ErrUnsupported }

// Apply renders msgs with the chat template tmpl (the text of
// tokenizer.chat_template, or a family name such as "chatml" or
// "llama3"; "" selects the plain fallback). With addGenerationPrompt the
// prompt ends with the opening of an assistant turn. bosText and eosText
// are the texts of the model's BOS and EOS tokens, used by the families
// that write them inside the conversation, and bos_token and eos_token of
// Jinja templates ("<s>" and "</s>" when empty).
// The result is meant to go through TrimAdded and be tokenized with
// special-token parsing on and BOS added by the tokenizer, as llama.cpp
// does.
func Apply(tmpl string, msgs []Message, addGenerationPrompt bool, bosText, eosText string) (string, error) {
	if err := check(tmpl, msgs); err != nil {
		return "", err
	}
	bosText, eosText = defaults(bosText, eosText)
	fam := Detect(tmpl)
	r, ok := renderers[fam]
	if !ok {
		return applyJinja(tmpl, fam, msgs, addGenerationPrompt, bosText, eosText)
	}
	var b strings.Builder
	r(&b, msgs, addGenerationPrompt, bosText, eosText)
	if b.Len() > MaxOutput {
		return "", fmt.Errorf("%w: prompt of %d bytes, limit %d", ErrTooLarge, b.Len(), MaxOutput)
	}
	return b.String(), nil
}

// defaults returns "<s>" and "</s>" for empty BOS and EOS texts.
func defaults(bos, eos string) (string, string) {
	if bos == "" {
		bos = "<s>"
	}
	if eos == "" {
		eos = "</s>"
	}
	return bos, eos
}

// check applies the limits on the template and the messages.
func check(tmpl string, msgs []Message) error {
	if len(tmpl) > MaxTemplate {
		return fmt.Errorf("%w: template of %d bytes, limit %d", ErrTooLarge, len(tmpl), MaxTemplate)
	}
	if len(msgs) > MaxMessages {
		return fmt.Errorf("%w: %d messages, limit %d", ErrTooLarge, len(msgs), MaxMessages)
	}
	total := 0
	for i, m := range msgs {
		if m.Role == "" || strings.ContainsAny(m.Role, "\x00\r\n") || len(m.Role) > 64 {
			return fmt.Errorf("%w: message %d: bad role %q", ErrMessage, i, m.Role)
		}
		if len(m.ToolCalls) > MaxToolCalls {
			return fmt.Errorf("%w: message %d: %d tool calls, limit %d", ErrTooLarge, i, len(m.ToolCalls), MaxToolCalls)
		}
		total += len(m.Content) + len(m.Role) + len(m.ToolCallID) + len(m.Name) + len(m.ReasoningContent)
		for _, c := range m.ToolCalls {
			total += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	if total > MaxOutput {
		return fmt.Errorf("%w: messages of %d bytes, limit %d", ErrTooLarge, total, MaxOutput)
	}
	return nil
}

// trim removes ASCII white space at both ends, as llama.cpp's trim.
func trim(s string) string { return strings.Trim(s, " \t\n\v\f\r") }

// Validate reports whether Apply can render tmpl at all: nil for a
// family rendered in Go, otherwise the error the interpreter gives when
// parsing it (a worker can check its model's template once at load).
// Errors raised while rendering (raise_exception on some conversations)
// are not found this way.
func Validate(tmpl string) error {
	if err := check(tmpl, nil); err != nil {
		return err
	}
	fam := Detect(tmpl)
	if _, ok := renderers[fam]; ok {
		return nil
	}
	_, err := parseTemplate(tmpl)
	var ue *UnsupportedError
	if errors.As(err, &ue) {
		ue.Family = fam
	}
	return err
}

// RenderJinja renders tmpl with the Jinja-subset interpreter whatever its
// family, with the same limits and message checks as Apply (which uses it
// for templates of no family it renders in Go).
func RenderJinja(tmpl string, msgs []Message, addGenerationPrompt bool, bosText, eosText string) (string, error) {
	if err := check(tmpl, msgs); err != nil {
		return "", err
	}
	bosText, eosText = defaults(bosText, eosText)
	return applyJinja(tmpl, Detect(tmpl), msgs, addGenerationPrompt, bosText, eosText)
}

// applyJinja renders a template with the Jinja subset interpreter. The
// template sees only messages, bos_token, eos_token,
// add_generation_prompt, tools (none) and the functions raise_exception,
// range and namespace.
func applyJinja(tmpl, fam string, msgs []Message, addAss bool, bosText, eosText string) (string, error) {
	return applyJinjaAt(tmpl, fam, msgs, nil, addAss, bosText, eosText, time.Time{}, "")
}

// probeJinja is applyJinja for capability probes, at probeTime.
func probeJinja(tmpl, fam string, msgs []Message, bosText, eosText string) (string, error) {
	return applyJinjaAt(tmpl, fam, msgs, nil, false, bosText, eosText, probeTime, "")
}

// applyJinjaAt is applyJinja with tools, with strftime_now defined to
// read now (undefined for the zero time), and with reasoning_effort (and
// its alias reasoning_strength, as llama.cpp defines both) set to effort
// unless it is "".
func applyJinjaAt(tmpl, fam string, msgs []Message, tools []Tool, addAss bool, bosText, eosText string, now time.Time, effort string) (string, error) {
	tree, err := parseTemplate(tmpl)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			ue.Family = fam
		}
		return "", err
	}
	var caps toolCaps
	if needsToolHandling(msgs, tools) {
		caps = probeCaps(tree, bosText, eosText)
		if msgs, err = polyfill(msgs, tools, caps, false); err != nil {
			return "", err
		}
	}
	list, err := messageValues(msgs, caps.objectArgs, isHarmony(tmpl))
	if err != nil {
		return "", err
	}
	vars := builtins()
	vars["messages"] = list
	vars["bos_token"] = bosText
	vars["eos_token"] = eosText
	vars["add_generation_prompt"] = addAss
	vars["tools"] = nil // as Hugging Face passes when there are none
	if effort != "" {
		vars["reasoning_effort"], vars["reasoning_strength"] = effort, effort
	}
	if len(tools) > 0 {
		if vars["tools"], err = toolValues(tools); err != nil {
			return "", err
		}
	}
	if !now.IsZero() {
		// llama.cpp's extra context: the day in the two formats
		// templates read.
		vars["date_string"], _ = strftime("%d %b %Y", now)
		vars["datetime"], _ = strftime("%b %d %Y", now)
		setClock(vars, now)
	}
	out, err := renderJinja(tree, vars)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) {
			ue.Family = fam
		}
		return "", err
	}
	return out, nil
}

// setClock defines strftime_now in vars to format now.
func setClock(vars map[string]any, now time.Time) {
	vars["strftime_now"] = builtin(func(args []any, _ map[string]any) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("%w: strftime_now wants one format", ErrTemplate)
		}
		f, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("%w: strftime_now's format is %T", ErrTemplate, args[0])
		}
		return strftime(f, now)
	})
}

// probeTime is the clock of capability probes: llama.cpp's runtime always
// defines strftime_now, and a template that prints the date (gpt-oss's)
// must render in a probe whatever day it is.
var probeTime = time.Unix(1735689600, 0).UTC()

// isHarmony reports whether tmpl is an OpenAI Harmony template (gpt-oss),
// recognised as llama.cpp recognises it: by "<|channel|>" in its source.
func isHarmony(tmpl string) bool { return strings.Contains(tmpl, "<|channel|>") }

// TrimAdded removes from a rendered prompt the BOS text it starts with
// when the tokenizer adds BOS itself (addBOS), and the EOS text it ends
// with when the tokenizer adds EOS (addEOS), so that a template writing
// {{ bos_token }} first does not give BOS twice. llama.cpp does the same
// after rendering a chat template (common_chat_template_direct_apply).
// An empty bosText or eosText removes nothing.
func TrimAdded(text, bosText, eosText string, addBOS, addEOS bool) string {
	if addBOS && bosText != "" {
		text = strings.TrimPrefix(text, bosText)
	}
	if addEOS && eosText != "" {
		text = strings.TrimSuffix(text, eosText)
	}
	return text
}
