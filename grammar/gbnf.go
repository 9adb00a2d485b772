package grammar

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// kind is the type of a grammar element.
type kind uint8

const (
	kEnd  kind = iota // end of an alternative
	kRef              // a rule reference
	kChar             // a character class
)

// span is an inclusive range of code points.
type span struct{ lo, hi rune }

// elem is one element of an alternative.
type elem struct {
	kind   kind
	neg    bool  // kChar: matches code points outside the spans
	ref    int32 // kRef: the rule
	lo, hi int32 // kChar: the spans are Grammar.spans[lo:hi]
}

// Grammar is a parsed grammar: rules of alternatives of elements, laid out
// flat so that a position in the grammar is one index. It is immutable and
// safe for concurrent use.
type Grammar struct {
	elems []elem
	spans []span
	alts  [][]int32 // per rule: the start index of each alternative
	names []string  // per rule, for errors
	root  int32
}

// Rules returns the number of rules (those made for groups and
// repetitions included).
func (g *Grammar) Rules() int { return len(g.alts) }

// pElem is an element while parsing: spans inline.
type pElem struct {
	kind  kind
	neg   bool
	ref   int32
	spans []span
}

// parser reads GBNF text as llama.cpp does: rules "name ::= alternatives",
// ended by a newline outside parentheses.
type parser struct {
	src   string
	pos   int
	lim   Limits
	ids   map[string]int32
	names []string
	rules [][][]pElem // per rule, its alternatives; nil until defined
	nElem int
	depth int
}

func (p *parser) fail(format string, args ...any) error {
	return &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

// ParseGBNF parses a grammar in llama.cpp's GBNF format. The start rule is
// "root".
func ParseGBNF(src string, lim Limits) (*Grammar, error) {
	if len(src) > lim.MaxSource {
		return nil, &LimitError{What: "MaxSource", Limit: lim.MaxSource}
	}
	p := &parser{src: src, lim: lim, ids: map[string]int32{}}
	p.space(true)
	for p.pos < len(p.src) {
		if err := p.rule(); err != nil {
			return nil, err
		}
	}
	root, ok := p.ids["root"]
	if !ok || p.rules[root] == nil {
		return nil, &SyntaxError{Offset: len(src), Msg: `no rule named "root"`}
	}
	for id, r := range p.rules {
		if r == nil {
			return nil, &SyntaxError{Offset: len(src), Msg: fmt.Sprintf("rule %q is used but not defined", p.names[id])}
		}
	}
	return p.build(root)
}

// wordChar reports whether c may be part of a rule name.
func wordChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || '0' <= c && c <= '9'
}

// space skips blanks and comments, and newlines when newlineOK.
func (p *parser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\r' && p.src[p.pos] != '\n' {
				p.pos++
			}
		case newlineOK && (c == '\r' || c == '\n'):
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && wordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.fail("expecting a rule name")
	}
	return p.src[start:p.pos], nil
}

// symbol returns the id of a rule name, making one on first use.
func (p *parser) symbol(name string) (int32, error) {
	if id, ok := p.ids[name]; ok {
		return id, nil
	}
	return p.newRule(name)
}

func (p *parser) newRule(name string) (int32, error) {
	if len(p.rules) >= p.lim.MaxRules {
		return 0, &LimitError{What: "MaxRules", Limit: p.lim.MaxRules}
	}
	id := int32(len(p.rules))
	p.ids[name] = id
	p.names = append(p.names, name)
	p.rules = append(p.rules, nil)
	return id, nil
}

// generated makes a rule for a group or repetition inside rule base.
func (p *parser) generated(base string) (int32, error) {
	name := fmt.Sprintf("%s_%d", base, len(p.rules))
	for {
		if _, taken := p.ids[name]; !taken {
			break
		}
		name += "_"
	}
	return p.newRule(name)
}

func (p *parser) rule() error {
	name, err := p.name()
	if err != nil {
		return err
	}
	id, err := p.symbol(name)
	if err != nil {
		return err
	}
	p.space(false)
	if !strings.HasPrefix(p.src[p.pos:], "::=") {
		return p.fail("expecting ::=")
	}
	p.pos += 3
	p.space(true)
	alts, err := p.alternates(name, false)
	if err != nil {
		return err
	}
	// A later definition replaces an earlier one, as in llama.cpp.
	p.rules[id] = alts
	switch {
	case strings.HasPrefix(p.src[p.pos:], "\r\n"):
		p.pos += 2
	case p.pos < len(p.src) && (p.src[p.pos] == '\n' || p.src[p.pos] == '\r'):
		p.pos++
	case p.pos < len(p.src):
		return p.fail("expecting newline or end")
	}
	p.space(true)
	return nil
}

