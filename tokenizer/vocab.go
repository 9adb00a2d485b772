package tokenizer

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// TokenType is the type of a token as stored in tokenizer.ggml.token_type.
type TokenType int32

// The token types of GGUF vocabularies (llama.cpp's llama_token_type).
const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

// None is the id meaning "no such token" in Vocab's special-token fields.
const None int32 = -1

// Limits on a vocabulary. They admit every real model (the largest
// vocabularies have a few hundred thousand tokens) and refuse absurd ones.
const (
	// MaxTokens is the largest number of tokens in a vocabulary.
	MaxTokens = 1 << 22
	// MaxMerges is the largest number of BPE merges.
	MaxMerges = 1 << 23
	// MaxTokenLen is the longest token text, in bytes.
	MaxTokenLen = 1 << 16
)

// ErrVocab is wrapped by every error about an invalid vocabulary.
var ErrVocab = errors.New("tokenizer: invalid vocabulary")

// VocabError reports an invalid vocabulary: the metadata field at fault,
// the index within it (-1 when the whole field is at fault) and why.
type VocabError struct {
	Field string
	Index int
	Msg   string
}

// Error returns the message with the field and index.
func (e *VocabError) Error() string {
	if e.Index >= 0 {
		return fmt.Sprintf("tokenizer: %s[%d]: %s", e.Field, e.Index, e.Msg)
	}
	return fmt.Sprintf("tokenizer: %s: %s", e.Field, e.Msg)
}

// Unwrap returns ErrVocab.
func (e *VocabError) Unwrap() error { return ErrVocab }

func vocabErr(field string, index int, format string, args ...any) error {
	return &VocabError{Field: field, Index: index, Msg: fmt.Sprintf(format, args...)}
}

// Vocab is a vocabulary as stored in GGUF metadata, with llama.cpp's
// defaults already applied (see DefaultVocab). Special-token ids are None
// when absent.
type Vocab struct {
	// Model is tokenizer.ggml.model: "llama" or "gpt2".
	Model string
	// Pre is tokenizer.ggml.pre ("default" when absent).
	Pre string
	// Name is general.name. llama.cpp keys one rule on it: in a model
	// named phi-3/phi3, special tokens eat the whitespace after them.
	Name string
	// Tokens are the token texts, indexed by id.
	Tokens []string
	// Scores are the SentencePiece scores (nil: all zero).
	Scores []float32
	// Types are the token types (nil: all normal).
	Types []TokenType
	// Merges are the BPE merges "left right", best first (gpt2 only).
	Merges []string

	// BOS, EOS, UNK, PAD, EOT and EOM are the special-token ids
	// (beginning and end of sequence, unknown, padding, end of turn, end
	// of message), None when absent.
	BOS, EOS, UNK, PAD, EOT, EOM int32

	// AddBOS and AddEOS say whether Encode with addSpecial adds them.
	AddBOS, AddEOS bool
	// AddSpacePrefix says whether SentencePiece text gets a leading space.
	AddSpacePrefix bool
}

// DefaultVocab returns a Vocab for model with llama.cpp's defaults for the
// special tokens and flags: for "llama" BOS 1, EOS 2, UNK 0, add BOS and a
// space prefix; for "gpt2" BOS and EOS 11, nothing added (add BOS for the
// llama3-style pre-tokenizers, which also set Pre).
func DefaultVocab(model, pre string) Vocab {
	v := Vocab{Model: model, Pre: pre, BOS: None, EOS: None, UNK: None, PAD: None, EOT: None, EOM: None}
	switch model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
		v.Pre = "default"
	case "gpt2":
		v.BOS, v.EOS = 11, 11
		if v.Pre == "" {
			v.Pre = "default"
		}
		if p, ok := preNames[v.Pre]; ok {
			v.AddBOS = p.addBOS
			if p.noBOS {
				v.BOS = None
			}
		}
	}
	return v
}

// kind tells the two tokenizer algorithms apart.
type kind uint8

const (
	kindSPM kind = iota
	kindBPE
)

