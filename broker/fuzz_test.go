package broker

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// checkDecoded asserts the invariants every accepted request must hold.
func checkDecoded(t *testing.T, r *genRequest, chat bool) {
	t.Helper()
	s := r.Sampling
	switch {
	case chat && len(r.Messages) == 0:
		t.Fatal("chat request without messages accepted")
	case !chat && r.Prompt == nil && len(r.PromptIDs) == 0:
		t.Fatal("completion without prompt accepted")
	case len(r.Stop) > gen.MaxStop:
		t.Fatalf("%d stops accepted", len(r.Stop))
	case s.Temperature < 0 || s.Temperature > 2 || s.TopP < 0 || s.TopP > 1 || s.MinP < 0 || s.MinP > 1:
		t.Fatalf("sampling out of range: %+v", s)
	case s.RepeatPenalty <= 0 || s.PresencePenalty < -2 || s.PresencePenalty > 2 || s.FrequencyPenalty < -2 || s.FrequencyPenalty > 2:
		t.Fatalf("penalties out of range: %+v", s)
	case r.MaxTokens < 0 || s.TopK < 0 || r.TopLogprobs < 0 || r.TopLogprobs > 20:
		t.Fatalf("counts out of range: %+v", r)
	case r.IncludeUsage && !r.Stream:
		t.Fatal("include_usage without stream accepted")
	case r.N < 0 || r.N > gen.MaxChoices:
		t.Fatalf("n %d accepted", r.N)
	}
	for _, m := range r.Messages {
		if m.Role != "system" && m.Role != "user" && m.Role != "assistant" && m.Role != "tool" {
			t.Fatalf("role %q accepted", m.Role)
		}
	}
	// What the broker accepts, the process line must accept too: a
	// disagreement would fail later as a worker error.
	// (Token ids are checked against the model's vocabulary later, by
	// checkModel: a vocabulary of ipc.MaxTokens lets every id through.)
	fixed := *r
	inVocab := !slices.ContainsFunc(r.PromptIDs, func(id int32) bool { return id >= ipc.MaxTokens }) &&
		!slices.ContainsFunc(r.Sampling.LogitBias, func(b gen.Bias) bool { return b.Token >= ipc.MaxTokens })
	if err := budget(&fixed, ModelInfo{ContextSize: ipc.MaxTokens - 1}); err == nil && inVocab {
		if err := ipc.Check(&ipc.Generate{ID: 1, Request: fixed.Request}); err != nil {
			t.Fatalf("accepted by the broker, refused by ipc: %v", err)
		}
	}
	for _, id := range r.PromptIDs {
		if id < 0 {
			t.Fatalf("negative token id %d accepted", id)
		}
	}
}

// reencode writes an accepted request back as JSON in the API's shape.
func reencode(r *genRequest) []byte {
	m := map[string]any{"temperature": r.Sampling.Temperature, "top_p": r.Sampling.TopP, "stream": r.Stream}
	if r.N > 0 {
		m["n"] = r.N
	}
	if r.MaxTokens > 0 {
		m["max_tokens"] = r.MaxTokens
	}
	if r.Stop != nil {
		m["stop"] = r.Stop
	}
	if r.Messages != nil {
		var msgs []map[string]any
		for _, x := range r.Messages {
			msg := map[string]any{"role": x.Role, "content": x.Content}
			switch {
			case x.Role == "tool" && x.ToolCallID == "": // the deprecated function role
				msg["role"], msg["name"] = "function", "f"
			case x.Role == "tool":
				msg["tool_call_id"] = x.ToolCallID
			}
			var calls []map[string]any
			for _, c := range x.ToolCalls {
				calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
			}
			if calls != nil {
				msg["tool_calls"] = calls
			}
			msgs = append(msgs, msg)
		}
		m["messages"] = msgs
	}
	if r.Prompt != nil {
		m["prompt"] = *r.Prompt
	}
	if r.PromptIDs != nil {
		m["prompt"] = r.PromptIDs
	}
	b, _ := json.Marshal(m)
	return b
}

func fuzzDecode(f *testing.F, chat bool, seeds []string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	decode := decodeCompletionRequest
	if chat {
		decode = decodeChatRequest
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decode(body)
		if err != nil {
			if _, ok := err.(*APIError); !ok {
				t.Fatalf("error %v is not an *APIError", err)
			}
			return
		}
		checkDecoded(t, r, chat)
		again, err := decode(reencode(r))
		if err != nil {
			t.Fatalf("re-encoded request refused: %v\n%s", err, reencode(r))
		}
		if !reflect.DeepEqual(again.Messages, r.Messages) || !reflect.DeepEqual(again.Stop, r.Stop) ||
			!reflect.DeepEqual(again.PromptIDs, r.PromptIDs) || again.MaxTokens != r.MaxTokens ||
			again.Sampling.Temperature != r.Sampling.Temperature || again.N != r.N {
			t.Fatalf("round trip changed the request:\n%+v\n%+v", r, again)
		}
	})
}

func FuzzDecodeChatRequest(f *testing.F) {
	fuzzDecode(f, true, []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"messages":[{"role":"system","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"b","name":"x"}],"stream":true,"stream_options":{"include_usage":true},"stop":["x","y"],"max_tokens":5,"temperature":0.7,"top_p":0.9,"seed":1,"logprobs":true,"top_logprobs":2}`,
		`{"messages":[{"role":"user","content":"x"}],"n":1,"tools":[],"logit_bias":{},"response_format":{"type":"text"},"user":"u"}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"refusal":null,"annotations":[],"audio":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}],"tool_choice":"required","parallel_tool_calls":false}`,
		`{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","strict":true,"schema":{"type":"object"}}},"logit_bias":{"1":-100,"2":5},"metadata":{"a":"b"},"store":true}`,
		`{"messages":[{"role":"user","content":"x"}],"functions":[{"name":"g"}],"function_call":{"name":"g"},"grammar":"root ::= \"a\""}`,
		`{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},{"role":"function","name":"f","content":"1"}],"prediction":{"type":"content","content":"x"},"modalities":["text"]}`,
		`{"messages":[{"role":"user","content":"x"}],"stop":"\n","min_p":0.05,"repeat_penalty":1.1,"top_k":40}`,
		`{"messages":[{"role":"user","content":"x"}],"n":3,"seed":4,"stream":true}`, `{"messages":[{"role":"user","content":"x"}],"n":129}`,
		`{"messages":[{"role":"user","content":"\u00e9\ud83d\ude00"}]}`,
		`{"messages":null}`, `[]`, `{"messages":[{"role":"user","content":"x"}]}{}`,
	})
}

func FuzzDecodeCompletionRequest(f *testing.F) {
	fuzzDecode(f, false, []string{
		`{"model":"m","prompt":"Once upon a time","max_tokens":16}`,
		`{"prompt":["one"],"echo":false,"best_of":1,"suffix":""}`,
		`{"prompt":"x","echo":true,"json_schema":{"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}}},"logit_bias":{"7":100}}`,
		`{"prompt":[1,2,3],"logprobs":3}`,
		`{"prompt":[[1,2]],"stream":true,"stream_options":{"include_usage":false}}`,
		`{"prompt":"x","stop":["a","b","c","d"],"presence_penalty":-2,"frequency_penalty":2}`,
		`{"prompt":[]}`, `{"prompt":1}`, `{"prompt":"a","prompt":"b"}`,
		`{"prompt":"a","n":128,"echo":true}`, `{"prompt":"a","n":0}`,
	})
}
