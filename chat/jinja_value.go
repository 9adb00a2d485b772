package chat

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Values of the interpreter are string, int64, float64, bool, nil
// (None), undefined, []any (lists and tuples), *dict (dicts),
// *namespace and builtin.

// maxValueDepth bounds how deep rendering and comparison look into
// nested lists and dicts.
const maxValueDepth = 64

func truthy(v any) bool {
	switch x := v.(type) {
	case nil, undefined:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case int64:
		return x != 0
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case *dict:
		return len(x.keys) > 0
	}
	return true
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "none"
	case undefined:
		return "undefined"
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "list"
	case *dict:
		return "dict"
	case *namespace:
		return "namespace"
	case builtin, *macro:
		return "function"
	}
	return fmt.Sprintf("%T", v)
}

// str renders v as Jinja prints it, cut off after MaxOutput+1 bytes so
// that a huge value fails the output check instead of being built.
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	writeValue(&b, v, false, 0)
	return b.String()
}

func writeValue(b *strings.Builder, v any, quoted bool, depth int) {
	if b.Len() > MaxOutput {
		return
	}
	switch x := v.(type) {
	case string:
		if quoted {
			b.WriteString("'" + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), "'", `\'`) + "'")
		} else {
			b.WriteString(x)
		}
	case undefined:
	case nil:
		b.WriteString("None")
	case bool:
		b.WriteString(map[bool]string{true: "True", false: "False"}[x])
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(formatFloat(x))
	case []any:
		if depth > maxValueDepth {
			b.WriteString("[...]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, e, true, depth+1)
			if b.Len() > MaxOutput {
				return
			}
		}
		b.WriteByte(']')
	case *dict:
		if depth > maxValueDepth {
			b.WriteString("{...}")
			return
		}
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeValue(b, k, true, depth+1)
			b.WriteString(": ")
			writeValue(b, x.m[k], true, depth+1)
			if b.Len() > MaxOutput {
				return
			}
		}
		b.WriteByte('}')
	default:
		b.WriteString("<" + typeName(v) + ">")
	}
}

func formatFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// iterate returns the elements a for loop visits.
func iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case *dict:
		out := make([]any, len(x.keys))
		for i, k := range x.keys {
			out[i] = k
		}
		return out, nil
	case string:
		if len(x) > MaxCollection {
			return nil, fmt.Errorf("%w: looping over a string of more than %d bytes", ErrTooLarge, MaxCollection)
		}
		out := make([]any, 0, len(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case undefined, nil:
		return nil, nil
	}
	return nil, fmt.Errorf("cannot loop over %s", typeName(v))
}

func checkString(s string) (any, error) {
	if len(s) > MaxOutput {
		return nil, fmt.Errorf("%w: a string of more than %d bytes", ErrTooLarge, MaxOutput)
	}
	return s, nil
}

// operate applies a non-short-circuit operator to evaluated arguments.
func operate(op string, val any, a []any) (any, error) {
	switch op {
	case "attr":
		return attribute(a[0], val.(string)), nil
	case "index":
		return index(a[0], a[1])
	case "slice":
		return slice(a[0], a[1], a[2], a[3])
	case "not":
		return !truthy(a[0]), nil
	case "neg":
		return arith("-", int64(0), a[0])
	case "list":
		return append([]any{}, a...), nil
	case "dict":
		d := newDict(len(a) / 2)
		for i := 0; i+1 < len(a); i += 2 {
			k, ok := a[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict keys must be strings")
			}
			d.set(k, a[i+1])
		}
		return d, nil
	case "==":
		return equal(a[0], a[1], 0), nil
	case "!=":
		return !equal(a[0], a[1], 0), nil
	case "<", ">", "<=", ">=":
		return order(op, a[0], a[1])
	case "in", "not in":
		in, err := contains(a[1], a[0])
		return in == (op == "in"), err
	case "~":
		return checkString(str(a[0]) + str(a[1]))
	}
	return arith(op, a[0], a[1])
}

func attribute(obj any, name string) any {
	switch x := obj.(type) {
	case *dict:
		if v, ok := x.m[name]; ok {
			return v
		}
	case *namespace:
		if v, ok := x.m[name]; ok {
			return v
		}
	}
	return undefined{}
}

