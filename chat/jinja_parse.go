package chat

import (
	"fmt"
	"strconv"
	"strings"
)

// This file parses the Jinja subset: the template is split into text and
// tags (with Hugging Face's trim_blocks and lstrip_blocks and the "-"
// whitespace controls), and tags are parsed into a tree of statements and
// expressions by recursive descent with a depth limit.

// maxDepth bounds the nesting of blocks and of expressions.
const maxDepth = 64

// SyntaxError reports a template the interpreter cannot parse.
type SyntaxError struct {
	Offset int
	Msg    string
}

// Error returns the message with the byte offset.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("chat: template syntax error at byte %d: %s", e.Offset, e.Msg)
}

// Unwrap returns ErrUnsupported: the template is outside the subset.
func (e *SyntaxError) Unwrap() error { return ErrUnsupported }

// tagKind tells the kinds of template pieces apart.
type tagKind uint8

const (
	pieceText tagKind = iota
	pieceExpr
	pieceStmt
	pieceComment
)

// piece is a run of text or the inside of one tag.
type piece struct {
	kind           tagKind
	text           string
	off            int
	stripL, stripR bool // "-" at the start / end of the tag
	keepL          bool // "+" at the start: no lstrip_blocks
}

// splitTemplate cuts src into text and tags.
func splitTemplate(src string) ([]piece, error) {
	var out []piece
	i := 0
	for i < len(src) {
		j := nextTag(src, i)
		if j < 0 {
			out = append(out, piece{kind: pieceText, text: src[i:], off: i})
			break
		}
		if j > i {
			out = append(out, piece{kind: pieceText, text: src[i:j], off: i})
		}
		p, end, err := readTag(src, j)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		i = end
	}
	applyWhitespace(out)
	return out, nil
}

// nextTag finds the next "{{", "{%" or "{#" from i.
func nextTag(src string, i int) int {
	for {
		k := strings.IndexByte(src[i:], '{')
		if k < 0 || i+k+1 >= len(src) {
			return -1
		}
		if c := src[i+k+1]; c == '{' || c == '%' || c == '#' {
			return i + k
		}
		i += k + 1
	}
}

// readTag reads the tag starting at j, skipping string literals when
// looking for its end.
func readTag(src string, j int) (piece, int, error) {
	open := src[j+1]
	p := piece{off: j}
	closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[open]
	p.kind = map[byte]tagKind{'{': pieceExpr, '%': pieceStmt, '#': pieceComment}[open]
	body := j + 2
	if body < len(src) && src[body] == '-' {
		p.stripL = true
		body++
	} else if body < len(src) && src[body] == '+' {
		p.keepL = true
		body++
	}
	if p.kind == pieceComment {
		k := strings.Index(src[body:], closer)
		if k < 0 {
			return p, 0, &SyntaxError{j, "unterminated comment"}
		}
		p.stripR = k > 0 && src[body+k-1] == '-'
		return p, body + k + 2, nil
	}
	var quote byte
	for k := body; k+1 < len(src); k++ {
		c := src[k]
		switch {
		case quote != 0:
			if c == '\\' {
				k++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == closer[0] && src[k+1] == closer[1]:
			end := k
			if end > body && src[end-1] == '-' {
				p.stripR = true
				end--
			}
			p.text = src[body:end]
			return p, k + 2, nil
		}
	}
	return p, 0, &SyntaxError{j, "unterminated tag"}
}

// applyWhitespace applies "-" controls, trim_blocks (drop the newline
// after a block tag) and lstrip_blocks (drop the indentation before one).
func applyWhitespace(ps []piece) {
	for i := range ps {
		if ps[i].kind != pieceText {
			continue
		}
		t := ps[i].text
		lineStart := i == 0 // does t begin at the start of a line?
		if i > 0 {
			prev := ps[i-1]
			if prev.stripR {
				t = strings.TrimLeft(t, " \t\n\r\v\f")
			} else if (prev.kind == pieceStmt || prev.kind == pieceComment) && strings.HasPrefix(t, "\n") {
				t = t[1:]
				lineStart = true
			}
		}
		if i+1 < len(ps) {
			next := ps[i+1]
			if next.stripL {
				t = strings.TrimRight(t, " \t\n\r\v\f")
			} else if (next.kind == pieceStmt || next.kind == pieceComment) && !next.keepL {
				line := strings.LastIndexByte(t, '\n') + 1
				if (line > 0 || lineStart) && strings.Trim(t[line:], " \t") == "" {
					t = t[:line]
				}
			}
		}
		ps[i].text = t
	}
}

// token is one lexical token of a tag.
type token struct {
	kind byte // 'n' name, 's' string, 'i' integer, 'f' float, 'o' operator, 0 end
	text string
	off  int
}

// lexTag splits the inside of a tag into tokens.
func lexTag(s string, base int) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(s) && (isIdentStart(s[j]) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			out = append(out, token{'n', s[i:j], base + i})
			i = j
		case c >= '0' && c <= '9':
			j, kind := i, byte('i')
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' && kind == 'i' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9') {
				if s[j] == '.' {
					kind = 'f'
				}
				j++
			}
			out = append(out, token{kind, s[i:j], base + i})
			i = j
		case c == '\'' || c == '"':
			str, n, err := lexString(s[i:], base+i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{'s', str, base + i})
			i += n
		default:
			n := 1
			if i+1 < len(s) {
				switch s[i : i+2] {
				case "==", "!=", "<=", ">=", "//", "**":
					n = 2
				}
			}
			if !strings.ContainsRune("()[]{}.,:|~+-*/%<>=!", rune(c)) {
				return nil, &SyntaxError{base + i, fmt.Sprintf("unexpected character %q", c)}
			}
			out = append(out, token{'o', s[i : i+n], base + i})
			i += n
		}
	}
	return out, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// lexString reads a quoted string literal with Python escapes.