func (p *parser) alternates(name string, nested bool) ([][]pElem, error) {
	var alts [][]pElem
	for {
		seq, err := p.sequence(name, nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			p.space(true)
			continue
		}
		return alts, nil
	}
}

func (p *parser) add(seq []pElem, e pElem) ([]pElem, error) {
	p.nElem++
	if p.nElem > p.lim.MaxElements {
		return nil, &LimitError{What: "MaxElements", Limit: p.lim.MaxElements}
	}
	return append(seq, e), nil
}

func (p *parser) sequence(name string, nested bool) ([]pElem, error) {
	var seq []pElem
	last := -1 // start in seq of the last symbol, for a repetition
	var err error
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			last = len(seq)
			for p.pos < len(p.src) && p.src[p.pos] != '"' {
				r, err := p.char()
				if err != nil {
					return nil, err
				}
				if seq, err = p.add(seq, pElem{kind: kChar, spans: []span{{r, r}}}); err != nil {
					return nil, err
				}
			}
			if p.pos >= len(p.src) {
				return nil, p.fail("unexpected end of input in a literal")
			}
			p.pos++
			p.space(nested)
		case c == '[':
			p.pos++
			last = len(seq)
			e := pElem{kind: kChar}
			if p.pos < len(p.src) && p.src[p.pos] == '^' {
				e.neg = true
				p.pos++
			}
			for p.pos < len(p.src) && p.src[p.pos] != ']' {
				lo, err := p.char()
				if err != nil {
					return nil, err
				}
				hi := lo
				if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
					p.pos++
					if hi, err = p.char(); err != nil {
						return nil, err
					}
				}
				e.spans = append(e.spans, span{lo, hi})
			}
			if p.pos >= len(p.src) {
				return nil, p.fail("unexpected end of input in a character class")
			}
			p.pos++
			if seq, err = p.add(seq, e); err != nil {
				return nil, err
			}
			p.space(nested)
		case wordChar(c):
			n, err := p.name()
			if err != nil {
				return nil, err
			}
			id, err := p.symbol(n)
			if err != nil {
				return nil, err
			}
			last = len(seq)
			if seq, err = p.add(seq, pElem{kind: kRef, ref: id}); err != nil {
				return nil, err
			}
			p.space(nested)
		case c == '(':
			p.pos++
			p.depth++
			if p.depth > p.lim.MaxNesting {
				return nil, &LimitError{What: "MaxNesting", Limit: p.lim.MaxNesting}
			}
			p.space(true)
			id, err := p.generated(name)
			if err != nil {
				return nil, err
			}
			alts, err := p.alternates(name, true)
			if err != nil {
				return nil, err
			}
			p.rules[id] = alts
			if p.pos >= len(p.src) || p.src[p.pos] != ')' {
				return nil, p.fail("expecting ')'")
			}
			p.pos++
			p.depth--
			last = len(seq)
			if seq, err = p.add(seq, pElem{kind: kRef, ref: id}); err != nil {
				return nil, err
			}
			p.space(nested)
		case c == '.':
			p.pos++
			last = len(seq)
			if seq, err = p.add(seq, pElem{kind: kChar, spans: []span{{0, utf8.MaxRune}}}); err != nil {
				return nil, err
			}
			p.space(nested)
		case c == '*' || c == '+' || c == '?':
			p.pos++
			lo, hi := 0, -1
			switch c {
			case '+':
				lo = 1
			case '?':
				hi = 1
			}
			if seq, err = p.repeat(name, seq, last, lo, hi); err != nil {
				return nil, err
			}
			last = -1
			p.space(nested)
		case c == '{':
			p.pos++
			p.space(nested)
			lo, err := p.int()
			if err != nil {
				return nil, err
			}
			p.space(nested)
			hi := lo
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				p.space(nested)
				hi = -1
				if p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
					if hi, err = p.int(); err != nil {
						return nil, err
					}
					p.space(nested)
				}
			}
			if p.pos >= len(p.src) || p.src[p.pos] != '}' {
				return nil, p.fail("expecting ',' or '}'")
			}
			p.pos++
			if hi >= 0 && hi < lo {
				return nil, p.fail("repetition {%d,%d}: the maximum is below the minimum", lo, hi)
			}
			if seq, err = p.repeat(name, seq, last, lo, hi); err != nil {
				return nil, err
			}
			last = -1
			p.space(nested)
		case c == '<':
			return nil, p.fail("token references (<[id]> or <token>) are not supported")
		default:
			return seq, nil
		}
	}
	return seq, nil
}

