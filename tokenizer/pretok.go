package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// span is a half-open byte range [a, b) of the text being split.
type span struct{ a, b int }

// matcher returns the length in bytes of the match of one pre-tokenizer
// expression at byte offset p of s, looking no further than end, or 0 for
// no match. It plays the part of one regular expression of llama.cpp's.
type matcher func(s string, p, end int) int

// preKind names a pre-tokenizer family: one list of llama.cpp's regular
// expressions (LLAMA_VOCAB_PRE_TYPE_*), shared by several names.
type preKind uint8

const (
	preDefault preKind = iota
	preGPT2
	preLlama3
	preQwen2
	preQwen35
	preStarcoder
	preFalcon
	preDeepseekLLM
	preDeepseekCoder
	preDeepseek3
	preSpark25
	preYoutu
	preJais2
	prePoro
	preViking
	preTekken
	preChameleon
	preGPT4o
	preGraniteEmbMulti
	preTinyAya
	preKimiK2
	preSuperBPE
	preBailingMoE
	preSeedCoder
	preUfakzeka
	preAfmoe
	preLaguna
	preExaoneMoE
	preMiniCPM5
	preRawLines
)

// preTokenizer describes the pre-tokenizer named by tokenizer.ggml.pre
// and the flags llama.cpp derives from the name.
type preTokenizer struct {
	kind         preKind
	clean        bool // clean up spaces in Decode
	addBOS       bool // default for add_bos_token
	ignoreMerges bool // take a whole word that is a token as is
	noBOS        bool // no default BOS id (chatglm): only the file's
	maskLStrip   bool // <mask> eats the whitespace before it (jina-v2)
	raw          bool // BPE over raw UTF-8 with spaces as "▁", <0xNN> byte tokens
	newlineWord  bool // a word of newlines that is a token is taken as is (gemma4)
	forceBOS     bool // BOS is added whatever add_bos_token says (gemma4)
	steps        []splitter
}

