package tokenizer

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitter is one step of a pre-tokenizer: it cuts every span of s
// further (one of llama.cpp's regular expressions, or one of its
// hand-written splitters).
type splitter func(s string, in []span) []span

// by returns the step that splits by the leftmost-first matches of m.
func by(m matcher) splitter {
	return func(s string, in []span) []span { return splitBy(s, in, m) }
}

// The character classes of llama.cpp's std::regex fallback, which runs on
// a "collapsed" copy of the text: ASCII stays, every other character
// becomes one code point standing for its Unicode category (see
// collapsedRune), and \p{..} in the expression becomes that code point
// plus the category's ASCII members as llama.cpp lists them (its \p{S}
// has '~' too, and \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo} all mean
// any letter). Whitespace outside ASCII collapses to \v, which is in
// std::regex's \s.
const (
	colOther  = '\uE0D0'
	colNumber = '\uE0D1'
	colLetter = '\uE0D2'
	colPunct  = '\uE0D3'
	colMark   = '\uE0D4'
	colSymbol = '\uE0D5'
)

// classes expands the placeholders of the expressions below.
var classes = strings.NewReplacer(
	"{L}", `A-Za-z\x{E0D2}`,
	"{N}", `0-9\x{E0D1}`,
	"{P}", `!-#%-*,-/:-;?-@\[-\]_{}\x{E0D3}`,
	"{S}", `$+<->^\x60|~\x{E0D5}`,
	"{M}", `\x{E0D4}`,
	"{WS}", `\t\n\v\f\r `,
	// (?=[\p{L}])[^a-z] and (?=[\p{L}])[^A-Z] in the collapsed text.
	"{UP}", `A-Z\x{E0D2}`,
	"{LO}", `a-z\x{E0D2}`,
	"{UPM}", `A-Z\x{E0D2}\x{E0D4}`,
	"{LOM}", `a-z\x{E0D2}\x{E0D4}`,
	"{CONTR}", `'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]`,
	"{ASCIIP}", `[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_\x60{|}~]`,
	"{WSALL}", ws,
)

// collapsedRune is the code point r stands for in the collapsed text.
func collapsedRune(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		return r
	case unicode.IsSpace(r):
		return '\v'
	case unicode.IsLetter(r):
		return colLetter
	case unicode.IsNumber(r):
		return colNumber
	case unicode.IsPunct(r):
		return colPunct
	case unicode.IsMark(r):
		return colMark
	case unicode.IsSymbol(r):
		return colSymbol
	}
	return colOther
}

// rawRune is the code point r stands for in the text llama.cpp gives
// std::wregex for an expression without \p{..}: whitespace outside ASCII
// becomes \v, the rest stays.
func rawRune(r rune) rune {
	if r >= utf8.RuneSelf && unicode.IsSpace(r) {
		return '\v'
	}
	return r
}

// collapse returns t with each character mapped by f and, for each byte
// of the result (and its end), the offset in t of the character it
// comes from.
func collapse(t string, f func(rune) rune, buf []byte, off []int) ([]byte, []int) {
	for i, r := range t {
		c := f(r)
		for range utf8.RuneLen(c) {
			off = append(off, i)
		}
		buf = utf8.AppendRune(buf, c)
	}
	return buf, append(off, len(t))
}

// tailKind is how an expression ends in whitespace alternatives that
// need look-ahead, which Go's regexp lacks: they are matched by hand,
// with lower priority than the rest of the expression.
type tailKind uint8

const (
	tailNone      tailKind = iota
	tailSpace              // \s+(?!\S)|\s+
	tailSpaceOnly          // \s+(?!\S)
	tailJais2              // \s{512}(?!\S)|\s{256}(?!\S)|…|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}
)

