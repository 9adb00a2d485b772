package chat

import (
	"fmt"
	"strings"
)

// callMethod calls a method of a string or a dict.
func callMethod(obj any, name string, args []any) (any, error) {
	switch x := obj.(type) {
	case string:
		return stringMethod(x, name, args)
	case *dict:
		return dictMethod(x, name, args)
	}
	return nil, fmt.Errorf("%s has no method %s", typeName(obj), name)
}

// strArg returns argument i as a string, or def when absent.
func strArg(args []any, i int, def string) (string, error) {
	if i >= len(args) || args[i] == nil {
		return def, nil
	}
	s, ok := args[i].(string)
	if !ok {
		return "", fmt.Errorf("argument %d is %s, not a string", i+1, typeName(args[i]))
	}
	return s, nil
}

const spaces = " \t\n\r\v\f"

func stringMethod(s, name string, args []any) (any, error) {
	a0, err := strArg(args, 0, spaces)
	if err != nil {
		return nil, err
	}
	switch name {
	case "strip":
		return strings.Trim(s, a0), nil
	case "lstrip":
		return strings.TrimLeft(s, a0), nil
	case "rstrip":
		return strings.TrimRight(s, a0), nil
	case "upper":
		return strings.ToUpper(s), nil
	case "lower":
		return strings.ToLower(s), nil
	case "capitalize":
		return capitalize(s), nil
	case "title":
		return title(s), nil
	case "startswith", "endswith":
		p, err := strArg(args, 0, "")
		if err != nil {
			return nil, err
		}
		if name == "startswith" {
			return strings.HasPrefix(s, p), nil
		}
		return strings.HasSuffix(s, p), nil
	case "split":
		var parts []string
		if len(args) == 0 || args[0] == nil {
			parts = strings.Fields(s)
		} else if sep, err := strArg(args, 0, ""); err != nil || sep == "" {
			return nil, fmt.Errorf("split needs a non-empty separator")
		} else {
			parts = strings.Split(s, sep)
		}
		if len(parts) > MaxCollection {
			return nil, fmt.Errorf("%w: split into more than %d parts", ErrTooLarge, MaxCollection)
		}
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case "replace":
		return replace(s, args)
	}
	return nil, fmt.Errorf("string has no method %s", name)
}

func replace(s string, args []any) (any, error) {
	old, err := strArg(args, 0, "")
	if err != nil {
		return nil, err
	}
	repl, err := strArg(args, 1, "")
	if err != nil {
		return nil, err
	}
	n := strings.Count(s, old)
	if old == "" {
		n = len(s) + 1
	}
	if len(s)+n*len(repl) > MaxOutput {
		return nil, fmt.Errorf("%w: a string of more than %d bytes", ErrTooLarge, MaxOutput)
	}
	return strings.ReplaceAll(s, old, repl), nil
}

