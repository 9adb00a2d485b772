package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

func TestEncodeSPM(t *testing.T) {
	tok := mustNew(t, spmVocab())
	cases := []struct {
		text         string
		add, special bool
		want         []string
	}{
		{"hello", false, false, []string{"▁hello"}},
		{"hello", true, false, []string{"<s>", "▁hello"}},
		{"", true, false, []string{"<s>"}},
		{"", false, false, nil},
		{"é", false, false, []string{"▁", "<0xC3>", "<0xA9>"}},
		{"  hello", false, false, []string{"▁▁", "▁hello"}},
		{"<s>", false, false, []string{"▁", "<s", ">"}}, // control text is not parsed, and never merged
		{"<s>", false, true, []string{"<s>"}},
		{"<s>hello", false, true, []string{"<s>", "▁hello"}},
		{"a<|user|>a", false, false, []string{"▁", "a", "<|user|>", "▁", "a"}}, // user-defined always parsed; a space prefix follows it
		{"hell", false, false, []string{"▁", "hell"}},                          // he, then ll, then hell: ▁h never wins
	}
	for _, c := range cases {
		got := tok.Encode(c.text, c.add, c.special)
		var want []int32
		if c.want != nil {
			want = ids(t, tok, c.want...)
		}
		if !equalIDs(got, want) {
			t.Errorf("Encode(%q, %v, %v) = %v, want %v %v", c.text, c.add, c.special, got, want, c.want)
		}
	}
}

func TestEncodeBPE(t *testing.T) {
	tok := mustNew(t, bpeVocab("gpt-2"))
	cases := []struct {
		text    string
		special bool
		want    []string
	}{
		{"hello hello", false, []string{"hello", "Ġhello"}},
		{"hel", false, []string{"he", "l"}},
		{"<|endoftext|>", true, []string{"<|endoftext|>"}},
		{"hi\x00", false, []string{"h", "i", "Ā"}},
	}
	for _, c := range cases {
		got := tok.Encode(c.text, false, c.special)
		if want := ids(t, tok, c.want...); !equalIDs(got, want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, want)
		}
	}
	if got := tok.Encode("<|endoftext|>", false, false); len(got) < 3 {
		t.Errorf("control token parsed without parseSpecial: %v", got)
	}
	// Invalid UTF-8 becomes U+FFFD (EF BF BD) before byte-level encoding, as in llama.cpp.
	if got, want := tok.Encode("\xff", false, false), []int32{0xEF, 0xBF, 0xBD}; !equalIDs(got, want) {
		t.Errorf("Encode(0xFF) = %v, want %v", got, want)
	}
}

