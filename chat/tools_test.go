package chat

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolRef is a file written by testdata/tools/regen.sh: llama.cpp's
// renderings of tool conversations with one real template.
type toolRef struct {
	Template string `json:"template"`
	AddBOS   bool   `json:"add_bos"`
	Now      int64  `json:"now"`
	Results  []struct {
		Messages    []json.RawMessage `json:"messages"`
		Tools       []json.RawMessage `json:"tools"`
		Effort      string            `json:"reasoning_effort"`
		RenderedHex string            `json:"rendered_hex"`
		Error       string            `json:"error"`
		Grammar     string            `json:"grammar"`
	} `json:"results"`
}

// oaiMessage is the subset of OpenAI's message the references use.
type oaiMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ContentHex string  `json:"content_hex"`
	ToolCallID string  `json:"tool_call_id"`
	Reasoning  string  `json:"reasoning_content"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func refMessages(t *testing.T, raw []json.RawMessage) []Message {
	t.Helper()
	out := make([]Message, len(raw))
	for i, r := range raw {
		var m oaiMessage
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		out[i] = Message{Role: m.Role, ToolCallID: m.ToolCallID, ReasoningContent: m.Reasoning}
		if m.Role == "developer" {
			// lisa's server maps OpenAI's developer role to system (gpt-oss's
			// template, which llama.cpp gives "developer", treats both alike)
			out[i].Role = "system"
		}
		if m.ContentHex != "" {
			b, err := hex.DecodeString(m.ContentHex)
			if err != nil {
				t.Fatal(err)
			}
			out[i].Content = string(b)
		} else if m.Content != nil {
			out[i].Content = *m.Content
		}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out
}

func refTools(t *testing.T, raw []json.RawMessage) []Tool {
	t.Helper()
	var out []Tool
	for _, r := range raw {
		var x struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(r, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, Tool{Name: x.Function.Name, Description: x.Function.Description, Parameters: string(x.Function.Parameters)})
	}
	return out
}

// TestToolRendersMatchLlamaCpp renders tool conversations (tools in the
// system prompt, a call and its result, parallel calls, a forced call)
// with the real tool-aware templates and compares them byte for byte
// with llama-server's default rendering of the same conversations.
func TestToolRendersMatchLlamaCpp(t *testing.T) {
	cases := []struct{ file, bos, eos, gap string }{
		{"llama-3.1", "<|begin_of_text|>", "<|eot_id|>", ""},
		{"llama-3.2", "<|begin_of_text|>", "<|eot_id|>", ""},
		{"qwen2.5", "", "<|im_end|>", ""},
		{"qwen3", "", "<|im_end|>", ""},
		{"mistral-nemo", "<s>", "</s>", ""},
		{"hermes-3", "<|begin_of_text|>", "<|eot_id|>", ""},
		{"gpt-oss", "", "<|im_end|>", ""},
		{"qwen3-reasoning", "", "<|im_end|>", ""},
		// Templates that show no tools: llama.cpp renders the plain
		// conversation (Gemma 2's system text merged into the user's).
		{"plain-gemma-2", "<bos>", "<eos>", ""},
		{"plain-gemma-3", "<bos>", "<eos>", ""},
		{"plain-phi-3.5", "<s>", "<|endoftext|>", ""},
		{"plain-phi-4-mini", "<s>", "<|endoftext|>", ""},
		{"plain-mixtral", "<s>", "</s>", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			if c.gap != "" {
				t.Skip("known gap: " + c.gap)
			}
			data, err := os.ReadFile(filepath.Join("testdata", "tools", c.file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref toolRef
			if err := json.Unmarshal(data, &ref); err != nil {
				t.Fatal(err)
			}
			if len(ref.Results) == 0 {
				t.Fatal("no results in the reference")
			}
			if plain := strings.HasPrefix(c.file, "plain-"); plain && DescribesTools(ref.Template) {
				t.Errorf("DescribesTools says the template shows tools")
			}
			for i, r := range ref.Results {
				if strings.HasPrefix(c.file, "plain-") && r.Grammar != "" {
					// lisa's engine reads such replies in the generic
					// format; a grammar here means llama.cpp changed.
					t.Errorf("conversation %d: llama.cpp set a grammar: %.80q", i, r.Grammar)
				}
			}
			for i, r := range ref.Results {
				msgs := refMessages(t, r.Messages)
				o := Options{AddGenerationPrompt: true, BOS: c.bos, EOS: c.eos,
					Now: time.Unix(ref.Now, 0).UTC(), Tools: refTools(t, r.Tools), ReasoningEffort: r.Effort}
				got, err := Render(ref.Template, msgs, o)
				if r.Error != "" {
					// llama.cpp refused the conversation (Llama 3.x: one
					// call per message): the template must refuse it here.
					if err == nil {
						t.Errorf("conversation %d: rendered, llama.cpp failed with %q", i, r.Error)
					}
					continue
				}
				if err != nil {
					t.Errorf("conversation %d: %v", i, err)
					continue
				}
				want, err := hex.DecodeString(r.RenderedHex)
				if err != nil {
					t.Fatal(err)
				}
				got = TrimAdded(got, c.bos, c.eos, ref.AddBOS, false)
				if got != string(want) {
					t.Errorf("conversation %d:\n got %q\nwant %q", i, got, want)
				}
			}
		})
	}
}

// TestToolPolyfill checks the generic tool format given to templates
// that show no tools and to families rendered in Go: the instruction and
// the tools in the system message, calls and responses as JSON.
func TestToolPolyfill(t *testing.T) {
	tools := []Tool{{Name: "add", Description: "Add.", Parameters: `{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"number"}}}`}}
	msgs := []Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "2+3?"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "add", Arguments: `{"b": 3, "a": 2.5}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "5.5"},
	}
	wantSys := "Be brief.\n\n" + genericInstruction + "\n\n" + toolsIntro + `[
  {
    "type": "function",
    "function": {
      "name": "add",
      "description": "Add.",
      "parameters": {
        "type": "object",
        "properties": {
          "b": {
            "type": "integer"
          },
          "a": {
            "type": "number"
          }
        }
      }
    }
  }
]`
	wantCall := "{\n  \"tool_calls\": [\n    {\n      \"name\": \"add\",\n      \"arguments\": {\n        \"b\": 3,\n        \"a\": 2.5\n      },\n      \"id\": \"c1\"\n    }\n  ]\n}"
	wantResp := "{\n  \"tool_response\": {\n    \"content\": \"5.5\",\n    \"tool_call_id\": \"c1\"\n  }\n}"
	// The Go family shows no tool response and gets the tools described;
	// the Jinja template prints the tool message's content, so it keeps
	// its tool role, and is rendered without the tools, as llama.cpp
	// renders a template that shows none.
	for _, c := range []struct{ tmpl, sys, resp string }{
		{"chatml", wantSys, "<|im_start|>user\n" + wantResp},
		{"{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}", "Be brief.", "<|im_start|>tool\n5.5"},
	} {
		tmpl := c.tmpl
		got, err := Render(tmpl, msgs, Options{Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		want := "<|im_start|>system\n" + c.sys + "<|im_end|>\n<|im_start|>user\n2+3?<|im_end|>\n" +
			"<|im_start|>assistant\n" + wantCall + "<|im_end|>\n" + c.resp + "<|im_end|>\n"
		if got != want {
			t.Errorf("%.20q:\n got %q\nwant %q", tmpl, got, want)
		}
	}
}

// TestToolInputErrors checks that bad tool input is refused with a typed
// error instead of rendering something else.
func TestToolInputErrors(t *testing.T) {
	q25, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", "qwen2.5.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", MaxJSONDepth+2) + strings.Repeat("]", MaxJSONDepth+2)
	many := make([]Tool, MaxTools+1)
	for i := range many {
		many[i] = Tool{Name: "f"}
	}
	call := func(args string) []Message {
		return []Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: args}}}}
	}
	cases := []struct {
		name  string
		msgs  []Message
		tools []Tool
		want  error
	}{
		{"bad parameters", []Message{{Role: "user", Content: "x"}}, []Tool{{Name: "f", Parameters: "{"}}, ErrMessage},
		{"parameters too deep", []Message{{Role: "user", Content: "x"}}, []Tool{{Name: "f", Parameters: deep}}, ErrMessage},
		{"trailing data", []Message{{Role: "user", Content: "x"}}, []Tool{{Name: "f", Parameters: "{} {}"}}, ErrMessage},
		{"too many tools", []Message{{Role: "user", Content: "x"}}, many, ErrTooLarge},
		{"bad arguments", call(`{"a": `), nil, ErrMessage},
		{"too many calls", []Message{{Role: "assistant", ToolCalls: make([]ToolCall, MaxToolCalls+1)}}, nil, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render(string(q25), c.msgs, Options{Tools: c.tools})
			if !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestDescribesTools(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		tmpl string
		want bool
	}{
		{read("llama-3.1.jinja"), true},
		{read("qwen2.5.jinja"), true},
		{read("mistral-nemo.jinja"), true},
		{read("gemma-2.jinja"), false},
		{read("gemma-3.jinja"), false},
		{read("phi-3.5.jinja"), false},
		{read("phi-4-mini.jinja"), false},
		{read("mixtral.jinja"), false},
		{"chatml", false},
		{"", false},
		{"{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}", false},
	}
	for i, c := range cases {
		if got := DescribesTools(c.tmpl); got != c.want {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
		// A Jinja template that shows no tools is told of none; the Go
		// families ("chatml", "") are told in the generic format.
		untold := !c.want && c.tmpl != "chatml" && c.tmpl != ""
		if got := ToolsUntold(c.tmpl); got != untold {
			t.Errorf("case %d: ToolsUntold %v, want %v", i, got, untold)
		}
	}
}

func TestToolStrings(t *testing.T) {
	tools := []Tool{{Name: "f", Description: "d", Parameters: `{"properties": {"\u003c|im_start|>": {"enum": ["<|eot_id|>"]}}}`}}
	msgs := []Message{
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "g", Arguments: `{"k": "\u003cs>"}`}}},
		{Role: "tool", ToolCallID: "c1", Name: "g", Content: "not listed"},
	}
	got := strings.Join(ToolStrings(msgs, tools), "\x00")
	for _, want := range []string{"f", "d", "<|im_start|>", "<|eot_id|>", "properties", "c1", "g", "<s>", `{"k": "\u003cs>"}`} {
		if !strings.Contains("\x00"+got+"\x00", "\x00"+want+"\x00") {
			t.Errorf("%q missing from %q", want, got)
		}
	}
	if strings.Contains(got, "not listed") {
		t.Error("message content listed")
	}
}

// TestTracedKeepsToolCalls checks that the marked second rendering of
// RenderTraced keeps the tool calls (the traces must match).
func TestTracedKeepsToolCalls(t *testing.T) {
	q25, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", "qwen2.5.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{
		{Role: "user", Content: "add <|im_end|> 2"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "add", Arguments: `{"a": 2}`}}},
		{Role: "tool", ToolCallID: "c1", Content: "2"},
	}
	alpha := func(r rune) bool { return strings.ContainsRune("<|im_end>", r) }
	text, spans, err := RenderTraced(string(q25), msgs, Options{Tools: []Tool{{Name: "add"}}}, alpha)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, `{"name": "add", "arguments": {"a": 2}}`) {
		t.Errorf("tool call missing: %q", text)
	}
	i := strings.Index(text, "add <|im_end|> 2")
	covered := false
	for _, s := range spans {
		covered = covered || (s.A <= i+4 && s.B >= i+14)
	}
	if !covered {
		t.Errorf("client's <|im_end|> at %d not in spans %v", i+4, spans)
	}
}
