package broker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

const userX = `{"role":"user","content":"x"}`

// chatBody is a chat request with the user message, then extra members.
func chatBody(extra string) string {
	if extra == "" {
		return `{"messages":[` + userX + `]}`
	}
	return `{"messages":[` + userX + `],` + extra + `}`
}

// TestLenientFields: every field of OpenAI's request and message schemas
// is accepted when well-typed, including what the SDK returned and a
// client sends back as history.
func TestLenientFields(t *testing.T) {
	sdkAssistant := `{"role":"assistant","content":"hi","refusal":null,"annotations":[],"audio":null,"function_call":null,"tool_calls":null}`
	tests := []struct{ name, path, body string }{
		{"SDK's assistant message back", "/v1/chat/completions", `{"messages":[` + userX + `,` + sdkAssistant + `,` + userX + `]}`},
		{"assistant refusal", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":null,"refusal":"I can't"},` + userX + `]}`},
		{"assistant refusal part", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},` + userX + `]}`},
		{"annotations", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","annotations":[{"type":"url_citation","url_citation":{"url":"x"}}]},` + userX + `]}`},
		{"audio reference", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","audio":{"id":"audio_1"}},` + userX + `]}`},
		{"names", "/v1/chat/completions", `{"messages":[{"role":"system","content":"s","name":"a"},{"role":"user","content":"x","name":"b"},{"role":"assistant","content":"y","name":"c"}]}`},
		{"developer", "/v1/chat/completions", `{"messages":[{"role":"developer","content":[{"type":"text","text":"be brief"}]},` + userX + `]}`},
		{"tool history", "/v1/chat/completions", `{"messages":[` + userX + `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`},
		{"function history", "/v1/chat/completions", `{"messages":[` + userX + `,{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}},{"role":"function","name":"f","content":"42"}]}`},
		{"ignored top-level", "/v1/chat/completions", chatBody(`"user":"u1","store":false,"metadata":{"k":"v"},"service_tier":"auto","parallel_tool_calls":true,"reasoning_effort":"low","verbosity":"low","prompt_cache_key":"k","safety_identifier":"s","prediction":{"type":"content","content":"x"},"modalities":["text"],"audio":null,"web_search_options":null`)},
		{"tools declined", "/v1/chat/completions", chatBody(`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"`)},
		{"text format", "/v1/chat/completions", chatBody(`"response_format":{"type":"text"}`)},
		{"logit_bias", "/v1/chat/completions", chatBody(`"logit_bias":{"5":-100,"7":2.5}`)},
		{"n 1", "/v1/chat/completions", chatBody(`"n":1`)},
		{"completion fields", "/v1/completions", `{"prompt":"a","best_of":1,"n":1,"echo":false,"suffix":"","user":"u","logit_bias":{},"seed":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x"), testConfig(t, nil))
			if code, _, b := ts.do(t, "POST", tt.path, "", tt.body); code != 200 {
				t.Fatalf("status %d: %s", code, b)
			}
		})
	}
}

// TestNewFieldsBadInput: every new field, wrong in type, size or depth, is
// a 4xx in OpenAI's error shape naming it.
func TestNewFieldsBadInput(t *testing.T) {
	deep := func(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }
	tool := func(fn string) string { return `"tools":[{"type":"function","function":` + fn + `}]` }
	var many []string
	for i := range gen.MaxLogitBias + 1 {
		many = append(many, fmt.Sprintf(`"%d":1`, i))
	}
	tests := []struct {
		name, path, body string
		param            string
	}{
		{"tools type", "/v1/chat/completions", chatBody(`"tools":{}`), "tools"},
		{"tool type", "/v1/chat/completions", chatBody(`"tools":[{"type":"retrieval","function":{"name":"f"}}]`), "tools[0].type"},
		{"tool unknown field", "/v1/chat/completions", chatBody(`"tools":[{"type":"function","function":{"name":"f"},"x":1}]`), "tools[0].x"},
		{"function name missing", "/v1/chat/completions", chatBody(tool(`{"description":"d"}`)), "tools[0].function.name"},
		{"function name type", "/v1/chat/completions", chatBody(tool(`{"name":5}`)), "tools[0].function.name"},
		{"function name chars", "/v1/chat/completions", chatBody(tool(`{"name":"get weather"}`)), "tools[0].function.name"},
		{"function name long", "/v1/chat/completions", chatBody(tool(`{"name":"` + strings.Repeat("f", 65) + `"}`)), "tools[0].function.name"},
		{"function twice", "/v1/chat/completions", chatBody(`"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]`), "tools[1]"},
		{"parameters type", "/v1/chat/completions", chatBody(tool(`{"name":"f","parameters":[]}`)), "tools[0].function.parameters"},
		{"parameters deep", "/v1/chat/completions", chatBody(tool(`{"name":"f","parameters":` + deep(gen.MaxSchemaDepth+1) + `}`)), "tools[0].function.parameters"},
		{"parameters large", "/v1/chat/completions", chatBody(tool(`{"name":"f","parameters":{"d":"` + strings.Repeat("x", gen.MaxSchemaBytes) + `"}}`)), "tools[0].function.parameters"},
		{"strict type", "/v1/chat/completions", chatBody(tool(`{"name":"f","strict":"yes"}`)), "tools[0].function.strict"},
		{"too many tools", "/v1/chat/completions", chatBody(`"tools":[` + strings.Repeat(`{"type":"function","function":{"name":"f"}},`, gen.MaxTools) + `{"type":"function","function":{"name":"g"}}]`), "tools"},
		{"tools and functions", "/v1/chat/completions", chatBody(tool(`{"name":"f"}`) + `,"functions":[{"name":"g"}]`), "functions"},
		{"tool_choice value", "/v1/chat/completions", chatBody(`"tool_choice":"any"`), "tool_choice"},
		{"tool_choice type", "/v1/chat/completions", chatBody(`"tool_choice":5`), "tool_choice"},
		{"tool_choice unknown function", "/v1/chat/completions", chatBody(tool(`{"name":"f"}`) + `,"tool_choice":{"type":"function","function":{"name":"g"}}`), "tool_choice"},
		{"tool_choice required without tools", "/v1/chat/completions", chatBody(`"tool_choice":"required"`), "tool_choice"},
		{"tool_choice object extra", "/v1/chat/completions", chatBody(tool(`{"name":"f"}`) + `,"tool_choice":{"type":"function","function":{"name":"f","x":1}}`), "tool_choice.function.x"},
		{"tool_choice and function_call", "/v1/chat/completions", chatBody(`"tool_choice":"none","function_call":"none"`), "function_call"},
		{"parallel_tool_calls type", "/v1/chat/completions", chatBody(`"parallel_tool_calls":"yes"`), "parallel_tool_calls"},
		{"response_format type", "/v1/chat/completions", chatBody(`"response_format":"json"`), "response_format"},
		{"response_format unknown type", "/v1/chat/completions", chatBody(`"response_format":{"type":"xml"}`), "response_format.type"},
		{"json_schema missing", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_schema"}`), "response_format.json_schema"},
		{"json_schema name missing", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`), "response_format.json_schema.name"},
		{"json_schema deep", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":` + deep(gen.MaxSchemaDepth+1) + `}}`), "response_format.json_schema.schema"},
		{"json_schema not object", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":"s"}}`), "response_format.json_schema.schema"},
		{"grammar type", "/v1/chat/completions", chatBody(`"grammar":["root"]`), "grammar"},
		{"grammar large", "/v1/chat/completions", chatBody(`"grammar":"` + strings.Repeat("x", gen.MaxGrammarBytes+1) + `"`), "grammar"},
		{"grammar and response_format", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_object"},"grammar":"root ::= \"a\""`), "grammar"},
		{"llama json_schema deep", "/v1/completions", `{"prompt":"a","json_schema":` + deep(gen.MaxSchemaDepth+1) + `}`, "json_schema"},
		{"logit_bias type", "/v1/chat/completions", chatBody(`"logit_bias":[1]`), "logit_bias"},
		{"logit_bias key", "/v1/chat/completions", chatBody(`"logit_bias":{"a":1}`), "logit_bias.a"},
		{"logit_bias key padded", "/v1/chat/completions", chatBody(`"logit_bias":{"05":1}`), "logit_bias.05"},
		{"logit_bias value type", "/v1/chat/completions", chatBody(`"logit_bias":{"5":"1"}`), "logit_bias.5"},
		{"logit_bias value range", "/v1/chat/completions", chatBody(`"logit_bias":{"5":101}`), "logit_bias.5"},
		{"logit_bias past vocabulary", "/v1/chat/completions", chatBody(`"logit_bias":{"300":1}`), "logit_bias.300"},
		{"logit_bias too many", "/v1/chat/completions", chatBody(`"logit_bias":{` + strings.Join(many, ",") + `}`), "logit_bias"},
		{"echo type", "/v1/completions", `{"prompt":"a","echo":1}`, "echo"},
		{"n type", "/v1/chat/completions", chatBody(`"n":"2"`), "n"},
		{"n above the slots", "/v1/chat/completions", chatBody(`"n":5`), "n"},
		{"best_of above 1", "/v1/completions", `{"prompt":"a","best_of":2}`, "best_of"},
		{"suffix", "/v1/completions", `{"prompt":"a","suffix":"end"}`, "suffix"},
		{"metadata type", "/v1/chat/completions", chatBody(`"metadata":{"k":1}`), "metadata.k"},
		{"metadata deep", "/v1/chat/completions", chatBody(`"metadata":{"k":{"a":{"b":1}}}`), "metadata.k"},
		{"metadata too many", "/v1/chat/completions", chatBody(`"metadata":{` + strings.Join(many[:17], ",") + `}`), "metadata"},
		{"user type", "/v1/chat/completions", chatBody(`"user":1`), "user"},
		{"user long", "/v1/chat/completions", chatBody(`"user":"` + strings.Repeat("u", 2000) + `"`), "user"},
		{"store type", "/v1/chat/completions", chatBody(`"store":"no"`), "store"},
		{"service_tier value", "/v1/chat/completions", chatBody(`"service_tier":"gold"`), "service_tier"},
		{"prediction type", "/v1/chat/completions", chatBody(`"prediction":{"type":"content","content":5}`), "prediction.content"},
		{"modalities audio", "/v1/chat/completions", chatBody(`"modalities":["text","audio"]`), "modalities[1]"},
		{"audio output", "/v1/chat/completions", chatBody(`"audio":{"voice":"alloy","format":"mp3"}`), "audio"},
		{"web search", "/v1/chat/completions", chatBody(`"web_search_options":{}`), "web_search_options"},
		{"store on completions", "/v1/completions", `{"prompt":"a","store":true}`, "store"},
		{"refusal type", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","refusal":5},` + userX + `]}`, "messages[0].refusal"},
		{"annotations type", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","annotations":{}},` + userX + `]}`, "messages[0].annotations"},
		{"audio ref extra", "/v1/chat/completions", `{"messages":[{"role":"assistant","content":"a","audio":{"id":"x","data":"y"}},` + userX + `]}`, "messages[0].audio.data"},
		{"refusal on user", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a","refusal":"no"}]}`, "messages[0].refusal"},
		{"tool_calls on user", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a","tool_calls":[]}]}`, "messages[0].tool_calls"},
		{"tool_calls type", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":{}},` + userX + `]}`, "messages[0].tool_calls"},
		{"tool call arguments type", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]},` + userX + `]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool call no function", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function"}]},` + userX + `]}`, "messages[0].tool_calls[0].function"},
		{"tool call arguments large", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"` + strings.Repeat("a", gen.MaxTextBytes+1) + `"}}]},` + userX + `]}`, "messages[0].tool_calls[0].function.arguments"},
		{"tool_call_id type", "/v1/chat/completions", `{"messages":[{"role":"tool","tool_call_id":1,"content":"x"}]}`, "messages[0].tool_call_id"},
		{"tools on completions", "/v1/completions", `{"prompt":"a","tools":[]}`, "tools"},
	}
	ts := start(t, newFake("x"), testConfig(t, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, b := ts.do(t, "POST", tt.path, "", tt.body)
			if code < 400 || code >= 500 {
				t.Fatalf("status %d, want a 4xx: %.300s", code, b)
			}
			e := decodeError(t, b)
			if str(e.Error.Param) != tt.param || e.Error.Message == "" || e.Error.Type != "invalid_request_error" {
				t.Fatalf("param %q, want %q: %.300s", str(e.Error.Param), tt.param, b)
			}
		})
	}
}