func lexString(s string, off int) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(s[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return "", 0, &SyntaxError{off, "unterminated string"}
}

// expr is an expression node.
type expr struct {
	op   string // "lit", "name", "attr", "index", "slice", "call", "filter", "test", "not", "neg", "list", "dict", "if", or a binary operator
	val  any    // literal value, or the name / attribute / filter / test
	args []*expr
	off  int
}

// parser parses the tokens of one tag.
type parser struct {
	toks  []token
	pos   int
	depth int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	end := 0
	if len(p.toks) > 0 {
		end = p.toks[len(p.toks)-1].off
	}
	return token{off: end}
}

func (p *parser) next() token { t := p.peek(); p.pos++; return t }

func (p *parser) is(kind byte, text string) bool {
	t := p.peek()
	return t.kind == kind && t.text == text
}

func (p *parser) accept(kind byte, text string) bool {
	if p.is(kind, text) {
		p.pos++
		return true
	}
	return false
}

func (p *parser) expect(kind byte, text string) error {
	if !p.accept(kind, text) {
		return p.errf("expected %q, found %q", text, p.peek().text)
	}
	return nil
}

func (p *parser) errf(format string, args ...any) error {
	return &SyntaxError{p.peek().off, fmt.Sprintf(format, args...)}
}

func (p *parser) name() (string, error) {
	t := p.next()
	if t.kind != 'n' {
		return "", &SyntaxError{t.off, fmt.Sprintf("expected a name, found %q", t.text)}
	}
	return t.text, nil
}

// parseExpr parses a full expression (with the conditional form).
func (p *parser) parseExpr() (*expr, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		return nil, p.errf("expression nested deeper than %d", maxDepth)
	}
	off := p.peek().off
	e, err := p.parseBinary(0)
	if err != nil || !p.accept('n', "if") {
		return e, err
	}
	cond, err := p.parseBinary(0)
	if err != nil {
		return nil, err
	}
	var alt *expr
	if p.accept('n', "else") {
		if alt, err = p.parseExpr(); err != nil {
			return nil, err
		}
	} else {
		alt = &expr{op: "lit", val: undefined{}}
	}
	return &expr{op: "if", args: []*expr{cond, e, alt}, off: off}, nil
}

