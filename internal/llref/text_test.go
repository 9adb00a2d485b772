package llref

import (
	"slices"
	"strings"
	"testing"
)

const goodTokenize = `{"tool": "llref", "mode": "tokenize", "model_file": "v.gguf", "n_vocab": 10, "bos_id": 1,
 "results": [{"text": "a\ufffd", "text_hex": "61ff", "tokenizations": [
  {"add_special": false, "parse_special": false, "ids": [3, 4], "detokenized": "a", "detokenized_hex": "61ff"},
  {"add_special": false, "parse_special": true, "ids": [3, 5], "detokenized_hex": ""},
  {"add_special": true, "parse_special": false, "ids": [1, 3, 4], "detokenized_hex": ""},
  {"add_special": true, "parse_special": true, "ids": [1, 3, 5], "detokenized_hex": ""}]}]}`

func TestParseTokenize(t *testing.T) {
	r, err := ParseTokenize([]byte(goodTokenize))
	if err != nil {
		t.Fatal(err)
	}
	c := r.Results[0]
	ids, ok := c.IDs(true, true)
	if string(c.Text) != "a\xff" || string(c.Tokenizations[0].Detokenized) != "a\xff" || !ok || !slices.Equal(ids, []int32{1, 3, 5}) {
		t.Errorf("parsed %+v", r)
	}
	bad := []struct{ name, old, new, want string }{
		{"odd hex", `"text_hex": "61ff"`, `"text_hex": "61f"`, "text_hex"},
		{"id outside the vocabulary", `[1, 3, 5]`, `[1, 3, 10]`, "outside the vocabulary of 10"},
		{"three tokenizations", `{"add_special": false, "parse_special": true, "ids": [3, 5], "detokenized_hex": ""},`, ``, "3 tokenizations"},
		{"other mode", `"mode": "tokenize"`, `"mode": "logits"`, "want tokenize"},
	}
	for _, tc := range bad {
		doc := strings.Replace(goodTokenize, tc.old, tc.new, 1)
		if doc == goodTokenize {
			t.Fatalf("%s: %q not in the document", tc.name, tc.old)
		}
		if _, err := ParseTokenize([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

const goodChat = `{"tool": "llref-jinja", "mode": "chat", "template_hex": "7b7b7d7d", "now": 5, "enable_thinking": true,
 "results": [{"messages": [{"role": "user", "content": "hi", "content_hex": "6869"}], "rendered_hex": "3c733e6869", "ids": [1, 2]},
  {"messages": [], "error": "boom"}]}`

func TestParseChat(t *testing.T) {
	r, err := ParseChat([]byte(goodChat))
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Template) != "{{}}" || r.Now != 5 || !r.EnableThinking || string(r.Results[0].Rendered) != "<s>hi" ||
		string(r.Results[0].Messages[0].Content) != "hi" || r.Results[1].Error != "boom" {
		t.Errorf("parsed %+v", r)
	}
	bad := []struct{ name, old, new, want string }{
		{"other tool", `"tool": "llref-jinja"`, `"tool": "x"`, `tool "x"`},
		{"bad content hex", `"content_hex": "6869"`, `"content_hex": "zz"`, "content_hex"},
		{"bad rendered hex", `"rendered_hex": "3c733e6869"`, `"rendered_hex": "3"`, "rendered_hex"},
		{"bad template hex", `"template_hex": "7b7b7d7d"`, `"template_hex": "x"`, "template_hex"},
	}
	for _, tc := range bad {
		doc := strings.Replace(goodChat, tc.old, tc.new, 1)
		if doc == goodChat {
			t.Fatalf("%s: %q not in the document", tc.name, tc.old)
		}
		if _, err := ParseChat([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParseText(f *testing.F) {
	f.Add([]byte(goodTokenize))
	f.Add([]byte(goodChat))
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := ParseTokenize(data); err == nil {
			for _, c := range r.Results {
				if len(c.Tokenizations) != 4 {
					t.Fatalf("accepted %d tokenizations", len(c.Tokenizations))
				}
			}
		}
		if r, err := ParseChat(data); err == nil && r.Tool != "llref" && r.Tool != "llref-jinja" {
			t.Fatalf("accepted tool %q", r.Tool)
		}
	})
}
