package chat

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Limits of the Jinja interpreter beyond MaxOutput.
const (
	// MaxIterations bounds the loop iterations of one rendering.
	MaxIterations = 100_000
	// MaxSteps bounds the expression evaluations of one rendering.
	MaxSteps = 10_000_000
	// MaxCollection bounds the elements of a list or range a template builds.
	MaxCollection = 100_000
	// MaxWork bounds the bytes and elements that operations of one
	// rendering read and produce, so that a loop over a large string
	// cannot take minutes within the step limit.
	MaxWork = 256 << 20
)

// ErrTemplate is wrapped by errors a template raises or causes while
// rendering (raise_exception, a type error).
var ErrTemplate = errors.New("chat: template error")

// undefined is the value of a missing variable or attribute. It renders
// as nothing and is false.
type undefined struct{}

// namespace is the mutable object namespace() returns.
type namespace struct{ m map[string]any }

// builtin is a function the template may call.
type builtin func(args []any, kw map[string]any) (any, error)

// loopControl carries break and continue out of a loop body.
type loopControl struct{ brk bool }

func (loopControl) Error() string { return "loop control outside a loop" }

// machine renders one template.
type machine struct {
	scopes []map[string]any
	out    *strings.Builder
	calls  int // macro calls in progress
	made   int // macro calls made
	steps  int
	iters  int
	work   int
}

// charge counts the size of the values an operation reads or makes.
func (m *machine) charge(vs ...any) error {
	for _, v := range vs {
		switch x := v.(type) {
		case string:
			m.work += len(x)
		case []any:
			m.work += len(x)
		case *dict:
			m.work += len(x.keys)
		default:
			m.work++
		}
	}
	if m.work > MaxWork {
		return fmt.Errorf("%w: the template does more than %d bytes of string work", ErrTooLarge, MaxWork)
	}
	return nil
}

// renderJinja renders tree with the given variables.
func renderJinja(tree []*stmt, vars map[string]any) (string, error) {
	m := &machine{scopes: []map[string]any{vars}, out: &strings.Builder{}}
	if err := m.exec(tree); err != nil {
		var lc loopControl
		if errors.As(err, &lc) {
			return "", fmt.Errorf("%w: break or continue outside a loop", ErrTemplate)
		}
		return "", err
	}
	return m.out.String(), nil
}

func (m *machine) errf(off int, format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrTemplate, off, fmt.Sprintf(format, args...))
}

// wrap adds the byte offset to an error of an operation, keeping the
// limit and unsupported errors as they are.
func (m *machine) wrap(off int, err error) error {
	var ue *UnsupportedError
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTemplate) || errors.As(err, &ue) {
		return err
	}
	return m.errf(off, "%v", err)
}

func (m *machine) write(s string) error {
	if m.out.Len()+len(s) > MaxOutput {
		return fmt.Errorf("%w: the template renders more than %d bytes", ErrTooLarge, MaxOutput)
	}
	m.out.WriteString(s)
	return nil
}

func (m *machine) lookup(name string) any {
	for i := len(m.scopes) - 1; i >= 0; i-- {
		if v, ok := m.scopes[i][name]; ok {
			return v
		}
	}
	return undefined{}
}