// binary operator levels, loosest first.
var binaryLevels = [][]string{
	{"or"}, {"and"}, {"not"}, {"==", "!=", "<", ">", "<=", ">=", "in", "not in", "is"},
	{"+", "-"}, {"~"}, {"*", "/", "//", "%"},
}

func (p *parser) parseBinary(level int) (*expr, error) {
	if level == len(binaryLevels) {
		return p.parseUnary()
	}
	if binaryLevels[level][0] == "not" {
		if t := p.peek(); p.accept('n', "not") {
			e, err := p.parseBinary(level)
			if err != nil {
				return nil, err
			}
			return &expr{op: "not", args: []*expr{e}, off: t.off}, nil
		}
		return p.parseBinary(level + 1)
	}
	left, err := p.parseBinary(level + 1)
	if err != nil {
		return nil, err
	}
	for {
		op, ok := p.binaryOp(level)
		if !ok {
			return left, nil
		}
		off := p.peek().off
		if op == "is" {
			if left, err = p.parseTest(left); err != nil {
				return nil, err
			}
			continue
		}
		right, err := p.parseBinary(level + 1)
		if err != nil {
			return nil, err
		}
		left = &expr{op: op, args: []*expr{left, right}, off: off}
	}
}

// binaryOp consumes an operator of the given level.
func (p *parser) binaryOp(level int) (string, bool) {
	t := p.peek()
	for _, op := range binaryLevels[level] {
		switch {
		case op == "not in":
			if t.kind == 'n' && t.text == "not" && p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == "in" {
				p.pos += 2
				return op, true
			}
		case t.text == op && (t.kind == 'o' || t.kind == 'n' && (op == "or" || op == "and" || op == "in" || op == "is")):
			p.pos++
			return op, true
		}
	}
	return "", false
}

// parseTest parses the part after "is": [not] name [argument].
func (p *parser) parseTest(left *expr) (*expr, error) {
	off := p.peek().off
	negate := p.accept('n', "not")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	e := &expr{op: "test", val: name, args: []*expr{left}, off: off}
	if p.is('o', "(") {
		args, err := p.parseArgs()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, args...)
	} else if t := p.peek(); t.kind == 's' || t.kind == 'i' {
		arg, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, arg)
	}
	if negate {
		e = &expr{op: "not", args: []*expr{e}, off: off}
	}
	return e, nil
}

func (p *parser) parseUnary() (*expr, error) {
	if t := p.peek(); p.accept('o', "-") {
		e, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &expr{op: "neg", args: []*expr{e}, off: t.off}, nil
	}
	p.accept('o', "+")
	e, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	return p.parsePostfix(e)
}

// parsePostfix parses attribute, index, slice, call and filter suffixes.
func (p *parser) parsePostfix(e *expr) (*expr, error) {
	for {
		t := p.peek()
		switch {
		case p.accept('o', "."):
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			e = &expr{op: "attr", val: name, args: []*expr{e}, off: t.off}
		case p.accept('o', "["):
			idx, err := p.parseSubscript(e, t.off)
			if err != nil {
				return nil, err
			}
			e = idx
		case p.is('o', "("):
			args, err := p.parseArgs()
			if err != nil {
				return nil, err
			}
			e = &expr{op: "call", args: append([]*expr{e}, args...), off: t.off}
		case p.accept('o', "|"):
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			f := &expr{op: "filter", val: name, args: []*expr{e}, off: t.off}
			if p.is('o', "(") {
				args, err := p.parseArgs()
				if err != nil {
					return nil, err
				}
				f.args = append(f.args, args...)
			}
			e = f
		default:
			return e, nil
		}
	}
}

