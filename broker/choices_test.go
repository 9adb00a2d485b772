package broker_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// TestChoicesBadN: n outside 1..128, beyond the worker's slots, or not an
// integer is a 400 in OpenAI's shape naming n, before any generation.
func TestChoicesBadN(t *testing.T) {
	tests := []struct {
		name, path, n string
	}{
		{"zero", "/v1/chat/completions", `0`},
		{"negative", "/v1/chat/completions", `-1`},
		{"past OpenAI's 128", "/v1/chat/completions", `129`},
		{"huge", "/v1/completions", `1e30`},
		{"past the slots", "/v1/chat/completions", `5`},
		{"past the slots, completions", "/v1/completions", `5`},
		{"string", "/v1/chat/completions", `"2"`},
		{"fraction", "/v1/completions", `1.5`},
		{"bool", "/v1/chat/completions", `true`},
		{"array", "/v1/chat/completions", `[2]`},
		{"object", "/v1/completions", `{"n":2}`},
	}
	fake := newFake("x")
	ts := start(t, fake, testConfig(t, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := chatBody(`"n":` + tt.n)
			if tt.path == "/v1/completions" {
				body = `{"prompt":"a","n":` + tt.n + `}`
			}
			code, _, b := ts.do(t, "POST", tt.path, "", body)
			if code != 400 {
				t.Fatalf("status %d, want 400: %s", code, b)
			}
			e := decodeError(t, b)
			if str(e.Error.Param) != "n" || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
				t.Fatalf("error %s, want an invalid_request_error naming n", b)
			}
		})
	}
	if got := len(fake.Requests()); got != 0 {
		t.Fatalf("%d requests reached the backend", got)
	}
}

// choicesResp is a whole response with several choices.
type choicesResp struct {
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Content *string `json:"content"`
		} `json:"message"`
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// TestChoicesWhole: n choices come back in order with index i, each its
// own text and finish reason; usage counts the prompt once and the
// completion tokens of every choice; the request carries n to the worker.
func TestChoicesWhole(t *testing.T) {
	tests := []struct {
		name, path, body string
		n                int
		want             []string // the fake rotates its pieces per choice
	}{
		{"chat n=3", "/v1/chat/completions", chatBody(`"n":3,"seed":5`), 3, []string{"abc", "bca", "cab"}},
		{"chat n=1", "/v1/chat/completions", chatBody(`"n":1`), 1, []string{"abc"}},
		{"completions n=2", "/v1/completions", `{"prompt":"xy","n":2,"max_tokens":3}`, 2, []string{"abc", "bca"}},
		{"completions n=2 with echo", "/v1/completions", `{"prompt":"xy","n":2,"max_tokens":3,"echo":true}`, 2, []string{"xyabc", "xybca"}},
		{"chat n=4, the slots", "/v1/chat/completions", chatBody(`"n":4`), 4, []string{"abc", "bca", "cab", "abc"}},
		{"greedy chat n=3", "/v1/chat/completions", chatBody(`"n":3,"temperature":0`), 3, []string{"abc", "abc", "abc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("a", "b", "c")
			ts := start(t, fake, testConfig(t, nil))
			code, _, b := ts.do(t, "POST", tt.path, "", tt.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, b)
			}
			var r choicesResp
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Choices) != tt.n {
				t.Fatalf("%d choices, want %d: %s", len(r.Choices), tt.n, b)
			}
			for i, c := range r.Choices {
				text := c.Text
				if c.Message != nil && c.Message.Content != nil {
					text = *c.Message.Content
				}
				if c.Index != i || text != tt.want[i] || str(c.FinishReason) != "stop" {
					t.Fatalf("choice %d: index %d, text %q, finish %q; want %q: %s", i, c.Index, text, str(c.FinishReason), tt.want[i], b)
				}
			}
			if r.Usage.CompletionTokens != 3*tt.n || r.Usage.TotalTokens != r.Usage.PromptTokens+3*tt.n || r.Usage.PromptTokens == 0 {
				t.Fatalf("usage %+v for %d choices of 3 tokens", r.Usage, tt.n)
			}
			if got := fake.Requests()[0].Choices(); got != tt.n {
				t.Fatalf("the worker was asked for %d choices, want %d", got, tt.n)
			}
		})
	}
}

