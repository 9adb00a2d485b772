package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzToolRender renders client-controlled tools and tool calls (the
// parameter schema, the arguments, a tool result) with real tool
// templates: no panic, only the package's typed errors, and JSON that
// encoding/json accepts within the depth limit is accepted here too.
func FuzzToolRender(f *testing.F) {
	var tmpls []string
	for _, name := range []string{"qwen2.5.jinja", "llama-3.1.jinja", "mistral-nemo.jinja"} {
		b, err := os.ReadFile(filepath.Join("..", "model", "synth", "vocab", "templates", name))
		if err != nil {
			f.Fatal(err)
		}
		tmpls = append(tmpls, string(b))
	}
	f.Add(uint8(0), `{"type": "object", "properties": {"a": {"type": "integer"}}}`, `{"a": 1}`, "2", "abcdefghi")
	f.Add(uint8(1), `{}`, `{"x": [1, 2.5, "\u00e9", null, true]}`, `{"r": 1}`, "c1")
	f.Add(uint8(2), ``, `"{\"a\": 1}"`, "", "")
	f.Add(uint8(1), `[1]`, `{`, "x", "id")
	f.Fuzz(func(t *testing.T, which uint8, params, args, result, id string) {
		if len(params)+len(args)+len(result) > 1<<12 {
			return
		}
		msgs := []Message{
			{Role: "user", Content: "hi"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: id, Name: "f", Arguments: args}}},
			{Role: "tool", ToolCallID: id, Content: result},
		}
		tmpl := tmpls[int(which)%len(tmpls)]
		_, err := Render(tmpl, msgs, Options{AddGenerationPrompt: true, Tools: []Tool{{Name: "f", Description: "d", Parameters: params}}})
		if err != nil && !errors.Is(err, ErrMessage) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrTemplate) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("untyped error %v", err)
		}
		if json.Valid([]byte(params)) && len(params) < 1000 {
			if _, err := toolParameters(params); err != nil && !errors.Is(err, ErrJSON) {
				t.Fatalf("valid JSON %q: %v", params, err)
			}
		}
		v, err := fromJSON([]byte(args))
		if err == nil {
			// What tojson writes back is JSON of the same value.
			s, err := toJSON(v)
			if err != nil {
				return
			}
			var a, b any
			if json.Unmarshal([]byte(s), &b) != nil {
				t.Fatalf("tojson of %q gave invalid JSON %q", args, s)
			}
			if json.Unmarshal([]byte(args), &a) != nil {
				t.Fatalf("fromJSON accepted invalid JSON %q", args)
			}
		} else if !errors.Is(err, ErrJSON) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("fromJSON: untyped error %v", err)
		}
	})
}
