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

// TestServeHarmonyForced serves gpt-oss-tiny (a random-weight model with
// gpt-oss's vocabulary and template) through lisa serve with the
// sandbox on and forces calls: tool_choice "required" and a named
// function, whole and streamed, each come back as one call with
// finish_reason "tool_calls" and arguments that parse and fit the
// schema. A logit bias on <|end|> keeps the random model's analysis
// message short; the call is the grammar's work.
func TestServeHarmonyForced(t *testing.T) {
	path, tok := synthGptOss(t)
	end, ok := tok.TokenID("<|end|>")
	if !ok {
		t.Fatal("no <|end|> token")
	}
	s := startServeModel(t, path)
	tools := []map[string]any{
		{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"city": map[string]any{"enum": []string{"Paris", "Oslo"}}, "days": map[string]any{"type": "integer", "minimum": 1, "maximum": 7}},
			"required": []string{"city", "days"}, "additionalProperties": false}}},
		{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{
			"type": "object", "properties": map[string]any{"zone": map[string]any{"enum": []string{"UTC", "CET"}}}, "required": []string{"zone"}, "additionalProperties": false}}},
	}
	for _, c := range []struct {
		name   string
		choice any
		stream bool
		want   string
	}{
		{"required", "required", false, ""},
		{"required stream", "required", true, ""},
		{"named", map[string]any{"type": "function", "function": map[string]any{"name": "get_time"}}, false, "get_time"},
		{"named stream", map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, true, "get_weather"},
	} {
		for seed := range 2 {
			t.Run(c.name+"/"+strconv.Itoa(seed), func(t *testing.T) {
				req := map[string]any{"messages": []map[string]string{{"role": "user", "content": "Weather in Oslo?"}},
					"tools": tools, "tool_choice": c.choice, "parallel_tool_calls": false, "max_tokens": 200, "seed": seed,
					"logit_bias": map[string]float64{strconv.Itoa(int(end)): 8}, "stream": c.stream}
				body, _ := json.Marshal(req)
				resp, err := http.Post(s.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				all, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, %v: %s", resp.StatusCode, err, all)
				}
				name, args, finish, content := harmonyCall(t, all, c.stream)
				if finish != "tool_calls" || name == "" || content != "" {
					t.Fatalf("finish %q, call %q(%s), content %q", finish, name, args, content)
				}
				if c.want != "" && name != c.want {
					t.Errorf("call to %q, want %q", name, c.want)
				}
				d := json.NewDecoder(strings.NewReader(args))
				d.DisallowUnknownFields()
				var a struct {
					City, Zone *string
					Days       *int
				}
				if err := d.Decode(&a); err != nil {
					t.Fatalf("arguments %s: %v", args, err)
				}
				switch {
				case name == "get_weather" && a.City != nil && (*a.City == "Paris" || *a.City == "Oslo") && a.Days != nil && *a.Days >= 1 && *a.Days <= 7 && a.Zone == nil:
				case name == "get_time" && a.Zone != nil && (*a.Zone == "UTC" || *a.Zone == "CET") && a.City == nil && a.Days == nil:
				default:
					t.Errorf("call %s(%s) does not fit its schema", name, args)
				}
			})
		}
	}
}

// harmonyCall reads the one call of a chat completion, whole or streamed
// (its deltas joined, one call index only).
func harmonyCall(t *testing.T, body []byte, stream bool) (name, args, finish, content string) {
	t.Helper()
	type call struct {
		Index    int
		Function struct{ Name, Arguments string }
	}
	type choice struct {
		Message, Delta struct {
			Content   string
			ToolCalls []call `json:"tool_calls"`
		}
		FinishReason *string `json:"finish_reason"`
	}
	var payloads []string
	if !stream {
		payloads = []string{string(body)}
	}
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && stream && data != "[DONE]" {
			payloads = append(payloads, data)
		}
	}
	for _, p := range payloads {
		var r struct{ Choices []choice }
		if err := json.Unmarshal([]byte(p), &r); err != nil {
			t.Fatalf("response %q: %v", p, err)
		}
		for _, ch := range r.Choices {
			m := ch.Message
			if stream {
				m = ch.Delta
			}
			content += m.Content
			for _, c := range m.ToolCalls {
				if c.Index != 0 {
					t.Fatalf("a call of index %d: one call was asked for", c.Index)
				}
				name += c.Function.Name
				args += c.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return name, args, finish, content
}

// synthGptOss writes gpt-oss-tiny (F16) and returns its path and its
// tokenizer.
func synthGptOss(t *testing.T) (string, *tokenizer.Tokenizer) {
	t.Helper()
	sh, ok := synth.Lookup("gpt-oss-tiny")
	if !ok {
		t.Fatal("no shape gpt-oss-tiny")
	}
	path := filepath.Join(t.TempDir(), "gpt-oss-tiny.gguf")
	if _, err := synth.WriteFile(path, synth.Options{Shape: sh, Type: synth.F16, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return path, tok
}
