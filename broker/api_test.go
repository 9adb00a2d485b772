package broker_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/broker/brokertest"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gen"
)

type chatResp struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Text         string          `json:"text"`
		FinishReason *string         `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestChatCompletion(t *testing.T) {
	fake := newFake("Hello", ", ", "world")
	ts := start(t, fake, testConfig(t, nil))
	code, _, body := ts.do(t, "POST", "/v1/chat/completions", "",
		`{"model":"fake-model","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":" there"}]}],"temperature":0.5,"top_k":40,"seed":7,"stop":["\n\n"],"user":"u1","n":1}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var r chatResp
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Object != "chat.completion" || !strings.HasPrefix(r.ID, "chatcmpl-") || r.Model != "fake-model" || r.Created == 0 {
		t.Fatalf("bad envelope: %s", body)
	}
	if len(r.Choices) != 1 || r.Choices[0].Message.Content != "Hello, world" || r.Choices[0].Message.Role != "assistant" || str(r.Choices[0].FinishReason) != "stop" {
		t.Fatalf("bad choices: %s", body)
	}
	if r.Usage == nil || r.Usage.CompletionTokens != 3 || r.Usage.PromptTokens != len("be brief")+len("hi there") || r.Usage.TotalTokens != r.Usage.PromptTokens+3 {
		t.Fatalf("bad usage: %s", body)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d generations", len(reqs))
	}
	g := reqs[0]
	if len(g.Messages) != 2 || g.Messages[1].Content != "hi there" || g.Sampling.Temperature != 0.5 || g.Sampling.TopK != 40 ||
		!g.Sampling.HasSeed || g.Sampling.Seed != 7 || len(g.Stop) != 1 || g.MaxTokens != 512 || !g.FitContext {
		t.Fatalf("bad GenerateRequest: %+v", g)
	}
}

func TestChatStream(t *testing.T) {
	for _, usage := range []bool{false, true} {
		fake := newFake("a", "b", "c")
		fake.Finish = "length"
		ts := start(t, fake, testConfig(t, nil))
		body := `{"messages":[{"role":"user","content":"x"}],"stream":true,"max_tokens":3`
		if usage {
			body += `,"stream_options":{"include_usage":true}`
		}
		code, hdr, out := ts.do(t, "POST", "/v1/chat/completions", "", body+"}")
		if code != 200 || hdr.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, %s: %s", code, hdr.Get("Content-Type"), out)
		}
		events := sseEvents(t, strings.NewReader(string(out)))
		want := 1 + 3 + 1 + 1 // role, texts, finish, [DONE]
		if usage {
			want++
		}
		if len(events) != want || events[len(events)-1] != "[DONE]" {
			t.Fatalf("usage=%v: events %q", usage, events)
		}
		var text strings.Builder
		var finish string
		var gotUsage bool
		for i, e := range events[:len(events)-1] {
			var c chatResp
			if err := json.Unmarshal([]byte(e), &c); err != nil {
				t.Fatal(err)
			}
			if c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %d object %q", i, c.Object)
			}
			if c.Usage != nil {
				gotUsage = len(c.Choices) == 0 && c.Usage.CompletionTokens == 3
				continue
			}
			if i == 0 && c.Choices[0].Delta.Role != "assistant" {
				t.Fatalf("first chunk %s has no role", e)
			}
			if d := c.Choices[0].Delta; d.Content != nil {
				text.WriteString(*d.Content)
			}
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		if text.String() != "abc" || finish != "length" || gotUsage != usage {
			t.Fatalf("usage=%v: text %q finish %q usage chunk %v", usage, text.String(), finish, gotUsage)
		}
	}
}

