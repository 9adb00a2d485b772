package broker_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gen"
)

// TestReasoningResponse: a reply's reasoning comes back as
// message.reasoning_content (llama-server's field), and streamed as
// delta.reasoning_content, apart from the content.
func TestReasoningResponse(t *testing.T) {
	fake := newFake("The answer", " is 4.")
	fake.Reasoning = []string{"Two and two", " make four."}
	ts := start(t, fake, testConfig(t, nil))
	const body = `{"messages":[{"role":"user","content":"2+2?"}]`
	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", body+"}")
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning_content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if m := r.Choices[0].Message; m.Content != "The answer is 4." || m.Reasoning != "Two and two make four." {
		t.Errorf("message %+v: %s", m, out)
	}

	code, _, out = ts.do(t, "POST", "/v1/chat/completions", "", body+`,"stream":true}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	var content, reasoning strings.Builder
	events := sseEvents(t, strings.NewReader(string(out)))
	for _, e := range events[:len(events)-1] {
		var c struct {
			Choices []struct {
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			if s, ok := ch.Delta["content"].(string); ok {
				content.WriteString(s)
			}
			if s, ok := ch.Delta["reasoning_content"].(string); ok {
				reasoning.WriteString(s)
				if _, both := ch.Delta["content"]; both {
					t.Errorf("a reasoning delta with content: %s", e)
				}
			}
		}
	}
	if content.String() != "The answer is 4." || reasoning.String() != "Two and two make four." {
		t.Errorf("streamed content %q reasoning %q", content.String(), reasoning.String())
	}
}

// TestReasoningRequest: reasoning_format (the server's default, or the
// request's) and reasoning_effort reach the worker, and an assistant's
// reasoning_content of the history its message; bad values are 400s
// naming the field.
func TestReasoningRequest(t *testing.T) {
	for _, c := range []struct {
		name       string
		server     string
		extra      string
		wantFormat string
		wantEffort string
	}{
		{"server default", "", ``, "auto", ""},
		{"server none", "none", ``, "none", ""},
		{"request overrides", "none", `,"reasoning_format":"deepseek","reasoning_effort":"high"`, "deepseek", "high"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake("ok")
			ts := start(t, fake, testConfig(t, func(cfg *config.Config) {
				if c.server != "" {
					cfg.ReasoningFormat = c.server
				}
			}))
			body := `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b","reasoning_content":"why b"},{"role":"user","content":"c"}]` + c.extra + `}`
			if code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", body); code != 200 {
				t.Fatalf("status %d: %s", code, out)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := reqs[0]
			if r.ReasoningFormat != c.wantFormat || r.ReasoningEffort != c.wantEffort || r.Messages[1].ReasoningContent != "why b" || r.Messages[1].Role != gen.RoleAssistant {
				t.Errorf("request %+v", r)
			}
		})
	}
	ts := start(t, newFake("ok"), testConfig(t, nil))
	for _, c := range []struct{ extra, param string }{
		{`,"reasoning_format":"think"`, "reasoning_format"},
		{`,"reasoning_format":"deepseek-legacy"`, "reasoning_format"},
		{`,"reasoning_format":1`, "reasoning_format"},
		{`,"reasoning_effort":"extreme"`, "reasoning_effort"},
	} {
		code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"a"}]`+c.extra+`}`)
		if code != 400 || !strings.Contains(string(out), `"param":"`+c.param+`"`) {
			t.Errorf("%s: status %d: %s", c.extra, code, out)
		}
	}
	code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"a","reasoning_content":"x"}]}`)
	if code != 400 || !strings.Contains(string(out), "reasoning_content") {
		t.Errorf("reasoning_content on a user message: status %d: %s", code, out)
	}
}

// TestResponsesReasoning: the Responses API returns the reasoning as a
// reasoning item (llama-server's shape: one reasoning_text part), last of
// the output, streamed as response.reasoning_text.delta; a reasoning item
// of the input is the reasoning of the assistant message before it, and
// reasoning.effort reaches the template.
func TestResponsesReasoning(t *testing.T) {
	fake := newFake("Four.")
	fake.Reasoning = []string{"Two and", " two."}
	ts := start(t, fake, testConfig(t, nil))
	code, _, out := ts.do(t, "POST", "/v1/responses", "", `{"input":"2+2?"}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	var r struct {
		Output []struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 2 || r.Output[0].Type != "message" || r.Output[0].Content[0].Text != "Four." ||
		r.Output[1].Type != "reasoning" || len(r.Output[1].Content) != 1 || r.Output[1].Content[0].Type != "reasoning_text" ||
		r.Output[1].Content[0].Text != "Two and two." || !strings.HasPrefix(r.Output[1].ID, "rs_") {
		t.Errorf("output %+v: %s", r.Output, out)
	}

	code, _, out = ts.do(t, "POST", "/v1/responses", "", `{"input":"2+2?","stream":true}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	var delta, done string
	for _, line := range strings.Split(string(out), "\n") {
		e, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal([]byte(e), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "response.reasoning_text.delta":
			delta += ev.Delta
		case "response.reasoning_text.done":
			done = ev.Text
		}
	}
	if delta != "Two and two." || done != delta {
		t.Errorf("streamed reasoning %q, done %q: %s", delta, done, out)
	}

	body := `{"input":[{"role":"user","content":"a"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]},` +
		`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"why b"}]},{"role":"user","content":"c"}],"reasoning":{"effort":"low"}}`
	if code, _, out = ts.do(t, "POST", "/v1/responses", "", body); code != 200 {
		t.Fatalf("status %d: %s", code, out)
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Messages) != 3 || last.Messages[1].ReasoningContent != "why b" || last.ReasoningEffort != "low" || last.ReasoningFormat != "auto" {
		t.Errorf("request %+v", last)
	}
}
