package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// Decoding rules, shared by /v1/completions and /v1/chat/completions:
//
//   - The body is one JSON object; duplicate keys, trailing data and any
//     value of the wrong type or out of range are 400 errors naming the
//     field in "param". JSON null counts as an absent field.
//   - Every field of OpenAI's request schemas is accepted and checked by
//     type. Those that change nothing here (storage, billing, tracking,
//     latency hints: user, metadata, store, service_tier, prediction,
//     verbosity, prompt_cache_key, safety_identifier) are
//     then ignored; those that ask for what this server cannot do (audio
//     output, web search, best_of above 1) are a 400 with code
//     "unsupported_value".
//   - n (1..gen.MaxChoices, and at most the worker's slots) asks for n
//     choices sampled from one evaluation of the prompt: choices[i].index
//     is i, streamed chunks name their choice, usage counts the prompt
//     once and the completion tokens of every choice. With a seed, choice
//     i samples with seed+i (gen.ChoiceSeed): choice 0 is what n = 1
//     gives, and at temperature 0 every choice is the same. max_tokens is
//     per choice: each choice has a slot, and a context, of its own. Tools
//     and response formats constrain each choice on its own (its own
//     grammar, its own tool calls and finish_reason). The Responses API
//     has no n (it is an unknown field there, as at OpenAI).
//     A key OpenAI does not define (nor llama.cpp's min_p, top_k,
//     repeat_penalty, repeat_last_n, cache_prompt, grammar, json_schema)
//     is a 400 naming it, as OpenAI's own API answers.
//   - tools, tool_choice, response_format, grammar and json_schema are
//     carried to the worker, which refuses what the model cannot follow
//     with a typed error (400).

// DefaultCompletionTokens is max_tokens for /v1/completions when the
// request does not say (OpenAI's default). Chat completions default to
// the rest of the context.
const DefaultCompletionTokens = 16

// genRequest is a decoded completion or chat completion request, checked
// for types and ranges but not yet against the model.
// Its gen.Request is what goes to the worker (MaxTokens 0: not given,
// settled by budget).
type genRequest struct {
	gen.Request
	Model        string
	Stream       bool
	IncludeUsage bool
	Echo         bool // completions: the prompt's text comes first in the output
	streamOpts   bool // stream_options was given
	chat         bool
	choiceSet    bool // tool_choice or function_call was given
	parallelSet  bool // parallel_tool_calls was given
	functions    bool // the deprecated functions gave the tools
	formatParam  string
}

// decodeChatRequest decodes the body of POST /v1/chat/completions.
func decodeChatRequest(body []byte) (*genRequest, error) {
	return decodeRequest(body, true)
}

// decodeCompletionRequest decodes the body of POST /v1/completions.
func decodeCompletionRequest(body []byte) (*genRequest, error) {
	return decodeRequest(body, false)
}

func decodeRequest(body []byte, chat bool) (*genRequest, error) {
	fields, err := objectFields(body, "")
	if err != nil {
		return nil, err
	}
	r := &genRequest{chat: chat}
	r.Sampling = gen.DefaultSampling()
	var havePrompt bool
	for _, f := range fields {
		if isNull(f.raw) {
			continue
		}
		handled, err := ignoredField(f, chat)
		if err != nil {
			return nil, err
		}
		if handled {
			continue
		}
		if chat {
			handled, err = r.chatField(f)
		} else {
			handled, err = r.completionField(f)
			havePrompt = havePrompt || f.name == "prompt"
		}
		if !handled && err == nil {
			handled, err = r.commonField(f)
		}
		if err != nil {
			return nil, err
		}
		if !handled {
			return nil, unknownField(f.name)
		}
	}
	if err := r.checkTools(); err != nil {
		return nil, err
	}
	switch {
	case chat && len(r.Messages) == 0:
		return nil, invalid("messages", "messages is required and must not be empty")
	case !chat && !havePrompt:
		return nil, invalid("prompt", "prompt is required")
	case r.streamOpts && !r.Stream:
		return nil, invalid("stream_options", "stream_options is only allowed when stream is true")
	case r.TopLogprobs > 0 && !r.Logprobs:
		return nil, invalid("top_logprobs", "top_logprobs needs logprobs set to true")
	case r.Echo && r.Logprobs:
		return nil, invalidCode("echo", "unsupported_value", "echo with logprobs (the prompt's log-probabilities) is not supported")
	}
	return r, nil
}