// Tokenizer encodes and decodes text for one vocabulary. It is immutable
// after New and safe for concurrent use.
type Tokenizer struct {
	kind     kind
	pre      preTokenizer
	tokens   []string
	scores   []float32
	types    []TokenType
	toID     map[string]int32       // every token text
	mergeID  map[string]int32       // texts that merging may produce (no control tokens)
	ranks    map[uint64]mergeResult // BPE: (left id, right id) → rank, result
	byteTok  [256]int32             // token of each byte (<0xNN>, or byte-level char), None if absent
	special  []int32                // control, user-defined and unknown tokens, longest text first
	eog      map[int32]bool
	pieces   [][]byte      // Piece of each id
	maxSpec  int           // longest special text
	specRune map[rune]bool // runes of the special texts (utf8.RuneError for invalid bytes)
	bos, eos int32
	unk, pad int32
	eot, eom int32
	addBOS   bool
	addEOS   bool
	addSpace bool
	clean    bool // BPE clean-up of spaces before punctuation in Decode
	strip    map[int32]stripAttr
}

// stripAttr says whether a special token eats the ASCII whitespace
// before it (lstrip) or after it (rstrip) when it is cut out of the text,
// as llama.cpp's LLAMA_TOKEN_ATTR_LSTRIP and _RSTRIP.
type stripAttr uint8

const (
	lstrip stripAttr = 1 << iota
	rstrip
)

// New validates v and builds its tokenizer. Errors are *VocabError
// values naming the field at fault.
func New(v Vocab) (*Tokenizer, error) {
	t := &Tokenizer{bos: v.BOS, eos: v.EOS, unk: v.UNK, pad: v.PAD, eot: v.EOT, eom: v.EOM,
		addBOS: v.AddBOS, addEOS: v.AddEOS}
	switch v.Model {
	case "llama":
		t.kind = kindSPM
		t.addSpace = v.AddSpacePrefix
	case "gpt2":
		t.kind = kindBPE
		p, ok := lookupPre(v.Pre)
		if !ok {
			if why, known := unsupportedPre[v.Pre]; known {
				return nil, vocabErr("tokenizer.ggml.pre", -1, "unsupported pre-tokenizer %q: %s", v.Pre, why)
			}
			return nil, vocabErr("tokenizer.ggml.pre", -1, "unsupported pre-tokenizer %q", v.Pre)
		}
		t.pre = p
		t.clean = p.clean
		t.addSpace = v.AddSpacePrefix
	default:
		return nil, vocabErr("tokenizer.ggml.model", -1, "unsupported tokenizer model %q", v.Model)
	}
	if err := t.loadTokens(v); err != nil {
		return nil, err
	}
	if err := t.checkSpecial(v); err != nil {
		return nil, err
	}
	t.finish()
	t.setStrip(v)
	if t.kind == kindBPE {
		if err := t.loadMerges(v.Merges); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Tokenizer) loadTokens(v Vocab) error {
	n := len(v.Tokens)
	if n == 0 {
		return vocabErr("tokenizer.ggml.tokens", -1, "empty vocabulary")
	}
	if n > MaxTokens {
		return vocabErr("tokenizer.ggml.tokens", -1, "%d tokens, more than the limit %d", n, MaxTokens)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return vocabErr("tokenizer.ggml.scores", -1, "%d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return vocabErr("tokenizer.ggml.token_type", -1, "%d types for %d tokens", len(v.Types), n)
	}
	t.tokens = make([]string, n)
	t.scores = make([]float32, n)
	t.types = make([]TokenType, n)
	t.toID = make(map[string]int32, n)
	for i, s := range v.Tokens {
		if len(s) > MaxTokenLen {
			return vocabErr("tokenizer.ggml.tokens", i, "token of %d bytes, more than the limit %d", len(s), MaxTokenLen)
		}
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // as llama.cpp
		}
		if j, dup := t.toID[s]; dup {
			return vocabErr("tokenizer.ggml.tokens", i, "duplicate of token %d %q", j, s)
		}
		t.toID[s] = int32(i)
		t.tokens[i] = s
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
		if v.Scores != nil {
			sc := v.Scores[i]
			if math.IsNaN(float64(sc)) {
				return vocabErr("tokenizer.ggml.scores", i, "score is NaN")
			}
			t.scores[i] = sc
		}
	}
	return nil
}

// checkSpecial validates the special-token ids: BOS, EOS, UNK, EOT and EOM
// must be None or in range; an out-of-range PAD is dropped (some
// converters write the vocabulary size), as llama.cpp does.
func (t *Tokenizer) checkSpecial(v Vocab) error {
	n := int32(len(t.tokens))
	for _, s := range []struct {
		key string
		id  int32
	}{
		{"tokenizer.ggml.bos_token_id", t.bos}, {"tokenizer.ggml.eos_token_id", t.eos},
		{"tokenizer.ggml.unknown_token_id", t.unk}, {"tokenizer.ggml.eot_token_id", t.eot},
		{"tokenizer.ggml.eom_token_id", t.eom},
	} {
		if s.id != None && (s.id < 0 || s.id >= n) {
			return vocabErr(s.key, -1, "token id %d out of range [0, %d)", s.id, n)
		}
	}
	if t.pad < 0 || t.pad >= n {
		t.pad = None
	}
	if t.addBOS && t.bos == None {
		return vocabErr("tokenizer.ggml.add_bos_token", -1, "true, but there is no BOS token")
	}
	if t.addEOS && t.eos == None {
		return vocabErr("tokenizer.ggml.add_eos_token", -1, "true, but there is no EOS token")
	}
	return nil
}

func (t *Tokenizer) loadMerges(merges []string) error {
	if len(merges) > MaxMerges {
		return vocabErr("tokenizer.ggml.merges", -1, "%d merges, more than the limit %d", len(merges), MaxMerges)
	}
	t.ranks = make(map[uint64]mergeResult, len(merges))
	for i, m := range merges {
		// Split at the first space after the first byte, as llama.cpp.
		sp := -1
		if len(m) > 1 {
			if k := strings.IndexByte(m[1:], ' '); k >= 0 {
				sp = k + 1
			}
		}
		if sp < 0 {
			return vocabErr("tokenizer.ggml.merges", i, "merge %q has no space", m)
		}
		l, lok := t.toID[m[:sp]]
		r, rok := t.toID[m[sp+1:]]
		if !lok || !rok {
			continue // a merge of non-tokens can never apply to token ids
		}
		k := pairKey(l, r)
		if _, dup := t.ranks[k]; !dup {
			id, ok := t.mergeID[m[:sp]+m[sp+1:]]
			if !ok {
				id = None
			}
			t.ranks[k] = mergeResult{rank: int32(i), id: id}
		}
	}
	return nil
}

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

// eogTexts are token texts llama.cpp treats as end of generation (and as
// control tokens) whatever their stored type.
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
	"<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>", "<｜end▁of▁sentence｜>",
	"<|return|>", "<|call|>", "<|flush|>", "<|calls|>", // o200k_harmony (gpt-oss), solar-open
}