func (p *parser) int() (int, error) {
	start := p.pos
	n := 0
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		n = n*10 + int(p.src[p.pos]-'0')
		p.pos++
		if n > p.lim.MaxRepeat {
			return 0, &LimitError{What: "MaxRepeat", Limit: p.lim.MaxRepeat}
		}
	}
	if p.pos == start {
		return 0, p.fail("expecting an integer")
	}
	return n, nil
}

// repeat applies a repetition {lo,hi} (hi < 0: unbounded) to the last
// symbol of seq, which starts at last, as llama.cpp expands it: lo copies,
// then for an unbounded tail a rule R ::= x R | ε, for a bounded one hi-lo
// nested optional rules.
func (p *parser) repeat(name string, seq []pElem, last, lo, hi int) ([]pElem, error) {
	if last < 0 || last >= len(seq) {
		return nil, p.fail("expecting a symbol before a repetition")
	}
	x := append([]pElem(nil), seq[last:]...)
	seq = seq[:last]
	var err error
	for range lo {
		for _, e := range x {
			if seq, err = p.add(seq, e); err != nil {
				return nil, err
			}
		}
	}
	if hi == lo {
		return seq, nil
	}
	if hi < 0 {
		id, err := p.generated(name)
		if err != nil {
			return nil, err
		}
		alt := append(append([]pElem(nil), x...), pElem{kind: kRef, ref: id})
		p.nElem += len(alt)
		if p.nElem > p.lim.MaxElements {
			return nil, &LimitError{What: "MaxElements", Limit: p.lim.MaxElements}
		}
		p.rules[id] = [][]pElem{alt, nil}
		return p.add(seq, pElem{kind: kRef, ref: id})
	}
	// Optional tails, innermost first: R_k ::= x R_(k+1) | ε.
	next := int32(-1)
	for range hi - lo {
		id, err := p.generated(name)
		if err != nil {
			return nil, err
		}
		alt := append([]pElem(nil), x...)
		if next >= 0 {
			alt = append(alt, pElem{kind: kRef, ref: next})
		}
		p.nElem += len(alt)
		if p.nElem > p.lim.MaxElements {
			return nil, &LimitError{What: "MaxElements", Limit: p.lim.MaxElements}
		}
		p.rules[id] = [][]pElem{alt, nil}
		next = id
	}
	return p.add(seq, pElem{kind: kRef, ref: next})
}

// char reads one character of a literal or class: an escape or a UTF-8
// encoded code point.
func (p *parser) char() (rune, error) {
	if p.pos >= len(p.src) {
		return 0, p.fail("unexpected end of input")
	}
	if p.src[p.pos] == '\\' {
		if p.pos+1 >= len(p.src) {
			return 0, p.fail("unexpected end of input after '\\'")
		}
		c := p.src[p.pos+1]
		p.pos += 2
		switch c {
		case 'x':
			return p.hex(2)
		case 'u':
			return p.hex(4)
		case 'U':
			return p.hex(8)
		case 't':
			return '\t', nil
		case 'r':
			return '\r', nil
		case 'n':
			return '\n', nil
		case '\\', '"', '[', ']':
			return rune(c), nil
		}
		p.pos -= 2
		return 0, p.fail("unknown escape \\%c", c)
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	if r == utf8.RuneError && n <= 1 {
		return 0, p.fail("invalid UTF-8")
	}
	p.pos += n
	return r, nil
}

func (p *parser) hex(n int) (rune, error) {
	var v rune
	for i := range n {
		if p.pos >= len(p.src) {
			return 0, p.fail("expecting %d hex digits", n)
		}
		c := p.src[p.pos]
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.fail("expecting %d hex digits, got %d", n, i)
		}
		v = v<<4 | rune(d)
		p.pos++
	}
	if v > utf8.MaxRune {
		return 0, p.fail("code point U+%X beyond Unicode", v)
	}
	return v, nil
}

// build lays the rules out flat and refuses left recursion.
func (p *parser) build(root int32) (*Grammar, error) {
	g := &Grammar{names: p.names, root: root, alts: make([][]int32, len(p.rules))}
	for id, alts := range p.rules {
		for _, alt := range alts {
			g.alts[id] = append(g.alts[id], int32(len(g.elems)))
			for _, e := range alt {
				x := elem{kind: e.kind, neg: e.neg, ref: e.ref}
				if e.kind == kChar {
					x.lo = int32(len(g.spans))
					g.spans = append(g.spans, e.spans...)
					x.hi = int32(len(g.spans))
				}
				g.elems = append(g.elems, x)
			}
			g.elems = append(g.elems, elem{kind: kEnd})
		}
	}
	if err := g.checkLeftRecursion(); err != nil {
		return nil, err
	}
	if !g.productive()[g.root] {
		return nil, &NoTextError{Rule: g.names[g.root]}
	}
	return g, nil
}

