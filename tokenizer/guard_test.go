package tokenizer

import (
	"slices"
	"testing"
)

func TestEncodeGuarded(t *testing.T) {
	spm := mustNew(t, spmVocab())
	bpe := mustNew(t, bpeVocab("gpt-2"))
	enc := func(tok *Tokenizer, parts ...any) []int32 {
		var out []int32
		for i := 0; i < len(parts); i += 2 {
			out = append(out, tok.Encode(parts[i].(string), false, parts[i+1].(bool))...)
		}
		return out
	}
	tests := []struct {
		name  string
		tok   *Tokenizer
		text  string
		plain []Range
		want  []int32
	}{
		{"no ranges is Encode with parsing", spm, "<s>hello</s>", nil, spm.Encode("<s>hello</s>", true, true)},
		{"range without special text is Encode with parsing", spm, "<s>hello</s>", []Range{{3, 8}},
			spm.Encode("<s>hello</s>", true, true)},
		{"range holding text next to a control token is Encode with parsing", bpe, "hello<|endoftext|>", []Range{{0, 5}},
			bpe.Encode("hello<|endoftext|>", true, true)},
		{"user-defined token inside a range is parsed as raw text does", spm, "a<|user|>b", []Range{{0, 10}},
			spm.Encode("a<|user|>b", true, true)},
		{"control text inside a range stays text", bpe, "he<|endoftext|>ll<|endoftext|>", []Range{{2, 15}},
			enc(bpe, "he", true, "<|endoftext|>", false, "ll<|endoftext|>", true)},
		{"control token straddling a range edge stays text", bpe, "x<|endoftext|>", []Range{{0, 5}},
			enc(bpe, "x<|en", false, "doftext|>", true)},
		{"ranges out of order and out of bounds", bpe, "<|endoftext|><|endoftext|>", []Range{{13, 99}, {-5, 2}},
			enc(bpe, "<|", false, "endoftext|>", true, "<|endoftext|>", false)},
		{"overlapping ranges merge", bpe, "<|endoftext|>", []Range{{3, 6}, {0, 4}, {5, 7}},
			enc(bpe, "<|endof", false, "text|>", true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.tok.EncodeGuarded(tt.text, tt.tok == spm, tt.plain)
			if !slices.Equal(got, tt.want) {
				t.Errorf("EncodeGuarded(%q, %v) = %v, want %v", tt.text, tt.plain, got, tt.want)
			}
		})
	}
}

// TestEncodeGuardedSPMControl checks a SentencePiece prompt: the </s>
// inside the range is no control token, the template's </s> is.
func TestEncodeGuardedSPMControl(t *testing.T) {
	tok := mustNew(t, spmVocab())
	got := tok.EncodeGuarded("a</s>b</s>", false, []Range{{1, 5}})
	n := 0
	for _, id := range got {
		if id == tok.EOS() || id == 2 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%v holds </s> %d times, want once", got, n)
	}
	if all := tok.Encode("a</s>b</s>", false, true); slices.Equal(all, got) {
		t.Errorf("the guarded ids equal the unguarded %v", all)
	}
}

func FuzzEncodeGuarded(f *testing.F) {
	tok := mustNew(f, bpeVocab("gpt-2"))
	f.Add("x<|endoftext|>y", 1, 5)
	f.Add("<|endoftext|>", -3, 40)
	f.Fuzz(func(t *testing.T, text string, a, b int) {
		got := tok.EncodeGuarded(text, false, []Range{{a, b}})
		// Only control texts wholly outside the range become the
		// control token; without one the ids decode to the text.
		n, want := 0, 0
		for _, id := range got {
			if id == tok.EOS() {
				n++
			}
		}
		// An empty range holds no content: the whole text is then the
		// template's, and its control texts may stay control tokens.
		lo, hi := min(max(a, 0), len(text)), min(max(b, 0), len(text))
		parts := []string{text}
		if lo < hi {
			parts = []string{text[:lo], text[hi:]}
		}
		for _, part := range parts {
			for _, id := range tok.Encode(part, false, true) {
				if id == tok.EOS() {
					want++
				}
			}
		}
		if n > want {
			t.Errorf("%q with range [%d, %d): %d control tokens, at most %d outside it", text, a, b, n, want)
		}
		if dec := tok.Decode(got); n == 0 && dec != text && tok.Decode(tok.Encode(text, false, false)) == text {
			t.Errorf("%q decodes to %q", text, dec)
		}
	})
}
