package engine

import (
	"context"
	"errors"
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
// call is refused (the function's name is in Harmony's message header,
// which a call grammar here cannot write).
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
	if _, err := e.prepare(&req); !errors.Is(err, ErrPrompt) {
		t.Errorf("a forced call: %v", err)
	}
}
