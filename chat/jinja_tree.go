package chat

import "fmt"

// stmt is a statement of the template tree.
type stmt struct {
	kind     string   // "text", "out", "if", "for", "set", "break", "continue", "macro", "call", "filter"
	text     string   // text: the text; macro: its name; call: "caller"
	e        *expr    // out / set: the value (nil for a block set); call: the macro call, an expr of op "call"; filter: the filter applied to blockOutput
	branches []branch // if: the if and elif branches
	elseBody []*stmt  // if / for: the else part
	vars     []string // for: the loop variables; set: target name (and attribute); macro / call: the (caller's) parameters
	cond     *expr    // for: the "if" filter
	body     []*stmt  // for: the loop body; macro: its body; call: the caller's body; block set, filter: the block
	defaults []*expr  // macro / call: the parameters' defaults (nil: none)
	off      int
}

// branch is one condition and body of an if statement.
type branch struct {
	cond *expr
	body []*stmt
}

// unsupportedTags are Jinja statements the subset refuses by name.
var unsupportedTags = map[string]bool{
	"include": true, "import": true, "from": true,
	"extends": true, "block": true, "raw": true, "with": true, "autoescape": true, "do": true,
}

// parseTemplate builds the statement tree of src.
func parseTemplate(src string) ([]*stmt, error) {
	ps, err := splitTemplate(src)
	if err != nil {
		return nil, err
	}
	tp := &treeParser{ps: ps}
	body, end, err := tp.block(0)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, &SyntaxError{tp.ps[tp.i].off, fmt.Sprintf("unexpected {%% %s %%}", end)}
	}
	return body, nil
}

// treeParser walks the pieces of a template.
type treeParser struct {
	ps []piece
	i  int
}

// block parses statements until a terminator tag (elif, else, endif,
// endfor, endmacro, endcall, endset, endfilter), which it returns with its tokens consumed
// up to the name.
func (tp *treeParser) block(depth int) (body []*stmt, end string, err error) {
	if depth > maxDepth {
		return nil, "", &SyntaxError{tp.ps[tp.i].off, fmt.Sprintf("blocks nested deeper than %d", maxDepth)}
	}
	for tp.i < len(tp.ps) {
		pc := tp.ps[tp.i]
		tp.i++
		switch pc.kind {
		case pieceText:
			if pc.text != "" {
				body = append(body, &stmt{kind: "text", text: pc.text, off: pc.off})
			}
		case pieceComment:
		case pieceExpr:
			e, err := parseWhole(pc)
			if err != nil {
				return nil, "", err
			}
			body = append(body, &stmt{kind: "out", e: e, off: pc.off})
		case pieceStmt:
			s, end, err := tp.statement(pc, depth)
			if err != nil || end != "" {
				return body, end, err
			}
			if s != nil {
				body = append(body, s)
			}
		}
	}
	return body, "", nil
}

// parseWhole parses a tag that holds exactly one expression.
func parseWhole(pc piece) (*expr, error) {
	toks, err := lexTag(pc.text, pc.off+2)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.pos != len(toks) {
		return nil, p.errf("unexpected %q after the expression", p.peek().text)
	}
	return e, nil
}

// statement parses one {% %} tag (and, for if and for, its body).
func (tp *treeParser) statement(pc piece, depth int) (*stmt, string, error) {
	toks, err := lexTag(pc.text, pc.off+2)
	if err != nil {
		return nil, "", err
	}
	if len(toks) == 0 || toks[0].kind != 'n' {
		return nil, "", &SyntaxError{pc.off, "empty or malformed statement"}
	}
	p := &parser{toks: toks, pos: 1}
	name := toks[0].text
	switch name {
	case "elif", "else", "endif", "endfor", "endmacro", "endcall", "endset", "endfilter":
		tp.i-- // let the caller see the tag
		return nil, name, nil
	case "generation", "endgeneration":
		return nil, "", nil // Hugging Face's assistant-mask markers render nothing
	case "break", "continue":
		return &stmt{kind: name, off: pc.off}, "", nil
	case "if":
		s, err := tp.ifStmt(p, pc, depth)
		return s, "", err
	case "for":
		s, err := tp.forStmt(p, pc, depth)
		return s, "", err
	case "set":
		s, err := tp.setStmt(p, pc, depth)
		return s, "", err
	case "filter":
		s, err := tp.filterStmt(p, pc, depth)
		return s, "", err
	case "macro":
		s, err := tp.macroStmt(p, pc, depth)
		return s, "", err
	case "call":
		s, err := tp.callStmt(p, pc, depth)
		return s, "", err
	}
	if unsupportedTags[name] {
		return nil, "", &UnsupportedError{Construct: "{% " + name + " %}"}
	}
	return nil, "", &SyntaxError{pc.off, fmt.Sprintf("unknown statement %q", name)}
}