func TestPreTokenizers(t *testing.T) {
	cases := []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello world's 123  x\n", []string{"Hello", " world", "'s", " 123", " ", " x", "\n"}},
		{"gpt-2", "\tHi  ", []string{"\t", "Hi", "  "}},
		{"llama-bpe", "Hello world's 12345  x\n\n", []string{"Hello", " world", "'s", " ", "123", "45", " ", " x", "\n\n"}},
		{"llama-bpe", "I'M ok.\n  y", []string{"I", "'M", " ok", ".\n", " ", " y"}},
		{"qwen2", "ab 123", []string{"ab", " ", "1", "2", "3"}},
		{"starcoder", "a1b22 c", []string{"a", "1", "b", "2", "2", " c"}},
		{"falcon", "x+=1234!!", []string{"x", "+=", "123", "4", "!!"}},
		{"default", "x+=1234!!", []string{"x", "+=", "123", "4", "!!"}},
		{"deepseek-llm", "Hello, 世界 123\n", []string{"Hello", ",", " ", "世界", " ", "123", "\n"}},
		{"deepseek-coder", "ab, 12", []string{"ab", ",", " ", "1", "2"}},
	}
	for _, c := range cases {
		p, ok := lookupPre(c.pre)
		if !ok {
			t.Fatalf("no pre-tokenizer %q", c.pre)
		}
		var got []string
		for _, sp := range p.split(c.text) {
			got = append(got, c.text[sp.a:sp.b])
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s %q: got %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}

func TestDecode(t *testing.T) {
	spm := mustNew(t, spmVocab())
	bpe := mustNew(t, bpeVocab("gpt-2"))
	cases := []struct {
		tok  *Tokenizer
		ids  []string
		want string
	}{
		{spm, []string{"▁hello", "▁hello"}, "hello hello"},
		{spm, []string{"<s>", "▁hello"}, " hello"}, // BOS takes the leading-space removal, as llama.cpp
		{spm, []string{"<0xC3>", "<0xA9>", "▁▁"}, "é  "},
		{spm, []string{"<unk>", "<|user|>"}, "<|user|>"},
		{bpe, []string{"hello", "Ġ", ",", "Ġ", "'", "s"}, "hello,'s"},
		{bpe, []string{"Ġ", "'", "Ġ", "x"}, "'x"},
		{bpe, []string{"Ġ", "'", "t", "<|endoftext|>"}, " 't"},
	}
	for _, c := range cases {
		if got := c.tok.Decode(ids(t, c.tok, c.ids...)); got != c.want {
			t.Errorf("Decode(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
	if got := spm.Decode([]int32{-1, 1 << 30}); got != "" {
		t.Errorf("out-of-range ids decode to %q", got)
	}
}

func TestStreamDecoder(t *testing.T) {
	tok := mustNew(t, spmVocab())
	d := tok.NewStreamDecoder()
	steps := []struct {
		tok, want string
	}{
		{"▁hello", "hello"},
		{"<0xE2>", ""},
		{"<0x82>", ""},
		{"<0xAC>", "€"},
		{"<0xC3>", ""},
		{"a", "\uFFFDa"},
		{"<0xF0>", ""},
	}
	for i, s := range steps {
		if got := d.Add(ids(t, tok, s.tok)[0]); got != s.want {
			t.Errorf("step %d: Add(%q) = %q, want %q", i, s.tok, got, s.want)
		}
	}
	if got := d.Flush(); got != "\uFFFD" {
		t.Errorf("Flush = %q", got)
	}
	if got := d.Add(ids(t, tok, "▁hello")[0]); got != "hello" {
		t.Errorf("after Flush: %q", got)
	}
	c := tok.NewContinuationDecoder()
	for i := 0; i < 2; i++ {
		if got := c.Add(ids(t, tok, "▁hello")[0]); got != " hello" {
			t.Errorf("continuation %d: %q, want %q", i, got, " hello")
		}
		c.Flush()
	}
}

func TestNewRejects(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Vocab)
		field string
	}{
		{"model", func(v *Vocab) { v.Model = "bert" }, keyModel},
		{"pre", func(v *Vocab) { v.Model, v.Pre = "gpt2", "nonesuch" }, keyPre},
		{"empty", func(v *Vocab) { v.Tokens, v.Scores, v.Types = nil, nil, nil }, keyTokens},
		{"scores", func(v *Vocab) { v.Scores = v.Scores[:3] }, keyScores},
		{"types", func(v *Vocab) { v.Types = v.Types[1:] }, keyTypes},
		{"duplicate", func(v *Vocab) { v.Tokens[5] = v.Tokens[6] }, keyTokens},
		{"long", func(v *Vocab) { v.Tokens[5] = strings.Repeat("x", MaxTokenLen+1) }, keyTokens},
		{"bos", func(v *Vocab) { v.BOS = 1 << 20 }, "tokenizer.ggml.bos_token_id"},
		{"eos", func(v *Vocab) { v.EOS = -5 }, "tokenizer.ggml.eos_token_id"},
		{"addbos", func(v *Vocab) { v.BOS = None }, keyAddBOS},
		{"nan", func(v *Vocab) { v.Scores[7] = float32(nan()) }, keyScores},
	}
	for _, c := range cases {
		v := spmVocab()
		c.edit(&v)
		_, err := New(v)
		var ve *VocabError
		if !errors.As(err, &ve) || ve.Field != c.field || !errors.Is(err, ErrVocab) {
			t.Errorf("%s: err = %v, want a VocabError for %s", c.name, err, c.field)
		}
	}
	v := bpeVocab("gpt-2")
	v.Merges = append(v.Merges, "nospace")
	if _, err := New(v); err == nil || !strings.Contains(err.Error(), keyMerges) {
		t.Errorf("merge without space: err = %v", err)
	}
}

func nan() float64 {
	zero := 0.0
	return zero / zero
}

func TestSpecialTexts(t *testing.T) {
	tok := mustNew(t, spmVocab())
	got := strings.Join(tok.SpecialTexts(), " ")
	if got != "<|user|> <unk> </s> <s>" {
		t.Errorf("SpecialTexts = %q", got)
	}
	if !tok.IsEOG(2) || tok.IsEOG(1) {
		t.Errorf("IsEOG(2)=%v IsEOG(1)=%v", tok.IsEOG(2), tok.IsEOG(1))
	}
}

// TestHarmonyEOG checks llama.cpp's end-of-generation rule for gpt-oss's
// vocabulary: <|return|> and <|call|> end generation, <|end|> (which ends
// each message of a reply) does not and becomes user-defined; without
// them <|end|> ends generation (Phi-3).
func TestHarmonyEOG(t *testing.T) {
	for _, c := range []struct {
		extra   []string
		endEOG  bool
		wantEOG []string
	}{
		{[]string{"<|end|>"}, true, nil},
		{[]string{"<|end|>", "<|return|>", "<|call|>"}, false, []string{"<|return|>", "<|call|>"}},
		{[]string{"<|end|>", "<|return|>"}, true, []string{"<|return|>"}},
		{[]string{"<|end|>", "<|calls|>", "<|flush|>"}, false, []string{"<|calls|>", "<|flush|>"}},
	} {
		v := bpeVocab("gpt-2")
		for _, s := range c.extra {
			v.Tokens = append(v.Tokens, s)
			v.Types = append(v.Types, TypeControl)
		}
		tok := mustNew(t, v)
		end, _ := tok.TokenID("<|end|>")
		if tok.IsEOG(end) != c.endEOG {
			t.Errorf("%v: IsEOG(<|end|>) = %v", c.extra, tok.IsEOG(end))
		}
		if !c.endEOG && string(tok.Piece(end)) != "<|end|>" {
			t.Errorf("%v: <|end|> renders as %q", c.extra, tok.Piece(end))
		}
		for _, s := range c.wantEOG {
			if id, _ := tok.TokenID(s); !tok.IsEOG(id) {
				t.Errorf("%v: %s is no end of generation", c.extra, s)
			}
		}
	}
}