// preNames maps the tokenizer.ggml.pre values current llama.cpp accepts
// for byte-level BPE vocabularies to their families and flags, as its
// llama_vocab::impl::load sets them (clean_spaces is on unless the name
// turns it off).
var preNames = map[string]preTokenizer{
	"default":                 {kind: preDefault, clean: true},
	"gpt-2":                   {kind: preGPT2, clean: true},
	"phi-2":                   {kind: preGPT2, clean: true},
	"jina-es":                 {kind: preGPT2, clean: true},
	"jina-de":                 {kind: preGPT2, clean: true},
	"gigachat":                {kind: preGPT2, clean: true},
	"jina-v2-es":              {kind: preGPT2, clean: true, maskLStrip: true},
	"jina-v2-de":              {kind: preGPT2, clean: true, maskLStrip: true},
	"jina-v2-code":            {kind: preGPT2, clean: true, maskLStrip: true},
	"jina-v1-en":              {kind: preGPT2, clean: true},
	"roberta-bpe":             {kind: preGPT2, clean: true},
	"a.x-4.0":                 {kind: preGPT2, clean: true},
	"mellum":                  {kind: preGPT2, clean: true},
	"modern-bert":             {kind: preGPT2, clean: true},
	"mpt":                     {kind: preGPT2, clean: true},
	"olmo":                    {kind: preGPT2, clean: true},
	"jais":                    {kind: preGPT2, clean: true},
	"exaone4":                 {kind: preGPT2, clean: true},
	"trillion":                {kind: preGPT2},
	"granite-docling":         {kind: preGPT2},
	"llama3":                  {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"llama-v3":                {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"llama-bpe":               {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"falcon3":                 {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"falcon-h1":               {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"pixtral":                 {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"midm-2.0":                {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"lfm2":                    {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"jina-v5-nano":            {kind: preLlama3, clean: true, addBOS: true, ignoreMerges: true},
	"dbrx":                    {kind: preLlama3, clean: true},
	"smaug-bpe":               {kind: preLlama3, clean: true},
	"glm4":                    {kind: preLlama3, clean: true, noBOS: true},
	"chatglm-bpe":             {kind: preLlama3, clean: true, noBOS: true},
	"jais-2":                  {kind: preJais2, clean: true},
	"minicpm5":                {kind: preMiniCPM5, clean: true, ignoreMerges: true},
	"qwen2":                   {kind: preQwen2},
	"deepseek-r1-qwen":        {kind: preQwen2},
	"kormo":                   {kind: preQwen2},
	"f2llmv2":                 {kind: preQwen2},
	"hunyuan":                 {kind: preQwen2},
	"solar-open":              {kind: preQwen2},
	"grok-2":                  {kind: preQwen2},
	"megrez":                  {kind: preQwen2, clean: true},
	"stablelm2":               {kind: preQwen2, clean: true},
	"qwen35":                  {kind: preQwen35},
	"starcoder":               {kind: preStarcoder, clean: true},
	"refact":                  {kind: preStarcoder, clean: true},
	"command-r":               {kind: preStarcoder},
	"smollm":                  {kind: preStarcoder},
	"codeshell":               {kind: preStarcoder, clean: true},
	"exaone":                  {kind: preStarcoder, clean: true},
	"minerva-7b":              {kind: preStarcoder, clean: true},
	"mellum2":                 {kind: preStarcoder, clean: true},
	"falcon":                  {kind: preFalcon, clean: true},
	"deepseek-llm":            {kind: preDeepseekLLM},
	"deepseek-coder":          {kind: preDeepseekCoder},
	"deepseek-v3":             {kind: preDeepseek3},
	"hunyuan-dense":           {kind: preDeepseek3},
	"joyai-llm":               {kind: preDeepseek3},
	"hy_v4":                   {kind: preDeepseek3},
	"spark2_5":                {kind: preSpark25},
	"youtu":                   {kind: preYoutu, ignoreMerges: true},
	"poro-chat":               {kind: prePoro},
	"bloom":                   {kind: prePoro, clean: true},
	"gpt3-finnish":            {kind: prePoro, clean: true},
	"viking":                  {kind: preViking},
	"tekken":                  {kind: preTekken, addBOS: true, ignoreMerges: true},
	"chameleon":               {kind: preChameleon, addBOS: true},
	"gpt-4o":                  {kind: preGPT4o},
	"llama4":                  {kind: preGPT4o},
	"kanana2":                 {kind: preGPT4o},
	"talkie":                  {kind: preGPT4o},
	"minimax-m2":              {kind: preGPT4o},
	"granite-embed-multi-97m": {kind: preGraniteEmbMulti, ignoreMerges: true},
	"tiny_aya":                {kind: preTinyAya},
	"cohere2moe":              {kind: preTinyAya},
	"kimi-k2":                 {kind: preKimiK2},
	"superbpe":                {kind: preSuperBPE},
	"bailingmoe":              {kind: preBailingMoE},
	"bailingmoe2":             {kind: preBailingMoE},
	"llada-moe":               {kind: preBailingMoE},
	"seed-coder":              {kind: preSeedCoder},
	"ufakzeka":                {kind: preUfakzeka},
	"afmoe":                   {kind: preAfmoe},
	"laguna":                  {kind: preLaguna},
	"exaone-moe":              {kind: preExaoneMoE, clean: true},
	"gemma4": {kind: preRawLines, clean: true, raw: true, newlineWord: true, addBOS: true,
		forceBOS: true},
	"granite-embed-multi-311m": {kind: preRawLines, clean: true, raw: true, newlineWord: true,
		addBOS: true, forceBOS: true},
	"sarvam-moe": {kind: preRawLines, raw: true},
}

// unsupportedPre lists the names llama.cpp knows that lisa refuses, with
// why: "whitespace" belongs to llama.cpp's whitespace tokenizer model
// (llama.cpp aborts on it with a gpt2 vocabulary).
var unsupportedPre = map[string]string{
	"whitespace": "needs the whitespace tokenizer model",
}

// lookupPre returns the pre-tokenizer named name with its splitting steps
// built (regular expressions compiled), or false when lisa does not know
// the name.
func lookupPre(name string) (preTokenizer, bool) {
	p, ok := preNames[name]
	if !ok {
		return p, false
	}
	p.steps = p.kind.steps()
	return p, true
}

// ws is Unicode's White_Space property as a Go regexp class body (Go's
// \s is ASCII only).
const ws = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

// deepseekLetters are the letters of DeepSeek LLM's word expression
// (the cased letters of many scripts), as code point ranges.
const deepseekLetters = `A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}` +
	`\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}` +
	`\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}` +
	`\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}` +
	`\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}` +
	`\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}` +
	`\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}` +
	`\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}` +
	`\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}` +
	`\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}` +
	`\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}` +
	`\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}` +
	`\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}` +
	`\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}`

// cjk is the CJK/Hangul class of the DeepSeek expressions.
const cjk = `[\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+`

var deepseekLLMExprs = []string{
	`[\r\n]`,
	`[` + ws + `]?[` + deepseekLetters + `]+`,
	`[` + ws + `]?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+`,
	`[` + ws + `]+$`,
	cjk,
	`\pN+`,
}

var deepseekCoderExprs = []string{
	`[\r\n]`,
	`[` + ws + `]?\pL+`,
	`[` + ws + `]?\pP+`,
	cjk,
	`\pN`,
}

// split cuts s (valid UTF-8) into the words BPE merges independently,
// running the family's steps in order, each on the pieces of the last.
func (p *preTokenizer) split(s string) []span {
	spans := []span{{0, len(s)}}
	for _, st := range p.steps {
		spans = st(s, spans)
	}
	return spans
}

// splitBy splits every span by the leftmost-first matches of m, keeping
// the text between matches as words of their own, as llama.cpp and the
// Hugging Face "Isolated" split behaviour do.
func splitBy(s string, in []span, m matcher) []span {
	out := make([]span, 0, len(in)+len(in)/2)
	for _, sp := range in {
		loose := sp.a
		for p := sp.a; p < sp.b; {
			n := m(s, p, sp.b)
			if n <= 0 {
				_, size := utf8.DecodeRuneInString(s[p:sp.b])
				p += size
				continue
			}
			if loose < p {
				out = append(out, span{loose, p})
			}
			out = append(out, span{p, p + n})
			p += n
			loose = p
		}
		if loose < sp.b {
			out = append(out, span{loose, sp.b})
		}
	}
	return out
}

// at decodes the rune at p, or returns (-1, 0) at or past end.
func at(s string, p, end int) (rune, int) {
	if p >= end {
		return -1, 0
	}
	if c := s[p]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[p:end])
}

func isL(r rune) bool {
	return r >= 0 && (r < utf8.RuneSelf && isASCIILetter(r) || r >= utf8.RuneSelf && unicode.IsLetter(r))
}
func isN(r rune) bool {
	return r >= 0 && (r >= '0' && r <= '9' || r >= utf8.RuneSelf && unicode.IsNumber(r))
}
func isSpace(r rune) bool { return r >= 0 && unicode.IsSpace(r) }
func isNL(r rune) bool    { return r == '\r' || r == '\n' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return r >= 0 && !isSpace(r) && !isL(r) && !isN(r) }

func isASCIILetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// run returns the end of the run of runes satisfying f from p.
func run(s string, p, end int, f func(rune) bool) int {
	for p < end {
		r, n := at(s, p, end)
		if !f(r) {
			break
		}
		p += n
	}
	return p
}

// contraction matches 's 't 're 've 'm 'll 'd at p (s[p] == '\”).
func contraction(s string, p, end int, fold bool) int {
	rest := s[p+1 : end]
	for _, c := range [...]string{"s", "t", "re", "ve", "m", "ll", "d"} {
		if len(rest) < len(c) {
			continue
		}
		if head := rest[:len(c)]; head == c || fold && strings.EqualFold(head, c) {
			return 1 + len(c)
		}
	}
	return 0
}

// matchGPT2 is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+|
// ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+.
func matchGPT2(s string, p, end int) int {
	c0, n0 := at(s, p, end)
	if c0 == '\'' {
		if n := contraction(s, p, end, false); n > 0 {
			return n
		}
	}
	q := p
	c := c0
	if c0 == ' ' {
		if c1, _ := at(s, p+1, end); c1 >= 0 && !isSpace(c1) {
			q, c = p+1, c1
		}
	}
	switch {
	case isL(c):
		return run(s, q, end, isL) - p
	case isN(c):
		return run(s, q, end, isN) - p
	case isOther(c):
		return run(s, q, end, isOther) - p
	}
	_ = n0
	return matchTrailingSpace(s, p, end)
}

// matchTrailingSpace is \s+(?!\S)|\s+ at p.
func matchTrailingSpace(s string, p, end int) int {
	last, q := -1, p
	for q < end {
		r, n := at(s, q, end)
		if !isSpace(r) {
			break
		}
		last = q
		q += n
	}
	if last < 0 {
		return 0
	}
	if q < end && last > p {
		return last - p // leave the last space to the word that follows
	}
	return q - p
}

// matchLlama3 is Llama 3's expression (digits = 3) or Qwen2's (digits =
// 1): (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,d}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+.
func matchLlama3(digits int) matcher {
	return func(s string, p, end int) int {
		c0, n0 := at(s, p, end)
		if c0 == '\'' {
			if n := contraction(s, p, end, true); n > 0 {
				return n
			}
		}
		if !isNL(c0) && !isL(c0) && !isN(c0) {
			if c1, _ := at(s, p+n0, end); isL(c1) {
				return run(s, p+n0, end, isL) - p
			}
		}
		if isL(c0) {
			return run(s, p, end, isL) - p
		}
		if isN(c0) {
			q := p
			for i := 0; i < digits; i++ {
				r, n := at(s, q, end)
				if !isN(r) {
					break
				}
				q += n
			}
			return q - p
		}
		return matchLlama3Tail(s, p, end, c0)
	}
}

// matchLlama3Tail is the end of Llama 3's expression, from p where c0
// starts: ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+.
func matchLlama3Tail(s string, p, end int, c0 rune) int {
	q := p
	if c0 == ' ' {
		if c1, _ := at(s, p+1, end); isOther(c1) {
			q = p + 1
		}
	}
	if c, _ := at(s, q, end); isOther(c) {
		q = run(s, q, end, isOther)
		return run(s, q, end, isNL) - p
	}
	if !isSpace(c0) {
		return 0
	}
	lastNL, q := -1, p
	for q < end {
		r, n := at(s, q, end)
		if !isSpace(r) {
			break
		}
		if isNL(r) {
			lastNL = q
		}
		q += n
	}
	if lastNL >= 0 {
		return lastNL + 1 - p
	}
	return matchTrailingSpace(s, p, end)
}

// matchPunctRun is [\p{P}\$\+<=>\^~\|]+, with ` added for falcon.
func matchPunctRun(backquote bool) matcher {
	in := func(r rune) bool {
		switch r {
		case '$', '+', '<', '=', '>', '^', '~', '|':
			return true
		case '`':
			return backquote
		}
		return r >= 0 && unicode.IsPunct(r)
	}
	return func(s string, p, end int) int { return run(s, p, end, in) - p }
}

// matchNumberRun is \p{N}+.
func matchNumberRun(s string, p, end int) int { return run(s, p, end, isN) - p }

// matchOneNumber is \p{N}.
func matchOneNumber(s string, p, end int) int {
	if r, n := at(s, p, end); isN(r) {
		return n
	}
	return 0
}

// matchASCIIDigits3 is [0-9][0-9][0-9].
func matchASCIIDigits3(s string, p, end int) int {
	if end-p >= 3 && isDigit(s[p]) && isDigit(s[p+1]) && isDigit(s[p+2]) {
		return 3
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