func dictMethod(d *dict, name string, args []any) (any, error) {
	switch name {
	case "items", "keys", "values":
		out := make([]any, len(d.keys))
		for i, k := range d.keys {
			switch name {
			case "items":
				out[i] = []any{k, d.m[k]}
			case "keys":
				out[i] = k
			default:
				out[i] = d.m[k]
			}
		}
		return out, nil
	case "get":
		k, err := strArg(args, 0, "")
		if err != nil {
			return nil, err
		}
		if v, ok := d.m[k]; ok {
			return v, nil
		}
		if len(args) > 1 {
			return args[1], nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("dict has no method %s", name)
}

// applyFilter applies the filter name to v.
func applyFilter(name string, v any, args []any, kw map[string]any) (any, error) {
	switch name {
	case "trim":
		return strings.Trim(str(v), spaces), nil
	case "upper":
		return strings.ToUpper(str(v)), nil
	case "lower":
		return strings.ToLower(str(v)), nil
	case "capitalize":
		return capitalize(str(v)), nil
	case "string", "safe":
		return checkString(str(v))
	case "length", "count":
		switch x := v.(type) {
		case string:
			return int64(len([]rune(x))), nil
		case []any:
			return int64(len(x)), nil
		case *dict:
			return int64(len(x.keys)), nil
		case undefined, nil:
			return int64(0), nil
		}
		return nil, fmt.Errorf("%s has no length", typeName(v))
	case "first", "last":
		items, err := iterate(v)
		if err != nil || len(items) == 0 {
			return undefined{}, err
		}
		if name == "first" {
			return items[0], nil
		}
		return items[len(items)-1], nil
	case "default", "d":
		if _, undef := v.(undefined); undef || (len(args) > 1 && truthy(args[1]) && !truthy(v)) {
			if len(args) > 0 {
				return args[0], nil
			}
			return "", nil
		}
		return v, nil
	case "join":
		return join(v, args)
	case "tojson":
		return tojsonFilter(v, args, kw)
	case "list":
		return iterate(v)
	case "reverse":
		return reverse(v)
	case "replace":
		return replace(str(v), args)
	case "int":
		switch x := v.(type) {
		case int64:
			return x, nil
		case float64:
			return int64(x), nil
		case bool:
			return map[bool]int64{true: 1, false: 0}[x], nil
		}
		return int64(0), nil
	case "items":
		if d, ok := v.(*dict); ok {
			return dictMethod(d, "items", nil)
		}
		return nil, fmt.Errorf("%s has no items", typeName(v))
	case "selectattr", "rejectattr":
		return selectAttr(v, args, name == "selectattr")
	case "map":
		return mapAttr(v, kw)
	}
	return nil, &UnsupportedError{Construct: "the filter " + name}
}

func join(v any, args []any) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	sep, err := strArg(args, 0, "")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(str(it))
		if b.Len() > MaxOutput {
			return nil, fmt.Errorf("%w: a string of more than %d bytes", ErrTooLarge, MaxOutput)
		}
	}
	return b.String(), nil
}

func reverse(v any) (any, error) {
	if s, ok := v.(string); ok {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out, nil
}

// applyTest applies the test name ("x is name") to v.
func applyTest(name string, v any, args []any) (any, error) {
	_, undef := v.(undefined)
	switch name {
	case "defined":
		return !undef, nil
	case "undefined":
		return undef, nil
	case "none":
		return v == nil, nil
	case "string":
		_, ok := v.(string)
		return ok, nil
	case "number":
		_, ok := number(v)
		return ok, nil
	case "integer":
		_, ok := v.(int64)
		return ok, nil
	case "boolean":
		_, ok := v.(bool)
		return ok, nil
	case "true", "false":
		b, ok := v.(bool)
		return ok && b == (name == "true"), nil
	case "mapping":
		_, ok := v.(*dict)
		return ok, nil
	case "sequence", "iterable":
		switch v.(type) {
		case []any, string, *dict:
			return true, nil
		}
		return false, nil
	case "odd", "even":
		n, ok := v.(int64)
		return ok && (n%2 != 0) == (name == "odd"), nil
	case "equalto", "eq", "sameas":
		return len(args) == 1 && equal(v, args[0], 0), nil
	}
	return nil, &UnsupportedError{Construct: "the test " + name}
}

// title upper-cases the first letter of each word and lower-cases the rest.
func title(s string) string {
	words := strings.Split(s, " ")
	for i, w := range words {
		words[i] = capitalize(w)
	}
	return strings.Join(words, " ")
}

// selectAttr keeps the elements whose attribute args[0] passes the test
// args[1] (with argument args[2]), or is true when no test is named;
// rejectattr (keep false) keeps the others.
func selectAttr(v any, args []any, keep bool) (any, error) {
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	attr, err := strArg(args, 0, "")
	if err != nil {
		return nil, err
	}
	test, err := strArg(args, 1, "")
	if err != nil {
		return nil, err
	}
	var out []any
	for _, it := range items {
		a := attribute(it, attr)
		pass := truthy(a)
		if test != "" {
			r, err := applyTest(test, a, args[min(2, len(args)):])
			if err != nil {
				return nil, err
			}
			pass = truthy(r)
		}
		if pass == keep {
			out = append(out, it)
		}
	}
	return out, nil
}

// mapAttr is map(attribute=name): the attribute of every element.
func mapAttr(v any, kw map[string]any) (any, error) {
	name, ok := kw["attribute"].(string)
	if !ok {
		return nil, &UnsupportedError{Construct: "the filter map without attribute="}
	}
	items, err := iterate(v)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = attribute(it, name)
	}
	return out, nil
}