// rx returns the step of one of llama.cpp's expressions: expr (with the
// placeholders of classes) is run on the collapsed text when collapsed is
// set, else on the text as std::wregex sees it (rawRune), with tail
// matched by hand. Matches are
// leftmost-first, as std::regex finds them; the text between matches
// stays a piece of its own.
func rx(expr string, collapsed bool, tail tailKind) splitter {
	re := regexp.MustCompile(classes.Replace(expr))
	return func(s string, in []span) []span {
		out := make([]span, 0, len(in)+len(in)/2)
		var buf []byte
		var off []int
		for _, sp := range in {
			f := rawRune
			if collapsed {
				f = collapsedRune
			}
			buf, off = collapse(s[sp.a:sp.b], f, buf[:0], off[:0])
			t := string(buf)
			at := func(i int) int { return sp.a + off[i] }
			loose := 0
			emit := func(a, b int) {
				if loose < a {
					out = append(out, span{at(loose), at(a)})
				}
				out = append(out, span{at(a), at(b)})
				loose = b
			}
			ms, me := -1, -1 // the leftmost match at or after p, valid while p <= ms
			for p := 0; p < len(t); {
				if ms < p {
					ms, me = find(re, t, p)
				}
				if tail != tailNone {
					if w, n := tailMatch(t, p, ms, tail); n > 0 {
						emit(w, w+n)
						p = w + n
						continue
					}
				}
				if ms >= len(t) {
					break
				}
				emit(ms, me)
				p = me
			}
			if loose < len(t) {
				out = append(out, span{at(loose), sp.b})
			}
		}
		return out
	}
}

// find returns the leftmost non-empty match of re in t at or after p, or
// (len(t), len(t)).
func find(re *regexp.Regexp, t string, p int) (int, int) {
	for p < len(t) {
		m := re.FindStringIndex(t[p:])
		if m == nil {
			break
		}
		if m[1] > m[0] {
			return p + m[0], p + m[1]
		}
		// An empty match splits nothing; look again one character on.
		_, n := utf8.DecodeRuneInString(t[p+m[0]:])
		p += m[0] + n
	}
	return len(t), len(t)
}

func isCollapsedSpace(c byte) bool {
	return c == ' ' || c >= '\t' && c <= '\r'
}

// tailMatch finds the first whitespace tail match in t[p:limit] (collapsed
// text, whose whitespace is ASCII) and returns its start and length, or
// length 0.
func tailMatch(t string, p, limit int, tail tailKind) (int, int) {
	for w := p; w < limit; w++ {
		if !isCollapsedSpace(t[w]) {
			continue
		}
		r := w
		for r < len(t) && isCollapsedSpace(t[r]) {
			r++
		}
		if n := tailLen(r-w, r == len(t), tail); n > 0 {
			return w, n
		}
		w = r - 1 // \s+(?!\S) cannot start anywhere in this run
	}
	return 0, 0
}

// tailLen is the length of the tail match at the start of a run of n
// spaces; atEnd says whether the run ends the text. (?!\S) holds after k
// spaces when k < n or the run ends the text.
func tailLen(n int, atEnd bool, tail tailKind) int {
	fits := func(k int) bool { return k < n || k == n && atEnd }
	switch tail {
	case tailSpace, tailSpaceOnly:
		if fits(n) {
			return n
		}
		if n > 1 {
			return n - 1
		}
		if tail == tailSpace {
			return n
		}
		return 0
	case tailJais2:
		for _, k := range [...]int{512, 256, 128, 64, 32, 16, 8, 4, 2, 1} {
			if fits(k) {
				return k
			}
		}
		return 1
	}
	return 0
}

