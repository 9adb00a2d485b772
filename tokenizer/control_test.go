package tokenizer

import (
	"slices"
	"testing"
)

func TestControlIDs(t *testing.T) {
	tests := []struct {
		name string
		v    Vocab
		want []int32
	}{
		// <unk> 0, <s> 1, </s> 2; the user-defined <|user|> is plain text.
		{"spm", spmVocab(), []int32{0, 1, 2}},
		// <|endoftext|> is BOS, EOS and EOG.
		{"bpe", bpeVocab("gpt-2"), []int32{261}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := mustNew(t, tt.v)
			got := tok.ControlIDs()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("ControlIDs = %v, want %v", got, tt.want)
			}
			// No text tokenizes to one of them with special parsing off.
			for _, id := range got {
				for _, tid := range tok.Encode(tok.TokenText(id), false, false) {
					if slices.Contains(got, tid) {
						t.Fatalf("the text of control id %d tokenizes to control id %d", id, tid)
					}
				}
			}
		})
	}
}
