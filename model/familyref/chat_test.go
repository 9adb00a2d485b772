package familyref

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/llref"
)

// TestChatPromptsMatchLlamaCpp renders conversations with each family's
// real chat template through the engine and compares the prompt ids with
// llama-server's default rendering (the template's Jinja at the same
// clock, a leading BOS text stripped, special tokens parsed).
func TestChatPromptsMatchLlamaCpp(t *testing.T) {
	manifest := map[string]entry{}
	for _, e := range readManifest(t) {
		if e.ftype == "f16" && !strings.HasSuffix(e.ref, "-long.json") {
			manifest[e.shape] = e
		}
	}
	for _, shape := range []string{"llama3-tiny", "qwen2-tiny", "qwen3-tiny", "granite-tiny", "mistral-tiny",
		"gemma2-tiny", "gemma3-tiny", "phi3-tiny", "phi4mini-tiny", "mixtral-tiny", "qwen3moe-tiny", "gpt-oss-tiny"} {
		t.Run(shape, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", shape+".chat.json"))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := llref.ParseChat(data)
			if err != nil {
				t.Fatal(err)
			}
			eng := chatEngine(t, manifest, shape, ref.Now)
			// The first conversation holds no special-token text in its
			// messages; the engine's ids must be llama.cpp's exactly.
			c := ref.Results[0]
			msgs := make([]gen.Message, len(c.Messages))
			for i, m := range c.Messages {
				msgs[i] = gen.Message{Role: m.Role, Content: string(m.Content)}
			}
			got, err := eng.PromptIDs(gen.Request{Messages: msgs, MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.IDs) {
				t.Errorf("prompt ids\n%v\nllama.cpp (rendered %q)\n%v", got, c.Rendered, c.IDs)
			}
		})
	}
}

// chatEngine opens the manifest's F16 file of shape in an engine whose
// clock reads now (Unix seconds: llama.cpp's rendering time, for
// templates that print the date); it is closed when t ends.
func chatEngine(t *testing.T, manifest map[string]entry, shape string, now int64) *engine.Engine {
	t.Helper()
	e, ok := manifest[shape]
	if !ok {
		t.Fatalf("no f16 %s in the manifest", shape)
	}
	f, err := gguf.Open(writeModel(t, e), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(now, 0).UTC()
	eng, err := engine.New(f, engine.Options{Threads: 1, CtxSize: 512, Now: func() time.Time { return at }})
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}
