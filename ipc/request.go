package ipc

import (
	"fmt"

	"github.com/lisa-llm/lisa/gen"
)

// validateRequest checks a generate's request: the checks of the process
// line, bounding everything the worker will parse or hold (sizes, counts,
// nesting); what the model makes of the values is the engine's to judge.
func validateRequest(r *gen.Request) error {
	const typ = TypeGenerate
	n := 0
	if r.Prompt != nil {
		n++
	}
	if r.PromptIDs != nil {
		n++
	}
	if r.Messages != nil {
		n++
	}
	switch {
	case r.PromptIDs != nil && len(r.PromptIDs) == 0:
		return bad(typ, "request.prompt_ids", "empty")
	case r.Messages != nil && len(r.Messages) == 0:
		return bad(typ, "request.messages", "empty")
	case n != 1:
		return bad(typ, "request.prompt", "want exactly one of prompt, prompt_ids and messages, got %d", n)
	case len(r.Messages) > gen.MaxMessages:
		return bad(typ, "request.messages", "%d messages, at most %d", len(r.Messages), gen.MaxMessages)
	case len(r.Stop) > gen.MaxStop:
		return bad(typ, "request.stop", "%d stop strings, at most %d", len(r.Stop), gen.MaxStop)
	case r.TopLogprobs < 0 || r.TopLogprobs > gen.MaxTopLogprobs:
		return bad(typ, "request.top_logprobs", "%d outside 0..%d", r.TopLogprobs, gen.MaxTopLogprobs)
	case r.TopLogprobs > 0 && !r.Logprobs:
		return bad(typ, "request.top_logprobs", "alternatives without logprobs")
	case r.N < 0 || r.N > gen.MaxChoices:
		return bad(typ, "request.n", "%d outside 0..%d", r.N, gen.MaxChoices)
	case r.ReasoningFormat != "" && r.ReasoningFormat != gen.ReasoningNone && r.ReasoningFormat != gen.ReasoningAuto && r.ReasoningFormat != gen.ReasoningDeepSeek:
		return bad(typ, "request.reasoning_format", "unknown format %.32q", r.ReasoningFormat)
	case len(r.ReasoningEffort) > gen.MaxEffortBytes:
		return bad(typ, "request.reasoning_effort", "%d bytes, at most %d", len(r.ReasoningEffort), gen.MaxEffortBytes)
	}
	for i, s := range r.Stop {
		if s == "" || len(s) > gen.MaxStopBytes {
			return bad(typ, fmt.Sprintf("request.stop[%d]", i), "%d bytes, want 1..%d", len(s), gen.MaxStopBytes)
		}
	}
	for i := range r.Messages {
		if err := validateMessage(&r.Messages[i], fmt.Sprintf("request.messages[%d]", i)); err != nil {
			return err
		}
	}
	if err := checkCount(typ, "request.max_tokens", r.MaxTokens, 1); err != nil {
		return err
	}
	if err := validateSampling(typ, r.Sampling); err != nil {
		return err
	}
	if err := checkIDs(typ, "request.prompt_ids", r.PromptIDs); err != nil {
		return err
	}
	if err := validateTools(r); err != nil {
		return err
	}
	return validateFormat(&r.Format)
}

