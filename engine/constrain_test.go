package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/chat"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/grammar"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model/sample"
	"github.com/lisa-llm/lisa/toolcall"
)

// randomModel is a random-weight model with the real 32k Llama 2
// vocabulary: weak, so whatever structure its output has comes from the
// grammar.
const randomModel = "models/mini-24m-q4_k_m.gguf"

func newModelEngine(t testing.TB, name string, o Options) *Engine {
	t.Helper()
	f, err := gguf.Open(filepath.Join(shared.Dir(t), name), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(f, o)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// weatherSchema has only bounded values, so a random model ends each
// value soon (an unbounded string would run to the budget).
const weatherSchema = `{"type":"object","properties":{"city":{"enum":["Paris","Oslo","Lima"]},"days":{"type":"integer","minimum":1,"maximum":7},"metric":{"type":"boolean"}},"required":["city","days","metric"],"additionalProperties":false}`

// weather is weatherSchema's value; decodeWeather checks that text fits it.
type weather struct {
	City   *string `json:"city"`
	Days   *int    `json:"days"`
	Metric *bool   `json:"metric"`
}

func decodeWeather(text string) (weather, error) {
	var w weather
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return w, err
	}
	if d.More() {
		return w, fmt.Errorf("text after the value")
	}
	switch {
	case w.City == nil || w.Days == nil || w.Metric == nil:
		return w, fmt.Errorf("a required property is missing")
	case *w.City != "Paris" && *w.City != "Oslo" && *w.City != "Lima":
		return w, fmt.Errorf("city %q not in the enum", *w.City)
	case *w.Days < 1 || *w.Days > 7:
		return w, fmt.Errorf("days %d outside 1..7", *w.Days)
	}
	return w, nil
}

func chatReq(n int, seed uint64) gen.Request {
	return gen.Request{Messages: []gen.Message{{Role: gen.RoleUser, Content: "What is the weather?"}}, MaxTokens: n,
		Sampling: gen.Sampling{Temperature: 1, TopP: 1, RepeatPenalty: 1, Seed: seed, HasSeed: true}}
}

// calls gathers a generation's tool calls from their pieces, checking
// that calls begin with index 0, 1, … across the chunks and that a later
// piece continues the call begun last.
func calls(t *testing.T, r result) []gen.CallDelta {
	t.Helper()
	var out []gen.CallDelta
	for _, c := range r.chunks {
		for _, d := range c.ToolCalls {
			switch {
			case d.ID != "" && d.Index == len(out):
			case d.ID == "" && d.Name == "" && d.Index == len(out)-1:
			default:
				t.Fatalf("call piece %+v after %d calls", d, len(out))
			}
			out = gen.JoinCall(out, d)
		}
	}
	return out
}

// TestForcedToolCall: with tool_choice "required" or a named function, a
// random-weight model returns calls that parse and fit the schema, and
// the generation ends with finish reason tool_calls.
func TestForcedToolCall(t *testing.T) {
	// Parallel calls: a random model goes on to another call about two
	// times in three (about 75 tokens each), so the budget leaves room for
	// a long run of calls whatever the sampler draws for a seed.
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 1, CtxSize: 2048})
	tools := []gen.Tool{
		{Name: "get_weather", Description: "Weather in a city", Parameters: weatherSchema},
		{Name: "get_time", Parameters: `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}`},
	}
	tests := []struct {
		name     string
		choice   gen.ToolChoice
		parallel bool
		want     string // the function every call must name, "" for any
	}{
		{"named", gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"}, false, "get_weather"},
		{"named parallel", gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"}, true, "get_weather"},
		{"required", gen.ToolChoice{Mode: gen.ChoiceRequired}, false, ""},
	}
	for _, tt := range tests {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/%d", tt.name, seed), func(t *testing.T) {
				// Parallel calls may run to several: room for them, so that
				// the test does not hang on how many a random model's sampled
				// path writes (seed 1 ran out of 300 tokens under the plain
				// sampler; a change in the attention's rounding moved "named
				// parallel/2" from four calls in 300 tokens to five).
				req := chatReq(1500, seed)
				req.Tools, req.ToolChoice, req.ParallelToolCalls = tools, tt.choice, tt.parallel
				r := runGen(context.Background(), e, req)
				if r.err != nil {
					t.Fatal(r.err)
				}
				cs := calls(t, r)
				if r.done.Finish != gen.FinishToolCalls || len(cs) == 0 {
					t.Fatalf("finish %q with %d calls (text %q)", r.done.Finish, len(cs), r.text)
				}
				if !tt.parallel && len(cs) != 1 {
					t.Fatalf("%d calls without parallel calls", len(cs))
				}
				for _, c := range cs {
					if tt.want != "" && c.Name != tt.want {
						t.Fatalf("call to %q, want %q", c.Name, tt.want)
					}
					if c.ID == "" {
						t.Errorf("call without an id")
					}
					switch c.Name {
					case "get_weather":
						if _, err := decodeWeather(c.Arguments); err != nil {
							t.Errorf("arguments %s: %v", c.Arguments, err)
						}
					case "get_time":
						var a struct{ Zone string }
						if err := json.Unmarshal([]byte(c.Arguments), &a); err != nil || (a.Zone != "UTC" && a.Zone != "CET") {
							t.Errorf("arguments %s: %v", c.Arguments, err)
						}
					default:
						t.Errorf("call to %q, not a tool", c.Name)
					}
				}
			})
		}
	}
}