// eogID returns the id of text when it is an end-of-generation token.
func (t *Tokenizer) eogID(text string) (int32, bool) {
	id, ok := t.toID[text]
	return id, ok && t.eog[id]
}

// finish builds the derived tables: EOG set, merge targets, byte tokens,
// special-token list and pieces.
func (t *Tokenizer) finish() {
	t.eog = map[int32]bool{}
	for _, s := range eogTexts {
		if id, ok := t.toID[s]; ok {
			t.eog[id] = true
			if t.types[id] != TypeControl && t.types[id] != TypeUserDefined {
				t.types[id] = TypeControl
			}
			if s != "<|endoftext|>" && s != "<|eom_id|>" && t.eot == None {
				t.eot = id
			}
		}
	}
	for _, id := range []int32{t.eos, t.eot, t.eom} {
		if id != None {
			t.eog[id] = true
		}
	}
	// gpt-oss (and solar-open) end a message with <|end|> but a turn with
	// <|return|> or <|call|>: as llama.cpp, <|end|> is then no end of
	// generation but a user-defined token (rendered, matched as text), so
	// that a reply goes on past its analysis message.
	if end, ok := t.eogID("<|end|>"); ok {
		_, ret := t.eogID("<|return|>")
		_, call := t.eogID("<|call|>")
		_, calls := t.eogID("<|calls|>")
		_, flush := t.eogID("<|flush|>")
		if ret && (call || calls) || (call || calls) && flush {
			delete(t.eog, end)
			t.types[end] = TypeUserDefined
		}
	}
	// llama.cpp always renders gpt-oss's structure tokens: they become
	// user-defined, so they are matched even with parseSpecial off.
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.toID[s]; ok {
			t.types[id] = TypeUserDefined
		}
	}
	t.mergeID = make(map[string]int32, len(t.tokens))
	for i, s := range t.tokens {
		if t.types[i] != TypeControl {
			t.mergeID[s] = int32(i)
		}
	}
	for b := 0; b < 256; b++ {
		t.byteTok[b] = t.findByteToken(byte(b))
	}
	for i, ty := range t.types {
		if ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown {
			t.special = append(t.special, int32(i))
			t.maxSpec = max(t.maxSpec, len(t.tokens[i]))
		}
	}
	t.specRune = make(map[rune]bool)
	for _, id := range t.special {
		for _, r := range t.tokens[id] {
			t.specRune[r] = true
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.tokens[t.special[a]]) > len(t.tokens[t.special[b]])
	})
	t.pieces = make([][]byte, len(t.tokens))
	for i := range t.tokens {
		t.pieces[i] = t.makePiece(int32(i))
	}
}

