package vocab

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TypeUnknown and TypeByte are llama_token_type's UNKNOWN and BYTE.
const (
	TypeUnknown int32 = 2
	TypeByte    int32 = 6
)

// spmFamily reports whether f is a SentencePiece layout (spm.go).
func spmFamily(f Family) bool { return f == Gemma2 || f == Gemma3 || f == Phi3 || f == Mistral }

// spmLayout is what differs between the SentencePiece families.
type spmLayout struct {
	lead               []special // from id 0; the bytes follow
	trail              []special // from Spec.SpecialAt (Phi3), then [PADn]
	bos, eos, unk, pad int32     // absolute ids, -1 for none
	trailedEOS         bool      // eos and pad count from Spec.SpecialAt
	addBOS, addEOS     *bool
	addSpace           *bool
}

func spmLayoutOf(f Family) spmLayout {
	switch f {
	case Gemma2, Gemma3:
		lead := []special{{"<pad>", TypeControl}, {"<eos>", TypeControl}, {"<bos>", TypeControl},
			{"<unk>", TypeUnknown}, {"<mask>", TypeUserDefined}}
		unused := 100
		if f == Gemma2 {
			lead = append(lead, special{"[@BOS@]", TypeUserDefined})
		} else {
			lead = append(lead, special{"[multimodal]", TypeUserDefined})
			unused = 99
		}
		for i := range unused {
			lead = append(lead, special{fmt.Sprintf("<unused%d>", i), TypeUserDefined})
		}
		lead = append(lead, ctl("<start_of_turn>", "<end_of_turn>")...)
		// convert_hf_to_gguf.py writes add_space_prefix false for Gemma;
		// the tokenizer adds BOS and no EOS.
		return spmLayout{lead: lead, bos: 2, eos: 1, unk: 3, pad: 0,
			addBOS: ptr(true), addEOS: ptr(false), addSpace: ptr(false)}
	case Phi3:
		trail := ctl("<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|placeholder2|>", "<|placeholder3|>",
			"<|placeholder4|>", "<|system|>", "<|end|>", "<|placeholder5|>", "<|placeholder6|>", "<|user|>")
		// Phi-3.5-mini-instruct's tokenizer_config.json: eos and pad are
		// <|endoftext|>, no BOS or EOS added.
		return spmLayout{lead: []special{{"<unk>", TypeUnknown}, {"<s>", TypeControl}, {"</s>", TypeControl}},
			trail: trail, bos: 1, eos: 0, unk: 0, pad: 0, trailedEOS: true, addBOS: ptr(false), addEOS: ptr(false)}
	case Mistral:
		// Mixtral-8x7B-Instruct-v0.1's tokenizer_config.json: BOS added, no
		// EOS, no padding token (convert_hf_to_gguf.py writes no pad id).
		return spmLayout{lead: []special{{"<unk>", TypeUnknown}, {"<s>", TypeControl}, {"</s>", TypeControl}},
			bos: 1, eos: 2, unk: 0, pad: -1, addBOS: ptr(true), addEOS: ptr(false)}
	}
	return spmLayout{}
}

// spmBase are the single-character pieces every SentencePiece vocabulary
// here has: the word boundary ▁ and printable ASCII; other characters
// fall back to the byte tokens.
func spmBase() []string {
	b := []string{"▁"}
	for c := '!'; c <= '~'; c++ {
		b = append(b, string(c))
	}
	return b
}

// buildSPM makes a SentencePiece vocabulary: the family's leading
// control tokens, the 256 byte tokens <0x00>…<0xFF>, ▁ and printable
// ASCII, the pieces of the byte-level merges learn finds (spaces as ▁,
// scored by merge rank so the first learned merges apply first), distinct
// fillers, and the family's trailing tokens and padding.
func buildSPM(s Spec) (*Vocab, error) {
	l := spmLayoutOf(s.Family)
	if s.NVocab <= 0 || s.NVocab > MaxVocab {
		return nil, fmt.Errorf("vocab: %v: %d tokens, want 1 to %d", s.Family, s.NVocab, MaxVocab)
	}
	hi := s.NVocab
	if l.trail != nil {
		hi = s.SpecialAt
	}
	base := spmBase()
	lo := len(l.lead) + 256
	if hi-lo < len(base) || hi+len(l.trail) > s.NVocab {
		return nil, fmt.Errorf("vocab: %v: %d tokens with specials at %d leave no room for %d leading tokens, the bytes, %d pieces and %d trailing tokens",
			s.Family, s.NVocab, s.SpecialAt, len(l.lead), len(base), len(l.trail))
	}
	tmpl := ""
	if s.Template != "" {
		var err error
		if tmpl, err = Template(s.Template); err != nil {
			return nil, err
		}
	}
	v := &Vocab{Model: "llama", Pre: "default", Tokens: make([]string, s.NVocab), Types: make([]int32, s.NVocab),
		Scores: make([]float32, s.NVocab), AddBOS: l.addBOS, AddEOS: l.addEOS, AddSpacePrefix: l.addSpace, ChatTemplate: tmpl}
	for i, t := range l.lead {
		v.Tokens[i], v.Types[i] = t.text, t.typ
	}
	for b := range 256 {
		v.Tokens[len(l.lead)+b], v.Types[len(l.lead)+b] = fmt.Sprintf("<0x%02X>", b), TypeByte
	}
	seen := map[string]bool{}
	id := lo
	add := func(p string, score float32) {
		v.Tokens[id], v.Types[id], v.Scores[id] = p, TypeNormal, score
		seen[p] = true
		id++
	}
	for _, p := range base {
		add(p, -1e4)
	}
	var inv [512]byte // GPT-2's byte runes back to bytes
	for b, r := range byteRunes() {
		inv[r] = byte(b)
	}
	pieces, _ := learn(hi-id, false)
	for rank, p := range pieces[256:] {
		if id >= hi {
			break
		}
		raw := make([]byte, 0, len(p))
		for _, r := range p {
			raw = append(raw, inv[r])
		}
		text := strings.ReplaceAll(string(raw), " ", "▁")
		if !utf8.ValidString(text) || seen[text] {
			continue
		}
		add(text, -float32(rank+1))
	}
	for ; id < hi; id++ {
		v.Tokens[id], v.Types[id], v.Scores[id] = fmt.Sprintf("[synth%d]", id), TypeNormal, -1e6
	}
	for i, t := range l.trail {
		v.Tokens[hi+i], v.Types[hi+i], v.Scores[hi+i] = t.text, t.typ, -1000
	}
	if l.trail != nil {
		for i := hi + len(l.trail); i < s.NVocab; i++ {
			v.Tokens[i], v.Types[i], v.Scores[i] = fmt.Sprintf("[PAD%d]", i-hi-len(l.trail)+1), TypeUnused, -1000
		}
	}
	v.BOS, v.EOS, v.UNK, v.PAD = l.bos, l.eos, l.unk, l.pad
	if l.trailedEOS {
		v.EOS, v.PAD = int32(hi)+l.eos, int32(hi)+l.pad
	}
	return v, nil
}