// NoTextError reports a grammar whose start rule can match no text at all
// (every way through it recurses without end), such as a schema $ref that
// refers to itself.
type NoTextError struct{ Rule string }

func (e *NoTextError) Error() string {
	return fmt.Sprintf("grammar: rule %q matches no text (it only recurses)", e.Rule)
}

// productive returns which rules can match some finite text: those with an
// alternative whose references are all productive, to a fixed point.
func (g *Grammar) productive() []bool {
	ok := make([]bool, len(g.alts))
	for changed := true; changed; {
		changed = false
		for r, alts := range g.alts {
			if ok[r] {
				continue
			}
			for _, a := range alts {
				all := true
				for i := a; g.elems[i].kind != kEnd; i++ {
					if e := g.elems[i]; e.kind == kRef && !ok[e.ref] {
						all = false
						break
					}
				}
				if all {
					ok[r], changed = true, true
					break
				}
			}
		}
	}
	return ok
}

// LeftRecursionError reports a rule that can reach itself without
// consuming input, which would expand forever.
type LeftRecursionError struct{ Rule string }

func (e *LeftRecursionError) Error() string {
	return fmt.Sprintf("grammar: rule %q is left-recursive (it can reach itself without consuming a character)", e.Rule)
}

// checkLeftRecursion computes which rules can match the empty string, then
// looks for a cycle among the rules each can start with.
func (g *Grammar) checkLeftRecursion() error {
	n := len(g.alts)
	nullable := make([]bool, n)
	for changed := true; changed; {
		changed = false
		for r := range n {
			if nullable[r] {
				continue
			}
			for _, a := range g.alts[r] {
				if g.nullableFrom(a, nullable) {
					nullable[r] = true
					changed = true
					break
				}
			}
		}
	}
	// The graph "r may start with rule s": an edge pushes a frame unless
	// s is the last element of its alternative (the matcher tail-calls
	// it). A cycle of tail calls only is harmless (a star of something
	// that may be empty, which llama.cpp accepts too); a cycle with a
	// push would grow the stack forever. Tarjan's strongly connected
	// components find the cycles.
	type edge struct {
		to   int32
		push bool
	}
	adj := make([][]edge, n)
	for r := range n {
		for _, a := range g.alts[r] {
			for i := a; g.elems[i].kind != kEnd; i++ {
				e := g.elems[i]
				if e.kind == kChar {
					break
				}
				adj[r] = append(adj[r], edge{e.ref, g.elems[i+1].kind != kEnd})
				if !nullable[e.ref] {
					break
				}
			}
		}
	}
	index := make([]int32, n)
	low := make([]int32, n)
	comp := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i], comp[i] = -1, -1
	}
	var stack []int32
	next, nComp := int32(0), int32(0)
	var connect func(v int32)
	connect = func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range adj[v] {
			if index[e.to] < 0 {
				connect(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp[w] = nComp
				if w == v {
					break
				}
			}
			nComp++
		}
	}
	for v := range int32(n) {
		if index[v] < 0 {
			connect(v)
		}
	}
	for r := range n {
		for _, e := range adj[r] {
			if e.push && comp[e.to] == comp[r] {
				return &LeftRecursionError{Rule: g.names[r]}
			}
		}
	}
	return nil
}

// nullableFrom reports whether the elements from i to the end of their
// alternative can all match the empty string.
func (g *Grammar) nullableFrom(i int32, nullable []bool) bool {
	for ; g.elems[i].kind != kEnd; i++ {
		e := g.elems[i]
		if e.kind == kChar || !nullable[e.ref] {
			return false
		}
	}
	return true
}

// matches reports whether element e (a kChar) matches code point r.
func (g *Grammar) matches(e elem, r rune) bool {
	in := false
	for _, s := range g.spans[e.lo:e.hi] {
		if s.lo <= r && r <= s.hi {
			in = true
			break
		}
	}
	return in != e.neg
}

// mayMatch reports whether e could match some code point in [lo, hi], for
// a partly decoded UTF-8 sequence.
func (g *Grammar) mayMatch(e elem, lo, hi rune) bool {
	for _, s := range g.spans[e.lo:e.hi] {
		if e.neg {
			if s.lo <= lo && hi <= s.hi {
				return false
			}
		} else if s.lo <= hi && lo <= s.hi {
			return true
		}
	}
	return e.neg
}
