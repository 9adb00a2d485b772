package tokenizer

import (
	"fmt"
	"sort"
	"testing"
)

// spmVocab is a small SentencePiece vocabulary with byte fallback.
func spmVocab() Vocab {
	v := DefaultVocab("llama", "")
	v.Tokens = []string{"<unk>", "<s>", "</s>"}
	v.Types = []TokenType{TypeUnknown, TypeControl, TypeControl}
	v.Scores = []float32{0, 0, 0}
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("<0x%02X>", b))
		v.Types = append(v.Types, TypeByte)
		v.Scores = append(v.Scores, 0)
	}
	normal := []struct {
		text  string
		score float32
	}{
		{"▁", -10}, {"a", -11}, {"h", -12}, {"e", -13}, {"l", -14}, {"o", -15}, {"<", -16},
		{"s", -17}, {">", -18}, {"▁hello", -1}, {"hello", -2}, {"hell", -3}, {"he", -4},
		{"ll", -5}, {"lo", -6}, {"▁h", -7}, {"<s", -8}, {"▁▁", -9}, {"▁▁▁▁", -9.5},
	}
	for _, n := range normal {
		v.Tokens = append(v.Tokens, n.text)
		v.Types = append(v.Types, TypeNormal)
		v.Scores = append(v.Scores, n.score)
	}
	v.Tokens = append(v.Tokens, "<|user|>")
	v.Types = append(v.Types, TypeUserDefined)
	v.Scores = append(v.Scores, 0)
	return v
}

// bpeVocab is a small byte-level BPE vocabulary: the 256 byte characters
// (id = byte), a few merges and <|endoftext|>.
func bpeVocab(pre string) Vocab {
	v := DefaultVocab("gpt2", pre)
	for b := 0; b < 256; b++ {
		v.Tokens = append(v.Tokens, string(byteToRune[b]))
	}
	v.Tokens = append(v.Tokens, "he", "ll", "hell", "hello", "Ġhello", "<|endoftext|>")
	v.Types = make([]TokenType, len(v.Tokens))
	for i := range v.Types {
		v.Types[i] = TypeNormal
	}
	v.Types[len(v.Types)-1] = TypeControl
	v.Merges = []string{"h e", "l l", "he ll", "hell o", "Ġ hello"}
	v.BOS, v.EOS = int32(len(v.Tokens)-1), int32(len(v.Tokens)-1)
	return v
}

func mustNew(t testing.TB, v Vocab) *Tokenizer {
	t.Helper()
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// ids maps token texts to ids.
func ids(t testing.TB, tok *Tokenizer, texts ...string) []int32 {
	t.Helper()
	out := make([]int32, len(texts))
	for i, s := range texts {
		id, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		out[i] = id
	}
	return out
}

// sortedPreNames returns the supported pre-tokenizer names in order.
func sortedPreNames() []string {
	names := make([]string, 0, len(preNames))
	for n := range preNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