// parseSubscript parses x[i], x[a:b] or x[a:b:step] after the "[".
func (p *parser) parseSubscript(e *expr, off int) (*expr, error) {
	parts := []*expr{e, nil, nil, nil}
	slice := false
	for k := 1; k <= 3; k++ {
		if !p.is('o', ":") && !p.is('o', "]") {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			parts[k] = x
		}
		if k < 3 && p.accept('o', ":") {
			slice = true
			continue
		}
		break
	}
	if err := p.expect('o', "]"); err != nil {
		return nil, err
	}
	if !slice {
		if parts[1] == nil {
			return nil, &SyntaxError{off, "empty subscript"}
		}
		return &expr{op: "index", args: parts[:2], off: off}, nil
	}
	for i, x := range parts {
		if x == nil {
			parts[i] = &expr{op: "lit", val: nil}
		}
	}
	return &expr{op: "slice", args: parts, off: off}, nil
}

// parseArgs parses "(a, b, name=c)"; keyword arguments become "kw" nodes.
func (p *parser) parseArgs() ([]*expr, error) {
	if err := p.expect('o', "("); err != nil {
		return nil, err
	}
	var args []*expr
	for !p.accept('o', ")") {
		if len(args) > 0 {
			if err := p.expect('o', ","); err != nil {
				return nil, err
			}
			if p.accept('o', ")") {
				break
			}
		}
		if t := p.peek(); t.kind == 'n' && p.pos+1 < len(p.toks) && p.toks[p.pos+1].text == "=" {
			p.pos += 2
			v, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, &expr{op: "kw", val: t.text, args: []*expr{v}, off: t.off})
			continue
		}
		a, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		args = append(args, a)
	}
	return args, nil
}

func (p *parser) parsePrimary() (*expr, error) {
	t := p.next()
	switch t.kind {
	case 's':
		return &expr{op: "lit", val: t.text, off: t.off}, nil
	case 'i':
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, &SyntaxError{t.off, "integer out of range"}
		}
		return &expr{op: "lit", val: n, off: t.off}, nil
	case 'f':
		f, _ := strconv.ParseFloat(t.text, 64)
		return &expr{op: "lit", val: f, off: t.off}, nil
	case 'n':
		switch t.text {
		case "true", "True":
			return &expr{op: "lit", val: true, off: t.off}, nil
		case "false", "False":
			return &expr{op: "lit", val: false, off: t.off}, nil
		case "none", "None":
			return &expr{op: "lit", val: nil, off: t.off}, nil
		}
		return &expr{op: "name", val: t.text, off: t.off}, nil
	case 'o':
		switch t.text {
		case "(":
			return p.parseParen(t.off)
		case "[":
			return p.parseList(t.off)
		case "{":
			return p.parseDict(t.off)
		}
	}
	return nil, &SyntaxError{t.off, fmt.Sprintf("unexpected %q", t.text)}
}

// parseParen parses a parenthesised expression or a tuple, ("a", "b"),
// (x,) or (), after the "(". A tuple is a list here, as in llama.cpp's
// engine: templates only test membership in one, loop over it or index
// it (Seed-OSS's, Kimi K3's and Functionary v3.2's do), where the two
// behave alike.
func (p *parser) parseParen(off int) (*expr, error) {
	if p.accept('o', ")") {
		return &expr{op: "list", off: off}, nil
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if !p.is('o', ",") {
		return e, p.expect('o', ")")
	}
	tuple := &expr{op: "list", args: []*expr{e}, off: off}
	for p.accept('o', ",") && !p.is('o', ")") {
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		tuple.args = append(tuple.args, x)
	}
	return tuple, p.expect('o', ")")
}

func (p *parser) parseList(off int) (*expr, error) {
	e := &expr{op: "list", off: off}
	for !p.accept('o', "]") {
		if len(e.args) > 0 {
			if err := p.expect('o', ","); err != nil {
				return nil, err
			}
			if p.accept('o', "]") {
				break
			}
		}
		x, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, x)
	}
	return e, nil
}

func (p *parser) parseDict(off int) (*expr, error) {
	e := &expr{op: "dict", off: off}
	for !p.accept('o', "}") {
		if len(e.args) > 0 {
			if err := p.expect('o', ","); err != nil {
				return nil, err
			}
			if p.accept('o', "}") {
				break
			}
		}
		k, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expect('o', ":"); err != nil {
			return nil, err
		}
		v, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, k, v)
	}
	return e, nil
}