// TestConstraintsCarried: tools, tool_choice, response formats, grammars
// and logit_bias reach the backend as parsed, and a model that cannot
// follow them answers with a typed 400.
func TestConstraintsCarried(t *testing.T) {
	schema := `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`
	tests := []struct {
		name, path, body string
		check            func(gen.Request) bool
		param            string // of the 400 the fake answers with, "" for a 200
	}{
		{"tools", "/v1/chat/completions", chatBody(`"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":` + schema + `,"strict":true}}],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`),
			func(r gen.Request) bool {
				return len(r.Tools) == 1 && r.Tools[0].Name == "get_weather" && r.Tools[0].Description == "d" && r.Tools[0].Strict &&
					jsonEqual(r.Tools[0].Parameters, schema) && r.ToolChoice == gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"} && r.ParallelToolCalls
			}, "tools"},
		{"functions", "/v1/chat/completions", chatBody(`"functions":[{"name":"f"}],"function_call":{"name":"f"},"parallel_tool_calls":false`),
			func(r gen.Request) bool {
				return len(r.Tools) == 1 && r.ToolChoice == gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "f"} && !r.ParallelToolCalls
			}, "tools"},
		{"json_object", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_object"}`),
			func(r gen.Request) bool { return r.Format == gen.Format{Type: gen.FormatJSONObject} }, "response_format"},
		{"json_schema", "/v1/chat/completions", chatBody(`"response_format":{"type":"json_schema","json_schema":{"name":"city","strict":true,"schema":` + schema + `}}`),
			func(r gen.Request) bool {
				return r.Format.Type == gen.FormatJSONSchema && r.Format.Name == "city" && r.Format.Strict && jsonEqual(r.Format.Schema, schema)
			}, "response_format"},
		{"grammar", "/v1/completions", `{"prompt":"a","grammar":"root ::= \"yes\" | \"no\""}`,
			func(r gen.Request) bool {
				return r.Format == gen.Format{Type: gen.FormatGrammar, Grammar: `root ::= "yes" | "no"`}
			}, "response_format"},
		{"llama.cpp json_schema", "/v1/completions", `{"prompt":"a","json_schema":` + schema + `}`,
			func(r gen.Request) bool {
				return r.Format.Type == gen.FormatJSONSchema && jsonEqual(r.Format.Schema, schema)
			}, "response_format"},
		{"tool history", "/v1/chat/completions", `{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]}`,
			func(r gen.Request) bool {
				return len(r.Messages) == 2 && len(r.Messages[0].ToolCalls) == 1 && r.Messages[0].ToolCalls[0] == gen.ToolCall{ID: "c1", Name: "f", Arguments: `{"a":1}`} &&
					r.Messages[1].Role == gen.RoleTool && r.Messages[1].ToolCallID == "c1" && r.Messages[1].Content == "ok"
			}, ""},
		{"logit_bias", "/v1/chat/completions", chatBody(`"logit_bias":{"7":2.5,"5":-100}`),
			func(r gen.Request) bool {
				return len(r.Sampling.LogitBias) == 2 && r.Sampling.LogitBias[0] == gen.Bias{Token: 5, Bias: -100} && r.Sampling.LogitBias[1] == gen.Bias{Token: 7, Bias: 2.5}
			}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("x")
			ts := start(t, fake, testConfig(t, nil))
			code, _, b := ts.do(t, "POST", tt.path, "", tt.body)
			reqs := fake.Requests()
			if len(reqs) != 1 || !tt.check(reqs[0]) {
				t.Fatalf("the backend got %+v", reqs)
			}
			if tt.param == "" {
				if code != 200 {
					t.Fatalf("status %d: %s", code, b)
				}
				return
			}
			e := decodeError(t, b)
			if code != 400 || str(e.Error.Code) != string(gen.CodeUnsupported) || str(e.Error.Param) != tt.param {
				t.Fatalf("status %d, want a 400 unsupported_for_model on %s: %s", code, tt.param, b)
			}
		})
	}
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// TestEcho: echo puts the prompt's text (given, or of the token ids)
// before the completion, whole and streamed.
func TestEcho(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"text", `{"prompt":"Once ","echo":true}`, "Once xy"},
		{"ids", `{"prompt":[104,105],"echo":true}`, "hixy"},
		{"off", `{"prompt":"Once ","echo":false}`, "xy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := start(t, newFake("x", "y"), testConfig(t, nil))
			code, _, b := ts.do(t, "POST", "/v1/completions", "", tt.body)
			var r chatResp
			if code != 200 || json.Unmarshal(b, &r) != nil || r.Choices[0].Text != tt.want {
				t.Fatalf("status %d, want text %q: %s", code, tt.want, b)
			}
			code, _, b = ts.do(t, "POST", "/v1/completions", "", strings.Replace(tt.body, "{", `{"stream":true,`, 1))
			var text strings.Builder
			for _, ev := range sseEvents(t, strings.NewReader(string(b))) {
				if ev == "[DONE]" {
					break
				}
				var c chatResp
				if err := json.Unmarshal([]byte(ev), &c); err != nil {
					t.Fatal(err)
				}
				text.WriteString(c.Choices[0].Text)
			}
			if code != 200 || text.String() != tt.want {
				t.Fatalf("streamed %q, want %q: %s", text.String(), tt.want, b)
			}
		})
	}
}

// TestMessageRoundTrip: the assistant message of a response carries
// OpenAI's refusal and annotations, and goes back verbatim as history.
func TestMessageRoundTrip(t *testing.T) {
	ts := start(t, newFake("Hello"), testConfig(t, nil))
	code, _, b := ts.do(t, "POST", "/v1/chat/completions", "", chatBody(""))
	var r struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if code != 200 || json.Unmarshal(b, &r) != nil || len(r.Choices) != 1 {
		t.Fatalf("status %d: %s", code, b)
	}
	var msg map[string]any
	if err := json.Unmarshal(r.Choices[0].Message, &msg); err != nil {
		t.Fatal(err)
	}
	if ann, ok := msg["annotations"].([]any); msg["refusal"] != nil || !ok || len(ann) != 0 || msg["content"] != "Hello" {
		t.Fatalf("message %s, want refusal null and annotations []", r.Choices[0].Message)
	}
	body := `{"messages":[` + userX + `,` + string(r.Choices[0].Message) + `,` + userX + `]}`
	if code, _, b := ts.do(t, "POST", "/v1/chat/completions", "", body); code != 200 {
		t.Fatalf("the message sent back: status %d: %s", code, b)
	}
}