func validateMessage(m *gen.Message, field string) error {
	const typ = TypeGenerate
	switch m.Role {
	case gen.RoleSystem, gen.RoleUser, gen.RoleAssistant, gen.RoleTool:
	default:
		return bad(typ, field+".role", "unknown role %.32q", m.Role)
	}
	switch {
	case len(m.ToolCalls) > 0 && m.Role != gen.RoleAssistant:
		return bad(typ, field+".tool_calls", "tool calls in a %s message", m.Role)
	case len(m.ToolCalls) > gen.MaxToolCalls:
		return bad(typ, field+".tool_calls", "%d calls, at most %d", len(m.ToolCalls), gen.MaxToolCalls)
	case m.ToolCallID != "" && m.Role != gen.RoleTool:
		return bad(typ, field+".tool_call_id", "a tool call id in a %s message", m.Role)
	case len(m.ToolCallID) > gen.MaxIDBytes:
		return bad(typ, field+".tool_call_id", "%d bytes, at most %d", len(m.ToolCallID), gen.MaxIDBytes)
	case m.ReasoningContent != "" && m.Role != gen.RoleAssistant:
		return bad(typ, field+".reasoning_content", "reasoning in a %s message", m.Role)
	}
	for j, c := range m.ToolCalls {
		f := fmt.Sprintf("%s.tool_calls[%d]", field, j)
		switch {
		case len(c.ID) > gen.MaxIDBytes:
			return bad(typ, f+".id", "%d bytes, at most %d", len(c.ID), gen.MaxIDBytes)
		case c.Name == "" || len(c.Name) > gen.MaxNameBytes:
			return bad(typ, f+".name", "%d bytes, want 1..%d", len(c.Name), gen.MaxNameBytes)
		case len(c.Arguments) > gen.MaxTextBytes:
			return bad(typ, f+".arguments", "%d bytes, at most %d", len(c.Arguments), gen.MaxTextBytes)
		}
	}
	return nil
}

func validateTools(r *gen.Request) error {
	const typ = TypeGenerate
	if len(r.Tools) > gen.MaxTools {
		return bad(typ, "request.tools", "%d tools, at most %d", len(r.Tools), gen.MaxTools)
	}
	names := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		f := fmt.Sprintf("request.tools[%d]", i)
		switch {
		case t.Name == "" || len(t.Name) > gen.MaxNameBytes:
			return bad(typ, f+".name", "%d bytes, want 1..%d", len(t.Name), gen.MaxNameBytes)
		case names[t.Name]:
			return bad(typ, f+".name", "%.64q defined twice", t.Name)
		case len(t.Description) > gen.MaxTextBytes:
			return bad(typ, f+".description", "%d bytes, at most %d", len(t.Description), gen.MaxTextBytes)
		}
		names[t.Name] = true
		if t.Parameters != "" {
			if err := gen.CheckJSONObject(t.Parameters, gen.MaxSchemaBytes, gen.MaxSchemaDepth); err != nil {
				return bad(typ, f+".parameters", "%v", err)
			}
		}
	}
	c := r.ToolChoice
	switch c.Mode {
	case "", gen.ChoiceNone, gen.ChoiceAuto:
		if c.Name != "" {
			return bad(typ, "request.tool_choice.name", "a name with mode %.16q", c.Mode)
		}
	case gen.ChoiceRequired:
		if len(r.Tools) == 0 || c.Name != "" {
			return bad(typ, "request.tool_choice", "required needs tools and no name")
		}
	case gen.ChoiceFunction:
		if !names[c.Name] {
			return bad(typ, "request.tool_choice.name", "%.64q is not among the tools", c.Name)
		}
	default:
		return bad(typ, "request.tool_choice.mode", "unknown mode %.32q", c.Mode)
	}
	return nil
}

func validateFormat(f *gen.Format) error {
	const typ = TypeGenerate
	switch {
	case len(f.Name) > gen.MaxNameBytes:
		return bad(typ, "request.format.name", "%d bytes, at most %d", len(f.Name), gen.MaxNameBytes)
	case len(f.Grammar) > gen.MaxGrammarBytes:
		return bad(typ, "request.format.grammar", "%d bytes, at most %d", len(f.Grammar), gen.MaxGrammarBytes)
	}
	switch f.Type {
	case "", gen.FormatText, gen.FormatJSONObject:
		if f.Schema != "" || f.Grammar != "" {
			return bad(typ, "request.format", "a schema or grammar with type %.16q", f.Type)
		}
	case gen.FormatJSONSchema:
		if f.Grammar != "" {
			return bad(typ, "request.format.grammar", "a grammar with a JSON schema")
		}
		if err := gen.CheckJSONObject(f.Schema, gen.MaxSchemaBytes, gen.MaxSchemaDepth); err != nil {
			return bad(typ, "request.format.schema", "%v", err)
		}
	case gen.FormatGrammar:
		if f.Schema != "" || f.Grammar == "" {
			return bad(typ, "request.format", "a grammar format needs a grammar and no schema")
		}
	default:
		return bad(typ, "request.format.type", "unknown type %.32q", f.Type)
	}
	return nil
}