// findByteToken returns the token for byte b: for SentencePiece the byte
// token <0xNN> (or the one-byte token), for byte-level BPE the token of
// b's printable character.
func (t *Tokenizer) findByteToken(b byte) int32 {
	if t.kind == kindBPE && t.pre.raw {
		if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
			return id
		}
		return None
	}
	if t.kind == kindSPM {
		if id, ok := t.toID[fmt.Sprintf("<0x%02X>", b)]; ok {
			return id
		}
		if id, ok := t.mergeID[string([]byte{b})]; ok {
			return id
		}
		return None
	}
	if id, ok := t.mergeID[string(byteToRune[b])]; ok {
		return id
	}
	return None
}

// BOS returns the beginning-of-sequence token, or None.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS returns the end-of-sequence token, or None.
func (t *Tokenizer) EOS() int32 { return t.eos }

// EOT returns the end-of-turn token, or None.
func (t *Tokenizer) EOT() int32 { return t.eot }

// IsEOG reports whether id ends generation (EOS, EOT, EOM and the
// end-of-turn tokens llama.cpp recognises by their text).
func (t *Tokenizer) IsEOG(id int32) bool { return t.eog[id] }

// NVocab returns the number of tokens.
func (t *Tokenizer) NVocab() int { return len(t.tokens) }

// AddBOS reports whether Encode with addSpecial prepends BOS.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddEOS reports whether Encode with addSpecial appends EOS.
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// Type returns the type of token id (TypeUndefined when out of range).
func (t *Tokenizer) Type(id int32) TokenType {
	if id < 0 || int(id) >= len(t.types) {
		return TypeUndefined
	}
	return t.types[id]
}

// TokenText returns the stored text of token id ("" when out of range).
func (t *Tokenizer) TokenText(id int32) string {
	if id < 0 || int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// TokenID returns the id of the token whose stored text is s.
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.toID[s]
	return id, ok
}

// SpecialTexts returns the texts of the control, user-defined and
// unknown tokens, longest first: every text that Encode with
// parseSpecial turns into a special token. Client text must never be
// encoded with parseSpecial; EncodeGuarded keeps it apart in a chat
// prompt.
func (t *Tokenizer) SpecialTexts() []string {
	out := make([]string, 0, len(t.special))
	for _, id := range t.special {
		out = append(out, t.tokens[id])
	}
	return out
}

// InSpecialText reports whether rune r occurs in the text of a special
// token (SpecialTexts); utf8.RuneError stands for any invalid byte. Text
// without such runes can never take part in a special token.
func (t *Tokenizer) InSpecialText(r rune) bool { return t.specRune[r] }

// setStrip sets the per-token strip attributes llama.cpp derives from the
// model's name and pre-tokenizer (it has no metadata for them): in a
// phi-3 model every special token but <unk>, <s> and <|endoftext|> eats
// the whitespace after it (and </s> does); in jina-v2 vocabularies
// <mask>, and in modern-bert models [MASK], eat the whitespace before.
func (t *Tokenizer) setStrip(v Vocab) {
	set := func(text string, a stripAttr, on bool) {
		id, ok := t.toID[text]
		if !ok {
			return
		}
		if t.strip == nil {
			t.strip = map[int32]stripAttr{}
		}
		if on {
			t.strip[id] |= a
		} else {
			t.strip[id] &^= a
		}
	}
	name := strings.ToLower(v.Name)
	switch {
	case t.kind == kindBPE && t.pre.maskLStrip:
		set("<mask>", lstrip, true)
	case strings.Contains(name, "phi-3") || strings.Contains(name, "phi3"):
		for _, id := range t.special {
			set(t.tokens[id], rstrip, true)
		}
		set("</s>", rstrip, true)
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			set(s, rstrip, false)
		}
	case strings.Contains(name, "modern-bert"):
		set("[MASK]", lstrip, true)
	}
}