func (m *machine) exec(body []*stmt) error {
	for _, s := range body {
		var err error
		switch s.kind {
		case "text":
			err = m.write(s.text)
		case "out":
			var v any
			if v, err = m.eval(s.e); err == nil {
				if err = m.charge(v); err == nil {
					err = m.write(str(v))
				}
			}
		case "if":
			err = m.execIf(s)
		case "for":
			err = m.execFor(s)
		case "set":
			err = m.execSet(s)
		case "macro":
			m.scopes[len(m.scopes)-1][s.text] = &macro{s: s}
		case "call":
			err = m.execCall(s)
		case "filter":
			err = m.execFilter(s)
		case "break", "continue":
			err = loopControl{brk: s.kind == "break"}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *machine) execIf(s *stmt) error {
	for _, b := range s.branches {
		v, err := m.eval(b.cond)
		if err != nil {
			return err
		}
		if truthy(v) {
			return m.exec(b.body)
		}
	}
	return m.exec(s.elseBody)
}

func (m *machine) execSet(s *stmt) error {
	var v any
	var err error
	if s.e == nil {
		v, err = m.capture(s.body)
	} else {
		v, err = m.eval(s.e)
	}
	if err != nil {
		return err
	}
	if len(s.vars) == 2 {
		ns, ok := m.lookup(s.vars[0]).(*namespace)
		if !ok {
			return m.errf(s.off, "%s is not a namespace", s.vars[0])
		}
		ns.m[s.vars[1]] = v
		return nil
	}
	m.scopes[len(m.scopes)-1][s.vars[0]] = v
	return nil
}

// execFor runs a loop; each iteration gets its own scope, so a set in
// the body does not leak out (as in Jinja).
func (m *machine) execFor(s *stmt) error {
	v, err := m.eval(s.e)
	if err != nil {
		return err
	}
	items, err := iterate(v)
	if err != nil {
		return m.errf(s.off, "%v", err)
	}
	if s.cond != nil {
		items, err = m.filterItems(s, items)
		if err != nil {
			return err
		}
	}
	if len(items) == 0 {
		return m.exec(s.elseBody)
	}
	for i, it := range items {
		m.iters++
		if m.iters > MaxIterations {
			return fmt.Errorf("%w: more than %d loop iterations", ErrTooLarge, MaxIterations)
		}
		scope := map[string]any{"loop": loopInfo(i, items)}
		if err := bindLoopVars(scope, s.vars, it); err != nil {
			return m.errf(s.off, "%v", err)
		}
		m.scopes = append(m.scopes, scope)
		err := m.exec(s.body)
		m.scopes = m.scopes[:len(m.scopes)-1]
		var lc loopControl
		if errors.As(err, &lc) {
			if lc.brk {
				break
			}
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *machine) filterItems(s *stmt, items []any) ([]any, error) {
	var kept []any
	for _, it := range items {
		m.iters++
		if m.iters > MaxIterations {
			return nil, fmt.Errorf("%w: more than %d loop iterations", ErrTooLarge, MaxIterations)
		}
		scope := map[string]any{}
		if err := bindLoopVars(scope, s.vars, it); err != nil {
			return nil, m.errf(s.off, "%v", err)
		}
		m.scopes = append(m.scopes, scope)
		ok, err := m.eval(s.cond)
		m.scopes = m.scopes[:len(m.scopes)-1]
		if err != nil {
			return nil, err
		}
		if truthy(ok) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}

// loopKeys are the loop variable's attributes, in Jinja's order.
var loopKeys = []string{"index", "index0", "first", "last", "length", "revindex", "revindex0", "previtem", "nextitem"}

func loopInfo(i int, items []any) *dict {
	n := len(items)
	m := map[string]any{
		"index": int64(i + 1), "index0": int64(i), "first": i == 0, "last": i == n-1,
		"length": int64(n), "revindex": int64(n - i), "revindex0": int64(n - i - 1),
		"previtem": undefined{}, "nextitem": undefined{},
	}
	if i > 0 {
		m["previtem"] = items[i-1]
	}
	if i+1 < n {
		m["nextitem"] = items[i+1]
	}
	// The keys are shared: nothing appends to a dict the template did
	// not build (set only replaces existing keys here).
	return &dict{keys: loopKeys, m: m}
}

func bindLoopVars(scope map[string]any, vars []string, it any) error {
	if len(vars) == 1 {
		scope[vars[0]] = it
		return nil
	}
	tuple, ok := it.([]any)
	if !ok || len(tuple) != len(vars) {
		return fmt.Errorf("cannot unpack %s into %d variables", typeName(it), len(vars))
	}
	for i, v := range vars {
		scope[v] = tuple[i]
	}
	return nil
}

// eval evaluates an expression, counting steps.
func (m *machine) eval(e *expr) (any, error) {
	m.steps++
	if m.steps > MaxSteps {
		return nil, fmt.Errorf("%w: more than %d evaluation steps", ErrTooLarge, MaxSteps)
	}
	switch e.op {
	case "lit":
		return e.val, nil
	case "name":
		return m.lookup(e.val.(string)), nil
	case "and", "or":
		l, err := m.eval(e.args[0])
		if err != nil || truthy(l) == (e.op == "or") {
			return l, err
		}
		return m.eval(e.args[1])
	case "if":
		c, err := m.eval(e.args[0])
		if err != nil {
			return nil, err
		}
		if truthy(c) {
			return m.eval(e.args[1])
		}
		return m.eval(e.args[2])
	case "call":
		return m.evalCall(e)
	case "filter":
		return m.evalFilter(e)
	case "test":
		return m.evalTest(e)
	}
	args := make([]any, len(e.args))
	for i, a := range e.args {
		v, err := m.eval(a)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	if err := m.charge(args...); err != nil {
		return nil, err
	}
	v, err := operate(e.op, e.val, args)
	if err != nil {
		return nil, m.wrap(e.off, err)
	}
	return v, m.charge(v)
}

// evalArgs evaluates call arguments, keyword ones into kw.
func (m *machine) evalArgs(es []*expr) ([]any, map[string]any, error) {
	var args []any
	var kw map[string]any
	for _, a := range es {
		target := a
		if a.op == "kw" {
			target = a.args[0]
		}
		v, err := m.eval(target)
		if err != nil {
			return nil, nil, err
		}
		if a.op == "kw" {
			if kw == nil {
				kw = map[string]any{}
			}
			kw[a.val.(string)] = v
			continue
		}
		args = append(args, v)
	}
	return args, kw, nil
}

func (m *machine) evalCall(e *expr) (any, error) {
	callee := e.args[0]
	args, kw, err := m.evalArgs(e.args[1:])
	if err != nil {
		return nil, err
	}
	if callee.op == "attr" {
		obj, err := m.eval(callee.args[0])
		if err != nil {
			return nil, err
		}
		if err := m.charge(obj); err != nil {
			return nil, err
		}
		v, err := callMethod(obj, callee.val.(string), args)
		if err != nil {
			return nil, m.wrap(e.off, err)
		}
		return v, m.charge(v)
	}
	f, err := m.eval(callee)
	if err != nil {
		return nil, err
	}
	if mac, ok := f.(*macro); ok {
		v, err := m.callMacro(mac, args, kw, nil)
		if err != nil {
			return nil, m.wrap(e.off, err)
		}
		return v, m.charge(v)
	}
	fn, ok := f.(builtin)
	if !ok {
		return nil, m.errf(e.off, "%s is not callable", typeName(f))
	}
	v, err := fn(args, kw)
	if err != nil {
		return nil, m.wrap(e.off, err)
	}
	return v, m.charge(v)
}

func (m *machine) evalFilter(e *expr) (any, error) {
	v, err := m.eval(e.args[0])
	if err != nil {
		return nil, err
	}
	args, kw, err := m.evalArgs(e.args[1:])
	if err != nil {
		return nil, err
	}
	name := e.val.(string)
	if err := m.charge(v); err != nil {
		return nil, err
	}
	out, err := applyFilter(name, v, args, kw)
	if err != nil {
		return nil, m.wrap(e.off, fmt.Errorf("filter %s: %w", name, err))
	}
	return out, m.charge(out)
}

func (m *machine) evalTest(e *expr) (any, error) {
	v, err := m.eval(e.args[0])
	if err != nil {
		return nil, err
	}
	args, _, err := m.evalArgs(e.args[1:])
	if err != nil {
		return nil, err
	}
	return applyTest(e.val.(string), v, args)
}

// builtins are the functions a template may call.
func builtins() map[string]any {
	return map[string]any{
		"raise_exception": builtin(func(args []any, _ map[string]any) (any, error) {
			msg := ""
			if len(args) > 0 {
				msg = str(args[0])
			}
			return nil, fmt.Errorf("%w: the template raised an exception: %s", ErrTemplate, msg)
		}),
		"range": builtin(rangeFunc),
		"namespace": builtin(func(_ []any, kw map[string]any) (any, error) {
			ns := &namespace{m: map[string]any{}}
			for k, v := range kw {
				ns.m[k] = v
			}
			return ns, nil
		}),
	}
}

func rangeFunc(args []any, _ map[string]any) (any, error) {
	var n [3]int64
	n[2] = 1
	for i, a := range args {
		x, ok := a.(int64)
		if !ok || i > 2 {
			return nil, fmt.Errorf("range wants up to three integers")
		}
		n[i] = x
	}
	start, stop, step := int64(0), n[0], n[2]
	if len(args) >= 2 {
		start, stop = n[0], n[1]
	}
	if step == 0 {
		return nil, fmt.Errorf("range step is zero")
	}
	var out []any
	for x := start; step > 0 && x < stop || step < 0 && x > stop; x += step {
		if len(out) >= MaxCollection {
			return nil, fmt.Errorf("%w: range of more than %d elements", ErrTooLarge, MaxCollection)
		}
		out = append(out, x)
	}
	return out, nil
}

// maxMacroCalls bounds the macro calls of one rendering (a recursive
// macro may fan out; Hermes 3 calls one per parameter and nested type).
const maxMacroCalls = 10_000

// macro is a function a template defined with {% macro %}, or the
// caller of a {% call %} block.
type macro struct {
	s *stmt
	// env is nil for a template's macro, which sees the template's
	// globals (not its caller's locals, as in Jinja); a caller sees the
	// scopes of its call site, as in Jinja2 and llama.cpp: the block is
	// written there.
	env []map[string]any
}

// callMacro runs a macro's body with its parameters bound, in a scope
// above the template's globals (or a caller's call site), and returns
// what it wrote. caller, when not nil, is the body of the {% call %}
// block that called the macro, which the macro sees as caller. Callers'
// runs count as macro calls: a caller that calls the macro again
// recurses as a macro does.
func (m *machine) callMacro(mac *macro, args []any, kw map[string]any, caller *macro) (any, error) {
	if m.calls >= maxDepth {
		return nil, fmt.Errorf("%w: macro calls nested deeper than %d", ErrTooLarge, maxDepth)
	}
	if m.made++; m.made > maxMacroCalls {
		return nil, fmt.Errorf("%w: more than %d macro calls", ErrTooLarge, maxMacroCalls)
	}
	s := mac.s
	if len(args) > len(s.vars) {
		return nil, fmt.Errorf("macro %s takes %d arguments, not %d", s.text, len(s.vars), len(args))
	}
	scope := map[string]any{}
	for i, name := range s.vars {
		switch v, ok := kw[name]; {
		case i < len(args):
			scope[name] = args[i]
		case ok:
			scope[name] = v
		case s.defaults[i] != nil:
			d, err := m.eval(s.defaults[i])
			if err != nil {
				return nil, err
			}
			scope[name] = d
		default:
			scope[name] = undefined{}
		}
	}
	for k := range kw {
		if _, ok := scope[k]; !ok {
			return nil, fmt.Errorf("macro %s has no parameter %s", s.text, k)
		}
	}
	if caller != nil {
		scope["caller"] = caller
	}
	env := mac.env
	if env == nil {
		env = m.scopes[:1]
	}
	saved, savedOut := m.scopes, m.out
	// Clipped, the append copies env: a caller may run while its call
	// site's scope stack has grown or shrunk.
	m.scopes = append(slices.Clip(env), scope)
	m.out = &strings.Builder{}
	m.calls++
	err := m.exec(s.body)
	m.calls--
	out := m.out.String()
	m.scopes, m.out = saved, savedOut
	var lc loopControl
	if errors.As(err, &lc) {
		return nil, fmt.Errorf("%w: break or continue outside a loop", ErrTemplate)
	}
	return out, err
}

// execCall runs a {% call %} block: the macro called with the block's
// body as its caller, writing what the macro returns. The callee is
// evaluated first, then the arguments, as llama.cpp does.
func (m *machine) execCall(s *stmt) error {
	e := s.e
	f, err := m.eval(e.args[0])
	if err != nil {
		return err
	}
	mac, ok := f.(*macro)
	if !ok {
		// Jinja2 fails too (a function given caller=), and llama.cpp
		// (not a function, or a built-in given arguments it does not take).
		return m.errf(e.args[0].off, "{%% call %%} of %s, which is not a macro", typeName(f))
	}
	args, kw, err := m.evalArgs(e.args[1:])
	if err != nil {
		return err
	}
	// The caller keeps the call site's scope maps (in a list of its own:
	// the stack changes as the template goes on), so that it sees the
	// variables as they are when it runs, as a Jinja2 closure does, even
	// if the macro stored it and it runs after the block.
	caller := &macro{s: s, env: slices.Clone(m.scopes)}
	v, err := m.callMacro(mac, args, kw, caller)
	if err != nil {
		return m.wrap(e.off, err)
	}
	if err := m.charge(v); err != nil {
		return err
	}
	return m.write(str(v))
}

// capture runs a block and returns what it wrote. The block runs in the
// current scope, as llama.cpp runs it: a set inside it stays set after
// it (Jinja2 would keep it inside).
func (m *machine) capture(body []*stmt) (string, error) {
	saved := m.out
	m.out = &strings.Builder{}
	err := m.exec(body)
	out := m.out.String()
	m.out = saved
	return out, err
}

// execFilter runs a {% filter %} block: its output goes through the
// filter, evaluated with the output bound to blockOutput.
func (m *machine) execFilter(s *stmt) error {
	out, err := m.capture(s.body)
	if err != nil {
		return err
	}
	m.scopes = append(m.scopes, map[string]any{blockOutput: out})
	v, err := m.eval(s.e)
	m.scopes = m.scopes[:len(m.scopes)-1]
	if err != nil {
		return err
	}
	if err := m.charge(v); err != nil {
		return err
	}
	return m.write(str(v))
}
