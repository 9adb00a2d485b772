// Package vocab builds synthetic byte-level BPE vocabularies laid out as
// the real tokenizers of the model families package synth writes (Llama 3,
// Qwen2.5, Qwen3, Granite 3.x, Mistral Tekken, Phi-4-mini), and SentencePiece ones
// laid out as Gemma 2's, Gemma 3's and Phi-3's (spm.go), for machines that
// have no real vocabulary file.
//
// A vocabulary has the 256 byte tokens in GPT-2's byte-to-unicode form,
// merges learned deterministically from a small built-in English and code
// text, distinct filler tokens up to the real vocabulary size, and the
// family's real special and control tokens at their real ids with their
// real token types, as llama.cpp's convert_hf_to_gguf.py writes them. The
// tokenizer.* metadata (model "gpt2", the pre-tokenizer name, the special
// ids, add_bos_token, the chat template) is the family's real one. Token
// ids of ordinary text differ from the real tokenizer's: only the layout,
// the special tokens and the metadata are real.
//
// The output is a pure function of the Spec.
package vocab

import (
	"embed"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/gguf"
)

// Family names a tokenizer layout.
type Family int

// The families Build knows.
const (
	// Llama3 is Llama 3.x: 128000 BPE tokens, then 256 control tokens
	// (<|begin_of_text|> 128000 … <|eot_id|> 128009, reserved ones).
	Llama3 Family = iota + 1
	// Qwen2 is Qwen2.5: BPE tokens up to <|endoftext|> 151643, 22 added
	// tokens, then [PAD…] padding to the model's vocabulary size.
	Qwen2
	// Qwen3 is Qwen2's layout with four more added tokens, <think> and
	// </think> among them.
	Qwen3
	// Granite is Granite 3.x: StarCoder's 19 control tokens from id 0, BPE
	// tokens, then <|start_of_role|>, <|end_of_role|>, <|tool_call|>.
	Granite
	// Tekken is Mistral's Tekken: 1000 control tokens, then the 256 bytes
	// in byte order from id 1000, then BPE tokens.
	Tekken
	// Gemma2 is Gemma 2's SentencePiece layout (spm.go): <pad> <eos> <bos>
	// <unk> <mask> [@BOS@], <unused0…98>, <start_of_turn> 106 and
	// <end_of_turn> 107, then the 256 byte tokens and the pieces; no
	// space prefix.
	Gemma2
	// Gemma3 is Gemma 3's: as Gemma 2's with [multimodal] at 5 and the
	// turn tokens at 105 and 106.
	Gemma3
	// Phi3 is Phi-3/3.5's: Llama 2's SentencePiece layout (<unk> <s> </s>,
	// the bytes from 3), then from SpecialAt <|endoftext|>, <|assistant|>,
	// placeholders, <|system|>, <|end|>, <|user|>, then [PADn] up to the
	// model's vocabulary size.
	Phi3
	// Phi4Mini is Phi-4-mini's o200k byte-level BPE: BPE tokens up to
	// <|endoftext|> 199999, 18 ids the tokenizer lacks ([PADn], unused),
	// <|endofprompt|> 200018 … <|tag|> 200028, then [PADn] up to the
	// model's vocabulary size; pre-tokenizer gpt-4o.
	Phi4Mini
	// Mistral is Llama 2's SentencePiece layout as Mistral 7B v0.1 and
	// Mixtral 8x7B have it (spm.go): <unk> <s> </s>, the bytes from 3,
	// then the pieces; BOS added, no padding token.
	Mistral
	// GptOss is gpt-oss's o200k_harmony byte-level BPE: BPE tokens up to
	// <|startoftext|> 199998, the 21 added tokens of its
	// tokenizer_config.json (<|endoftext|> 199999, <|return|> 200002,
	// <|constrain|> 200003, <|channel|> 200005, <|start|> 200006,
	// <|end|> 200007, <|message|> 200008, <|call|> 200012, reserved ones
	// between, <|endofprompt|> 200018), all control tokens, then [PADn]
	// up to the model's vocabulary size; pre-tokenizer gpt-4o, BOS
	// <|startoftext|>, EOS <|return|>, padding <|endoftext|>, no
	// add_bos_token key (llama.cpp's default for gpt-4o: no BOS added).
	GptOss
)

