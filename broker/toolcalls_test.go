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
// shape (index, id, type, function name and arguments).
func TestToolCallStream(t *testing.T) {
	fake := newFake()
	fake.Calls = []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}
	ts := start(t, fake, testConfig(t, nil))
	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", toolCallsBody+`,"stream":true}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	events := sseEvents(t, strings.NewReader(string(out)))
	var calls []callJSON
	finish := ""
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta struct {
					Content   *string    `json:"content"`
					ToolCalls []callJSON `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c.Choices[0].Delta.ToolCalls...)
		if len(c.Choices[0].Delta.ToolCalls) > 0 && c.Choices[0].Delta.Content != nil {
			t.Errorf("a call delta with content: %s", e)
		}
		if f := c.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if len(calls) != 1 || calls[0].Index == nil || *calls[0].Index != 0 || calls[0].ID != "call_a" || calls[0].Type != "function" ||
		calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Oslo"}` || finish != "tool_calls" {
		t.Fatalf("calls %+v finish %q:\n%s", calls, finish, out)
	}
}