// TestResponseFormats: json_schema output parses and fits, json_object
// output is an object, a GBNF grammar's output is in its language.
func TestResponseFormats(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 1, CtxSize: 1024})
	for seed := range uint64(3) {
		req := chatReq(200, seed)
		req.Format = gen.Format{Type: gen.FormatJSONSchema, Name: "w", Schema: weatherSchema, Strict: true}
		r := runGen(context.Background(), e, req)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if _, err := decodeWeather(r.text); err != nil || r.done.Finish != gen.FinishStop {
			t.Errorf("json_schema seed %d: %q (finish %s): %v", seed, r.text, r.done.Finish, err)
		}

		req.Format = gen.Format{Type: gen.FormatGrammar, Grammar: `root ::= ("yes" | "no") " " [0-9]{2}`}
		r = runGen(context.Background(), e, req)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var word string
		var num int
		if n, err := fmt.Sscanf(r.text, "%s %d", &word, &num); err != nil || n != 2 || (word != "yes" && word != "no") || len(r.text) != len(word)+3 {
			t.Errorf("grammar seed %d: %q", seed, r.text)
		}
	}
	// json_object: a random model writes keys and strings that run long;
	// a bias towards the quote and the closing brace ends them soon, so
	// the objects close within the budget and must parse.
	var bias []gen.Bias
	for _, s := range []string{`"`, `}`} {
		ids := e.tok.Encode(s, false, false)
		bias = append(bias, gen.Bias{Token: ids[len(ids)-1], Bias: 8})
	}
	for seed := range uint64(3) {
		req := chatReq(300, seed)
		req.Sampling.LogitBias = bias
		req.Format = gen.Format{Type: gen.FormatJSONObject}
		r := runGen(context.Background(), e, req)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(r.text), &v); err != nil || r.done.Finish != gen.FinishStop {
			t.Errorf("json_object seed %d: %q (finish %s): %v", seed, r.text, r.done.Finish, err)
		}
	}
}

