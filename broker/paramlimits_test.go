package broker_test

import (
	"fmt"
	"testing"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// TestSamplingLimitsAgreeWithIPC checks every sampling parameter at the
// edges of the range the broker accepts: the edge itself is accepted and
// the request the backend receives passes ipc's Generate validation (so
// it cannot fail later as a 500), and the value just past the edge is a
// 400 naming the field. Package engine checks the same ipc ranges against
// the sampler.
func TestSamplingLimitsAgreeWithIPC(t *testing.T) {
	tests := []struct {
		field       string
		lo, hi      string // edges the broker must accept
		past        string // just outside
		belowToo    string // just below lo ("" when lo is the type's own edge)
		checkLoaded func(gen.Sampling) bool
	}{
		{"temperature", "0", fmt.Sprint(ipc.MaxTemperature), fmt.Sprint(ipc.MaxTemperature + 0.01), "-0.01", nil},
		{"top_p", "0", "1", "1.01", "-0.01", nil},
		{"min_p", "0", "1", "1.01", "-0.01", nil},
		{"repeat_penalty", "0.001", fmt.Sprint(ipc.MaxRepeatPen), fmt.Sprint(ipc.MaxRepeatPen + 0.01), "0", nil},
		{"presence_penalty", fmt.Sprint(-ipc.MaxPenalty), fmt.Sprint(ipc.MaxPenalty), fmt.Sprint(ipc.MaxPenalty + 0.01), fmt.Sprint(-ipc.MaxPenalty - 0.01), nil},
		{"frequency_penalty", fmt.Sprint(-ipc.MaxPenalty), fmt.Sprint(ipc.MaxPenalty), fmt.Sprint(ipc.MaxPenalty + 0.01), fmt.Sprint(-ipc.MaxPenalty - 0.01), nil},
		{"top_k", "0", fmt.Sprint(ipc.MaxTopK), fmt.Sprint(ipc.MaxTopK + 1), "-1",
			func(s gen.Sampling) bool { return s.TopK == ipc.MaxTopK }},
		{"repeat_last_n", "0", fmt.Sprint(ipc.MaxRepeatLastN), fmt.Sprint(ipc.MaxRepeatLastN + 1), "-1",
			func(s gen.Sampling) bool { return s.RepeatLastN == ipc.MaxRepeatLastN }},
	}
	fake := newFake("x")
	ts := start(t, fake, testConfig(t, nil))
	body := func(field, v string) string {
		return fmt.Sprintf(`{"prompt":"p","max_tokens":1,%q:%s}`, field, v)
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			for _, v := range []string{tt.lo, tt.hi} {
				n := len(fake.Requests())
				code, _, b := ts.do(t, "POST", "/v1/completions", "", body(tt.field, v))
				if code != 200 {
					t.Fatalf("%s=%s: status %d, want 200: %s", tt.field, v, code, b)
				}
				reqs := fake.Requests()
				if len(reqs) != n+1 {
					t.Fatalf("%s=%s: the backend got no request", tt.field, v)
				}
				got := reqs[n]
				if err := ipc.Check(ipcGenerate(got)); err != nil {
					t.Fatalf("%s=%s accepted by the broker but refused downstream: %v", tt.field, v, err)
				}
				if v == tt.hi && tt.checkLoaded != nil && !tt.checkLoaded(got.Sampling) {
					t.Fatalf("%s=%s did not reach the backend: %+v", tt.field, v, got.Sampling)
				}
			}
			for _, v := range []string{tt.past, tt.belowToo} {
				code, _, b := ts.do(t, "POST", "/v1/completions", "", body(tt.field, v))
				if code != 400 || str(decodeError(t, b).Error.Param) != tt.field {
					t.Fatalf("%s=%s: status %d, want a 400 naming the field: %s", tt.field, v, code, b)
				}
			}
		})
	}
}

// ipcGenerate is the generate frame the supervisor sends for req.
func ipcGenerate(req gen.Request) *ipc.Generate {
	return &ipc.Generate{ID: 1, Request: req}
}

// TestControlTokenIDs checks that token-id prompts carrying a control id
// the worker listed are a 400 naming the index, unless the configuration
// allows them.
func TestControlTokenIDs(t *testing.T) {
	tests := []struct {
		name   string
		allow  bool
		prompt string
		status int
		param  string
	}{
		{"plain ids", false, `[104,105]`, 200, ""},
		{"BOS first", false, `[256,104]`, 200, ""},
		{"BOS later", false, `[256,104,256]`, 400, "prompt[2]"},
		{"EOS first", false, `[257,104]`, 400, "prompt[0]"},
		{"turn marker inside", false, `[104,258,105]`, 400, "prompt[1]"},
		{"nested array", false, `[[104,257]]`, 400, "prompt[1]"},
		{"allowed, BOS later", true, `[104,256]`, 200, ""},
		{"allowed by the operator", true, `[256,104,258]`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake("x")
			ts := start(t, fake, testConfig(t, func(c *config.Config) { c.AllowControlTokenIDs = tt.allow }))
			code, _, b := ts.do(t, "POST", "/v1/completions", "", `{"max_tokens":1,"prompt":`+tt.prompt+`}`)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %s", code, tt.status, b)
			}
			if tt.status == 400 {
				e := decodeError(t, b)
				if str(e.Error.Param) != tt.param || str(e.Error.Code) != "control_token_id" {
					t.Fatalf("param %q code %q, want %q control_token_id: %s", str(e.Error.Param), str(e.Error.Code), tt.param, b)
				}
				if len(fake.Requests()) != 0 {
					t.Fatal("a refused prompt reached the backend")
				}
			}
		})
	}
}