// String returns the family's name.
func (f Family) String() string {
	switch f {
	case Llama3:
		return "llama3"
	case Qwen2:
		return "qwen2"
	case Qwen3:
		return "qwen3"
	case Granite:
		return "granite"
	case Tekken:
		return "tekken"
	case Gemma2:
		return "gemma2"
	case Gemma3:
		return "gemma3"
	case Phi3:
		return "phi3"
	case Phi4Mini:
		return "phi4mini"
	case Mistral:
		return "mistral"
	case GptOss:
		return "gpt-oss"
	}
	return fmt.Sprintf("Family(%d)", int(f))
}

// Token types, as llama.cpp's llama_token_type.
const (
	TypeNormal      int32 = 1
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
)

// Spec says which vocabulary Build makes.
type Spec struct {
	Family Family
	// NVocab is the number of tokens (the model's vocab_size).
	NVocab int
	// SpecialAt is the id of the first trailing special token: 128000 for
	// Llama 3, 151643 for Qwen, 49152 for Granite. Small test vocabularies
	// move the block down. Ignored for Tekken, whose controls come first.
	SpecialAt int
	// Template names the chat template (see Templates); "" for none.
	Template string
}

// Vocab is a built vocabulary and its tokenizer.* metadata.
type Vocab struct {
	Model  string    // tokenizer.ggml.model: "gpt2" ("" too) or "llama" (SentencePiece)
	Scores []float32 // tokenizer.ggml.scores (SentencePiece only)
	Pre    string    // tokenizer.ggml.pre
	Tokens []string  // tokenizer.ggml.tokens
	Types  []int32   // tokenizer.ggml.token_type
	Merges []string  // tokenizer.ggml.merges, "left right"
	// Special ids; -1 when the real file does not state one.
	BOS, EOS, UNK, PAD int32
	// AddBOS, AddEOS and AddSpacePrefix are written only when the real
	// file has them (nil: llama.cpp's default for the pre-tokenizer).
	AddBOS, AddEOS, AddSpacePrefix *bool
	ChatTemplate                   string
}

// MaxMerges bounds the merges learned from the built-in text.
const MaxMerges = 3000

// MaxVocab bounds Spec.NVocab, as package tokenizer bounds a vocabulary.
const MaxVocab = 1 << 22

// layout is what differs between the families.
type layout struct {
	pre       string
	lead      []special // control tokens from id 0
	trail     []special // tokens from Spec.SpecialAt
	byteOrder bool      // bytes in byte-value order (Tekken), not GPT-2's
	padUnused bool      // ids after the trailing block are [PADn], UNUSED
	// The special ids, -1 for none; counted from Spec.SpecialAt when
	// trailedIDs, else from 0.
	bos, eos, unk, pad int32
	trailedIDs         bool
	addBOS             *bool
	addEOS             *bool
	addSpace           *bool
}

type special struct {
	text string
	typ  int32
}

func ctl(names ...string) []special {
	s := make([]special, len(names))
	for i, n := range names {
		s[i] = special{n, TypeControl}
	}
	return s
}

func ptr(b bool) *bool { return &b }

// llama3Specials are Llama 3.1's 256 added tokens, all control tokens.
func llama3Specials() []special {
	names := []string{"<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
		"<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|reserved_special_token_2|>",
		"<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"}
	for i := 3; len(names) < 256; i++ {
		names = append(names, fmt.Sprintf("<|reserved_special_token_%d|>", i))
	}
	return ctl(names...)
}

