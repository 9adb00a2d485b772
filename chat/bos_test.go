package chat

import (
	"testing"

	"github.com/lisa-llm/lisa/tokenizer"
)

// byteVocab is a byte-level BPE vocabulary: the 256 byte characters of
// GPT-2's alphabet, then <s> and </s> as control tokens.
func byteVocab(t *testing.T, addBOS, addEOS bool) *tokenizer.Tokenizer {
	t.Helper()
	v := tokenizer.DefaultVocab("gpt2", "gpt-2")
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE) {
			r = 0x100 + rune(len(v.Tokens)-countPrintable(b))
		}
		v.Tokens = append(v.Tokens, string(r))
	}
	v.Tokens = append(v.Tokens, "<s>", "</s>")
	v.Types = make([]tokenizer.TokenType, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = tokenizer.TypeNormal
	}
	v.Types[256], v.Types[257] = tokenizer.TypeControl, tokenizer.TypeControl
	v.BOS, v.EOS = 256, 257
	v.AddBOS, v.AddEOS = addBOS, addEOS
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// countPrintable counts the bytes below b that GPT-2's alphabet keeps as
// themselves.
func countPrintable(b int) int {
	n := 0
	for c := 0; c < b; c++ {
		if c >= '!' && c <= '~' || c >= 0xA1 && c <= 0xAC || c >= 0xAE {
			n++
		}
	}
	return n
}

// TestLeadingBOS renders templates that write {{ bos_token }} first (as
// DeepSeek-LLM's and OpenChat's do) and tokenizes them as the engine
// does: BOS must appear once when the tokenizer adds it, and the
// template's BOS must stay when it does not.
func TestLeadingBOS(t *testing.T) {
	const bosFirst = "{{ bos_token }}{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\n' }}{% endfor %}"
	msgs := []Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		name           string
		tmpl           string
		addBOS, addEOS bool
		wantBOS        int // BOS tokens at the start
		wantEOSEnd     bool
	}{
		{"add_bos", bosFirst, true, false, 1, false},
		{"no add_bos", bosFirst, false, false, 1, false},
		{"no bos in template", "{% for m in messages %}{{ m['content'] }}{% endfor %}", true, false, 1, false},
		{"eos last, add_eos", bosFirst + "{{ eos_token }}", true, true, 1, true},
		{"llama2 family", "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}{{ '[INST] ' + m['content'] + ' [/INST]' }}{% endif %}{% endfor %}", true, false, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := byteVocab(t, tc.addBOS, tc.addEOS)
			bos, eos := tok.TokenText(tok.BOS()), tok.TokenText(tok.EOS())
			text, err := Apply(tc.tmpl, msgs, false, bos, eos)
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode(TrimAdded(text, bos, eos, tok.AddBOS(), tok.AddEOS()), true, true)
			n := 0
			for n < len(ids) && ids[n] == tok.BOS() {
				n++
			}
			if n != tc.wantBOS {
				t.Errorf("%q: %d BOS at the start of %v, want %d", text, n, ids, tc.wantBOS)
			}
			eosCount := 0
			for _, id := range ids {
				if id == tok.EOS() {
					eosCount++
				}
			}
			if tc.wantEOSEnd && (eosCount != 1 || ids[len(ids)-1] != tok.EOS()) {
				t.Errorf("%v: want one EOS, at the end", ids)
			}
		})
	}
}

func TestTrimAdded(t *testing.T) {
	for _, tc := range []struct {
		text, bos, eos string
		addBOS, addEOS bool
		want           string
	}{
		{"<s>hi</s>", "<s>", "</s>", true, true, "hi"},
		{"<s>hi</s>", "<s>", "</s>", false, false, "<s>hi</s>"},
		{"<s><s>hi", "<s>", "</s>", true, false, "<s>hi"}, // only one, as llama.cpp
		{" <s>hi", "<s>", "</s>", true, false, " <s>hi"},  // not at the very start
		{"hi", "", "", true, true, "hi"},
	} {
		if got := TrimAdded(tc.text, tc.bos, tc.eos, tc.addBOS, tc.addEOS); got != tc.want {
			t.Errorf("TrimAdded(%q, %v, %v) = %q, want %q", tc.text, tc.addBOS, tc.addEOS, got, tc.want)
		}
	}
}