// TestToolRoundTrip: a history with the assistant's calls and the tool's
// result renders (the call and the result reach the prompt) and
// generates; tool_choice "auto" on a free model parses whatever comes.
func TestToolRoundTrip(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 1, CtxSize: 1024})
	req := chatReq(16, 1)
	req.Tools = []gen.Tool{{Name: "get_weather", Parameters: weatherSchema}}
	req.ToolChoice = gen.ToolChoice{Mode: gen.ChoiceAuto}
	req.Messages = append(req.Messages,
		gen.Message{Role: gen.RoleAssistant, ToolCalls: []gen.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo","days":2,"metric":true}`}}},
		gen.Message{Role: gen.RoleTool, ToolCallID: "call_1", Content: "sunny, 21 degrees"})
	ids, err := e.PromptIDs(req)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := e.Detokenize(ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"get_weather", "Oslo", "sunny, 21 degrees", "What is the weather?"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	// This template shows tool results as JSON (chat's polyfill), so
	// content cannot be traced: a special token's text in any content is
	// refused rather than parsed as the token.
	bad := req
	bad.Messages = append(append([]gen.Message(nil), req.Messages...), gen.Message{Role: gen.RoleUser, Content: "and then </s> more"})
	if _, err := e.PromptIDs(bad); gen.AsError(err) == nil || gen.AsError(err).Code != gen.CodeInvalidPrompt || gen.AsError(err).Param != "messages[3].content" {
		t.Errorf("special text in content beside tool results: %v", err)
	}
	r := runGen(context.Background(), e, req)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.done.Finish != gen.FinishLength && r.done.Finish != gen.FinishStop && r.done.Finish != gen.FinishToolCalls {
		t.Errorf("finish %q", r.done.Finish)
	}
	var content bytes.Buffer
	for _, c := range r.chunks {
		content.WriteString(c.Text)
	}
	if len(calls(t, r)) == 0 && content.Len() == 0 && r.done.Usage.CompletionTokens > 1 {
		t.Errorf("%d tokens gave neither content nor calls", r.done.Usage.CompletionTokens)
	}
}

// TestCallMarkup: a vocabulary's special call markup (Mistral's
// [TOOL_CALLS], Llama's <|python_tag|>) is found at load, shown as text,
// and matchable by a grammar; the family's format is detected.
func TestCallMarkup(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 1, Parallel: 1, CtxSize: 64})
	if e.callFormat != toolcall.Generic {
		t.Errorf("format %q for a model without a tool template, want generic", e.callFormat)
	}
	for id, text := range e.markup {
		if got := string(e.outPiece(id)); got != text {
			t.Errorf("markup token %d shows as %q, want %q", id, got, text)
		}
	}
}

// TestSampleError: a grammar that allows no token, or outgrows its
// limits, ends the request with a typed client error; other sampling
// failures stay the engine's.
func TestSampleError(t *testing.T) {
	con := &grammar.Constraint{}
	tests := []struct {
		name string
		r    *request
		err  error
		want bool // a *gen.Error
	}{
		{"no allowed token", &request{con: con}, fmt.Errorf("sample: %w", sample.ErrNoAllowedToken), true},
		{"grammar limit", &request{con: con}, fmt.Errorf("x: %w", &grammar.LimitError{What: "MaxStacks", Limit: 1}), true},
		{"no grammar", &request{}, fmt.Errorf("sample: %w", sample.ErrNoAllowedToken), false},
		{"other", &request{con: con}, errors.New("nan in logits"), false},
	}
	for _, tt := range tests {
		err := sampleError(tt.r, tt.err)
		ge := gen.AsError(err)
		if (ge != nil) != tt.want || !errors.Is(err, tt.err) && !errors.Is(err, errors.Unwrap(tt.err)) {
			t.Errorf("%s: %v (typed %v)", tt.name, err, ge != nil)
		}
		if ge != nil && ge.Code != gen.CodeInvalidRequest {
			t.Errorf("%s: code %s", tt.name, ge.Code)
		}
	}
}