func TestCompletions(t *testing.T) {
	tests := []struct {
		name, body string
		check      func(gen.Request) bool
	}{
		{"string", `{"prompt":"Once upon","max_tokens":5}`, func(g gen.Request) bool { return g.PromptText() == "Once upon" && g.MaxTokens == 5 }},
		{"one string in array", `{"prompt":["Once"]}`, func(g gen.Request) bool {
			return g.PromptText() == "Once" && g.MaxTokens == broker.DefaultCompletionTokens
		}},
		{"ids", `{"prompt":[1,2,3],"logprobs":2}`, func(g gen.Request) bool {
			return len(g.PromptIDs) == 3 && g.Logprobs && g.TopLogprobs == 2
		}},
		{"nested ids", `{"prompt":[[5,6]],"echo":false,"best_of":1}`, func(g gen.Request) bool { return len(g.PromptIDs) == 2 }},
		{"empty string (BOS alone)", `{"prompt":""}`, func(g gen.Request) bool { return g.PromptText() == "" && g.PromptIDs == nil && g.Messages == nil }},
		{"empty string in array", `{"prompt":[""]}`, func(g gen.Request) bool { return g.PromptText() == "" && g.PromptIDs == nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("x", "y")
			ts := start(t, fake, testConfig(t, nil))
			code, _, body := ts.do(t, "POST", "/v1/completions", "", tt.body)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			var r chatResp
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			if r.Object != "text_completion" || r.Choices[0].Text != "xy" || str(r.Choices[0].FinishReason) != "stop" {
				t.Fatalf("bad response %s", body)
			}
			if !tt.check(fake.Requests()[0]) {
				t.Fatalf("bad GenerateRequest %+v", fake.Requests()[0])
			}
		})
	}
	fake := newFake("x", "y")
	ts := start(t, fake, testConfig(t, nil))
	code, _, out := ts.do(t, "POST", "/v1/completions", "", `{"prompt":"p","stream":true,"stream_options":{"include_usage":true}}`)
	events := sseEvents(t, strings.NewReader(string(out)))
	if code != 200 || len(events) != 5 || events[4] != "[DONE]" || !strings.Contains(events[3], `"completion_tokens":2`) {
		t.Fatalf("status %d events %q", code, events)
	}
}

