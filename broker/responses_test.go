package broker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// TestDecodeResponseRequest checks the conversion of the Responses API's
// input items, instructions and tools into the chat request, and the
// 400s of bad fields.
func TestDecodeResponseRequest(t *testing.T) {
	ok := []struct {
		name  string
		body  string
		check func(r *responseRequest) bool
	}{
		{"text", `{"input":"hi","instructions":"be brief","max_output_tokens":5,"temperature":0.5,"top_p":0.9,"store":true,"metadata":{"a":"b"}}`,
			func(r *responseRequest) bool {
				return len(r.Messages) == 2 && reflect.DeepEqual(r.Messages[0], gen.Message{Role: gen.RoleSystem, Content: "be brief"}) &&
					reflect.DeepEqual(r.Messages[1], gen.Message{Role: gen.RoleUser, Content: "hi"}) && r.MaxTokens == 5 &&
					r.Sampling.Temperature == 0.5 && r.Sampling.TopP == 0.9 && r.store
			}},
		{"items", `{"input":[{"role":"developer","content":"sys"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"g","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"r1"},{"role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}]}]}`,
			func(r *responseRequest) bool {
				m := r.Messages
				return len(m) == 5 && m[0].Role == gen.RoleSystem && m[1].Content == "ab" && m[2].Role == gen.RoleAssistant &&
					len(m[2].ToolCalls) == 2 && m[2].ToolCalls[1].ID == "c2" && reflect.DeepEqual(m[3], gen.Message{Role: gen.RoleTool, Content: "r1", ToolCallID: "c1"}) &&
					m[4].Content == "done"
			}},
		{"tools", `{"input":"x","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false}`,
			func(r *responseRequest) bool {
				return len(r.Tools) == 1 && r.Tools[0].Name == "f" && r.Tools[0].Parameters == `{"type":"object"}` && r.Tools[0].Strict &&
					r.ToolChoice == gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "f"} && !r.ParallelToolCalls
			}},
		{"defaults", `{"input":"x","text":{"format":{"type":"text"}},"truncation":"disabled","user":"u"}`,
			func(r *responseRequest) bool {
				return r.ParallelToolCalls && reflect.DeepEqual(r.Sampling, gen.DefaultSampling()) && r.MaxTokens == 0 && !r.Stream &&
					r.Format == gen.Format{}
			}},
		{"json object", `{"input":"x","text":{"format":{"type":"json_object"},"verbosity":"low"}}`,
			func(r *responseRequest) bool {
				return r.Format == gen.Format{Type: gen.FormatJSONObject} && r.text["verbosity"] == "low"
			}},
		{"json schema", `{"input":"x","text":{"format":{"type":"json_schema","name":"person","description":"d","schema":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}}}`,
			func(r *responseRequest) bool {
				f := r.text["format"].(map[string]any)
				return r.Format == gen.Format{Type: gen.FormatJSONSchema, Name: "person", Strict: true, Schema: `{"type":"object","properties":{"a":{"type":"integer"}}}`} &&
					f["name"] == "person" && f["strict"] == true && f["description"] == "d"
			}},
		{"json schema not strict", `{"input":"x","text":{"format":{"type":"json_schema","name":"p","schema":{}}}}`,
			func(r *responseRequest) bool {
				return r.Format == gen.Format{Type: gen.FormatJSONSchema, Name: "p", Schema: `{}`} && r.text["format"].(map[string]any)["strict"] == false
			}},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			r, err := decodeResponseRequest([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if !c.check(r) {
				t.Fatalf("decoded %+v", r.Request)
			}
		})
	}
	bad := []struct{ name, body, param string }{
		{"no input", `{"model":"m"}`, "input"},
		{"input number", `{"input":1}`, "input"},
		{"empty items", `{"input":[]}`, "input"},
		{"item not an object", `{"input":["a"]}`, "input[0]"},
		{"unknown item type", `{"input":[{"type":"web_search_call","id":"ws_1"}]}`, "input[0].type"},
		{"bad role", `{"input":[{"role":"robot","content":"x"}]}`, "input[0].role"},
		{"no content", `{"input":[{"role":"user"}]}`, "input[0].content"},
		{"image part", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]}`, "input[0].content[0].type"},
		{"part without text", `{"input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content[0].text"},
		{"call without id", `{"input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id"},
		{"call bad name", `{"input":[{"type":"function_call","call_id":"c","name":"a b","arguments":"{}"}]}`, "input[0].name"},
		{"output without id", `{"input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id"},
		{"unknown item field", `{"input":[{"role":"user","content":"x","foo":1}]}`, "input[0].foo"},
		{"instructions type", `{"input":"x","instructions":3}`, "instructions"},
		{"max_output_tokens zero", `{"input":"x","max_output_tokens":0}`, "max_output_tokens"},
		{"max_output_tokens string", `{"input":"x","max_output_tokens":"5"}`, "max_output_tokens"},
		{"temperature", `{"input":"x","temperature":3}`, "temperature"},
		{"top_p", `{"input":"x","top_p":"1"}`, "top_p"},
		{"stream type", `{"input":"x","stream":"yes"}`, "stream"},
		{"store type", `{"input":"x","store":1}`, "store"},
		{"previous response", `{"input":"x","previous_response_id":"resp_1"}`, "previous_response_id"},
		{"conversation", `{"input":"x","conversation":"c"}`, "conversation"},
		{"background", `{"input":"x","background":true}`, "background"},
		{"web search tool", `{"input":"x","tools":[{"type":"web_search"}]}`, "tools[0].type"},
		{"tool without type", `{"input":"x","tools":[{"name":"f"}]}`, "tools[0].type"},
		{"tool schema", `{"input":"x","tools":[{"type":"function","name":"f","parameters":[1]}]}`, "tools[0].parameters"},
		{"duplicate tool", `{"input":"x","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, "tools[1]"},
		{"choice unknown", `{"input":"x","tool_choice":"maybe"}`, "tool_choice"},
		{"choice not among tools", `{"input":"x","tool_choice":{"type":"function","name":"g"}}`, "tool_choice"},
		{"required without tools", `{"input":"x","tool_choice":"required"}`, "tool_choice"},
		{"text not an object", `{"input":"x","text":"json"}`, "text"},
		{"format not an object", `{"input":"x","text":{"format":"json_object"}}`, "text.format"},
		{"format without type", `{"input":"x","text":{"format":{"name":"a","schema":{}}}}`, "text.format.type"},
		{"format type number", `{"input":"x","text":{"format":{"type":1}}}`, "text.format.type"},
		{"format type unknown", `{"input":"x","text":{"format":{"type":"grammar"}}}`, "text.format.type"},
		{"schema without name", `{"input":"x","text":{"format":{"type":"json_schema","schema":{"type":"object"}}}}`, "text.format.name"},
		{"schema bad name", `{"input":"x","text":{"format":{"type":"json_schema","name":"a b","schema":{}}}}`, "text.format.name"},
		{"schema missing", `{"input":"x","text":{"format":{"type":"json_schema","name":"a"}}}`, "text.format.schema"},
		{"schema null", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":null}}}`, "text.format.schema"},
		{"schema not an object", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":[1]}}}`, "text.format.schema"},
		{"schema too deep", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":` + strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200) + `}}}`, "text.format.schema"},
		{"schema too large", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{"description":"` + strings.Repeat("x", gen.MaxSchemaBytes) + `"}}}}`, "text.format.schema"},
		{"strict type", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{},"strict":"yes"}}}`, "text.format.strict"},
		{"description type", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{},"description":5}}}`, "text.format.description"},
		{"schema with json_object", `{"input":"x","text":{"format":{"type":"json_object","schema":{}}}}`, "text.format.schema"},
		{"name with text", `{"input":"x","text":{"format":{"type":"text","name":"a"}}}`, "text.format.name"},
		{"format unknown field", `{"input":"x","text":{"format":{"type":"json_schema","name":"a","schema":{},"json_schema":{}}}}`, "text.format.json_schema"},
		{"verbosity", `{"input":"x","text":{"verbosity":"loud"}}`, "text.verbosity"},
		{"text unknown field", `{"input":"x","text":{"style":"x"}}`, "text.style"},
		{"metadata type", `{"input":"x","metadata":{"a":1}}`, "metadata.a"},
		{"unknown field", `{"input":"x","frobnicate":true}`, "frobnicate"},
		{"deep content", `{"input":[{"role":"user","content":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}]}`, "input[0].content[0]"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := decodeResponseRequest([]byte(c.body))
			ae, ok := err.(*APIError)
			if !ok || ae.Status != 400 || ae.Param != c.param {
				t.Fatalf("got %v, want a 400 naming %q", err, c.param)
			}
		})
	}
}

// FuzzDecodeResponseRequest checks the decoder never panics and keeps
// its bounds.
func FuzzDecodeResponseRequest(f *testing.F) {
	for _, s := range []string{`{"input":"hi","instructions":"x"}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"}}`,
		`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true},"verbosity":"low"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeResponseRequest(body)
		if err != nil {
			return
		}
		if len(r.Messages) == 0 || len(r.Messages) > gen.MaxMessages+1 || len(r.Tools) > gen.MaxTools {
			t.Fatalf("%d messages, %d tools", len(r.Messages), len(r.Tools))
		}
		if f := r.Format; f.Type == gen.FormatJSONSchema && (f.Name == "" || len(f.Schema) > gen.MaxSchemaBytes) {
			t.Fatalf("format %+v", f)
		}
	})
}

// TestResponseTextEcho checks that the Response echoes text as given,
// with OpenAI's defaults filled in.
func TestResponseTextEcho(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"input":"x"}`, `{"format":{"type":"text"}}`},
		{`{"input":"x","text":{"verbosity":"high"}}`, `{"format":{"type":"text"},"verbosity":"high"}`},
		{`{"input":"x","text":{"format":{"type":"json_object"}}}`, `{"format":{"type":"json_object"}}`},
		{`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}}}`,
			`{"format":{"name":"n","schema":{"type":"object"},"strict":false,"type":"json_schema"}}`},
	} {
		r, err := decodeResponseRequest([]byte(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(newResponseShaper(r, "m", 0).base.Text)
		if err != nil || string(b) != c.want {
			t.Errorf("%s: text echoed as %s (%v), want %s", c.body, b, err, c.want)
		}
	}
}

// TestResponseCutCall checks that when the output budget ends the
// response, its last call, whose arguments the budget may have cut, is
// incomplete, and the calls before it completed.
func TestResponseCutCall(t *testing.T) {
	r, err := decodeResponseRequest([]byte(`{"input":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	calls := []gen.CallDelta{{Index: 0, ID: "a", Name: "f", Arguments: "{}"}, {Index: 1, ID: "b", Name: "f", Arguments: `{"x":`}}
	for _, c := range []struct {
		reason gen.FinishReason
		want   []string
	}{
		{gen.FinishLength, []string{"completed", "incomplete"}},
		{gen.FinishToolCalls, []string{"completed", "completed"}},
	} {
		out := newResponseShaper(r, "m", 0).final("", "", calls, c.reason, gen.Usage{}).Output
		if len(out) != 3 {
			t.Fatalf("%d output items", len(out))
		}
		for i, want := range c.want {
			if got := out[1+i].(functionCallItemJSON).Status; got != want {
				t.Errorf("finish %s: call %d status %q, want %q", c.reason, i, got, want)
			}
		}
	}
}