// tail parses the rest of a tag as one expression.
func tail(p *parser) (*expr, error) {
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, p.errf("unexpected %q", p.peek().text)
	}
	return e, nil
}

// terminator reads the tag block() stopped at.
func (tp *treeParser) terminator() (string, *parser, piece, error) {
	pc := tp.ps[tp.i]
	tp.i++
	toks, err := lexTag(pc.text, pc.off+2)
	if err != nil {
		return "", nil, pc, err
	}
	return toks[0].text, &parser{toks: toks, pos: 1}, pc, nil
}

func (tp *treeParser) ifStmt(p *parser, pc piece, depth int) (*stmt, error) {
	s := &stmt{kind: "if", off: pc.off}
	cond, err := tail(p)
	if err != nil {
		return nil, err
	}
	for {
		body, end, err := tp.block(depth + 1)
		if err != nil {
			return nil, err
		}
		if end == "" {
			return nil, &SyntaxError{pc.off, "missing {% endif %}"}
		}
		s.branches = append(s.branches, branch{cond, body})
		name, tp2, tpc, err := tp.terminator()
		if err != nil {
			return nil, err
		}
		switch name {
		case "elif":
			if cond, err = tail(tp2); err != nil {
				return nil, err
			}
			continue
		case "else":
			body, end, err := tp.block(depth + 1)
			if err != nil {
				return nil, err
			}
			if end != "endif" {
				return nil, &SyntaxError{tpc.off, "missing {% endif %} after {% else %}"}
			}
			tp.i++
			s.elseBody = body
		case "endif":
		default: // endfor, endmacro, endcall, endset, endfilter
			return nil, &SyntaxError{tpc.off, fmt.Sprintf("{%% %s %%} closes an {%% if %%}", name)}
		}
		return s, nil
	}
}

func (tp *treeParser) forStmt(p *parser, pc piece, depth int) (*stmt, error) {
	s := &stmt{kind: "for", off: pc.off}
	for {
		v, err := p.name()
		if err != nil {
			return nil, err
		}
		s.vars = append(s.vars, v)
		if !p.accept('o', ",") {
			break
		}
	}
	if err := p.expect('n', "in"); err != nil {
		return nil, err
	}
	iter, err := p.parseBinary(0) // no conditional form: "if" filters the loop
	if err != nil {
		return nil, err
	}
	s.e = iter
	if p.accept('n', "if") {
		if s.cond, err = tail(p); err != nil {
			return nil, err
		}
	} else if p.pos != len(p.toks) {
		return nil, p.errf("unexpected %q in {%% for %%}", p.peek().text)
	}
	body, end, err := tp.block(depth + 1)
	if err != nil {
		return nil, err
	}
	s.body = body
	if end == "else" {
		tp.i++
		if s.elseBody, end, err = tp.block(depth + 1); err != nil {
			return nil, err
		}
	}
	if end != "endfor" {
		return nil, &SyntaxError{pc.off, "missing {% endfor %}"}
	}
	tp.i++
	return s, nil
}

// setStmt parses {% set x = v %}, {% set ns.x = v %} and the block
// assignments {% set x %}body{% endset %} (Apriel's, Cohere's and
// GigaChat's templates build their long system texts so).
func (tp *treeParser) setStmt(p *parser, pc piece, depth int) (*stmt, error) {
	s := &stmt{kind: "set", off: pc.off}
	v, err := p.name()
	if err != nil {
		return nil, err
	}
	s.vars = []string{v}
	if p.accept('o', ".") {
		attr, err := p.name()
		if err != nil {
			return nil, err
		}
		s.vars = append(s.vars, attr)
	}
	if p.pos == len(p.toks) {
		if s.body, err = tp.blockTo(pc, depth, "endset"); err != nil {
			return nil, err
		}
		return s, nil
	}
	if !p.accept('o', "=") {
		return nil, &UnsupportedError{Construct: "{% set %} of a tuple or with a filter"}
	}
	if s.e, err = tail(p); err != nil {
		return nil, err
	}
	return s, nil
}