func TestValidation(t *testing.T) {
	long := strings.Repeat("a", 600)
	tests := []struct {
		name, path, body string
		status           int
		param            string
	}{
		{"not json", "/v1/chat/completions", `{"messages":`, 400, "messages"},
		{"not object", "/v1/chat/completions", `[1]`, 400, ""},
		{"trailing", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]} {}`, 400, ""},
		{"unknown field", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temprature":1}`, 400, "temprature"},
		{"duplicate", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream":true,"stream":false}`, 400, "stream"},
		{"no messages", "/v1/chat/completions", `{"model":"fake-model"}`, 400, "messages"},
		{"empty messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages"},
		{"bad role", "/v1/chat/completions", `{"messages":[{"role":"robot","content":"x"}]}`, 400, "messages[0].role"},
		{"tool without id", "/v1/chat/completions", `{"messages":[{"role":"tool","content":"x"}]}`, 400, "messages[0].tool_call_id"},
		{"no content", "/v1/chat/completions", `{"messages":[{"role":"user"}]}`, 400, "messages[0].content"},
		{"message extra", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x","tool_calls":[]}]}`, 400, "messages[0].tool_calls"},
		{"image part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, 400, "messages[0].content[0].image_url"},
		{"non-text part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"audio","text":"x"}]}]}`, 400, "messages[0].content[0].type"},
		{"temperature type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, "temperature"},
		{"temperature range", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":2.5}`, 400, "temperature"},
		{"top_p range", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_p":-0.1}`, 400, "top_p"},
		{"max_tokens float", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, 400, "max_tokens"},
		{"max_tokens zero", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":0}`, 400, "max_tokens"},
		{"max_tokens conflict", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":3,"max_completion_tokens":4}`, 400, "max_completion_tokens"},
		{"n=129", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"n":129}`, 400, "n"},
		{"tools", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 400, "tools[0].function"},
		{"five stops", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}`, 400, "stop"},
		{"empty stop", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stop":""}`, 400, "stop"},
		{"stop type", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stop":[1]}`, 400, "stop[0]"},
		{"stream_options without stream", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`, 400, "stream_options"},
		{"stream_options extra", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"x":1}}`, 400, "stream_options.x"},
		{"top_logprobs alone", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"top_logprobs":3}`, 400, "top_logprobs"},
		{"seed range", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"seed":-2}`, 400, "seed"},
		{"response_format json (the model cannot)", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}}`, 400, "response_format"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}`, 404, "model"},
		{"prompt too long", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "messages"},
		{"max_tokens past context", "/v1/completions", `{"prompt":"abc","max_tokens":510}`, 400, "max_tokens"},
		{"no prompt", "/v1/completions", `{"max_tokens":1}`, 400, "prompt"},
		{"batch prompt", "/v1/completions", `{"prompt":["a","b"]}`, 400, "prompt"},
		{"token out of vocab", "/v1/completions", `{"prompt":[1,300]}`, 400, "prompt[1]"},
		{"negative token", "/v1/completions", `{"prompt":[-1]}`, 400, "prompt[0]"},
		{"echo with logprobs", "/v1/completions", `{"prompt":"a","echo":true,"logprobs":1}`, 400, "echo"},
		{"completion logprobs range", "/v1/completions", `{"prompt":"a","logprobs":6}`, 400, "logprobs"},
		{"chat field on completions", "/v1/completions", `{"prompt":"a","messages":[]}`, 400, "messages"},
		{"tokenize add_special", "/tokenize", `{"content":"a","add_special":true}`, 400, "add_special"},
		{"tokenize unknown", "/tokenize", `{"content":"a","x":1}`, 400, "x"},
		{"detokenize out of vocab", "/detokenize", `{"tokens":[299,300]}`, 400, "tokens[1]"},
		{"detokenize type", "/detokenize", `{"tokens":"abc"}`, 400, "tokens"},
	}
	ts := start(t, newFake("x"), testConfig(t, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := ts.do(t, "POST", tt.path, "", tt.body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, body)
			}
			e := decodeError(t, body)
			if str(e.Error.Param) != tt.param || e.Error.Message == "" || e.Error.Type == "" {
				t.Fatalf("param %q, want %q: %s", str(e.Error.Param), tt.param, body)
			}
		})
	}
	// Special token texts in chat content are ordinary text now that the
	// worker tokenizes content apart from the template.
	for _, body := range []string{`{"messages":[{"role":"user","content":"hi <|im_end|> there"}]}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"user","content":[{"type":"text","text":"a</s>"}]}]}`,
		`{"messages":[{"role":"system","content":"<s>"},{"role":"user","content":"<|im_start|>"}]}`} {
		t.Run("special text accepted", func(t *testing.T) {
			if code, _, resp := ts.do(t, "POST", "/v1/chat/completions", "", body); code != 200 {
				t.Fatalf("status %d: %s", code, resp)
			}
		})
	}
	t.Run("ignored fields accepted", func(t *testing.T) {
		code, _, body := ts.do(t, "POST", "/v1/chat/completions", "",
			`{"messages":[{"role":"developer","content":"x","name":"n"}],"user":"u","metadata":{"a":"b"},"store":false,"logit_bias":{},"tools":[],"tool_choice":"none","response_format":{"type":"text"},"temperature":null}`)
		if code != 200 {
			t.Fatalf("status %d: %s", code, body)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, nil))
	big := `{"prompt":"` + strings.Repeat("a", broker.MaxBodyBytes) + `"}`
	code, _, body := ts.do(t, "POST", "/v1/completions", "", big)
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %.200s", code, body)
	}
	if e := decodeError(t, body); e.Error.Type != "invalid_request_error" {
		t.Fatalf("bad error %s", body)
	}
}

func TestBackendErrors(t *testing.T) {
	fake := newFake("x")
	ts := start(t, fake, testConfig(t, nil))
	chat := `{"messages":[{"role":"user","content":"x"}]}`
	fake.SetFail(broker.ErrWorkerFailed)
	if code, _, body := ts.do(t, "POST", "/v1/chat/completions", "", chat); code != 502 {
		t.Fatalf("worker failure: status %d: %s", code, body)
	}
	fake.SetFail(nil)
	fake.SetReady(false)
	code, hdr, body := ts.do(t, "POST", "/v1/chat/completions", "", chat)
	if code != 503 || hdr.Get("Retry-After") == "" {
		t.Fatalf("not ready: status %d: %s", code, body)
	}
	decodeError(t, body)
	if code, _, body := ts.do(t, "GET", "/health", "", ""); code != 503 || !strings.Contains(string(body), "loading") {
		t.Fatalf("health not ready: %d %s", code, body)
	}
	fake.SetReady(true)
	if code, _, body := ts.do(t, "GET", "/health", "", ""); code != 200 {
		t.Fatalf("health ready: %d %s", code, body)
	}
	// An error in the middle of a stream becomes one error event.
	fake2 := newFake("a", "b", "c")
	fake2.FailAfter = 2
	ts2 := start(t, fake2, testConfig(t, nil))
	code, _, out := ts2.do(t, "POST", "/v1/chat/completions", "", `{"messages":[{"role":"user","content":"x"}],"stream":true}`)
	events := sseEvents(t, strings.NewReader(string(out)))
	if code != 200 || len(events) != 4 || !strings.Contains(events[3], `"worker_failed"`) {
		t.Fatalf("mid-stream failure: %d %q", code, events)
	}
	decodeError(t, []byte(events[3]))
	if code, _, body := ts.do(t, "GET", "/nope", "", ""); code != 404 {
		t.Fatalf("unknown URL: %d %s", code, body)
	} else {
		decodeError(t, body)
	}
	if code, _, _ := ts.do(t, "DELETE", "/v1/models", "", ""); code != 405 {
		t.Fatalf("wrong method: %d", code)
	}
}

func TestModelsTokenize(t *testing.T) {
	ts := start(t, newFake("x"), testConfig(t, func(c *config.Config) { c.ModelName = "served" }))
	code, _, body := ts.do(t, "GET", "/v1/models", "", "")
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object string
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || code != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "served" {
		t.Fatalf("models: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/tokenize", "", `{"content":"ab<s>","parse_special":true}`)
	if code != 200 || string(body) != `{"tokens":[97,98,256]}`+"\n" {
		t.Fatalf("tokenize: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/tokenize", "", `{"content":"ab<s>"}`)
	if code != 200 || string(body) != `{"tokens":[97,98,60,115,62]}`+"\n" {
		t.Fatalf("tokenize without special parsing: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/tokenize", "", `{"content":"a\u00e9","with_pieces":true}`)
	if code != 200 || string(body) != `{"tokens":[{"id":97,"piece":"a"},{"id":195,"piece":[195]},{"id":169,"piece":[169]}]}`+"\n" {
		t.Fatalf("tokenize with pieces: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/detokenize", "", `{"tokens":[104,105,257]}`)
	if code != 200 || string(body) != `{"content":"hi</s>"}`+"\n" {
		t.Fatalf("detokenize: %d %s", code, body)
	}
}

func TestUntrustedBackendOutput(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(*brokertest.Fake)
		stream bool
	}{
		{"output past the byte cap", func(f *brokertest.Fake) { f.Pieces = []string{strings.Repeat("x", 64<<10)}; f.Endless = true }, false},
		{"output past the byte cap, streamed", func(f *brokertest.Fake) { f.Pieces = []string{strings.Repeat("x", 64<<10)}; f.Endless = true }, true},
		{"unknown finish reason", func(f *brokertest.Fake) { f.Finish = "because" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("a")
			tt.setup(fake)
			ts := start(t, fake, testConfig(t, nil))
			body := `{"messages":[{"role":"user","content":"x"}],"max_tokens":400`
			if tt.stream {
				body += `,"stream":true`
			}
			code, _, out := ts.do(t, "POST", "/v1/chat/completions", "", body+"}")
			if !tt.stream {
				if code != http.StatusBadGateway {
					t.Fatalf("status %d: %.300s", code, out)
				}
				decodeError(t, out)
				return
			}
			events := sseEvents(t, strings.NewReader(string(out)))
			last := events[len(events)-1]
			if !strings.Contains(last, `"worker_failed"`) || len(out) > 2<<20 {
				t.Fatalf("stream of %d bytes ended with %.200s", len(out), last)
			}
		})
	}
}

// failing is a backend error in the failed state, with a reason.
type failing struct{}

func (failing) Error() string {
	return "worker keeps dying: SIGSYS from openat in the worker's own words"
}
func (failing) Is(target error) bool {
	return target == broker.ErrFailed || target == broker.ErrNotReady
}
func (failing) Reason() string { return "the worker died 3 times within 1m0s (last: SIGSYS)" }

// TestHealthFailed checks the state after the restart budget is spent:
// /health is 503 "failed" with the reason (not "loading"), requests get a
// 503 naming it, and the metric counts the refused restarts.
func TestHealthFailed(t *testing.T) {
	fake := newFake("x")
	fake.Spent = 2
	ts := start(t, fake, testConfig(t, nil))
	fake.SetInfoError(failing{})
	code, hdr, body := ts.do(t, "GET", "/health", "", "")
	var h map[string]string
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	if code != 503 || h["status"] != "failed" || h["reason"] != (failing{}).Reason() || hdr.Get("Retry-After") == "" {
		t.Fatalf("health: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/v1/completions", "", `{"prompt":"x"}`)
	if code != 503 || str(decodeError(t, body).Error.Code) != "worker_failing" {
		t.Fatalf("request while failed: %d %s", code, body)
	}
	_, _, body = ts.do(t, "GET", "/metrics", "", "")
	if !strings.Contains(string(body), "\nlisa_worker_restart_budget_spent_total 2\n") {
		t.Fatalf("metrics lack the budget counter:\n%s", body)
	}
}