// qwenSpecials are Qwen2.5's 22 added tokens (and Qwen3's 26). Those that
// are not <|…|> and not marked special in tokenizer_config.json become
// USER_DEFINED, as convert_hf_to_gguf.py decides.
func qwenSpecials(qwen3 bool) []special {
	s := ctl("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
		"<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
		"<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")
	s = append(s, special{"<tool_call>", TypeUserDefined}, special{"</tool_call>", TypeUserDefined})
	s = append(s, ctl("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>")...)
	if qwen3 {
		for _, t := range []string{"<tool_response>", "</tool_response>", "<think>", "</think>"} {
			s = append(s, special{t, TypeUserDefined})
		}
	}
	return s
}

// tekkenControls are Tekken's 1000 control tokens.
func tekkenControls() []special {
	names := []string{"<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
		"[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "<pad>", "[PREFIX]", "[MIDDLE]", "[SUFFIX]"}
	for i := len(names); i < 1000; i++ {
		names = append(names, fmt.Sprintf("<SPECIAL_%d>", i))
	}
	return ctl(names...)
}

func layoutOf(f Family) (layout, bool) {
	switch f {
	case Llama3:
		// Llama 3.1/3.2 Instruct: eos is <|eot_id|>. Their
		// tokenizer_config.json has no add_bos_token (BOS comes from the
		// tokenizer.json post-processor), so the file has none and
		// llama.cpp's llama-bpe default (add BOS) applies.
		return layout{pre: "llama-bpe", trail: llama3Specials(), bos: 0, eos: 9, unk: -1, pad: -1,
			trailedIDs: true}, true
	case Qwen2, Qwen3:
		return layout{pre: "qwen2", trail: qwenSpecials(f == Qwen3), padUnused: true,
			bos: 0, eos: 2, unk: -1, pad: 0, addBOS: ptr(false), trailedIDs: true}, true
	case Granite:
		return layout{pre: "refact",
			lead: ctl("<|end_of_text|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>", "<fim_pad>", "<filename>",
				"<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>", "<jupyter_start>", "<jupyter_text>",
				"<jupyter_code>", "<jupyter_output>", "<empty_output>", "<commit_before>", "<commit_msg>",
				"<commit_after>", "<reponame>"),
			trail: ctl("<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"),
			bos:   0, eos: 0, unk: 0, pad: 0, addBOS: ptr(false), addSpace: ptr(false)}, true
	case Tekken:
		return layout{pre: "tekken", lead: tekkenControls(), byteOrder: true,
			bos: 1, eos: 2, unk: 0, pad: -1, addBOS: ptr(true), addEOS: ptr(false)}, true
	case Phi4Mini:
		// Phi-4-mini-instruct's tokenizer_config.json: bos, eos and pad
		// are <|endoftext|>, add_bos_token false.
		trail := ctl("<|endoftext|>")
		for range 18 {
			trail = append(trail, special{"", TypeUnused}) // ids the tokenizer lacks
		}
		trail = append(trail, ctl("<|endofprompt|>", "<|assistant|>", "<|end|>", "<|user|>", "<|system|>", "<|tool|>",
			"<|/tool|>", "<|tool_call|>", "<|/tool_call|>", "<|tool_response|>", "<|tag|>")...)
		return layout{pre: "gpt-4o", trail: trail, padUnused: true, bos: 0, eos: 0, unk: -1, pad: 0,
			addBOS: ptr(false), addEOS: ptr(false), trailedIDs: true}, true
	case GptOss:
		return layout{pre: "gpt-4o", trail: harmonySpecials(), padUnused: true, bos: 0, eos: 4, unk: -1, pad: 1,
			trailedIDs: true}, true
	}
	return layout{}, false
}

// harmonySpecials are gpt-oss's 21 added tokens from <|startoftext|>
// (199998) to <|endofprompt|> (200018), with the reserved ones between
// named by their real ids.
func harmonySpecials() []special {
	named := map[int]string{199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
		200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>",
		200008: "<|message|>", 200012: "<|call|>", 200018: "<|endofprompt|>"}
	var names []string
	for id := 199998; id <= 200018; id++ {
		n, ok := named[id]
		if !ok {
			n = fmt.Sprintf("<|reserved_%d|>", id)
		}
		names = append(names, n)
	}
	return ctl(names...)
}

// Build makes the vocabulary s describes.
func Build(s Spec) (*Vocab, error) {
	if spmFamily(s.Family) {
		return buildSPM(s)
	}
	l, ok := layoutOf(s.Family)
	if !ok {
		return nil, fmt.Errorf("vocab: unknown family %v", s.Family)
	}
	if s.NVocab <= 0 || s.NVocab > MaxVocab {
		return nil, fmt.Errorf("vocab: %v: %d tokens, want 1 to %d", s.Family, s.NVocab, MaxVocab)
	}
	lo, hi := len(l.lead), s.SpecialAt // the BPE region
	if s.Family == Tekken {
		hi = s.NVocab
	}
	if hi-lo < 256 || hi+len(l.trail) > s.NVocab {
		return nil, fmt.Errorf("vocab: %v: %d tokens with specials at %d leave no room for the 256 bytes and %d special tokens",
			s.Family, s.NVocab, s.SpecialAt, len(l.lead)+len(l.trail))
	}
	if !l.padUnused && s.Family != Tekken && hi+len(l.trail) != s.NVocab {
		return nil, fmt.Errorf("vocab: %v: the special tokens must end the vocabulary: %d + %d != %d",
			s.Family, hi, len(l.trail), s.NVocab)
	}
	tmpl := ""
	if s.Template != "" {
		var err error
		if tmpl, err = Template(s.Template); err != nil {
			return nil, err
		}
	}
	v := &Vocab{Pre: l.pre, Tokens: make([]string, s.NVocab), Types: make([]int32, s.NVocab),
		AddBOS: l.addBOS, AddEOS: l.addEOS, AddSpacePrefix: l.addSpace, ChatTemplate: tmpl}
	for i, t := range l.lead {
		v.Tokens[i], v.Types[i] = t.text, t.typ
	}
	for i, t := range l.trail {
		v.Tokens[hi+i], v.Types[hi+i] = t.text, t.typ
		if t.text == "" {
			// An id the tokenizer lacks: convert_hf_to_gguf.py's filler.
			v.Tokens[hi+i] = fmt.Sprintf("[PAD%d]", hi+i)
		}
	}
	if l.padUnused {
		for i := hi + len(l.trail); i < s.NVocab; i++ {
			v.Tokens[i], v.Types[i] = fmt.Sprintf("[PAD%d]", i), TypeUnused
		}
	}
	pieces, merges := learn(hi-lo-256, l.byteOrder)
	v.Merges = merges
	for i, p := range pieces {
		v.Tokens[lo+i], v.Types[lo+i] = p, TypeNormal
	}
	// Fillers: normal tokens no merge produces and no pre-tokenizer can
	// cut out of text as one piece (letters, then digits and a bracket),
	// so they are never produced, yet the ids keep the real layout.
	for i := lo + len(pieces); i < hi; i++ {
		v.Tokens[i], v.Types[i] = fmt.Sprintf("[synth%d]", i), TypeNormal
	}
	base := int32(0)
	if l.trailedIDs {
		base = int32(hi)
	}
	id := func(x int32) int32 {
		if x < 0 {
			return -1
		}
		return base + x
	}
	v.BOS, v.EOS, v.UNK, v.PAD = id(l.bos), id(l.eos), id(l.unk), id(l.pad)
	return v, nil
}

// KVs returns the tokenizer.* metadata pairs in the order
// convert_hf_to_gguf.py writes them.
func (v *Vocab) KVs() []gguf.KV {
	model := v.Model
	if model == "" {
		model = "gpt2"
	}
	kvs := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.StringValue(model)},
		{Key: "tokenizer.ggml.pre", Value: gguf.StringValue(v.Pre)},
		{Key: "tokenizer.ggml.tokens", Value: gguf.StringsValue(v.Tokens)},
	}
	if model == "llama" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.scores", Value: gguf.Float32sValue(v.Scores)},
			gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.Int32sValue(v.Types)})
	} else {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.token_type", Value: gguf.Int32sValue(v.Types)},
			gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.StringsValue(v.Merges)})
	}
	for _, s := range []struct {
		key string
		id  int32
	}{{"bos_token_id", v.BOS}, {"eos_token_id", v.EOS}, {"unknown_token_id", v.UNK}, {"padding_token_id", v.PAD}} {
		if s.id >= 0 {
			kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml." + s.key, Value: gguf.Uint32Value(uint32(s.id))})
		}
	}
	if v.AddBOS != nil {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_bos_token", Value: gguf.BoolValue(*v.AddBOS)})
	}
	if v.AddEOS != nil {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_eos_token", Value: gguf.BoolValue(*v.AddEOS)})
	}
	if v.AddSpacePrefix != nil {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.add_space_prefix", Value: gguf.BoolValue(*v.AddSpacePrefix)})
	}
	if v.ChatTemplate != "" {
		kvs = append(kvs, gguf.KV{Key: "tokenizer.chat_template", Value: gguf.StringValue(v.ChatTemplate)})
	}
	return kvs
}

