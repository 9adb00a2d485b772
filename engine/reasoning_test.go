package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/toolcall"
)

// synthEngine synthesizes a tiny model of shape and serves it, with the
// chat template tmpl instead of its own when tmpl is not "".
func synthEngine(t *testing.T, shape, tmpl string) *Engine {
	t.Helper()
	sh, ok := synth.Lookup(shape)
	if !ok {
		t.Fatalf("unknown shape %s", shape)
	}
	o := synth.Options{Shape: sh, Type: mustType(t, "f16"), Seed: 1}
	if tmpl != "" {
		v, err := vocab.Build(sh.Vocab)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range v.KVs() {
			if kv.Key == "tokenizer.chat_template" {
				kv.Value = gguf.StringValue(tmpl)
			}
			o.VocabKVs = append(o.VocabKVs, kv)
		}
	}
	path := filepath.Join(t.TempDir(), shape+".gguf")
	if _, err := synth.WriteFile(path, o); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(f, Options{Threads: 1, CtxSize: 512})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestReasoningSeparated makes Qwen3's template (a thinking template)
// reply with reasoning (the output forced by a grammar) and checks that
// the chunks carry the reasoning apart from the text, as llama-server's
// default reasoning format returns it, and in the text with "none"; a
// raw-text prompt is never split.
func TestReasoningSeparated(t *testing.T) {
	e := synthEngine(t, "qwen3-tiny", "")
	const out = "<think>\nWhy not.\n</think>\n\nHello."
	grammar := `root ::= "<think>\nWhy not.\n</think>\n\nHello."`
	for _, c := range []struct {
		name            string
		chat            bool
		format          string
		reasoning, text string
	}{
		{"default", true, "", "Why not.\n", "Hello."},
		{"deepseek", true, gen.ReasoningDeepSeek, "Why not.\n", "Hello."},
		{"none", true, gen.ReasoningNone, "", out},
		{"raw prompt", false, "", "", out},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chatReq(64, 1)
			if !c.chat {
				p := "Hi"
				req.Messages, req.Prompt = nil, &p
			}
			req.ReasoningFormat = c.format
			req.Format = gen.Format{Type: gen.FormatGrammar, Grammar: grammar}
			var reasoning strings.Builder
			var text strings.Builder
			_, err := e.Generate(context.Background(), req, func(ch gen.Chunk) error {
				reasoning.WriteString(ch.Reasoning)
				text.WriteString(ch.Text)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if reasoning.String() != c.reasoning || text.String() != c.text {
				t.Errorf("reasoning %q text %q, want %q %q", reasoning.String(), text.String(), c.reasoning, c.text)
			}
		})
	}
}

// TestReasoningHistoryReachesTemplate checks that an assistant message's
// reasoning in the history reaches Qwen3's template, which shows the
// reasoning of the turn after the last user message.
func TestReasoningHistoryReachesTemplate(t *testing.T) {
	e := synthEngine(t, "qwen3-tiny", "")
	req := gen.Request{MaxTokens: 1, Messages: []gen.Message{
		{Role: gen.RoleUser, Content: "Weather?"},
		{Role: gen.RoleAssistant, ReasoningContent: "Call the tool.", ToolCalls: []gen.ToolCall{{ID: "c1", Name: "w", Arguments: `{}`}}},
		{Role: gen.RoleTool, ToolCallID: "c1", Content: "sunny"},
	}}
	with, err := e.PromptIDs(req)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages[1].ReasoningContent = ""
	without, err := e.PromptIDs(req)
	if err != nil {
		t.Fatal(err)
	}
	text := e.tok.Decode(with)
	if !strings.Contains(text, "Call the tool.") || strings.Contains(e.tok.Decode(without), "Call the tool.") {
		t.Errorf("the reasoning does not reach the prompt: %q", text)
	}
}

func mustType(t *testing.T, name string) synth.FileType {
	t.Helper()
	ft, err := synth.ParseFileType(name)
	if err != nil {
		t.Fatal(err)
	}
	return ft
}

// TestHarmonyReply serves gpt-oss's template (on a Qwen3 vocabulary, in
// which Harmony's markup is plain text) and makes the model write a
// Harmony reply (forced by a grammar): the analysis channel comes back as
// reasoning, the final channel as text, and with tools a message to
// functions.NAME as a call.
func TestHarmonyReply(t *testing.T) {
	tmpl, err := os.ReadFile("../model/synth/vocab/templates/gpt-oss.jinja")
	if err != nil {
		t.Fatal(err)
	}
	e := synthEngine(t, "qwen3-tiny", string(tmpl))
	for _, c := range []struct {
		name, out, format      string
		reasoning, text, calls string
	}{
		{name: "final", out: "<|channel|>analysis<|message|>Sum.<|end|><|start|>assistant<|channel|>final<|message|>4",
			reasoning: "Sum.", text: "4"},
		{name: "none", out: "<|channel|>analysis<|message|>Sum.<|end|><|start|>assistant<|channel|>final<|message|>4", format: gen.ReasoningNone,
			text: "<|channel|>analysis<|message|>Sum.<|end|>4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chatReq(256, 1) // the markup is text here: many tokens
			req.ReasoningFormat = c.format
			req.Format = gen.Format{Type: gen.FormatGrammar, Grammar: "root ::= " + strconv.Quote(c.out)}
			var reasoning, text, calls strings.Builder
			_, err := e.Generate(context.Background(), req, func(ch gen.Chunk) error {
				reasoning.WriteString(ch.Reasoning)
				text.WriteString(ch.Text)
				for _, d := range ch.ToolCalls {
					calls.WriteString(d.Name + d.Arguments)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if reasoning.String() != c.reasoning || text.String() != c.text || calls.String() != c.calls {
				t.Errorf("reasoning %q text %q calls %q, want %q %q %q", reasoning.String(), text.String(), calls.String(), c.reasoning, c.text, c.calls)
			}
		})
	}
}

// TestHarmonyCalls checks the reader a Harmony model's request with tools
// gets: calls to offered functions, the analysis as reasoning; a forced
// call gets a grammar (TestHarmonyForced generates under it).
func TestHarmonyCalls(t *testing.T) {
	tmpl, err := os.ReadFile("../model/synth/vocab/templates/gpt-oss.jinja")
	if err != nil {
		t.Fatal(err)
	}
	e := synthEngine(t, "qwen3-tiny", string(tmpl))
	req := chatReq(64, 1)
	req.Tools = []gen.Tool{{Name: "w", Parameters: `{"type":"object"}`}}
	p, err := e.prepare(&req)
	if err != nil {
		t.Fatal(err)
	}
	if p.reply == nil || !p.reply.Calls || p.reply.Format != toolcall.Harmony {
		t.Fatalf("reply options %+v", p.reply)
	}
	s, err := toolcall.NewReplyStream(*p.reply)
	if err != nil {
		t.Fatal(err)
	}
	var c gen.Chunk
	c.Text = "<|channel|>analysis<|message|>Look.<|end|><|start|>assistant to=functions.w<|channel|>commentary json<|message|>{\"c\": 1}"
	if err := parseChunk(s, &c); err != nil {
		t.Fatal(err)
	}
	deltas, _, err := s.Close()
	if err != nil {
		t.Fatal(err)
	}
	addDeltas(&c, deltas)
	if c.Reasoning != "Look." || c.Text != "" || len(c.ToolCalls) != 1 || c.ToolCalls[0].Name != "w" || c.ToolCalls[0].Arguments != `{"c":1}` {
		t.Errorf("chunk %+v", c)
	}
	req.ToolChoice = gen.ToolChoice{Mode: gen.ChoiceRequired}
	if p, err := e.prepare(&req); err != nil || p.con == nil || p.reply == nil || !p.reply.Calls {
		t.Errorf("a forced call: %v, grammar %v", err, p.con != nil)
	}
}

// TestHarmonyForced generates forced calls (tool_choice required and a
// named function) on gpt-oss-tiny, a random-weight model with gpt-oss's
// vocabulary and template: every reply is one call to an allowed
// function whose arguments fit the schema, finish_reason tool_calls. A
// bias on <|end|> keeps a random model's analysis message short (its
// grammar allows MaxLead characters, more than this context holds after
// the prompt); with a bias on the tokens of "analysis" too, the reply
// opens with an analysis message (kept in the content by
// reasoning_format none) before its call. The call itself is the
// grammar's work.
func TestHarmonyForced(t *testing.T) {
	e := synthEngine(t, "gpt-oss-tiny", "")
	end, ok := e.tok.TokenID("<|end|>")
	if !ok {
		t.Fatal("no <|end|> token")
	}
	tools := []gen.Tool{
		{Name: "get_weather", Description: "Weather in a city", Parameters: weatherSchema},
		{Name: "get_time", Parameters: `{"type":"object","properties":{"zone":{"enum":["UTC","CET"]}},"required":["zone"],"additionalProperties":false}`},
	}
	for _, tt := range []struct {
		name     string
		choice   gen.ToolChoice
		parallel bool
		analysis bool
		want     string
	}{
		{"required", gen.ToolChoice{Mode: gen.ChoiceRequired}, false, false, ""},
		{"named", gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_time"}, false, false, "get_time"},
		{"named parallel", gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "get_weather"}, true, false, "get_weather"},
		{"required analysis", gen.ToolChoice{Mode: gen.ChoiceRequired}, false, true, ""},
	} {
		opened := 0 // replies that opened with an analysis message
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/%d", tt.name, seed), func(t *testing.T) {
				req := chatReq(200, seed)
				req.Tools, req.ToolChoice, req.ParallelToolCalls = tools, tt.choice, tt.parallel
				req.Sampling.LogitBias = []gen.Bias{{Token: end, Bias: 8}}
				if tt.analysis {
					// less than <|end|>'s, which then ends the analysis soon
					req.Sampling.LogitBias[0].Bias = 30
					for _, id := range e.tok.Encode("analysis", false, false) {
						req.Sampling.LogitBias = append(req.Sampling.LogitBias, gen.Bias{Token: id, Bias: 10})
					}
					req.ReasoningFormat = gen.ReasoningNone
				}
				r := runGen(context.Background(), e, req)
				if r.err != nil {
					t.Fatal(r.err)
				}
				cs := calls(t, r)
				if r.done.Finish != gen.FinishToolCalls || len(cs) != 1 {
					t.Fatalf("finish %q with %d calls (text %q)", r.done.Finish, len(cs), r.text)
				}
				// reasoning_format none: the analysis message, whole, or
				// nothing is the content
				if body, ok := strings.CutPrefix(r.text, "<|channel|>analysis<|message|>"); ok && tt.analysis && strings.Index(body, "<|end|>") == len(body)-len("<|end|>") {
					opened++
				} else if r.text != "" {
					t.Fatalf("content %q", r.text)
				}
				c := cs[0]
				if tt.want != "" && c.Name != tt.want {
					t.Fatalf("call to %q, want %q", c.Name, tt.want)
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
			})
		}
		if tt.analysis && opened == 0 {
			t.Errorf("%s: no reply opened with an analysis message", tt.name)
		}
	}
}

// TestHarmonyForcedEnd: the forced call's grammar ends with <|call|>, not
// with gpt-oss's other ends of generation (<|return|>, <|endoftext|>);
// its analysis message ends with the <|end|> token (gpt-oss's end of
// turn, a user-defined token the grammar takes as text), not only with
// that text spelled in other tokens.
func TestHarmonyForcedEnd(t *testing.T) {
	e := synthEngine(t, "gpt-oss-tiny", "")
	req := chatReq(64, 1)
	req.Tools = []gen.Tool{{Name: "w", Parameters: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`}}
	req.ToolChoice = gen.ToolChoice{Mode: gen.ChoiceRequired}
	p, err := e.prepare(&req)
	if err != nil || p.con == nil {
		t.Fatalf("prepare: %v", err)
	}
	ends := map[string]bool{"<|call|>": true, "<|return|>": false, "<|endoftext|>": false}
	check := func(complete bool) {
		t.Helper()
		for text, ok := range ends {
			id, found := e.tok.TokenID(text)
			if !found || !e.tok.IsEOG(id) {
				t.Fatalf("%s is not an end of generation", text)
			}
			if got, err := p.con.AllowsToken(id); err != nil || got != (ok && complete) {
				t.Errorf("%s allowed %v (complete %v), %v", text, got, complete, err)
			}
		}
	}
	check(false)
	for _, id := range e.tok.Encode(`<|channel|>commentary to=functions.w <|constrain|>json<|message|>{"n":5}`, false, true) {
		if err := p.con.Accept(id); err != nil {
			t.Fatalf("token %d (%q): %v", id, e.tok.Piece(id), err)
		}
	}
	check(true)
	q, err := e.prepare(&req)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range e.tok.Encode("<|channel|>analysis<|message|>Think.", false, true) {
		if err := q.con.Accept(id); err != nil {
			t.Fatalf("token %d (%q): %v", id, e.tok.Piece(id), err)
		}
	}
	end, _ := e.tok.TokenID("<|end|>")
	if ok, err := q.con.AllowsToken(end); !ok || err != nil {
		t.Errorf("<|end|> after the analysis: %v %v", ok, err)
	}
}

// TestHarmonyForcedRefusals: a forced call's bad input is the client's
// error, typed and naming its field, as in every format.
func TestHarmonyForcedRefusals(t *testing.T) {
	e := synthEngine(t, "gpt-oss-tiny", "")
	huge := func(n int) string { return `{"type":"object","description":"` + strings.Repeat("x", n) + `"}` }
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 100) + `{"type":"integer"}` + strings.Repeat("}", 100) + `}}`
	for _, c := range []struct {
		name   string
		tools  []gen.Tool
		choice gen.ToolChoice
		param  string
	}{
		{"unknown keyword", []gen.Tool{{Name: "f", Parameters: `{"type":"object","patternProperties":{"a":{}}}`}}, gen.ToolChoice{Mode: gen.ChoiceRequired}, "tools[0].function.parameters"},
		{"too deep", []gen.Tool{{Name: "f", Parameters: deep}}, gen.ToolChoice{Mode: gen.ChoiceRequired}, "tools[0].function.parameters"},
		{"huge", []gen.Tool{{Name: "f", Parameters: huge(300 << 10)}}, gen.ToolChoice{Mode: gen.ChoiceRequired}, "tools[0].function.parameters"},
		{"huge together", []gen.Tool{{Name: "f", Parameters: huge(200 << 10)}, {Name: "g", Parameters: huge(200 << 10)}}, gen.ToolChoice{Mode: gen.ChoiceRequired}, "tools"},
		{"bad name", []gen.Tool{{Name: "f<|call|>", Parameters: `{"type":"object"}`}}, gen.ToolChoice{Mode: gen.ChoiceRequired}, "tools"},
		{"unknown function", []gen.Tool{{Name: "f", Parameters: `{"type":"object"}`}}, gen.ToolChoice{Mode: gen.ChoiceFunction, Name: "g"}, "tool_choice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := chatReq(8, 1)
			req.Tools, req.ToolChoice = c.tools, c.choice
			_, err := e.prepare(&req)
			var ge *gen.Error
			if !errors.Is(err, ErrPrompt) || !errors.As(err, &ge) || ge.Code != gen.CodeInvalidRequest || ge.Param != c.param {
				t.Errorf("error %v, want an invalid_request on %s", err, c.param)
			}
		})
	}
}