// TestChoicesStream: a streamed request for n choices sends each choice's
// role (chat) first, every chunk with one choice naming its index, each
// choice's text in order, a finish reason for every choice and usage
// summed over them.
func TestChoicesStream(t *testing.T) {
	for _, chat := range []bool{true, false} {
		t.Run(fmt.Sprintf("chat=%v", chat), func(t *testing.T) {
			const n = 3
			fake := newFake("a", "b", "c")
			ts := start(t, fake, testConfig(t, nil))
			path, body := "/v1/chat/completions", chatBody(`"n":3,"stream":true,"stream_options":{"include_usage":true}`)
			if !chat {
				path, body = "/v1/completions", `{"prompt":"p","n":3,"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`
			}
			code, _, out := ts.do(t, "POST", path, "", body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, out)
			}
			events := sseEvents(t, strings.NewReader(string(out)))
			if len(events) == 0 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("events %q", events)
			}
			texts := make([]strings.Builder, n)
			roles, finishes := make([]int, n), make([]string, n)
			usage := 0
			for _, e := range events[:len(events)-1] {
				var c chatResp
				if err := json.Unmarshal([]byte(e), &c); err != nil {
					t.Fatal(err)
				}
				if c.Usage != nil {
					usage = c.Usage.CompletionTokens
					continue
				}
				if len(c.Choices) != 1 || c.Choices[0].Index < 0 || c.Choices[0].Index >= n {
					t.Fatalf("chunk %s: want one choice of index 0..%d", e, n-1)
				}
				ch := c.Choices[0]
				if finishes[ch.Index] != "" {
					t.Fatalf("chunk %s after choice %d finished", e, ch.Index)
				}
				if d := ch.Delta; d != nil {
					if d.Role == "assistant" {
						roles[ch.Index]++
					}
					if d.Content != nil {
						texts[ch.Index].WriteString(*d.Content)
					}
				}
				texts[ch.Index].WriteString(ch.Text)
				finishes[ch.Index] = str(ch.FinishReason)
			}
			want := []string{"abc", "bca", "cab"}
			for i := range n {
				if texts[i].String() != want[i] || finishes[i] != "stop" || chat && roles[i] != 1 {
					t.Fatalf("choice %d: text %q, finish %q, %d role chunks; want %q: %q", i, texts[i].String(), finishes[i], roles[i], want[i], events)
				}
			}
			if usage != 3*n {
				t.Fatalf("usage counts %d completion tokens, want %d", usage, 3*n)
			}
		})
	}
}

// TestChoicesToolCallsAndLogprobs: each choice of a request with tools
// carries its own calls (whole and streamed, each call delta in a chunk
// naming its choice) and finish reason, and its own log-probabilities.
func TestChoicesToolCallsAndLogprobs(t *testing.T) {
	fake := newFake("a", "b")
	fake.Calls = []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}
	ts := start(t, fake, testConfig(t, nil))
	body := toolCallsBody + `,"n":2,"logprobs":true}`
	code, _, b := ts.do(t, "POST", "/v1/chat/completions", "", body)
	if code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	var whole struct {
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Content   *string    `json:"content"`
				ToolCalls []callJSON `json:"tool_calls"`
			} `json:"message"`
			Logprobs struct {
				Content []struct {
					Token string `json:"token"`
				} `json:"content"`
			} `json:"logprobs"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &whole); err != nil {
		t.Fatal(err)
	}
	want := []string{"ab", "ba"}
	if len(whole.Choices) != 2 {
		t.Fatalf("%s", b)
	}
	for i, c := range whole.Choices {
		var lps strings.Builder
		for _, p := range c.Logprobs.Content {
			lps.WriteString(p.Token)
		}
		if c.Index != i || c.FinishReason != "tool_calls" || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_a" ||
			c.Message.Content == nil || *c.Message.Content != want[i] || lps.String() != want[i] {
			t.Fatalf("choice %d: %s", i, b)
		}
	}

	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", toolCallsBody+`,"n":2,"stream":true}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	calls, finishes := make([]int, 2), make([]string, 2)
	events := sseEvents(t, strings.NewReader(string(out)))
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					ToolCalls []callJSON `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		ch := c.Choices[0]
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil || *tc.Index != 0 {
				t.Fatalf("call delta %s: want tool_calls[].index 0 in each choice", e)
			}
		}
		calls[ch.Index] += len(ch.Delta.ToolCalls)
		if ch.FinishReason != nil {
			finishes[ch.Index] = *ch.FinishReason
		}
	}
	if calls[0] != 1 || calls[1] != 1 || finishes[0] != "tool_calls" || finishes[1] != "tool_calls" {
		t.Fatalf("calls %v finishes %q:\n%s", calls, finishes, out)
	}
}
