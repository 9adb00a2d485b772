package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

var fuzzSeeds = []string{
	"", "hello", " hello  world", "é€🦙", "<s>hello</s>", "a<|user|>b", "\xff\xfe", "\xe2\x82",
	"I'M ok.\n\n  y", "x+=1234!!", "Hello, 世界 123\n", "\t\r\n \u00a0\u3000", "'s'S're",
	"12345671² 1234_ ١٢٣", "HTTPServer iPhone ǅemal", "<sentinel:3>IMGIMGABZ    x", " \u2028— \n",
	"e\u0301 বাংলা 東京タワー 한국어",
}

// FuzzEncode checks that encoding never panics, that SentencePiece with
// byte fallback round-trips valid UTF-8, and that every pre-tokenizer
// cuts the text into contiguous non-empty words.
func FuzzEncode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
	}
	spms := []*Tokenizer{mustNew(f, spmVocab())}
	if real := realSPM(); real != nil {
		spms = append(spms, real)
	}
	var bpes []*Tokenizer
	families := map[preKind]bool{} // one name per family: a family shares its steps
	for _, pre := range sortedPreNames() {
		if k := preNames[pre].kind; !families[k] {
			families[k] = true
			bpes = append(bpes, mustNew(f, bpeVocab(pre)))
		}
	}
	f.Fuzz(func(t *testing.T, s string, special bool) {
		for _, spm := range spms {
			got := spm.Encode(s, false, special)
			for _, id := range got {
				if id < 0 || int(id) >= spm.NVocab() {
					t.Fatalf("id %d out of range", id)
				}
			}
			if utf8.ValidString(s) && !special && !strings.Contains(s, "▁") && !strings.Contains(s, "<|user|>") {
				if back := spm.Decode(got); back != s {
					t.Fatalf("Decode(Encode(%q)) = %q", s, back)
				}
			}
		}
		for _, b := range bpes {
			for _, id := range b.Encode(s, true, special) {
				if id < 0 || int(id) >= b.NVocab() {
					t.Fatalf("%v: id %d out of range", b.pre.kind, id)
				}
			}
			valid := s
			if !utf8.ValidString(s) {
				valid = string([]rune(s))
			}
			end := 0
			for _, sp := range b.pre.split(valid) {
				if sp.a != end || sp.b <= sp.a {
					t.Fatalf("%v: span %v after %d in %q", b.pre.kind, sp, end, valid)
				}
				end = sp.b
			}
			if end != len(valid) {
				t.Fatalf("%v: spans end at %d of %d", b.pre.kind, end, len(valid))
			}
		}
	})
}

// realSPM loads the Llama 2 vocabulary when the shared data is there
// (fuzzing runs without it too).
func realSPM() *Tokenizer {
	dir := shared.Find()
	if dir == "" {
		return nil
	}
	f, err := gguf.Open(filepath.Join(dir, "ref/vocab/ggml-vocab-llama-spm.gguf"), gguf.DefaultLimits())
	if err != nil {
		return nil
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		return nil
	}
	return tok
}

// FuzzStreamDecoder checks that the streamed text is valid UTF-8 and
// equals Decode with invalid bytes replaced, whatever the ids.
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte{0, 3, 1, 200, 201, 5})
	f.Add([]byte{229, 0, 133, 0, 175, 0}) // byte tokens E2 82 AC: "€"
	f.Add([]byte("hello world"))
	spm := mustNew(f, spmVocab())
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ids []int32
		for i := 0; i+1 < len(raw); i += 2 {
			ids = append(ids, int32(raw[i])|int32(raw[i+1]&1)<<8)
		}
		d := spm.NewStreamDecoder()
		var out strings.Builder
		for _, id := range ids {
			s := d.Add(id)
			if !utf8.ValidString(s) {
				t.Fatalf("Add(%d) = %q: invalid UTF-8", id, s)
			}
			out.WriteString(s)
		}
		out.WriteString(d.Flush())
		if want := sanitize(spm.Decode(ids)); out.String() != want {
			t.Fatalf("stream %q, Decode %q", out.String(), want)
		}
	})
}

// FuzzNew builds vocabularies from fuzzed tokens and merges: New must
// reject or accept them without panicking, and an accepted one must
// encode and decode anything.
func FuzzNew(f *testing.F) {
	f.Add("a\x00b\x00ab\x00<0x41>\x00<s>", "a b\x00ab c", "hello ab", uint8(0))
	f.Add("Ġ\x00h\x00Ġh\x00\x00x", "Ġ h\x00 x", " hx", uint8(1))
	f.Add("x\x00x", "", "x", uint8(2))
	f.Fuzz(func(t *testing.T, tokens, merges, text string, flags uint8) {
		v := DefaultVocab([]string{"llama", "gpt2"}[flags&1], []string{"gpt-2", "llama-bpe", "falcon", "deepseek-llm"}[flags>>1&3])
		v.Tokens = strings.Split(tokens, "\x00")
		if merges != "" {
			v.Merges = strings.Split(merges, "\x00")
		}
		v.Types = make([]TokenType, len(v.Tokens))
		v.Scores = make([]float32, len(v.Tokens))
		for i := range v.Types {
			v.Types[i] = TokenType((int(flags) + i) % 7)
			v.Scores[i] = float32(i%5) - 2
		}
		v.BOS, v.EOS, v.UNK = 0, int32(len(v.Tokens)-1), None
		tok, err := New(v)
		if err != nil {
			return
		}
		ids := tok.Encode(text, true, flags&8 != 0)
		for _, id := range ids {
			if id < 0 || int(id) >= tok.NVocab() {
				t.Fatalf("id %d out of range", id)
			}
		}
		tok.Decode(append(ids, -1, 1<<30))
		d := tok.NewStreamDecoder()
		for _, id := range ids {
			if s := d.Add(id); !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 %q", s)
			}
		}
	})
}
