package broker_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

func TestResponsesEndpoint(t *testing.T) {
	fake := newFake("Once", " there", " was")
	ts := start(t, fake, testConfig(t, nil))
	code, _, body := ts.do(t, "POST", "/v1/responses", "", `{"model":"fake-model","input":"hi","instructions":"sys","max_output_tokens":2,"store":true}`)
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var r struct {
		ID                string `json:"id"`
		Object            string `json:"object"`
		Status            string `json:"status"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Output []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || len(r.Output) != 1 || r.Output[0].Type != "message" ||
		len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "output_text" || r.Output[0].Content[0].Text != "Once there" {
		t.Fatalf("response %s", body)
	}
	if r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Errorf("max_output_tokens reached: status %q, details %+v", r.Status, r.IncompleteDetails)
	}
	if r.Usage.OutputTokens != 2 || r.Usage.TotalTokens != r.Usage.InputTokens+2 {
		t.Errorf("usage %+v", r.Usage)
	}
	reqs := fake.Requests()
	if got := reqs[len(reqs)-1]; len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.MaxTokens != 2 {
		t.Errorf("request to the backend %+v", got)
	}

	resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for i, block := range strings.Split(strings.TrimSuffix(string(all), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		var ev struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
		}
		if !ok || !ok1 || !ok2 || json.Unmarshal([]byte(data), &ev) != nil || ev.Type != name {
			t.Fatalf("event %d: %q", i, block)
		}
		if ev.Seq != i {
			t.Errorf("event %d has sequence_number %d", i, ev.Seq)
		}
		types = append(types, ev.Type)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 3) +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}

	code, _, body = ts.do(t, "GET", "/v1/responses/resp_abc", "", "")
	if e := decodeError(t, body); code != http.StatusNotFound || !strings.Contains(e.Error.Message, "stores no responses") {
		t.Errorf("GET a response: %d %s", code, body)
	}
	code, _, body = ts.do(t, "POST", "/v1/responses", "", `{"input":"hi","previous_response_id":"resp_abc"}`)
	if e := decodeError(t, body); code != http.StatusBadRequest || str(e.Error.Param) != "previous_response_id" {
		t.Errorf("previous_response_id: %d %s", code, body)
	}
}

// responseEvents reads a Responses stream into its events, checking the
// event: line against each data's type and the sequence numbers.
func responseEvents(t *testing.T, all []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, block := range strings.Split(strings.TrimSuffix(string(all), "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(block, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		var ev map[string]any
		if !ok || !ok1 || !ok2 || json.Unmarshal([]byte(data), &ev) != nil || ev["type"] != name {
			t.Fatalf("event %d: %q", i, block)
		}
		if ev["sequence_number"] != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, ev["sequence_number"])
		}
		out = append(out, ev)
	}
	return out
}

// TestResponsesStreamFailure checks that a generation failing after the
// stream began ends it in the Responses API's protocol: response.failed
// carrying the Response (status failed, its error in OpenAI's shape, the
// text so far), then an error event, and no chat completion error.
func TestResponsesStreamFailure(t *testing.T) {
	fake := newFake("Once", " there", " was")
	fake.FailAfter = 2
	ts := start(t, fake, testConfig(t, nil))
	resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	evs := responseEvents(t, all)
	if len(evs) < 2 {
		t.Fatalf("events %s", all)
	}
	failed, last := evs[len(evs)-2], evs[len(evs)-1]
	if failed["type"] != "response.failed" {
		t.Fatalf("next to last event %v, want response.failed", failed)
	}
	r := failed["response"].(map[string]any)
	e, _ := r["error"].(map[string]any)
	if r["status"] != "failed" || e == nil || e["code"] != "server_error" || e["message"] == "" || len(e) != 2 {
		t.Errorf("failed response %v", r)
	}
	out := r["output"].([]any)[0].(map[string]any)
	if text := out["content"].([]any)[0].(map[string]any)["text"]; out["status"] != "incomplete" || text != "Once there" {
		t.Errorf("failed response's output %v", out)
	}
	if last["type"] != "error" || last["code"] != "worker_failed" || last["message"] == "" || last["param"] != nil || len(last) != 5 {
		t.Errorf("last event %v, want an error event {type, code, message, param, sequence_number}", last)
	}
	if strings.Contains(string(all), "data: {\"error\"") {
		t.Errorf("a chat completion error event in a Responses stream: %s", all)
	}
}

// TestResponsesFormat checks text.format: passed to the generation as the
// output format, and the generation's refusals renamed to the Responses
// API's fields (the fake model refuses every format, as a worker refuses
// a schema it cannot compile).
func TestResponsesFormat(t *testing.T) {
	fake := newFake(`{"a":`, `1}`)
	ts := start(t, fake, testConfig(t, nil))
	body := `{"input":"hi","text":{"format":{"type":"json_schema","name":"obj","schema":{"type":"object","properties":{"a":{"type":"integer"}}},"strict":true}}}`
	code, _, got := ts.do(t, "POST", "/v1/responses", "", body)
	if e := decodeError(t, got); code != http.StatusBadRequest || str(e.Error.Param) != "text.format" || str(e.Error.Code) != "unsupported_for_model" {
		t.Errorf("a format the model does not follow: %d %s", code, got)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the backend")
	}
	if f := reqs[len(reqs)-1].Format; f.Type != "json_schema" || f.Name != "obj" || !f.Strict || !strings.Contains(f.Schema, `"integer"`) {
		t.Errorf("format sent to the backend %+v", f)
	}
	for _, c := range []struct{ engineParam, param string }{
		{"response_format.json_schema.schema", "text.format.schema"},
		{"response_format.json_schema.schema.properties.a", "text.format.schema.properties.a"},
		{"max_tokens", "max_output_tokens"},
		{"messages", "messages"},
	} {
		fake.SetFail(gen.Errorf(gen.CodeInvalidRequest, c.engineParam, "unsupported"))
		code, _, got = ts.do(t, "POST", "/v1/responses", "", body)
		if e := decodeError(t, got); code != http.StatusBadRequest || str(e.Error.Param) != c.param {
			t.Errorf("the generation refused %s: %d %s, want a 400 naming %s", c.engineParam, code, got, c.param)
		}
	}
	fake.SetFail(nil)
	code, _, got = ts.do(t, "POST", "/v1/responses", "", `{"input":"hi","text":{"format":{"type":"json_schema","name":"obj"}}}`)
	if e := decodeError(t, got); code != http.StatusBadRequest || str(e.Error.Param) != "text.format.schema" || e.Error.Type != "invalid_request_error" {
		t.Errorf("a format without schema: %d %s", code, got)
	}
}