//go:embed templates/*.jinja
var templates embed.FS

// Templates lists the chat template names Template knows.
func Templates() []string {
	ents, err := templates.ReadDir("templates")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".jinja"))
	}
	return names
}

// Template returns the real chat template of the given name: llama-3.1
// (Llama 3.1 Instruct), llama-3.2 (Llama 3.2 Instruct), qwen2.5 (Qwen2.5
// Instruct), qwen3, granite-3.1 (Granite 3.1 Instruct), mistral-nemo
// (Mistral Nemo Instruct 2407), gemma-2 (Gemma 2 it), gemma-3 (Gemma 3 it)
// phi-3.5 (Phi-3.5-mini-instruct), phi-4-mini (Phi-4-mini-instruct),
// mixtral (Mixtral-8x7B-Instruct-v0.1) or gpt-oss (gpt-oss-20b and
// -120b, as llama.cpp's models/templates/openai-gpt-oss-120b.jinja).
func Template(name string) (string, error) {
	b, err := templates.ReadFile("templates/" + name + ".jinja")
	if err != nil {
		return "", fmt.Errorf("vocab: chat template %q: want one of %s", name, strings.Join(Templates(), ", "))
	}
	return string(b), nil
}

// byteRunes is GPT-2's byte-to-unicode map: printable bytes stand for
// themselves, the others are moved to U+0100 and up in byte order.
func byteRunes() [256]rune {
	var m [256]rune
	n := rune(0)
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			m[b] = rune(b)
		} else {
			m[b] = 256 + n
			n++
		}
	}
	return m
}