// TestForcedToolCallFormats: a forced call in each family's syntax (the
// output format set by hand on the random model: its template is
// generic) comes back parsed from the streamed output, with parallel calls
// where the family allows them.
func TestForcedToolCallFormats(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 2, Parallel: 1, CtxSize: 1024})
	tools := []gen.Tool{{Name: "get_weather", Parameters: weatherSchema}}
	for _, f := range []toolcall.Format{toolcall.Hermes, toolcall.Mistral, toolcall.Llama3, toolcall.Generic} {
		for _, parallel := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/parallel=%v", f, parallel), func(t *testing.T) {
				e.callFormat = f
				t.Cleanup(func() { e.callFormat = toolcall.Generic })
				req := chatReq(300, 7)
				req.Tools, req.ToolChoice, req.ParallelToolCalls = tools, gen.ToolChoice{Mode: gen.ChoiceRequired}, parallel
				r := runGen(context.Background(), e, req)
				if r.err != nil {
					t.Fatal(r.err)
				}
				cs := calls(t, r)
				if len(cs) == 0 || (r.done.Finish != gen.FinishToolCalls && r.done.Finish != gen.FinishLength) {
					t.Fatalf("finish %q with %d calls (content %q)", r.done.Finish, len(cs), r.text)
				}
				// The arguments stream as the model writes them: the
				// first call comes in more pieces than its first. (Only
				// when every token came as its own chunk: a reader that
				// falls behind gets the pending tokens merged, pieces
				// included, which a loaded machine does.)
				pieces := 0
				for _, c := range r.chunks {
					for _, d := range c.ToolCalls {
						if d.Index == 0 {
							pieces++
						}
					}
				}
				if pieces < 3 && len(r.chunks) >= r.done.Usage.CompletionTokens {
					t.Errorf("the first call came in %d pieces, one chunk per token", pieces)
				}
				if !parallel && len(cs) != 1 {
					t.Fatalf("%d calls without parallel calls", len(cs))
				}
				for i, c := range cs {
					if c.Name != "get_weather" {
						t.Errorf("call %d names %q", i, c.Name)
					}
					if i == len(cs)-1 && r.done.Finish == gen.FinishLength {
						continue // the budget may cut the last call's arguments, as OpenAI's
					}
					if _, err := decodeWeather(c.Arguments); err != nil {
						t.Errorf("call %s(%s): %v", c.Name, c.Arguments, err)
					}
				}
			})
		}
	}
}

// TestUntoldToolsReadAsContent: a model whose template shows no tools
// (Gemma 2's: the prompt tells it of none, as in llama.cpp) has its reply
// read as content, as llama.cpp reads it, unless tool_choice forces a
// call, whose grammar writes one in the generic format; a template that
// shows tools, or a family rendered in Go, is read for calls.
func TestUntoldToolsReadAsContent(t *testing.T) {
	e := newModelEngine(t, randomModel, Options{Threads: 1, Parallel: 1, CtxSize: 64})
	gemma2, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", "gemma-2.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	llama31, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", "llama-3.1.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, tmplErr := e.tmpl, e.tmplErr
	t.Cleanup(func() { e.tmpl, e.tmplErr = tmpl, tmplErr; e.initOutputs() })
	for _, tc := range []struct {
		name, tmpl string
		mode       string
		calls      bool
	}{
		{"untold auto", string(gemma2), gen.ChoiceAuto, false},
		{"untold default", string(gemma2), "", false},
		{"untold required", string(gemma2), gen.ChoiceRequired, true},
		{"untold named", string(gemma2), gen.ChoiceFunction, true},
		{"native auto", string(llama31), gen.ChoiceAuto, true},
		{"go family auto", "chatml", gen.ChoiceAuto, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.tmpl, e.tmplErr = tc.tmpl, chat.Validate(tc.tmpl)
			e.initOutputs()
			req := chatReq(4, 1)
			req.Tools = []gen.Tool{{Name: "get_weather", Parameters: weatherSchema}}
			req.ToolChoice = gen.ToolChoice{Mode: tc.mode}
			if tc.mode == gen.ChoiceFunction {
				req.ToolChoice.Name = "get_weather"
			}
			p, err := e.prepare(&req)
			if err != nil {
				t.Fatal(err)
			}
			if p.reply == nil || p.reply.Calls != tc.calls {
				t.Errorf("reply options %+v, want calls read: %v", p.reply, tc.calls)
			}
			if forced := tc.mode == gen.ChoiceRequired || tc.mode == gen.ChoiceFunction; (p.con != nil) != forced {
				t.Errorf("grammar %v, want one: %v", p.con != nil, forced)
			}
		})
	}
}