func (r *genRequest) chatField(f field) (bool, error) {
	var err error
	switch f.name {
	case "messages":
		r.Messages, err = decodeMessages(f.raw)
	case "logprobs":
		r.Logprobs, err = decBool(f.raw, f.name)
	case "top_logprobs":
		var n int64
		n, err = decInt(f.raw, f.name, 0, gen.MaxTopLogprobs)
		r.TopLogprobs = int(n)
	case "max_completion_tokens":
		err = r.setMaxTokens(f)
	case "tools":
		if r.functions {
			return true, invalid(f.name, "give tools or the deprecated functions, not both")
		}
		r.Tools, err = decodeTools(f.raw, f.name)
	case "functions":
		if r.Tools != nil {
			return true, invalid(f.name, "give tools or the deprecated functions, not both")
		}
		r.Tools, err = decodeFunctions(f.raw)
		r.functions = true
	case "tool_choice", "function_call":
		if r.choiceSet {
			return true, invalid(f.name, "give tool_choice or the deprecated function_call, not both")
		}
		r.choiceSet = true
		if f.name == "tool_choice" {
			r.ToolChoice, err = decodeToolChoice(f.raw)
		} else {
			r.ToolChoice, err = decodeFunctionCall(f.raw)
		}
	case "parallel_tool_calls":
		r.ParallelToolCalls, err = decBool(f.raw, f.name)
		r.parallelSet = true
	case "response_format":
		var format gen.Format
		if format, err = decodeResponseFormat(f.raw); err == nil {
			err = r.setFormat(format, f.name)
		}
	case "reasoning_format":
		// llama-server's field: how this reply returns the reasoning.
		var s string
		if s, err = decString(f.raw, f.name); err == nil {
			switch s {
			case gen.ReasoningNone, gen.ReasoningAuto, gen.ReasoningDeepSeek:
				r.ReasoningFormat = s
			case "deepseek-legacy":
				err = invalidCode(f.name, "unsupported_value", "reasoning_format %q (the reasoning both in the content and apart) is not supported", s)
			default:
				err = invalid(f.name, "reasoning_format must be one of none, auto, deepseek, got %q", abbreviate(s))
			}
		}
	case "reasoning_effort":
		// Given to the template (gpt-oss's "Reasoning: high"), as
		// llama-server gives it.
		if err = checkEnum(f.raw, f.name, "minimal", "low", "medium", "high"); err == nil {
			r.ReasoningEffort, err = decString(f.raw, f.name)
		}
	case "modalities":
		err = checkModalities(f.raw)
	case "audio", "web_search_options":
		err = invalidCode(f.name, "unsupported_value", "%s is not supported: this server generates text alone", f.name)
	default:
		return false, nil
	}
	return true, err
}

// setFormat sets the output format once: response_format, grammar and
// json_schema each ask for one.
func (r *genRequest) setFormat(f gen.Format, param string) error {
	if f.Type == gen.FormatText || f.Type == "" {
		return nil
	}
	if r.formatParam != "" {
		return invalid(param, "%s and %s both constrain the output; give one", r.formatParam, param)
	}
	r.Format, r.formatParam = f, param
	return nil
}

// checkTools checks tools against tool_choice and sets OpenAI's defaults.
func (r *genRequest) checkTools() error {
	c := r.ToolChoice
	switch {
	case c.Mode == gen.ChoiceFunction && !slices.ContainsFunc(r.Tools, func(t gen.Tool) bool { return t.Name == c.Name }):
		return invalid("tool_choice", "tool_choice names the function %q, which is not among the tools", c.Name)
	case c.Mode == gen.ChoiceRequired && len(r.Tools) == 0:
		return invalid("tool_choice", "tool_choice \"required\" needs tools")
	}
	if !r.parallelSet {
		r.ParallelToolCalls = true
	}
	return nil
}

func (r *genRequest) completionField(f field) (bool, error) {
	var err error
	switch f.name {
	case "prompt":
		err = r.decodePrompt(f.raw)
	case "logprobs":
		var n int64
		n, err = decInt(f.raw, f.name, 0, 5)
		r.Logprobs, r.TopLogprobs = true, int(n)
	case "echo":
		r.Echo, err = decBool(f.raw, f.name)
	case "best_of":
		_, err = decInt(f.raw, f.name, 1, 20)
		if err == nil && string(f.raw) != "1" {
			err = invalidCode(f.name, "unsupported_value", "best_of above 1 is not supported")
		}
	case "suffix":
		var suffix string
		if suffix, err = decString(f.raw, f.name); err == nil && suffix != "" {
			err = invalidCode(f.name, "unsupported_value", "suffix (insertion) is not supported")
		}
	default:
		return false, nil
	}
	return true, err
}

func (r *genRequest) setMaxTokens(f field) error {
	n, err := decInt(f.raw, f.name, 1, math.MaxInt32)
	if err != nil {
		return err
	}
	if r.MaxTokens != 0 && r.MaxTokens != int(n) {
		return invalid(f.name, "max_tokens and max_completion_tokens disagree (%d and %d)", r.MaxTokens, n)
	}
	r.MaxTokens = int(n)
	return nil
}

