package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// Decoding rules, shared by /v1/completions and /v1/chat/completions:
//
//   - The body is one JSON object; duplicate keys, trailing data and any
//     value of the wrong type or out of range are 400 errors naming the
//     field in "param". JSON null counts as an absent field.
//   - A key the server does not know is a 400 naming it, except the keys
//     OpenAI clients send that change nothing here, which are accepted and
//     ignored: user, metadata, store, service_tier, parallel_tool_calls,
//     cache_prompt.
//   - Some OpenAI keys are accepted only with the value that asks for
//     nothing this server lacks: n (1), best_of (1), echo (false), suffix
//     ("" ), logit_bias ({}), tools ([]), tool_choice ("none"),
//     response_format ({"type":"text"}). Any other value is a 400.

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
	streamOpts   bool // stream_options was given
	chat         bool
}

// ignoredField reports the fields accepted and ignored (see the decoding rules above).
func ignoredField(name string) bool {
	switch name {
	case "user", "metadata", "store", "service_tier", "parallel_tool_calls", "cache_prompt":
		return true
	}
	return false
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
		if isNull(f.raw) || ignoredField(f.name) {
			continue
		}
		var handled bool
		if chat {
			handled, err = r.chatField(f)
		} else {
			handled, err = r.completionField(f)
			havePrompt = havePrompt || f.name == "prompt"
		}
		if !handled && err == nil {
			handled, err = r.commonField(f)
		}
		if !handled && err == nil {
			handled, err = r.restrictedField(f)
		}
		if err != nil {
			return nil, err
		}
		if !handled {
			return nil, invalidCode(f.name, "unknown_parameter", "unknown field %q", f.name)
		}
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
	default:
		return false, nil
	}
	return true, err
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
	default:
		return false, nil
	}
	return true, err
}

// restrictedField accepts OpenAI fields only with their do-nothing value.
func (r *genRequest) restrictedField(f field) (bool, error) {
	v := strings.TrimSpace(string(f.raw))
	var ok bool
	switch f.name {
	case "n":
		ok = v == "1"
	case "best_of":
		ok = v == "1" && !r.chat
	case "echo":
		ok = v == "false" && !r.chat
	case "suffix":
		ok = v == `""` && !r.chat
	case "logit_bias":
		ok = isEmptyObject(f.raw)
	case "tools", "functions":
		ok = r.chat && isEmptyArray(f.raw)
	case "tool_choice", "function_call":
		ok = r.chat && v == `"none"`
	case "response_format":
		ok = r.chat && isTextFormat(f.raw)
	default:
		return false, nil
	}
	if !ok {
		return true, invalidCode(f.name, "unsupported_value", "unsupported value for %s: %s", f.name, abbreviate(v))
	}
	return true, nil
}

func isEmptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) == 0 && strings.HasPrefix(strings.TrimSpace(string(raw)), "{")
}

func isEmptyArray(raw json.RawMessage) bool {
	var a []json.RawMessage
	return json.Unmarshal(raw, &a) == nil && len(a) == 0 && strings.HasPrefix(strings.TrimSpace(string(raw)), "[")
}

func isTextFormat(raw json.RawMessage) bool {
	fields, err := objectFields(raw, "response_format")
	return err == nil && len(fields) == 1 && fields[0].name == "type" && string(fields[0].raw) == `"text"`
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