// byteTokens returns the 256 byte tokens in GPT-2's vocabulary order (the
// printable bytes first, as its bytes_to_unicode lists them) or, for
// Tekken, in byte-value order.
func byteTokens(byteOrder bool) []string {
	m := byteRunes()
	toks := make([]string, 0, 256)
	if byteOrder {
		for b := range 256 {
			toks = append(toks, string(m[b]))
		}
		return toks
	}
	for b := range 256 {
		if m[b] < 256 {
			toks = append(toks, string(m[b]))
		}
	}
	for b := range 256 {
		if m[b] >= 256 {
			toks = append(toks, string(m[b]))
		}
	}
	return toks
}

// splitWords cuts text into GPT-2-like pre-tokens: an optional leading
// space with a run of letters, of digits or of other symbols; newlines
// and other whitespace on their own.
func splitWords(text string) []string {
	var out []string
	class := func(r rune) int {
		switch {
		case unicode.IsLetter(r):
			return 1
		case unicode.IsDigit(r):
			return 2
		case r == '\n':
			return 4
		case unicode.IsSpace(r):
			return 3
		}
		return 5
	}
	for i := 0; i < len(text); {
		start := i
		r, n := utf8.DecodeRuneInString(text[i:])
		c := class(r)
		if r == ' ' && i+1 < len(text) {
			r2, _ := utf8.DecodeRuneInString(text[i+1:])
			if c2 := class(r2); c2 != 3 && c2 != 4 {
				i += n
				r, n, c = r2, utf8.RuneLen(r2), c2
			}
		}
		i += n
		for i < len(text) {
			r2, n2 := utf8.DecodeRuneInString(text[i:])
			if class(r2) != c || c == 4 && r2 != r {
				break
			}
			i += n2
		}
		out = append(out, text[start:i])
	}
	return out
}

