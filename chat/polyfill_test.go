package chat

import (
	"reflect"
	"testing"
)

// gemma2Template is Gemma 2 it's chat template, which raises an exception
// for a system message.
const gemma2Template = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}"

// TestPolyfillSystem checks system messages reach a template without a
// system role as llama-server passes them (the first case is llama.cpp's
// rendering of Gemma 2's template, bench/llamacpp/ref.sh chat-jinja),
// and that a template with one sees them unchanged.
func TestPolyfillSystem(t *testing.T) {
	chatml := "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
	tools := []Tool{{Name: "add", Description: "Add.", Parameters: `{"type":"object"}`}}
	for _, tc := range []struct {
		name, tmpl string
		msgs       []Message
		tools      []Tool
		want       string
	}{
		{"gemma2", gemma2Template,
			[]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi!"}, {Role: "assistant", Content: "Hello. How can I help?"}, {Role: "user", Content: "What is 2+2?"}},
			nil, "<bos><start_of_turn>user\nBe brief.\nHi!<end_of_turn>\n<start_of_turn>model\nHello. How can I help?<end_of_turn>\n<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"},
		// With tools the template shows none of, nothing is added: a
		// system message would be refused (llama.cpp renders this).
		{"gemma2 tools", gemma2Template,
			[]Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi!"}},
			tools, "<bos><start_of_turn>user\nBe brief.\nHi!<end_of_turn>\n<start_of_turn>model\n"},
		// A call and its result in the history become JSON turns that
		// keep the roles alternating (llama.cpp fails on the tool role).
		{"gemma2 tool history", gemma2Template,
			[]Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"},
				{Role: "assistant", ToolCalls: []ToolCall{{Name: "add", Arguments: `{"a":1}`}}},
				{Role: "tool", Content: "1"}},
			tools, "<bos><start_of_turn>user\nS\nU<end_of_turn>\n<start_of_turn>model\n{\n  \"tool_calls\": [\n    {\n      \"name\": \"add\",\n      \"arguments\": {\n        \"a\": 1\n      }\n    }\n  ]\n}<end_of_turn>\n" +
				"<start_of_turn>user\n{\n  \"tool_response\": {\n    \"content\": \"1\"\n  }\n}<end_of_turn>\n<start_of_turn>model\n"},
		{"gemma2 two systems", gemma2Template,
			[]Message{{Role: "system", Content: "A."}, {Role: "system", Content: "B."}, {Role: "user", Content: "Hi!"}},
			nil, "<bos><start_of_turn>user\nA.\nB.\nHi!<end_of_turn>\n<start_of_turn>model\n"},
		{"gemma2 no system", gemma2Template,
			[]Message{{Role: "user", Content: "Hi!"}},
			nil, "<bos><start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\n"},
		{"system role kept", chatml,
			[]Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}},
			nil, "<|system|>S\n<|user|>U\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Render(tc.tmpl, tc.msgs, Options{AddGenerationPrompt: true, BOS: "<bos>", EOS: "<eos>", Tools: tc.tools})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestPolyfillSystemOrder checks where merged system text goes when no
// user message follows at once.
func TestPolyfillSystemOrder(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "u1"}, {Role: "system", Content: "s1"}, {Role: "assistant", Content: "a1"}, {Role: "system", Content: "s2"}}
	got := polyfillSystem(gemma2Template, "", msgs, "<bos>", "<eos>")
	want := []Message{{Role: "user", Content: "u1"}, {Role: "user", Content: "s1"}, {Role: "assistant", Content: "a1"}, {Role: "user", Content: "s2"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("message %d: %v, want %v", i, got[i], want[i])
		}
	}
}
