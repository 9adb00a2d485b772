package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// toolCallsBody asks for a forced call of get_weather.
const toolCallsBody = `{"messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],"tool_choice":"required"`

type callJSON struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// TestToolCallResponse: calls come back as message.tool_calls with
// content null when there is no text, and with finish reason tool_calls.
func TestToolCallResponse(t *testing.T) {
	for _, pieces := range [][]string{nil, {"Let me look."}} {
		fake := newFake(pieces...)
		fake.Calls = []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {Index: 1, ID: "call_b", Name: "get_weather", Arguments: `{"city":"Lima"}`}}
		ts := start(t, fake, testConfig(t, nil))
		code, _, body := ts.do(t, "POST", "/v1/chat/completions", "", toolCallsBody+"}")
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
		var r struct {
			Choices []struct {
				Message struct {
					Content   *string    `json:"content"`
					ToolCalls []callJSON `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		m := r.Choices[0].Message
		if r.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != 2 {
			t.Fatalf("%s", body)
		}
		if pieces == nil && m.Content != nil || pieces != nil && (m.Content == nil || *m.Content != pieces[0]) {
			t.Errorf("content %v with pieces %q: %s", m.Content, pieces, body)
		}
		for i, c := range m.ToolCalls {
			want := fake.Calls[i]
			if c.Index != nil || c.ID != want.ID || c.Type != "function" || c.Function.Name != want.Name || c.Function.Arguments != want.Arguments {
				t.Errorf("call %d: %+v, want %+v", i, c, want)
			}
		}
	}
}

// TestToolCallStream: streamed calls are delta.tool_calls in OpenAI's
// shape: a call's first piece has its index, id, type, function name and
// the start of its arguments, later pieces only the index and more
// arguments (no id, type or name for a client to append twice).
func TestToolCallStream(t *testing.T) {
	fake := newFake()
	fake.Calls = []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"ci`}, {Index: 0, Arguments: `ty":"Oslo"}`},
		{Index: 1, ID: "call_b", Name: "get_weather"}, {Index: 1, Arguments: `{}`}}
	ts := start(t, fake, testConfig(t, nil))
	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", toolCallsBody+`,"stream":true}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	events := sseEvents(t, strings.NewReader(string(out)))
	var pieces []map[string]any
	finish := ""
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string          `json:"content"`
					ToolCalls []map[string]any `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, c.Choices[0].Delta.ToolCalls...)
		if len(c.Choices[0].Delta.ToolCalls) > 0 && c.Choices[0].Delta.Content != nil {
			t.Errorf("a call delta with content: %s", e)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	want := []string{
		`{"function":{"arguments":"{\"ci","name":"get_weather"},"id":"call_a","index":0,"type":"function"}`,
		`{"function":{"arguments":"ty\":\"Oslo\"}"},"index":0}`,
		`{"function":{"arguments":"","name":"get_weather"},"id":"call_b","index":1,"type":"function"}`,
		`{"function":{"arguments":"{}"},"index":1}`,
	}
	if len(pieces) != len(want) || finish != "tool_calls" {
		t.Fatalf("pieces %v finish %q:\n%s", pieces, finish, out)
	}
	for i, p := range pieces {
		if b, _ := json.Marshal(p); string(b) != want[i] {
			t.Errorf("piece %d: %s, want %s", i, b, want[i])
		}
	}

	// Without stream, the pieces are joined.
	code, _, out = ts.do(t, "POST", "/v1/chat/completions", "", toolCallsBody+`}`)
	var r struct {
		Choices []struct {
			Message struct {
				ToolCalls []callJSON `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &r); err != nil || code != 200 || len(r.Choices) != 1 {
		t.Fatalf("%d %s", code, out)
	}
	if cs := r.Choices[0].Message.ToolCalls; len(cs) != 2 || cs[0].ID != "call_a" || cs[0].Function.Arguments != `{"city":"Oslo"}` ||
		cs[1].ID != "call_b" || cs[1].Function.Arguments != `{}` {
		t.Errorf("joined calls %+v", cs)
	}
}