// macroStmt parses {% macro name(a, b=default) %}body{% endmacro %}.
// A macro is a function returning its body's output (Hermes 3's
// template converts schemas to Python types with a recursive one).
func (tp *treeParser) macroStmt(p *parser, pc piece, depth int) (*stmt, error) {
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	s := &stmt{kind: "macro", text: name, off: pc.off}
	if err := params(p, s); err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, p.errf("unexpected %q in {%% macro %%}", p.peek().text)
	}
	if s.body, err = tp.blockTo(pc, depth, "endmacro"); err != nil {
		return nil, err
	}
	return s, nil
}

// params parses a parameter list "(a, b=default)" into s.vars and
// s.defaults.
func params(p *parser, s *stmt) error {
	if err := p.expect('o', "("); err != nil {
		return err
	}
	for !p.accept('o', ")") {
		v, err := p.name()
		if err != nil {
			return err
		}
		var def *expr
		if p.accept('o', "=") {
			if def, err = p.parseBinary(0); err != nil {
				return err
			}
		}
		s.vars = append(s.vars, v)
		s.defaults = append(s.defaults, def)
		if !p.accept('o', ",") {
			return p.expect('o', ")")
		}
	}
	return nil
}

// callStmt parses {% call m(args) %}body{% endcall %} and, with the
// caller's parameters, {% call(a, b=default) m(args) %}: m is called
// with an implicit caller, a macro whose body is the block's (see
// execCall). As in llama.cpp's parser, the callee is a name: Jinja2 also
// takes an attribute (a macro of an imported template), which chat
// templates, having no imports, do not need.
func (tp *treeParser) callStmt(p *parser, pc piece, depth int) (*stmt, error) {
	s := &stmt{kind: "call", text: "caller", off: pc.off}
	if p.is('o', "(") { // a signature: Jinja2 reads a leading "(" as one
		if err := params(p, s); err != nil {
			return nil, err
		}
	}
	callOff := p.peek().off
	e, err := tail(p)
	if err != nil {
		return nil, err
	}
	if e.op != "call" || e.args[0].op != "name" {
		return nil, &SyntaxError{callOff, "{% call %} wants a macro call such as m(x)"}
	}
	s.e = e
	if s.body, err = tp.blockTo(pc, depth, "endcall"); err != nil {
		return nil, err
	}
	return s, nil
}

// filterStmt parses {% filter f %}body{% endfilter %} and
// {% filter f(args) %}: the block's output goes through the filter (the
// Firefunction v2 template trims its system text so). Like llama.cpp's,
// the parser takes one filter: Jinja2 would also take a chain (f|g).
func (tp *treeParser) filterStmt(p *parser, pc piece, depth int) (*stmt, error) {
	t := p.peek()
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	e := &expr{op: "filter", val: name, args: []*expr{{op: "name", val: blockOutput, off: t.off}}, off: t.off}
	if p.is('o', "(") {
		args, err := p.parseArgs()
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, args...)
	}
	if p.pos != len(p.toks) {
		return nil, p.errf("unexpected %q in {%% filter %%}", p.peek().text)
	}
	body, err := tp.blockTo(pc, depth, "endfilter")
	if err != nil {
		return nil, err
	}
	return &stmt{kind: "filter", e: e, body: body, off: pc.off}, nil
}

// blockOutput is the name under which a filter block's filter finds the
// block's output: not an identifier, so no template can read or set it.
const blockOutput = "\x00block"

// blockTo parses the body of the block statement at pc up to its end tag.
func (tp *treeParser) blockTo(pc piece, depth int, end string) ([]*stmt, error) {
	body, got, err := tp.block(depth + 1)
	if err != nil {
		return nil, err
	}
	if got != end {
		return nil, &SyntaxError{pc.off, fmt.Sprintf("missing {%% %s %%}", end)}
	}
	tp.i++
	return body, nil
}
