package synth

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tokenizer"
)

// llcheckLine is one line of testdata/llcheck/reference.jsonl: what
// llama.cpp read from one tiny file (see testdata/llcheck/check.sh).
type llcheckLine struct {
	File     string  `json:"file"`
	Arch     string  `json:"arch"`
	NVocab   int     `json:"n_vocab"`
	BOS      int32   `json:"bos"`
	EOS      int32   `json:"eos"`
	Chat     *string `json:"chat"`
	IDs      []int32 `json:"ids"`
	Plain    string  `json:"plain"`
	PlainIDs []int32 `json:"plain_ids"`
}

// TestLlamaCppReference checks each tiny file against what llama.cpp read
// from the same bytes: its architecture, vocabulary size and special ids,
// and that package tokenizer gives llama.cpp's ids for the chat rendering
// (special tokens parsed) and for a plain text (not parsed). Tekken is
// checked once package tokenizer supports it (issue 18).
func TestLlamaCppReference(t *testing.T) {
	f, err := os.Open("testdata/llcheck/reference.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var l llcheckLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		n++
		base := strings.TrimSuffix(l.File, ".gguf")
		i := strings.LastIndex(base, "-")
		name, typ := base[:i], base[i+1:]
		t.Run(base, func(t *testing.T) {
			s, ok := Lookup(name)
			if !ok {
				t.Fatalf("no shape %q", name)
			}
			ft, err := ParseFileType(typ)
			if err != nil {
				t.Fatal(err)
			}
			if l.Arch != s.Arch || l.NVocab != s.NVocab {
				t.Errorf("llama.cpp read arch %s, %d tokens; shape %s, %d", l.Arch, l.NVocab, s.Arch, s.NVocab)
			}
			md := metadata(t, Options{Shape: s, Type: ft, Seed: 1})
			tok, err := tokenizer.FromGGUF(md)
			if err != nil {
				t.Fatal(err)
			}
			if tok.BOS() != l.BOS || tok.EOS() != l.EOS {
				t.Errorf("bos %d eos %d, llama.cpp %d %d", tok.BOS(), tok.EOS(), l.BOS, l.EOS)
			}
			if l.Chat == nil {
				t.Fatal("llama.cpp rendered no chat template")
			}
			if got := tok.Encode(*l.Chat, true, true); !slices.Equal(got, l.IDs) {
				t.Errorf("chat ids\n%v\nllama.cpp\n%v", got, l.IDs)
			}
			if got := tok.Encode(l.Plain, true, false); !slices.Equal(got, l.PlainIDs) {
				t.Errorf("plain ids\n%v\nllama.cpp\n%v", got, l.PlainIDs)
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 21 {
		t.Errorf("%d reference lines, want 7 shapes x 3 types", n)
	}
}
