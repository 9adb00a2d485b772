package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model/synth"
)

// synthEngine synthesizes a tiny model of shape and serves it.
func synthEngine(t *testing.T, shape string) *Engine {
	t.Helper()
	sh, ok := synth.Lookup(shape)
	if !ok {
		t.Fatalf("unknown shape %s", shape)
	}
	path := filepath.Join(t.TempDir(), shape+".gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: sh, Type: mustType(t, "f16"), Seed: 1}); err != nil {
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
	e := synthEngine(t, "qwen3-tiny")
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
	e := synthEngine(t, "qwen3-tiny")
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
