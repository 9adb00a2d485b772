package broker

import (
	"encoding/json"
	"testing"
)

// FuzzPeekModel checks that the model a server with several routes a
// body to is the model the route's own decoder reads from it: a body
// cannot be pinned to one model and then served as another.
func FuzzPeekModel(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","model":"b","prompt":"x"}`,
		`{"MODEL":"a","model":"b","prompt":"x"}`,
		`{"model":"\u0061","prompt":"x"}`,
		`{"model":7,"prompt":"x"}`,
		`{"model":null,"prompt":"x"}`,
		`{"model":"a","prompt":"x"} {"model":"b"}`,
		`{"prompt":"x","model":""}`,
		`[{"model":"a"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		name, ok := peekModel(body)
		if ok && name == "" {
			t.Fatal("peekModel pinned an empty name")
		}
		if ok {
			var v map[string]json.RawMessage
			if err := json.Unmarshal(body, &v); err != nil {
				t.Fatalf("pinned %q from a body that is no JSON object: %v", name, err)
			}
		}
		for _, decode := range []func([]byte) (*genRequest, error){decodeChatRequest, decodeCompletionRequest} {
			req, err := decode(body)
			if err != nil || req.Model == "" {
				continue
			}
			if !ok || name != req.Model {
				t.Fatalf("the decoder reads model %q, the router %q (%v)", req.Model, name, ok)
			}
		}
	})
}