// learn returns the byte tokens followed by the tokens of up to
// min(room, MaxMerges) merges, and the merges, learned by byte-level BPE
// from corpus. Ties between equally frequent pairs go to the pair whose
// merge string sorts first, so the result is deterministic.
func learn(room int, byteOrder bool) (pieces, merges []string) {
	pieces = byteTokens(byteOrder)
	limit := min(room, MaxMerges)
	m := byteRunes()
	// Symbols are numbered; words are symbol sequences with a count.
	sym := map[string]int32{}
	var text []string
	intern := func(s string) int32 {
		if id, ok := sym[s]; ok {
			return id
		}
		sym[s] = int32(len(text))
		text = append(text, s)
		return sym[s]
	}
	for _, p := range pieces {
		intern(p)
	}
	type word struct {
		syms []int32
		n    int
	}
	counts := map[string]int{}
	var order []string
	for _, w := range splitWords(corpus) {
		if counts[w] == 0 {
			order = append(order, w)
		}
		counts[w]++
	}
	words := make([]word, 0, len(order))
	for _, w := range order {
		s := make([]int32, 0, len(w))
		for i := 0; i < len(w); i++ {
			s = append(s, intern(string(m[w[i]])))
		}
		words = append(words, word{s, counts[w]})
	}
	key := func(a, b int32) uint64 { return uint64(a)<<32 | uint64(b) }
	pairs := map[uint64]int{}
	addPairs := func(w word, sign int) {
		for i := 0; i+1 < len(w.syms); i++ {
			k := key(w.syms[i], w.syms[i+1])
			pairs[k] += sign * w.n
			if pairs[k] == 0 {
				delete(pairs, k)
			}
		}
	}
	for _, w := range words {
		addPairs(w, 1)
	}
	for len(merges) < limit && len(pairs) > 0 {
		var best uint64
		bestN := 0
		var bestS string
		for k, n := range pairs {
			if n < bestN {
				continue
			}
			s := text[k>>32] + " " + text[uint32(k)]
			if n > bestN || s < bestS {
				best, bestN, bestS = k, n, s
			}
		}
		a, b := int32(best>>32), int32(uint32(best))
		joined := text[a] + text[b]
		if _, seen := sym[joined]; !seen {
			pieces = append(pieces, joined)
		}
		c := intern(joined)
		merges = append(merges, bestS)
		for i := range words {
			w := &words[i]
			has := false
			for j := 0; j+1 < len(w.syms); j++ {
				if w.syms[j] == a && w.syms[j+1] == b {
					has = true
					break
				}
			}
			if !has {
				continue
			}
			addPairs(*w, -1)
			out := w.syms[:0]
			for j := 0; j < len(w.syms); j++ {
				if j+1 < len(w.syms) && w.syms[j] == a && w.syms[j+1] == b {
					out = append(out, c)
					j++
				} else {
					out = append(out, w.syms[j])
				}
			}
			w.syms = out
			addPairs(*w, 1)
		}
	}
	return pieces, merges
}
