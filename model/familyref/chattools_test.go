package familyref

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gen"
)

// toolsRef is the part of a chat/testdata/tools/plain-*.json reference
// (llama.cpp's rendering of tool requests, written by that folder's
// regen.sh from the same tiny files) this test reads.
type toolsRef struct {
	Now     int64 `json:"now"`
	Results []struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice string  `json:"tool_choice"`
		IDs        []int32 `json:"ids"`
	} `json:"results"`
}

// TestChatToolPromptsMatchLlamaCpp renders requests with tools (auto,
// required, none) through the engine for the families whose real
// templates show no tools, and compares the prompt ids with llama-server's:
// the template renders the plain conversation, tools or not.
func TestChatToolPromptsMatchLlamaCpp(t *testing.T) {
	manifest := map[string]entry{}
	for _, e := range readManifest(t) {
		if e.ftype == "f16" && !strings.HasSuffix(e.ref, "-long.json") {
			manifest[e.shape] = e
		}
	}
	for _, c := range []struct{ shape, ref string }{
		{"gemma2-tiny", "plain-gemma-2"}, {"gemma3-tiny", "plain-gemma-3"}, {"phi3-tiny", "plain-phi-3.5"},
		{"phi4mini-tiny", "plain-phi-4-mini"}, {"mixtral-tiny", "plain-mixtral"},
	} {
		t.Run(c.shape, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "chat", "testdata", "tools", c.ref+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var ref toolsRef
			if err := json.Unmarshal(data, &ref); err != nil {
				t.Fatal(err)
			}
			if len(ref.Results) == 0 {
				t.Fatal("no results in the reference")
			}
			eng := chatEngine(t, manifest, c.shape, ref.Now)
			for i, r := range ref.Results {
				req := gen.Request{MaxTokens: 1, ToolChoice: gen.ToolChoice{Mode: r.ToolChoice}}
				for _, m := range r.Messages {
					req.Messages = append(req.Messages, gen.Message{Role: m.Role, Content: m.Content})
				}
				for _, tl := range r.Tools {
					req.Tools = append(req.Tools, gen.Tool{Name: tl.Function.Name, Description: tl.Function.Description,
						Parameters: string(tl.Function.Parameters)})
				}
				if len(req.Tools) == 0 || len(r.IDs) == 0 {
					t.Fatalf("conversation %d: no tools or no ids in the reference", i)
				}
				got, err := eng.PromptIDs(req)
				if err != nil {
					t.Fatalf("conversation %d (tool_choice %s): %v", i, r.ToolChoice, err)
				}
				if !slices.Equal(got, r.IDs) {
					t.Errorf("conversation %d (tool_choice %s): prompt ids\n%v\nllama.cpp\n%v", i, r.ToolChoice, got, r.IDs)
				}
			}
		})
	}
}
