package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/llref"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/tokenizer"
)

// TestServeFamilies serves a synthesized file of each first-wave family
// and of the second wave (Gemma 2 and 3, Phi-3 and Phi-4-mini layouts;
// the tiny shapes, F16) through lisa serve with the sandbox on, runs the
// official openai npm client against it (chat, stream, completions), and
// checks a greedy completion against llama.cpp's on the same file (the
// references of model/familyref).
func TestServeFamilies(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "tools", "openai-check"))
	if err != nil {
		t.Fatal(err)
	}
	node := shared.NodeTool(t, dir, "openai")
	for _, shape := range []string{"llama3-tiny", "mistral-tiny", "qwen2-tiny", "qwen3-tiny", "granite-tiny",
		"gemma2-tiny", "gemma3-tiny", "phi3-tiny", "phi4mini-tiny", "gpt-oss-tiny"} {
		t.Run(shape, func(t *testing.T) {
			path := writeShape(t, shape, nil)
			s := startServeModel(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "check.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "LISA_URL="+s.url+"/v1", "LISA_MAX=8")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("openai-check: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var res struct {
				Failures []string `json:"failures"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("openai-check output %q: %v", out, err)
			}
			if len(res.Failures) != 0 {
				t.Errorf("openai-check failures: %q", res.Failures)
			}
			checkGreedy(t, s.url, shape, path)
		})
	}
}

// writeShape synthesizes the shape name (F16, seed 1) into a file of
// the test's temporary directory and returns its path; edit, when set,
// changes the options first.
func writeShape(t *testing.T, name string, edit func(*synth.Options)) string {
	t.Helper()
	sh, ok := synth.Lookup(name)
	if !ok {
		t.Fatalf("no shape %s", name)
	}
	o := synth.Options{Shape: sh, Type: synth.F16, Seed: 1}
	if edit != nil {
		edit(&o)
	}
	path := filepath.Join(t.TempDir(), name+".gguf")
	if _, err := synth.WriteFile(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

// chatMessage is a chat completion choice's message: its content and
// reasoning_content.
type chatMessage struct {
	Content   string `json:"content"`
	Reasoning string `json:"reasoning_content"`
}

// postChat posts req to the chat completions of the server at url and
// returns the message of the reply's one choice; what names the request
// in a failure (as postJSON's, or not one choice).
func postChat(t *testing.T, url string, req map[string]any, what string) chatMessage {
	t.Helper()
	var got struct {
		Choices []struct {
			Message chatMessage `json:"message"`
		} `json:"choices"`
	}
	postJSON(t, url+"/v1/chat/completions", req, &got, what)
	if len(got.Choices) != 1 {
		t.Fatalf("%s: %d choices", what, len(got.Choices))
	}
	return got.Choices[0].Message
}

// postJSON posts req as JSON to url and decodes the reply into got; what
// names the request in a failure (the post failing, a status other than
// 200, a reply that is not JSON).
func postJSON(t *testing.T, url string, req, got any, what string) {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, %v", what, resp.StatusCode, err)
	}
}

// checkGreedy asks the server for llama.cpp reference's first prompt,
// greedy, and compares the text. The reference's text shows the control
// tokens generated (random weights pick them); the server leaves them
// out of the text, as llama-server does.
func checkGreedy(t *testing.T, url, shape, modelPath string) {
	t.Helper()
	f, err := gguf.Open(modelPath, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "model", "familyref", "testdata", shape+"-f16.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := llref.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := ref.Results[0]
	wantText := want.Text
	for _, sp := range tok.SpecialTexts() {
		wantText = strings.ReplaceAll(wantText, sp, "")
	}
	var got struct {
		Choices []struct {
			Text string `json:"text"`
		} `json:"choices"`
	}
	postJSON(t, url+"/v1/completions", map[string]any{"prompt": *want.Prompt, "max_tokens": len(want.GeneratedIDs), "temperature": 0}, &got, "completion")
	if len(got.Choices) != 1 {
		t.Fatalf("completion: %d choices", len(got.Choices))
	}
	// Generation ends early at an end-of-generation token; llama.cpp's
	// reference goes on, so the served text is a prefix of it.
	if g := got.Choices[0].Text; g == "" || !strings.HasPrefix(wantText, g) {
		t.Errorf("greedy completion %q, llama.cpp %q (%q with its control tokens)", g, wantText, want.Text)
	}
}

// TestServeReasoning serves a synthesized Qwen3 file (a thinking
// template) through lisa serve with the sandbox on and makes the model
// reply with reasoning (forced by a grammar): the reasoning crosses the
// worker's protocol and comes back as message.reasoning_content, or in the
// content with reasoning_format none.
func TestServeReasoning(t *testing.T) {
	s := startServeModel(t, writeShape(t, "qwen3-tiny", nil))
	const out = "<think>\nBecause.\n</think>\n\nYes."
	for _, c := range []struct {
		format             string
		content, reasoning string
	}{
		{"", "Yes.", "Because.\n"},
		{"none", out, ""},
	} {
		req := map[string]any{"messages": []map[string]string{{"role": "user", "content": "Why?"}}, "max_tokens": 64,
			"grammar": "root ::= " + strconv.Quote(out)}
		if c.format != "" {
			req["reasoning_format"] = c.format
		}
		if m := postChat(t, s.url, req, "reasoning_format "+strconv.Quote(c.format)); m.Content != c.content || m.Reasoning != c.reasoning {
			t.Errorf("reasoning_format %q: content %q reasoning %q, want %q %q", c.format, m.Content, m.Reasoning, c.content, c.reasoning)
		}
		// Streamed: delta.reasoning_content and delta.content.
		req["stream"] = true
		body, _ := json.Marshal(req)
		resp, err := http.Post(s.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		all, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: status %d, %v", resp.StatusCode, err)
		}
		var content, reasoning strings.Builder
		for _, line := range strings.Split(string(all), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta chatMessage `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			for _, ch := range chunk.Choices {
				content.WriteString(ch.Delta.Content)
				reasoning.WriteString(ch.Delta.Reasoning)
			}
		}
		if content.String() != c.content || reasoning.String() != c.reasoning {
			t.Errorf("reasoning_format %q streamed: content %q reasoning %q, want %q %q", c.format, content.String(), reasoning.String(), c.content, c.reasoning)
		}
	}
}

// TestServeHarmony serves gpt-oss's published chat template (on a
// synthesized Qwen3 file, whose vocabulary has Harmony's markup as plain
// text) through lisa serve with the sandbox on: a system message, a
// reasoning_effort and a reply in Harmony channels (forced by a grammar)
// come back as the final channel's content and the analysis channel's
// reasoning_content.
func TestServeHarmony(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "model", "synth", "vocab", "templates", "gpt-oss.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	path := writeShape(t, "qwen3-tiny", func(o *synth.Options) {
		v, err := vocab.Build(o.Shape.Vocab)
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range v.KVs() {
			if kv.Key == "tokenizer.chat_template" {
				kv.Value = gguf.StringValue(string(tmpl))
			}
			o.VocabKVs = append(o.VocabKVs, kv)
		}
	})
	s := startServeModel(t, path)
	const out = "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>4"
	req := map[string]any{"messages": []map[string]string{{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "2+2?"}},
		"max_tokens": 256, "reasoning_effort": "high", "grammar": "root ::= " + strconv.Quote(out)}
	if m := postChat(t, s.url, req, "harmony"); m.Content != "4" || m.Reasoning != "Easy." {
		t.Errorf("content %q reasoning %q", m.Content, m.Reasoning)
	}
}
