package broker_test

import (
	"strings"
	"testing"
)

// TestTypedWorkerErrors: a request the worker refuses with a typed error
// (the fake refuses as the worker does) is the right 400 with an
// OpenAI-shaped body, streamed or not, and the broker never tokenizes the
// prompt itself: the worker renders and tokenizes it once.
func TestTypedWorkerErrors(t *testing.T) {
	long := strings.Repeat("x", 600) // the fake's context holds 512 tokens, one per byte
	tests := []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"chat prompt too long", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "context_length_exceeded", "messages"},
		{"chat prompt too long, streamed", "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"` + long + `"}]}`, 400, "context_length_exceeded", "messages"},
		{"completion prompt too long", "/v1/completions", `{"prompt":"` + long + `"}`, 400, "context_length_exceeded", "prompt"},
		{"prompt and max_tokens", "/v1/completions", `{"prompt":"` + long[:500] + `","max_tokens":20}`, 400, "context_length_exceeded", "max_tokens"},
		{"max_tokens alone fills the context", "/v1/completions", `{"prompt":"a","max_tokens":512}`, 400, "context_length_exceeded", "max_tokens"},
		{"token ids fill the context", "/v1/completions", `{"prompt":[` + strings.Repeat("1,", 511) + `1]}`, 400, "context_length_exceeded", "prompt"},
		{"fits", "/v1/completions", `{"prompt":"` + long[:500] + `","max_tokens":12}`, 200, "", ""},
		{"chat fills the rest", "/v1/chat/completions", `{"messages":[{"role":"user","content":"` + long[:500] + `"}]}`, 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("x")
			ts := start(t, fake, testConfig(t, nil))
			code, _, b := ts.do(t, "POST", tt.path, "", tt.body)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, b)
			}
			if tt.status != 200 {
				e := decodeError(t, b)
				if str(e.Error.Code) != tt.code || str(e.Error.Param) != tt.param || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
					t.Fatalf("error %+v, want code %s param %s: %s", e.Error, tt.code, tt.param, b)
				}
			}
			if n := fake.Tokenizes(); n != 0 {
				t.Fatalf("the broker tokenized %d times; the worker alone tokenizes the prompt", n)
			}
		})
	}
}