func (r *genRequest) commonField(f field) (bool, error) {
	var err error
	s := &r.Sampling
	switch f.name {
	case "model":
		r.Model, err = decString(f.raw, f.name)
	case "max_tokens":
		err = r.setMaxTokens(f)
	case "stream":
		r.Stream, err = decBool(f.raw, f.name)
	case "stream_options":
		err = r.decodeStreamOptions(f.raw)
	case "stop":
		r.Stop, err = decodeStop(f.raw)
	case "temperature":
		s.Temperature, err = decFloat(f.raw, f.name, 0, ipc.MaxTemperature)
	case "top_p":
		s.TopP, err = decFloat(f.raw, f.name, 0, 1)
	case "min_p":
		s.MinP, err = decFloat(f.raw, f.name, 0, 1)
	case "presence_penalty":
		s.PresencePenalty, err = decFloat(f.raw, f.name, -ipc.MaxPenalty, ipc.MaxPenalty)
	case "frequency_penalty":
		s.FrequencyPenalty, err = decFloat(f.raw, f.name, -ipc.MaxPenalty, ipc.MaxPenalty)
	case "repeat_penalty":
		s.RepeatPenalty, err = decFloat(f.raw, f.name, 0, ipc.MaxRepeatPen)
		if err == nil && s.RepeatPenalty == 0 {
			err = invalid(f.name, "repeat_penalty must be more than 0 (1 disables it)")
		}
	case "top_k":
		var n int64
		n, err = decInt(f.raw, f.name, 0, ipc.MaxTopK)
		s.TopK = int(n)
	case "repeat_last_n":
		var n int64
		n, err = decInt(f.raw, f.name, 0, ipc.MaxRepeatLastN)
		s.RepeatLastN = int(n)
	case "seed":
		var n int64
		n, err = decInt(f.raw, f.name, -1, math.MaxInt64)
		s.Seed, s.HasSeed = uint64(n), n >= 0
	case "logit_bias":
		s.LogitBias, err = decodeLogitBias(f.raw)
	case "n":
		// OpenAI allows 1 to 128 choices; checkModel bounds them
		// further by the worker's slots.
		var n int64
		n, err = decInt(f.raw, f.name, 1, gen.MaxChoices)
		r.N = int(n)
	case "grammar":
		var g string
		if g, err = decString(f.raw, f.name); err == nil {
			if len(g) > gen.MaxGrammarBytes {
				return true, invalid(f.name, "grammar has %d bytes, at most %d", len(g), gen.MaxGrammarBytes)
			}
			if g != "" {
				err = r.setFormat(gen.Format{Type: gen.FormatGrammar, Grammar: g}, f.name)
			}
		}
	case "json_schema":
		var schema string
		if schema, err = decodeSchema(f.raw, f.name); err == nil {
			err = r.setFormat(gen.Format{Type: gen.FormatJSONSchema, Schema: schema}, f.name)
		}
	default:
		return false, nil
	}
	return true, err
}

// abbreviate shortens a value quoted back in an error message.
func abbreviate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (r *genRequest) decodeStreamOptions(raw json.RawMessage) error {
	fields, err := objectFields(raw, "stream_options")
	if err != nil {
		return err
	}
	r.streamOpts = true
	for _, f := range fields {
		if f.name != "include_usage" {
			return invalidCode("stream_options."+f.name, "unknown_parameter", "unknown field %q", "stream_options."+f.name)
		}
		if !isNull(f.raw) {
			if r.IncludeUsage, err = decBool(f.raw, "stream_options.include_usage"); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeStop(raw json.RawMessage) ([]string, error) {
	var list []string
	if len(raw) > 0 && raw[0] == '"' {
		s, err := decString(raw, "stop")
		if err != nil {
			return nil, err
		}
		list = []string{s}
	} else {
		items, err := arrayItems(raw, "stop")
		if err != nil {
			return nil, invalid("stop", "stop must be a string or an array of strings")
		}
		if len(items) > gen.MaxStop {
			return nil, invalid("stop", "stop has %d strings, at most %d are allowed", len(items), gen.MaxStop)
		}
		for i, it := range items {
			s, err := decString(it, fmt.Sprintf("stop[%d]", i))
			if err != nil {
				return nil, err
			}
			list = append(list, s)
		}
	}
	for i, s := range list {
		if s == "" || len(s) > gen.MaxStopBytes {
			return nil, invalid("stop", "stop string %d must have 1 to %d bytes", i, gen.MaxStopBytes)
		}
	}
	return list, nil
}