func index(obj, key any) (any, error) {
	switch x := obj.(type) {
	case *dict:
		if k, ok := key.(string); ok {
			if v, ok := x.m[k]; ok {
				return v, nil
			}
		}
		return undefined{}, nil
	case []any:
		i, ok := key.(int64)
		if !ok {
			return nil, fmt.Errorf("list index is %s, not an integer", typeName(key))
		}
		if i < 0 {
			i += int64(len(x))
		}
		if i < 0 || i >= int64(len(x)) {
			return undefined{}, nil
		}
		return x[i], nil
	case string:
		i, ok := key.(int64)
		r := []rune(x)
		if !ok {
			return nil, fmt.Errorf("string index is %s, not an integer", typeName(key))
		}
		if i < 0 {
			i += int64(len(r))
		}
		if i < 0 || i >= int64(len(r)) {
			return undefined{}, nil
		}
		return string(r[i]), nil
	case *namespace:
		if k, ok := key.(string); ok {
			return attribute(x, k), nil
		}
	}
	return undefined{}, nil
}

// bounds resolves Python slice bounds for length n.
func bounds(lo, hi any, n int) (int, int, error) {
	get := func(v any, def int) (int, error) {
		switch x := v.(type) {
		case nil:
			return def, nil
		case int64:
			if x < 0 {
				x += int64(n)
			}
			return int(max(0, min(x, int64(n)))), nil
		}
		return 0, fmt.Errorf("slice bound is %s, not an integer", typeName(v))
	}
	a, err := get(lo, 0)
	if err != nil {
		return 0, 0, err
	}
	b, err := get(hi, n)
	if err != nil {
		return 0, 0, err
	}
	return a, max(a, b), nil
}

func slice(obj, lo, hi, step any) (any, error) {
	if step != nil {
		return stepSlice(obj, lo, hi, step)
	}
	switch x := obj.(type) {
	case []any:
		a, b, err := bounds(lo, hi, len(x))
		if err != nil {
			return nil, err
		}
		return x[a:b:b], nil
	case string:
		r := []rune(x)
		a, b, err := bounds(lo, hi, len(r))
		if err != nil {
			return nil, err
		}
		return string(r[a:b]), nil
	}
	return nil, fmt.Errorf("cannot slice %s", typeName(obj))
}

// stepSlice is x[lo:hi:step] with Python's rules (Qwen3's template walks
// messages[::-1]).
func stepSlice(obj, lo, hi, step any) (any, error) {
	st, ok := step.(int64)
	if !ok || st == 0 {
		return nil, fmt.Errorf("slice step must be a non-zero integer")
	}
	var items []any
	var runes []rune
	n, isStr := 0, false
	switch x := obj.(type) {
	case []any:
		items, n = x, len(x)
	case string:
		runes, isStr = []rune(x), true
		n = len(runes)
	default:
		return nil, fmt.Errorf("cannot slice %s", typeName(obj))
	}
	// Python's slice.indices: clamp to [0, n] for a positive step, to
	// [-1, n-1] for a negative one.
	bound := func(v any, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("slice bound is %s, not an integer", typeName(v))
		}
		if i < 0 {
			i += int64(n)
		}
		if st > 0 {
			return max(0, min(i, int64(n))), nil
		}
		return max(-1, min(i, int64(n)-1)), nil
	}
	a, err := bound(lo, map[bool]int64{true: 0, false: int64(n) - 1}[st > 0])
	if err != nil {
		return nil, err
	}
	b, err := bound(hi, map[bool]int64{true: int64(n), false: -1}[st > 0])
	if err != nil {
		return nil, err
	}
	var idx []int
	for i := a; (st > 0 && i < b) || (st < 0 && i > b); i += st {
		idx = append(idx, int(i))
	}
	if isStr {
		out := make([]rune, len(idx))
		for k, i := range idx {
			out[k] = runes[i]
		}
		return string(out), nil
	}
	out := make([]any, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return out, nil
}

