package broker_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// respCallsBody asks the Responses API for a forced call of get_weather.
const respCallsBody = `{"input":"weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"tool_choice":"required"`

type respItem struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Status    string `json:"status"`
}

// TestResponsesToolCalls: the model's calls are function_call output
// items after the message item, whole and streamed (added, arguments
// delta and done, item done, each at its output index).
func TestResponsesToolCalls(t *testing.T) {
	fake := newFake("Let me look.")
	// The calls come in pieces, as the engine streams their arguments.
	fake.Calls = []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city"`}, {Index: 0, Arguments: `:"Oslo"}`},
		{Index: 1, ID: "call_b", Name: "get_weather"}, {Index: 1, Arguments: `{"city":"Lima"}`}}
	calls := []gen.CallDelta{{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		{Index: 1, ID: "call_b", Name: "get_weather", Arguments: `{"city":"Lima"}`}}
	ts := start(t, fake, testConfig(t, nil))
	code, _, body := ts.do(t, "POST", "/v1/responses", "", respCallsBody+"}")
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	var r struct {
		Status string     `json:"status"`
		Output []respItem `json:"output"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || len(r.Output) != 3 || r.Output[0].Type != "message" {
		t.Fatalf("response %s", body)
	}
	for i, c := range calls {
		it := r.Output[1+i]
		if it.Type != "function_call" || !strings.HasPrefix(it.ID, "fc_") || it.CallID != c.ID || it.Name != c.Name ||
			it.Arguments != c.Arguments || it.Status != "completed" {
			t.Errorf("output %d: %+v, want the call %+v", 1+i, it, c)
		}
	}

	resp, err := http.Post(ts.URL+"/v1/responses", "application/json", strings.NewReader(respCallsBody+`,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	args, done := map[int]string{}, map[int]string{}
	var final struct {
		Output []respItem `json:"output"`
	}
	for _, block := range strings.Split(strings.TrimSuffix(string(all), "\n\n"), "\n\n") {
		_, data, _ := strings.Cut(block, "\ndata: ")
		var ev struct {
			Type     string          `json:"type"`
			Index    int             `json:"output_index"`
			Delta    string          `json:"delta"`
			Args     string          `json:"arguments"`
			Item     respItem        `json:"item"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %q: %v", block, err)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_item.added":
			if ev.Index > 0 && (ev.Item.Type != "function_call" || ev.Item.Arguments != "" || ev.Item.Status != "in_progress") {
				t.Errorf("call item added: %+v", ev.Item)
			}
		case "response.function_call_arguments.delta":
			if ev.Delta == "" {
				t.Error("an empty arguments delta")
			}
			args[ev.Index] += ev.Delta
		case "response.function_call_arguments.done":
			done[ev.Index] = ev.Args
		case "response.completed":
			if err := json.Unmarshal(ev.Response, &final); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	for i, c := range calls {
		if args[1+i] != c.Arguments || done[1+i] != c.Arguments {
			t.Errorf("streamed arguments of output %d: %q, done %q, want %q", 1+i, args[1+i], done[1+i], c.Arguments)
		}
	}
	if len(final.Output) != 3 || final.Output[2].CallID != "call_b" {
		t.Errorf("final output %+v", final.Output)
	}
}