// The expressions of llama.cpp's pre-tokenizers, in Go's syntax with the
// placeholders of classes.
const (
	exprLlama3  = `(?:{CONTR})|[^\r\n{L}{N}]?[{L}]+|[{N}]{1,3}| ?[^{WS}{L}{N}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprQwen2   = `(?:{CONTR})|[^\r\n{L}{N}]?[{L}]+|[{N}]| ?[^{WS}{L}{N}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprQwen35  = `(?:{CONTR})|[^\r\n{L}{N}]?[{L}{M}]+|[{N}]| ?[^{WS}{L}{M}{N}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprMiniCPM = `(?:{CONTR})|[^\r\n{L}{N}]?[{L}]+|[{N}]+| ?[^{WS}{L}{N}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprDS3     = `{ASCIIP}[A-Za-z]+|[^\r\n{L}{P}{S}]?[{L}{M}]+| ?[{P}{S}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprSpark   = `{ASCIIP}[A-Za-z]+|[^\r\n{L}{P}{S}]?[{L}{M}]+| ?[{P}{S}]+|[\r\n]`
	exprYoutu   = `[^\r\n{L}{N}]?[{L}{M}]*[{L}{M}]+(?:{CONTR})?|[^\r\n{L}{N}]?[{L}{M}]+[{L}{M}]*(?:{CONTR})?|[{N}]| ?[^{WS}{L}{N}]+[\r\n/]*|[{WS}]*[\r\n]+`
	exprTekken  = `[^\r\n{L}{N}]?[{UP}]*[{LO}]+|[^\r\n{L}{N}]?[{UP}]+[{LO}]*|[{N}]| ?[^{WS}{L}{N}]+[\r\n/]*|[{WS}]*[\r\n]+`
	exprGPT4o   = `[^\r\n{L}{N}]?[{UP}]*[{LO}]+(?:{CONTR})?|[^\r\n{L}{N}]?[{UP}]+[{LO}]*(?:{CONTR})?|[{N}]{1,3}| ?[^{WS}{L}{N}]+[\r\n/]*|[{WS}]*[\r\n]+`
	exprGranite = `[^\r\n{L}{N}]?[{UPM}]*[{LOM}]+(?:{CONTR})?|[^\r\n{L}{N}]?[{UPM}]+[{LOM}]*(?:{CONTR})?|[{N}]{1,3}| ?[^{WS}{L}{N}]+[\r\n/]*|[{WS}]*[\r\n]+`
	exprTinyAya = `[^\r\n{L}{N}]?[{L}{M}]*[{L}{M}]+(?:{CONTR})?|[^\r\n{L}{N}]?[{L}{M}]+[{L}{M}]*(?:{CONTR})?|[{N}]{1,3}| ?[^{WS}{L}{N}]+[\r\n/]*|[{WS}]*[\r\n]+`
	exprBailing = `'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n{L}{N}]?[{L}]+|[{N}]| ?[^{WS}{L}{N}]+[\r\n]*|[{WS}]*[\r\n]`
	exprSeed    = `(?:{CONTR})|[^\r\n{L}{N}]?[{L}]+|[{N}]{1}| ?[^{WS}{L}{N}\r\n]+|[{WS}]*[\r\n]+`
	exprUfak    = `[^\r\n{L}{N}]?[{L}]+|[{N}]| ?[^{WS}{L}{N}]+[\r\n]*|[{WS}]*[\r\n]+`
	exprExaone  = `(?:{CONTR})|[^\r\n{L}{N}]?(?:[{L}][{M}]*(?: [{L}][{M}]*)*)+|[{N}]| ?[^{WS}{L}{N}]+[\r\n/]?|[{WS}]*[\r\n]`
	exprPoro    = ` ?[^({WSALL}|.,!?…。，、।۔،)]+`

	cjkKana   = `[一-龥぀-ゟ゠-ヿ]+`
	youtuCJK  = `[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+`
	afmoeCJK  = `[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+`
	colNum    = `[{N}]`
	colNum13  = `[{N}]{1,3}`
	colNumRun = `[{N}]+`
)

// steps builds the splitting steps of family k, in llama.cpp's order.
func (k preKind) steps() []splitter {
	const col, raw = true, false
	switch k {
	case preGPT2:
		return []splitter{by(matchGPT2)}
	case preLlama3:
		return []splitter{by(matchLlama3(3))}
	case preStarcoder:
		return []splitter{by(matchOneNumber), by(matchGPT2)}
	case preFalcon:
		return []splitter{by(matchPunctRun(true)), by(matchGPT2), by(matchASCIIDigits3)}
	case preDeepseekLLM:
		out := make([]splitter, len(deepseekLLMExprs))
		for i, e := range deepseekLLMExprs {
			out[i] = rx(e, raw, tailNone)
		}
		return out
	case preDeepseekCoder:
		out := make([]splitter, len(deepseekCoderExprs))
		for i, e := range deepseekCoderExprs {
			out[i] = rx(e, raw, tailNone)
		}
		return out
	case preQwen2:
		return []splitter{rx(exprQwen2, col, tailSpace)}
	case preQwen35:
		return []splitter{rx(exprQwen35, col, tailSpace)}
	case preJais2:
		return []splitter{rx(exprLlama3, col, tailJais2)}
	case preMiniCPM5:
		return []splitter{rx(colNum13, col, tailNone), rx(exprMiniCPM, col, tailSpace)}
	case preDeepseek3:
		return []splitter{rx(colNum13, col, tailNone), rx(cjkKana, raw, tailNone), rx(exprDS3, col, tailSpace)}
	case preSpark25:
		return []splitter{rx(colNum13, col, tailNone), rx(cjkKana, raw, tailNone), rx(exprSpark, col, tailSpace),
			rx(colNum, col, tailNone)}
	case preYoutu:
		return []splitter{rx(youtuCJK, raw, tailNone), rx(exprYoutu, col, tailSpace)}
	case prePoro:
		return []splitter{rx(exprPoro, raw, tailNone)}
	case preViking:
		return []splitter{rx(exprPoro, raw, tailNone), rx(colNum, col, tailNone)}
	case preTekken:
		return []splitter{rx(exprTekken, col, tailSpace)}
	case preChameleon:
		return []splitter{rx(`<sentinel:[0-9]+>`, raw, tailNone), rx(`(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z`, raw, tailNone),
			rx(`([\t\n]|    |  )`, raw, tailNone), rx(colNum, col, tailNone),
			rx(`[{P}!-/:-@\[-\x60{-~]`, col, tailNone), by(matchGPT2)}
	case preGPT4o:
		return []splitter{rx(exprGPT4o, col, tailSpace)}
	case preGraniteEmbMulti:
		return []splitter{rx(exprGranite, col, tailSpace)}
	case preTinyAya:
		return []splitter{splitTinyAyaDigits, rx(exprTinyAya, col, tailSpace)}
	case preKimiK2:
		return []splitter{by(matchKimiK2)}
	case preSuperBPE:
		return []splitter{rx(colNumRun, col, tailNone), splitSuperBPEDigits}
	case preBailingMoE:
		return []splitter{rx(exprBailing, col, tailSpace)}
	case preSeedCoder:
		return []splitter{rx(exprSeed, col, tailSpace)}
	case preUfakzeka:
		return []splitter{rx(exprUfak, col, tailSpace)}
	case preAfmoe:
		return []splitter{splitAfmoeDigits, rx(afmoeCJK, raw, tailNone), rx(exprDS3, col, tailSpace)}
	case preLaguna:
		return []splitter{rx(`[^\n]+|[\n]+`, raw, tailNone), rx(exprQwen2, col, tailSpace)}
	case preExaoneMoE:
		return []splitter{rx(exprExaone, col, tailSpace)}
	case preRawLines:
		return []splitter{rx(`[^\n]+|[\n]+`, raw, tailNone)}
	}
	return []splitter{by(matchPunctRun(false)), by(matchGPT2), by(matchNumberRun), by(matchASCIIDigits3)}
}

// isHan is llama.cpp's unicode_cpt_is_han: the CJK ideograph blocks.
func isHan(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2EBEF || r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// matchKimiK2 is Kimi-K2's splitter, which llama.cpp writes by hand:
// [\p{Han}]+ | [^\r\n\p{L}\p{N}]?(letters but Han)+ with an optional
// contraction | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ |
// \s+(?!\S) | \s+.
func matchKimiK2(s string, p, end int) int {
	c0, n0 := at(s, p, end)
	if isHan(c0) {
		return run(s, p, end, isHan) - p
	}
	word := func(r rune) bool { return isL(r) && !isHan(r) }
	lead := !isNL(c0) && !isL(c0) && !isN(c0)
	if c1, _ := at(s, p+n0, end); word(c0) || lead && word(c1) {
		q := p
		if lead {
			q += n0
		}
		q = run(s, q, end, word)
		if c, _ := at(s, q, end); c == '\'' {
			q += contraction(s, q, end, true)
		}
		return q - p
	}
	if isN(c0) {
		q := p
		for i := 0; i < 3; i++ {
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

// splitAfmoeDigits is AFMoE's digit splitter as llama.cpp writes it: a
// run of \p{N} is cut into its leading len%3 digits and then groups of
// three, and the text before the run goes into the first of those pieces.
func splitAfmoeDigits(s string, in []span) []span {
	out := make([]span, 0, len(in))
	var starts []int
	for _, sp := range in {
		prev := sp.a
		for p := sp.a; p < sp.b; {
			r, n := at(s, p, sp.b)
			if !isN(r) {
				p += n
				continue
			}
			starts = starts[:0]
			for p < sp.b {
				r, n := at(s, p, sp.b)
				if !isN(r) {
					break
				}
				starts = append(starts, p)
				p += n
			}
			starts = append(starts, p)
			digits := len(starts) - 1
			for i := digits % 3; i <= digits; i += 3 {
				if i > 0 && starts[i] > prev {
					out = append(out, span{prev, starts[i]})
					prev = starts[i]
				}
			}
		}
		if prev < sp.b {
			out = append(out, span{prev, sp.b})
		}
	}
	return out
}

// splitSuperBPEDigits is (?=(\d{3})+(?!\d)): a cut before every ASCII
// digit followed by a multiple of three ASCII digits up to the piece's
// end or another character (\d of llama.cpp's std::wregex, measured).
func splitSuperBPEDigits(s string, in []span) []span {
	out := make([]span, 0, len(in))
	for _, sp := range in {
		prev := sp.a
		for p := sp.a; p < sp.b; {
			if !isDigit(s[p]) {
				_, n := at(s, p, sp.b)
				p += n
				continue
			}
			q := p
			for q < sp.b && isDigit(s[q]) {
				q++
			}
			for c := p + (q-p)%3; c < q; c += 3 {
				if c > prev {
					out = append(out, span{prev, c})
					prev = c
				}
			}
			p = q
		}
		if prev < sp.b {
			out = append(out, span{prev, sp.b})
		}
	}
	return out
}

// digitRun appends to starts the offset of each \p{N} character of the
// run at p and its end, which it also returns.
func digitRun(s string, p, end int, starts []int) ([]int, int) {
	for p < end {
		r, n := at(s, p, end)
		if !isN(r) {
			break
		}
		starts = append(starts, p)
		p += n
	}
	return append(starts, p), p
}

// splitTinyAyaDigits is \d{1,3}(?=(?:\d{3})*\b): a run of digits that
// ends at a word boundary is cut into its leading 1-3 digits and groups
// of three. What llama.cpp does is measured, not derived: every run of
// \p{N} characters is cut so (whatever follows it: letters, '_', spaces,
// the end), and a run's \p{N} characters outside ASCII count as digits.
func splitTinyAyaDigits(s string, in []span) []span {
	out := make([]span, 0, len(in))
	var starts []int
	for _, sp := range in {
		loose := sp.a
		for p := sp.a; p < sp.b; {
			if r, n := at(s, p, sp.b); !isN(r) {
				p += n
				continue
			}
			var q int
			starts, q = digitRun(s, p, sp.b, starts[:0])
			if loose < p {
				out = append(out, span{loose, p})
			}
			n := len(starts) - 1
			for i, next := 0, (n-1)%3+1; i < n; i, next = next, next+3 {
				out = append(out, span{starts[i], starts[next]})
			}
			loose, p = q, q
		}
		if loose < sp.b {
			out = append(out, span{loose, sp.b})
		}
	}
	return out
}
