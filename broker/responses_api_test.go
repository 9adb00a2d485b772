package broker_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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
