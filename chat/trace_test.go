package chat

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// runesOf is the alphabet of the given texts.
func runesOf(texts ...string) func(rune) bool {
	return func(r rune) bool {
		for _, s := range texts {
			if strings.ContainsRune(s, r) {
				return true
			}
		}
		return false
	}
}

// spansOf are the ranges of the runes of s in alphabet, shifted by at.
func spansOf(s string, at int, alphabet func(rune) bool) []Span {
	var out []Span
	for i, r := range s {
		if !alphabet(r) {
			continue
		}
		n := len(string(r))
		if k := len(out) - 1; k >= 0 && out[k].B == at+i {
			out[k].B += n
		} else {
			out = append(out, Span{at + i, at + i + n})
		}
	}
	return out
}

func TestRenderTraced(t *testing.T) {
	ctl := runesOf("<|im_start|>", "<|im_end|>")
	tests := []struct {
		name    string
		tmpl    string
		content string
		found   string // content as it appears in the output (trimmed)
	}{
		{"go chatml", "chatml", "a<|im_end|>b", "a<|im_end|>b"},
		{"jinja concatenation", "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>' }}{% endfor %}",
			"x|>y<|z", "x|>y<|z"},
		{"jinja trim", "{% for m in messages %}<|im_start|>[{{ m.content | trim }}]<|im_end|>{% endfor %}",
			"  <|im_start|> \n", "<|im_start|>"},
		{"jinja upper keeps places", "{% for m in messages %}<{{ m.content | upper }}>{% endfor %}", "im_start|", "IM_START|"},
		{"no special rune", "chatml", "hello", "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := []Message{{Role: "user", Content: tt.content}}
			text, spans, err := RenderTraced(tt.tmpl, msgs, Options{}, ctl)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := Render(tt.tmpl, msgs, Options{})
			if err != nil || plain != text {
				t.Fatalf("traced text %q, Render gives %q, %v", text, plain, err)
			}
			at := strings.LastIndex(text, tt.found)
			if at < 0 {
				t.Fatalf("%q not in %q", tt.found, text)
			}
			// upper makes letters the alphabet lacks; the marks stay on
			// the runes that were in it.
			want := spansOf(tt.content[strings.Index(tt.content, strings.TrimSpace(tt.content)):][:len(tt.found)], at, ctl)
			if !slices.Equal(spans, want) {
				t.Errorf("spans %v of %q, want %v", spans, text, want)
			}
		})
	}
}

func TestRenderTracedSpaces(t *testing.T) {
	// A special text with a newline: every newline outside the content
	// counts as content too, since edge white space is not marked.
	alpha := runesOf("\n<x>")
	tmpl := "{% for m in messages %}{{ m.content }}\n{% endfor %}"
	text, spans, err := RenderTraced(tmpl, []Message{{Role: "user", Content: "\n<"}, {Role: "user", Content: "x>"}}, Options{}, alpha)
	if err != nil {
		t.Fatal(err)
	}
	if text != "\n<\nx>\n" {
		t.Fatalf("text %q", text)
	}
	if want := []Span{{0, len(text)}}; !slices.Equal(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
}

func TestRenderTracedUntraceable(t *testing.T) {
	ctl := runesOf("<|im_start|>")
	tests := []struct{ name, tmpl string }{
		{"slice", "{{ messages[0].content[1:] }}"},
		{"index", "{{ messages[0].content[0] }}"},
		{"split", "{{ messages[0].content.split('|')[0] }}"},
		{"length", "{{ messages[0].content | length }}"},
		{"json", "{{ messages[0].content | tojson }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := RenderTraced(tt.tmpl, []Message{{Role: "user", Content: "<|im_start|>"}}, Options{}, ctl)
			if !errors.Is(err, ErrUntraceable) {
				t.Fatalf("err %v, want ErrUntraceable", err)
			}
		})
	}
}

func TestRenderTracedMarkerInContent(t *testing.T) {
	// Content holding every candidate marker cannot be traced.
	_, _, err := RenderTraced("chatml", []Message{{Role: "user", Content: "<" + markCandidates}}, Options{}, runesOf("<"))
	if !errors.Is(err, ErrUntraceable) {
		t.Fatalf("err %v, want ErrUntraceable", err)
	}
	// One free marker is enough.
	text, spans, err := RenderTraced("chatml", []Message{{Role: "user", Content: "<" + markCandidates[1:]}}, Options{}, runesOf("<"))
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(text, "<"+markCandidates[1:])
	if want := []Span{{at, at + 1}}; !slices.Equal(spans, want) {
		t.Errorf("spans %v, want %v", spans, want)
	}
}

func TestTrimAddedTraced(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		spans     []Span
		wantText  string
		wantSpans []Span
	}{
		{"template BOS and EOS trimmed", "<s>ab</s>", []Span{{3, 4}}, "ab", []Span{{0, 1}}},
		{"BOS from content kept", "<s>ab</s>", []Span{{0, 2}}, "<s>ab", []Span{{0, 2}}},
		{"EOS from content kept", "<s>ab</s>", []Span{{7, 9}}, "ab</s>", []Span{{4, 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, spans := TrimAddedTraced(tt.text, tt.spans, "<s>", "</s>", true, true)
			if text != tt.wantText || !slices.Equal(spans, tt.wantSpans) {
				t.Errorf("got %q %v, want %q %v", text, spans, tt.wantText, tt.wantSpans)
			}
		})
	}
}

func FuzzRenderTraced(f *testing.F) {
	f.Add("chatml", "<|im_", "start|>")
	f.Add("{% for m in messages %}{{ m.content | trim }}{% endfor %}", " <s", "> ")
	f.Fuzz(func(t *testing.T, tmpl, a, b string) {
		msgs := []Message{{Role: "system", Content: a}, {Role: "user", Content: b}}
		alpha := runesOf("<|im_start|>", "</s>", "\n")
		text, spans, err := RenderTraced(tmpl, msgs, Options{}, alpha)
		if err != nil {
			return
		}
		if plain, err := Render(tmpl, msgs, Options{}); err != nil || plain != text {
			t.Fatalf("traced %q, Render %q, %v", text, plain, err)
		}
		prev := -1
		for _, s := range spans {
			if s.A <= prev || s.B <= s.A || s.B > len(text) {
				t.Fatalf("spans %v of %d bytes", spans, len(text))
			}
			prev = s.B
		}
	})
}
