package ipc

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

func strp(s string) *string { return &s }

// sampleRequests and sampleReplies hold one filled-in message of each type.
func sampleRequests() []Message {
	return []Message{
		&Hello{ID: 1, Protocol: Version, ModelName: "tiny", Threads: 2, CtxSize: 512, Parallel: 2, KVType: "f16"},
		&Hello{ID: 1, Protocol: Version, CacheTypeK: "q8_0", CacheTypeV: "f16"},
		&Generate{ID: 2, Request: gen.Request{Prompt: strp("Once upon a time"), MaxTokens: 16, Stop: []string{"\n", "The end"},
			Sampling: gen.Sampling{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, RepeatLastN: 64, Seed: 1 << 60, HasSeed: true,
				LogitBias: []gen.Bias{{Token: 5, Bias: -100}, {Token: 7, Bias: 2.5}}},
			Logprobs: true, TopLogprobs: 3}},
		&Generate{ID: 3, Request: gen.Request{PromptIDs: []int32{1, 2, 3}, MaxTokens: 1, FitContext: true, Sampling: gen.Sampling{TopP: 1}}},
		&Generate{ID: 4, Request: gen.Request{Messages: []gen.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "héllo \u2028 \x00"},
			{Role: "assistant", ToolCalls: []gen.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
			{Role: "tool", Content: "sunny", ToolCallID: "call_1"}}, MaxTokens: 8,
			Tools:      []gen.Tool{{Name: "get_weather", Description: "weather", Parameters: `{"type":"object","properties":{"city":{"type":"string"}}}`, Strict: true}},
			ToolChoice: gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"}, ParallelToolCalls: true}},
		&Generate{ID: 5, Request: gen.Request{Prompt: strp(""), MaxTokens: 8, Format: gen.Format{Type: gen.FormatJSONSchema, Name: "x", Schema: `{"type":"object"}`, Strict: true}}},
		&Generate{ID: 9, Request: gen.Request{Prompt: strp("a"), MaxTokens: 8, Format: gen.Format{Type: gen.FormatGrammar, Grammar: `root ::= "yes" | "no"`}}},
		&Generate{ID: 12, Request: gen.Request{Prompt: strp("a"), MaxTokens: 8, N: gen.MaxChoices}},
		&Tokenize{ID: 6, Text: "a <s> b", Special: true},
		&Detokenize{ID: 7, IDs: []int32{0, 5, 31999}},
		&Detokenize{ID: 8, IDs: []int32{}},
		&Cancel{ID: 2},
		&Embed{ID: 10, Text: "Once upon a time"},
		&Embed{ID: 11, IDs: []int32{1, 2, 3}},
	}
}

func sampleReplies() []Message {
	return []Message{
		&Ready{ID: 1, Protocol: Version, Name: "stories", Architecture: "llama", ContextSize: 512, VocabSize: 512, KVCacheBytes: 1 << 20, CacheTypeK: "q8_0", CacheTypeV: "f16",
			SpecialTokens: []string{"<s>", "</s>"}, ControlIDs: []int32{0, 1, 2}, BOS: &sampleBOS, Kernels: "avx2", LandlockABI: 7,
			Layers:  []Layer{{Name: "landlock", Requested: true, Applied: true, Detail: "ABI 7"}},
			Tensors: 48, TensorBytes: 1 << 20, LoadUS: 12, Slots: 4},
		&Progress{ID: 1, Tensors: 12, TensorsTotal: 48, Bytes: 4096, BytesTotal: 1 << 20, ElapsedUS: 1500},
		&Progress{ID: 1},
		&Tokens{ID: 2, Text: "Once", Logprobs: []gen.TokenProb{{Token: "Once", Logprob: -0.25, Top: []gen.TokenAlt{{Token: "One", Logprob: -2}}}}},
		&Tokens{ID: 2, Text: ""},
		&Tokens{ID: 2, Text: "", ToolCalls: []gen.CallDelta{{Index: 0, ID: "call_x", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		&Done{ID: 2, FinishReason: "length", Usage: gen.Usage{PromptTokens: 5, CompletionTokens: 16, CachedTokens: 2}},
		&Tokens{ID: 2, Index: gen.MaxChoices - 1, Text: "choice"},
		&Done{ID: 2, FinishReason: "stop", Usage: gen.Usage{PromptTokens: 5, CompletionTokens: 7}, Choices: []gen.FinishReason{"stop", "length", "tool_calls"}},
		&Error{ID: 3, Message: "context full"},
		&Error{ID: 3, Message: "the prompt has 9 tokens", Code: gen.CodeContextLength, Param: "messages"},
		&Tokenized{ID: 6, IDs: []int32{1, 2}},
		&Tokenized{ID: 6, IDs: []int32{}},
		&Detokenized{ID: 7, Text: "hello"},
		&Embedding{ID: 10, Vector: []float32{0.6, -0.8, 0}, Tokens: 5},
	}
}

// sampleBOS is the BOS id of the sample ready message.
var sampleBOS int32 = 1

func TestRoundTrip(t *testing.T) {
	check := func(t *testing.T, m Message, dec func([]byte) (Message, error)) {
		t.Helper()
		var buf bytes.Buffer
		if err := Write(&buf, m); err != nil {
			t.Fatal(err)
		}
		body, err := NewReader(&buf).ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(body, []byte(`{"type":"`+m.Type()+`"`)) {
			t.Fatalf("body %s does not start with its type", body)
		}
		got, err := dec(body)
		if err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip changed the message:\n got %#v\nwant %#v", got, m)
		}
	}
	for _, m := range sampleRequests() {
		t.Run("request/"+m.Type(), func(t *testing.T) { check(t, m, DecodeRequest) })
	}
	for _, m := range sampleReplies() {
		t.Run("reply/"+m.Type(), func(t *testing.T) { check(t, m, DecodeReply) })
	}
}

func TestDirectionsAreSeparate(t *testing.T) {
	for _, m := range sampleRequests() {
		body, _ := Marshal(m)
		if _, err := DecodeReply(body); KindOf(err) != KindUnknownType {
			t.Errorf("%s accepted as a reply: %v", m.Type(), err)
		}
	}
	for _, m := range sampleReplies() {
		body, _ := Marshal(m)
		if _, err := DecodeRequest(body); KindOf(err) != KindUnknownType {
			t.Errorf("%s accepted as a request: %v", m.Type(), err)
		}
	}
}

func TestDecodeViolations(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		kind  Kind
		field string
	}{
		{"not JSON", `{"type":"done",`, KindBadJSON, ""},
		{"garbage", `xx`, KindBadJSON, ""},
		{"array", `[1,2]`, KindWrongType, ""},
		{"string", `"done"`, KindWrongType, ""},
		{"trailing object", `{"type":"error","id":1,"message":"x"}{}`, KindTrailingData, ""},
		{"trailing garbage", `{"type":"error","id":1,"message":"x"} x`, KindTrailingData, ""},
		{"no type", `{"id":1,"message":"x"}`, KindMissingField, "type"},
		{"type null", `{"type":null,"id":1}`, KindWrongType, "type"},
		{"type number", `{"type":7,"id":1}`, KindWrongType, "type"},
		{"unknown type", `{"type":"shell","id":1}`, KindUnknownType, "type"},
		{"request type", `{"type":"cancel","id":1}`, KindUnknownType, "type"},
		{"type case", `{"TYPE":"error","id":1,"message":"x"}`, KindMissingField, "type"},
		{"type not first", `{"id":1,"type":"error","message":"x"}`, KindMissingField, "type"},
		{"empty object", `{}`, KindMissingField, "type"},
		{"duplicate type", `{"type":"error","type":"done","id":1,"message":"x"}`, KindDuplicateField, "type"},
		{"unknown field", `{"type":"error","id":1,"message":"x","extra":1}`, KindUnknownField, "extra"},
		{"field case", `{"type":"error","ID":1,"message":"x"}`, KindUnknownField, "ID"},
		{"duplicate field", `{"type":"error","id":1,"id":2,"message":"x"}`, KindDuplicateField, "id"},
		{"missing id", `{"type":"error","message":"x"}`, KindMissingField, "id"},
		{"missing nested", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1}}`, KindMissingField, "usage.completion_tokens"},
		{"unknown nested", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1,"x":0}}`, KindUnknownField, "usage.x"},
		{"id string", `{"type":"error","id":"1","message":"x"}`, KindWrongType, "id"},
		{"id null", `{"type":"error","id":null,"message":"x"}`, KindWrongType, "id"},
		{"id negative", `{"type":"error","id":-1,"message":"x"}`, KindWrongType, "id"},
		{"id fraction", `{"type":"error","id":1.5,"message":"x"}`, KindWrongType, "id"},
		{"id exponent", `{"type":"error","id":1e3,"message":"x"}`, KindWrongType, "id"},
		{"id too big", `{"type":"error","id":18446744073709551616,"message":"x"}`, KindWrongType, "id"},
		{"id zero", `{"type":"error","id":0,"message":"x"}`, KindBadValue, "id"},
		{"text number", `{"type":"tokens","id":1,"text":5}`, KindWrongType, "text"},
		{"ids not array", `{"type":"tokenized","id":1,"ids":{}}`, KindWrongType, "ids"},
		{"ids element", `{"type":"tokenized","id":1,"ids":[1,"2"]}`, KindWrongType, "ids[1]"},
		{"ids overflow int32", `{"type":"tokenized","id":1,"ids":[2147483648]}`, KindWrongType, "ids[0]"},
		{"ids negative", `{"type":"tokenized","id":1,"ids":[-1]}`, KindBadValue, "ids[0]"},
		{"logprob too big", `{"type":"tokens","id":1,"text":"a","logprobs":[{"token":"a","logprob":1e39}]}`, KindWrongType, "logprobs[0].logprob"},
		{"bool as number", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"layers":[{"name":"x","applied":1}]}`, KindWrongType, "layers[0].applied"},
		{"finish reason", `{"type":"done","id":1,"finish_reason":"eos","usage":{"prompt_tokens":1,"completion_tokens":1}}`, KindBadValue, "finish_reason"},
		{"cached above prompt", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1,"cached_tokens":2}}`, KindBadValue, "usage.cached_tokens"},
		{"negative usage", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":-1,"completion_tokens":1}}`, KindBadValue, "usage.prompt_tokens"},
		{"protocol", `{"type":"ready","id":1,"protocol":1,"n_ctx":1,"n_vocab":1}`, KindBadValue, "protocol"},
		{"n_ctx zero", `{"type":"ready","id":1,"protocol":2,"n_ctx":0,"n_vocab":1}`, KindBadValue, "n_ctx"},
		{"too many alternatives", `{"type":"tokens","id":1,"text":"a","logprobs":[{"token":"a","logprob":0,"top":[` +
			strings.Repeat(`{"token":"b","logprob":-1},`, gen.MaxTopLogprobs) + `{"token":"c","logprob":-1}]}]}`, KindBadValue, "logprobs[0].top"},
		{"progress past total", `{"type":"progress","id":1,"tensors":49,"tensors_total":48,"bytes":0,"bytes_total":0,"elapsed_us":0}`, KindBadValue, "tensors"},
		{"progress negative", `{"type":"progress","id":1,"tensors":-1,"tensors_total":48,"bytes":0,"bytes_total":0,"elapsed_us":0}`, KindBadValue, "tensors"},
		{"progress total", `{"type":"progress","id":1,"tensors":0,"tensors_total":1048577,"bytes":0,"bytes_total":0,"elapsed_us":0}`, KindBadValue, "tensors_total"},
		{"progress bytes", `{"type":"progress","id":1,"tensors":0,"tensors_total":1,"bytes":2,"bytes_total":1,"elapsed_us":0}`, KindBadValue, "bytes"},
		{"progress bytes total", `{"type":"progress","id":1,"tensors":0,"tensors_total":1,"bytes":0,"bytes_total":-1,"elapsed_us":0}`, KindBadValue, "bytes_total"},
		{"progress time", `{"type":"progress","id":1,"tensors":0,"tensors_total":1,"bytes":0,"bytes_total":0,"elapsed_us":-5}`, KindBadValue, "elapsed_us"},
		{"progress bytes overflow", `{"type":"progress","id":1,"tensors":0,"tensors_total":1,"bytes":0,"bytes_total":9223372036854775808,"elapsed_us":0}`, KindWrongType, "bytes_total"},
		{"progress missing", `{"type":"progress","id":1,"tensors":0,"tensors_total":1,"bytes":0,"bytes_total":0}`, KindMissingField, "elapsed_us"},
		{"ready tensors", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"tensors":-1}`, KindBadValue, "tensors"},
		{"ready bytes", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"tensor_bytes":-1}`, KindBadValue, "tensor_bytes"},
		{"ready kv bytes", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"kv_cache_bytes":-1}`, KindBadValue, "kv_cache_bytes"},
		{"ready cache type k", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"cache_type_k":"q4"}`, KindBadValue, "cache_type_k"},
		{"ready cache type v", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"cache_type_v":"x"}`, KindBadValue, "cache_type_v"},
		{"ready control id past vocab", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":4,"control_ids":[1,4]}`, KindBadValue, "control_ids[1]"},
		{"ready control ids unsorted", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":4,"control_ids":[2,1]}`, KindBadValue, "control_ids[1]"},
		{"ready control ids repeated", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":4,"control_ids":[2,2]}`, KindBadValue, "control_ids[1]"},
		{"ready bos past vocab", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":4,"bos":4}`, KindBadValue, "bos"},
		{"ready control id negative", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":4,"control_ids":[-1]}`, KindBadValue, "control_ids[0]"},
		{"generate repeat_last_n", `{"type":"generate","id":1,"request":{"prompt":"x","max_tokens":1,"sampling":{"repeat_last_n":65537}}}`, KindBadValue, "request.sampling.repeat_last_n"},
		{"generate temperature", `{"type":"generate","id":1,"request":{"prompt":"x","max_tokens":1,"sampling":{"temperature":3}}}`, KindBadValue, "request.sampling.temperature"},
		{"generate request missing", `{"type":"generate","id":1}`, KindMissingField, "request"},
		{"generate tool unknown field", `{"type":"generate","id":1,"request":{"prompt":"x","max_tokens":1,"sampling":{},"tools":[{"name":"f","x":1}]}}`, KindUnknownField, "request.tools[0].x"},
		{"generate schema not string", `{"type":"generate","id":1,"request":{"prompt":"x","max_tokens":1,"sampling":{},"format":{"type":"json_schema","schema":{}}}}`, KindWrongType, "request.format.schema"},
		{"error code", `{"type":"error","id":1,"message":"x","code":"teapot"}`, KindBadValue, "code"},
		{"error code type", `{"type":"error","id":1,"message":"x","code":5}`, KindWrongType, "code"},
		{"finish tool_calls ok but bad", `{"type":"done","id":1,"finish_reason":"tool_call","usage":{"prompt_tokens":1,"completion_tokens":1}}`, KindBadValue, "finish_reason"},
		{"tokens index negative", `{"type":"tokens","id":1,"index":-1,"text":""}`, KindBadValue, "index"},
		{"tokens index past n's bound", `{"type":"tokens","id":1,"index":128,"text":""}`, KindBadValue, "index"},
		{"tokens index type", `{"type":"tokens","id":1,"index":"1","text":""}`, KindWrongType, "index"},
		{"tokens index null", `{"type":"tokens","id":1,"index":null,"text":""}`, KindWrongType, "index"},
		{"done one choice listed", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1},"choices":["stop"]}`, KindBadValue, "choices"},
		{"done choices disagree", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1},"choices":["length","stop"]}`, KindBadValue, "choices[0]"},
		{"done choice reason", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1},"choices":["stop","eos"]}`, KindBadValue, "choices[1]"},
		{"done choices type", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1},"choices":"stop"}`, KindWrongType, "choices"},
		{"done too many choices", `{"type":"done","id":1,"finish_reason":"stop","usage":{"prompt_tokens":1,"completion_tokens":1},"choices":["stop"` + strings.Repeat(`,"stop"`, gen.MaxChoices) + `]}`, KindBadValue, "choices"},
		{"ready slots", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"n_seq":-1}`, KindBadValue, "n_seq"},
		{"ready load time", `{"type":"ready","id":1,"protocol":2,"n_ctx":1,"n_vocab":1,"load_us":1125899906842625}`, KindBadValue, "load_us"},
		{"tool call missing index", `{"type":"tokens","id":1,"text":"","tool_calls":[{"id":"call_1","name":"f","arguments":"{}"}]}`, KindMissingField, "tool_calls[0].index"},
		{"tool call id without name", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"id":"call_1","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].name"},
		{"tool call name without id", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"name":"f","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].id"},
		{"tool call index type", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":"0","id":"call_1","name":"f","arguments":"{}"}]}`, KindWrongType, "tool_calls[0].index"},
		{"tool call index negative", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":-1,"id":"call_1","name":"f","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].index"},
		{"tool call index too big", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":128,"id":"call_1","name":"f","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].index"},
		{"tool call empty id", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"id":"","name":"f","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].id"},
		{"tool call name alphabet", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"id":"c1","name":"f g","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].name"},
		{"tool call name too long", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"id":"c1","name":"` + strings.Repeat("f", gen.MaxNameBytes+1) + `","arguments":"{}"}]}`, KindBadValue, "tool_calls[0].name"},
		{"tool call later piece without arguments", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0}]}`, KindBadValue, "tool_calls[0].arguments"},
		{"tool call arguments type", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"arguments":{}}]}`, KindWrongType, "tool_calls[0].arguments"},
		{"tool call arguments too large", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"arguments":"` + strings.Repeat("a", MaxArgumentBytes+1) + `"}]}`, KindBadValue, "tool_calls[0].arguments"},
		{"tool call unknown field", `{"type":"tokens","id":1,"text":"","tool_calls":[{"index":0,"id":"c1","name":"f","arguments":"{}","x":1}]}`, KindUnknownField, "tool_calls[0].x"},
		{"invalid UTF-8", "{\"type\":\"tokens\",\"id\":1,\"text\":\"\xff\"}", KindInvalidUTF8, ""},
		{"overlong UTF-8", "{\"type\":\"tokens\",\"id\":1,\"text\":\"\xc0\xaf\"}", KindInvalidUTF8, ""},
		{"surrogate in UTF-8", "{\"type\":\"tokens\",\"id\":1,\"text\":\"\xed\xa0\x80\"}", KindInvalidUTF8, ""},
		{"lone high escape", `{"type":"tokens","id":1,"text":"\ud800"}`, KindInvalidUTF8, ""},
		{"lone low escape", `{"type":"tokens","id":1,"text":"a\udc00"}`, KindInvalidUTF8, ""},
		{"reversed pair", `{"type":"tokens","id":1,"text":"\udc00\ud800"}`, KindInvalidUTF8, ""},
		{"high then text", `{"type":"tokens","id":1,"text":"\ud800abcdef"}`, KindInvalidUTF8, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := DecodeReply
			if strings.HasPrefix(tt.body, `{"type":"generate"`) {
				dec = DecodeRequest // the broker's own messages are checked by the worker
			}
			m, err := dec([]byte(tt.body))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("decoded %#v, want a %v violation", m, tt.kind)
			}
			if pe.Kind != tt.kind || (tt.field != "" && pe.Field != tt.field) {
				t.Fatalf("got %v (kind %v, field %q), want kind %v field %q", err, pe.Kind, pe.Field, tt.kind, tt.field)
			}
		})
	}
}