func equal(a, b any, depth int) bool {
	if depth > maxValueDepth {
		return false
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i], depth+1) {
				return false
			}
		}
		return true
	case *dict:
		y, ok := b.(*dict)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		for k, v := range x.m {
			if w, ok := y.m[k]; !ok || !equal(v, w, depth+1) {
				return false
			}
		}
		return true
	case string, bool, nil, undefined:
		return a == b
	}
	return false
}

// number returns the value of an int64 or float64 (not of a bool).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func order(op string, a, b any) (any, error) {
	var c int
	if x, ok := number(a); ok {
		y, ok := number(b)
		if !ok {
			return nil, fmt.Errorf("cannot compare %s with %s", typeName(a), typeName(b))
		}
		c = map[bool]int{true: -1, false: 0}[x < y] + map[bool]int{true: 1, false: 0}[x > y]
	} else if x, ok := a.(string); ok {
		y, ok := b.(string)
		if !ok {
			return nil, fmt.Errorf("cannot compare %s with %s", typeName(a), typeName(b))
		}
		c = strings.Compare(x, y)
	} else {
		return nil, fmt.Errorf("cannot compare %s with %s", typeName(a), typeName(b))
	}
	switch op {
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	}
	return c >= 0, nil
}

func contains(container, item any) (bool, error) {
	switch x := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("'in <string>' needs a string, not %s", typeName(item))
		}
		return strings.Contains(x, s), nil
	case []any:
		for _, e := range x {
			if equal(e, item, 0) {
				return true, nil
			}
		}
		return false, nil
	case *dict:
		s, ok := item.(string)
		_, in := x.m[s]
		return ok && in, nil
	case undefined, nil:
		return false, nil
	}
	return false, fmt.Errorf("cannot look into %s", typeName(container))
}

// arithSeq handles + on strings and lists and * of a string by an
// integer, with the size limits; ok is false for other operands.
func arithSeq(op string, a, b any) (v any, ok bool, err error) {
	switch x := a.(type) {
	case string:
		if y, isStr := b.(string); isStr && op == "+" {
			v, err = checkString(x + y)
			return v, true, err
		}
		if n, isInt := b.(int64); isInt && op == "*" {
			if n <= 0 {
				return "", true, nil
			}
			if n > int64(MaxOutput) || int64(len(x))*n > int64(MaxOutput) {
				return nil, true, fmt.Errorf("%w: a string of more than %d bytes", ErrTooLarge, MaxOutput)
			}
			return strings.Repeat(x, int(n)), true, nil
		}
	case []any:
		if y, isList := b.([]any); isList && op == "+" {
			if len(x)+len(y) > MaxCollection {
				return nil, true, fmt.Errorf("%w: a list of more than %d elements", ErrTooLarge, MaxCollection)
			}
			return append(append([]any{}, x...), y...), true, nil
		}
	}
	return nil, false, nil
}

func arith(op string, a, b any) (any, error) {
	if v, ok, err := arithSeq(op, a, b); ok || err != nil {
		return v, err
	}
	x, xi := a.(int64)
	y, yi := b.(int64)
	if xi && yi {
		switch op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "//", "%":
			if y == 0 {
				return nil, fmt.Errorf("division by zero")
			}
			q, r := x/y, x%y
			if r != 0 && (r < 0) != (y < 0) {
				q, r = q-1, r+y
			}
			if op == "//" {
				return q, nil
			}
			return r, nil
		}
	}
	fx, ok1 := number(a)
	fy, ok2 := number(b)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("unsupported operands for %s: %s and %s", op, typeName(a), typeName(b))
	}
	switch op {
	case "+":
		return fx + fy, nil
	case "-":
		return fx - fy, nil
	case "*":
		return fx * fy, nil
	case "/":
		if fy == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return fx / fy, nil
	case "//":
		if fy == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return math.Floor(fx / fy), nil
	case "%":
		if fy == 0 {
			return nil, fmt.Errorf("division by zero")
		}
		return fx - fy*math.Floor(fx/fy), nil
	}
	return nil, &UnsupportedError{Construct: "operator " + op}
}

func capitalize(s string) string {
	r := []rune(strings.ToLower(s))
	if len(r) > 0 {
		r[0] = unicode.ToUpper(r[0])
	}
	return string(r)
}