func TestDecodeAcceptsValidEscapes(t *testing.T) {
	m, err := DecodeReply([]byte(`{"type":"tokens","id":1,"text":"\ud83d\ude00 \\ud800 \u00e9\"\\"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*Tokens).Text; got != "😀 \\ud800 é\"\\" {
		t.Fatalf("text %q", got)
	}
}

func TestRequestViolations(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"two prompts", gr(`"prompt":"a","prompt_ids":[1],"max_tokens":1`), "request.prompt"},
		{"no prompt", gr(`"max_tokens":1`), "request.prompt"},
		{"empty ids", gr(`"prompt_ids":[],"max_tokens":1`), "request.prompt_ids"},
		{"empty messages", gr(`"messages":[],"max_tokens":1`), "request.messages"},
		{"zero max", gr(`"prompt":"a","max_tokens":0`), "request.max_tokens"},
		{"five stops", gr(`"prompt":"a","max_tokens":1,"stop":["a","b","c","d","e"]`), "request.stop"},
		{"empty stop", gr(`"prompt":"a","max_tokens":1,"stop":[""]`), "request.stop[0]"},
		{"long stop", gr(`"prompt":"a","max_tokens":1,"stop":["` + strings.Repeat("s", gen.MaxStopBytes+1) + `"]`), "request.stop[0]"},
		{"role", gr(`"messages":[{"role":"function","content":"x"}],"max_tokens":1`), "request.messages[0].role"},
		{"top logprobs", gr(`"prompt":"a","max_tokens":1,"logprobs":true,"top_logprobs":21`), "request.top_logprobs"},
		{"top logprobs alone", gr(`"prompt":"a","max_tokens":1,"top_logprobs":2`), "request.top_logprobs"},
		{"n negative", gr(`"prompt":"a","max_tokens":1,"n":-1`), "request.n"},
		{"n past OpenAI's 128", gr(`"prompt":"a","max_tokens":1,"n":129`), "request.n"},
		{"tool calls on user", gr(`"messages":[{"role":"user","content":"x","tool_calls":[{"name":"f","arguments":"{}"}]}],"max_tokens":1`), "request.messages[0].tool_calls"},
		{"tool call id on user", gr(`"messages":[{"role":"user","content":"x","tool_call_id":"c"}],"max_tokens":1`), "request.messages[0].tool_call_id"},
		{"tool call no name", gr(`"messages":[{"role":"assistant","content":"","tool_calls":[{"name":"","arguments":"{}"}]}],"max_tokens":1`), "request.messages[0].tool_calls[0].name"},
		{"tool call long args", gr(`"messages":[{"role":"assistant","content":"","tool_calls":[{"name":"f","arguments":"` + strings.Repeat("a", gen.MaxTextBytes+1) + `"}]}],"max_tokens":1`), "request.messages[0].tool_calls[0].arguments"},
		{"tool name long", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"` + strings.Repeat("n", gen.MaxNameBytes+1) + `"}]`), "request.tools[0].name"},
		{"tool twice", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f"},{"name":"f"}]`), "request.tools[1].name"},
		{"tool schema not JSON", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f","parameters":"{"}]`), "request.tools[0].parameters"},
		{"tool schema array", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f","parameters":"[]"}]`), "request.tools[0].parameters"},
		{"tool schema deep", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f","parameters":"` + strings.Repeat(`{\"a\":`, gen.MaxSchemaDepth+1) + "1" + strings.Repeat("}", gen.MaxSchemaDepth+1) + `"}]`), "request.tools[0].parameters"},
		{"tool schema large", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f","parameters":"{\"d\":\"` + strings.Repeat("x", gen.MaxSchemaBytes) + `\"}"}]`), "request.tools[0].parameters"},
		{"choice mode", gr(`"prompt":"a","max_tokens":1,"tool_choice":{"mode":"any"}`), "request.tool_choice.mode"},
		{"choice unknown function", gr(`"prompt":"a","max_tokens":1,"tools":[{"name":"f"}],"tool_choice":{"mode":"function","name":"g"}`), "request.tool_choice.name"},
		{"choice required no tools", gr(`"prompt":"a","max_tokens":1,"tool_choice":{"mode":"required"}`), "request.tool_choice"},
		{"format type", gr(`"prompt":"a","max_tokens":1,"format":{"type":"xml"}`), "request.format.type"},
		{"format schema missing", gr(`"prompt":"a","max_tokens":1,"format":{"type":"json_schema"}`), "request.format.schema"},
		{"format schema deep", gr(`"prompt":"a","max_tokens":1,"format":{"type":"json_schema","schema":"` + strings.Repeat(`{\"a\":[`, gen.MaxSchemaDepth) + "1" + strings.Repeat("]}", gen.MaxSchemaDepth) + `"}`), "request.format.schema"},
		{"format grammar empty", gr(`"prompt":"a","max_tokens":1,"format":{"type":"grammar"}`), "request.format"},
		{"format grammar large", gr(`"prompt":"a","max_tokens":1,"format":{"type":"grammar","grammar":"` + strings.Repeat("x", gen.MaxGrammarBytes+1) + `"}`), "request.format.grammar"},
		{"format text with schema", gr(`"prompt":"a","max_tokens":1,"format":{"type":"text","schema":"{}"}`), "request.format"},
		{"bias token", gr(`"prompt":"a","max_tokens":1`, `"logit_bias":[{"token":-1,"bias":1}]`), "request.sampling.logit_bias[0].token"},
		{"bias twice", gr(`"prompt":"a","max_tokens":1`, `"logit_bias":[{"token":1,"bias":1},{"token":1,"bias":2}]`), "request.sampling.logit_bias[1].token"},
		{"bias value", gr(`"prompt":"a","max_tokens":1`, `"logit_bias":[{"token":1,"bias":101}]`), "request.sampling.logit_bias[0].bias"},
		{"bias count", gr(`"prompt":"a","max_tokens":1`, `"logit_bias":[`+manyBiases(gen.MaxLogitBias+1)+`]`), "request.sampling.logit_bias"},
		{"hello protocol", `{"type":"hello","id":1,"protocol":0}`, "protocol"},
		{"hello threads", `{"type":"hello","id":1,"protocol":2,"threads":-1}`, "threads"},
		{"hello kv type", `{"type":"hello","id":1,"protocol":2,"kv_type":"q4_0"}`, "kv_type"},
		{"hello cache type k", `{"type":"hello","id":1,"protocol":2,"cache_type_k":"Q8_0"}`, "cache_type_k"},
		{"hello cache type v", `{"type":"hello","id":1,"protocol":2,"cache_type_k":"q8_0","cache_type_v":"bf16"}`, "cache_type_v"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(tt.body))
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Kind != KindBadValue || pe.Field != tt.field {
				t.Fatalf("got %v, want a bad value in %q", err, tt.field)
			}
		})
	}
}

// gr builds a generate body around request members, with the sampling
// members given (or none).
func gr(members string, sampling ...string) string {
	return `{"type":"generate","id":1,"request":{` + members + `,"sampling":{` + strings.Join(sampling, ",") + `}}}`
}

// manyBiases lists n distinct logit_bias entries.
func manyBiases(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"token":%d,"bias":1}`, i)
	}
	return strings.Join(parts, ",")
}

func TestErrorMessage(t *testing.T) {
	_, err := DecodeReply([]byte(`{"type":"error","id":1,"message":"x","extra":1}`))
	want := `ipc: unknown field "extra" in "error" message at byte 36`
	if err == nil || err.Error() != want {
		t.Fatalf("got %q, want %q", err, want)
	}
}
