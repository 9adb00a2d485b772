package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// UnsupportedError names a JSON Schema keyword (or value) the compiler
// cannot enforce, and where it is.
type UnsupportedError struct {
	Path    string // JSON pointer of the schema object
	Keyword string
	Detail  string
}

func (e *UnsupportedError) Error() string {
	s := fmt.Sprintf("grammar: JSON Schema at %q: %q is not supported", e.Path, e.Keyword)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// SchemaError reports a malformed JSON Schema.
type SchemaError struct {
	Path string
	Msg  string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("grammar: JSON Schema at %q: %s", e.Path, e.Msg)
}

// jsonPrimitives are the GBNF rules shared by every JSON grammar, in the
// shape of llama.cpp's json-schema-to-grammar: whitespace is bounded (at
// most one newline and 20 indentation characters between tokens), numbers
// have at most 16 integral and 16 fraction digits.
const jsonPrimitives = `space ::= | " " | "\n" [ \t]{0,20}
boolean ::= ("true" | "false") space
null ::= "null" space
integral-part ::= [0] | [1-9] [0-9]{0,15}
decimal-part ::= [0-9]{1,16}
number ::= "-"? integral-part ("." decimal-part)? ([eE] [-+]? integral-part)? space
integer ::= "-"? integral-part space
char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt/] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\"" space
value ::= object | array | string | number | boolean | null
object ::= "{" space (string ":" space value ("," space string ":" space value)*)? "}" space
array ::= "[" space (value ("," space value)*)? "]" space
`

// JSONObjectGBNF is the grammar of any JSON object (response_format
// json_object), with bounded whitespace.
const JSONObjectGBNF = "root ::= object\n" + jsonPrimitives

// JSONObject returns the grammar of any JSON object.
func JSONObject() *Grammar {
	g, err := ParseGBNF(JSONObjectGBNF, DefaultLimits())
	if err != nil {
		panic("grammar: the built-in JSON grammar does not parse: " + err.Error())
	}
	return g
}

// FromJSONSchema compiles a JSON Schema to a grammar of the JSON texts it
// validates. See SchemaToGBNF for what is supported.
func FromJSONSchema(schema []byte, lim Limits) (*Grammar, error) {
	src, err := SchemaToGBNF(schema, lim)
	if err != nil {
		return nil, err
	}
	return ParseGBNF(src, lim)
}

// SchemaToGBNF compiles a JSON Schema to GBNF text. It supports type
// (one or a list), properties, required, additionalProperties (false, true
// or a schema), enum, const, items, minItems, maxItems, minLength,
// maxLength, minimum, maximum, exclusiveMinimum and exclusiveMaximum on
// integers, anyOf, oneOf (as anyOf), allOf of one schema, and $ref to "#",
// "#/$defs/..." and "#/definitions/...". Annotations (title, description,
// default, examples...) are ignored; any other assertion keyword gives an
// *UnsupportedError naming it. Properties appear in the schema's order.
// Keys allowed by additionalProperties are not checked against the
// declared ones.
func SchemaToGBNF(schema []byte, lim Limits) (string, error) {
	start, rules, err := SchemaRules(schema, lim)
	if err != nil {
		return "", err
	}
	return "root ::= " + start + "\n" + rules, nil
}

// SchemaRules compiles a JSON Schema as SchemaToGBNF does, but without a
// root rule: it returns the name of the rule matching the schema's values
// and the text of every rule it needs (the JSON primitives and the rules
// made for the schema, none named root). A caller composes a larger
// grammar around the value, such as a tool call's envelope: its own root
// rule refers to start, followed by rules.
func SchemaRules(schema []byte, lim Limits) (start, rules string, err error) {
	starts, rules, err := SchemasRules([][]byte{schema}, lim)
	if err != nil {
		return "", "", err
	}
	return starts[0], rules, nil
}

// SchemasRules compiles several JSON Schemas as SchemaRules does, into one
// set of rules: starts[i] names the rule of the values of schemas[i]. Each
// schema's "$ref"s resolve against that schema, as if it were compiled
// alone; the limits hold for the schemas together (their source, their
// rules). A caller composes one grammar in which each value follows its
// own text, such as a call whose function's name comes before its
// arguments.
func SchemasRules(schemas [][]byte, lim Limits) (starts []string, rules string, err error) {
	total := 0
	for _, s := range schemas {
		if total += len(s); total > lim.MaxSource {
			return nil, "", &LimitError{What: "MaxSource", Limit: lim.MaxSource}
		}
	}
	c := &compiler{lim: lim}
	for i, schema := range schemas {
		name, err := c.schema(schema)
		if err != nil {
			if len(schemas) > 1 {
				err = fmt.Errorf("schema %d: %w", i, err) // the cause names the package
			}
			return nil, "", err
		}
		starts = append(starts, name)
	}
	var b strings.Builder
	b.WriteString(jsonPrimitives)
	for _, r := range c.rules {
		b.WriteString(r)
		b.WriteByte('\n')
		if b.Len() > lim.MaxSource*4 {
			return nil, "", &LimitError{What: "MaxSource (compiled grammar)", Limit: lim.MaxSource * 4}
		}
	}
	return starts, b.String(), nil
}

// schema compiles one schema document with the rules compiled so far
// (rule names go on counting) and returns the rule of its values.
func (c *compiler) schema(schema []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return "", &SchemaError{Path: "", Msg: "not JSON: " + err.Error()}
	}
	if dec.More() {
		return "", &SchemaError{Path: "", Msg: "text after the schema"}
	}
	c.root, c.refs, c.order = root, map[string]string{}, map[string][]string{}
	if err := keyOrder(schema, c.order); err != nil {
		return "", &SchemaError{Path: "", Msg: "not JSON: " + err.Error()}
	}
	return c.visit(root, "", 0)
}

type compiler struct {
	lim   Limits
	rules []string // of every schema compiled
	// the schema being compiled
	root  any
	refs  map[string]string   // $ref -> rule name
	order map[string][]string // JSON pointer of an object -> its keys in text order
}

// escapePointer escapes a key for a JSON pointer.
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// keyOrder records, for every object in the JSON text, its keys in the
// order they appear (decoding into a map loses it), by JSON pointer.
func keyOrder(text []byte, order map[string][]string) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			var keys []string
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				keys = append(keys, key)
				if err := walk(path + "/" + escapePointer(key)); err != nil {
					return err
				}
			}
			order[path] = keys
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(path + "/" + strconv.Itoa(i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk("")
}

// rule adds a rule with a fresh name and returns the name.
func (c *compiler) rule(body string) (string, error) {
	if len(c.rules) >= c.lim.MaxRules {
		return "", &LimitError{What: "MaxRules", Limit: c.lim.MaxRules}
	}
	name := "s" + strconv.Itoa(len(c.rules))
	c.rules = append(c.rules, name+" ::= "+body)
	return name, nil
}

// reserve adds a placeholder rule, for a $ref that may recur.
func (c *compiler) reserve() (int, string, error) {
	name, err := c.rule("")
	return len(c.rules) - 1, name, err
}

// ignored are the keywords that do not constrain the text.
var ignored = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true,
	"$defs": true, "definitions": true, "strict": true, "$anchor": true, "contentMediaType": true,
	"contentEncoding": true,
}

// handled are the keywords the compiler enforces.
var handled = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "enum": true,
	"const": true, "items": true, "minItems": true, "maxItems": true, "minLength": true,
	"maxLength": true, "minimum": true, "maximum": true, "exclusiveMinimum": true,
	"exclusiveMaximum": true, "anyOf": true, "oneOf": true, "allOf": true, "$ref": true,
}

// literal returns the GBNF literal of text.
func literal(text string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(text); i++ {
		ch := text[i]
		switch {
		case ch == '"' || ch == '\\':
			b.WriteByte('\\')
			b.WriteByte(ch)
		case ch < 0x20 || ch == 0x7f:
			fmt.Fprintf(&b, "\\x%02X", ch)
		default:
			b.WriteByte(ch)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsonText returns the compact JSON encoding of a decoded value.
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (c *compiler) visit(s any, path string, depth int) (string, error) {
	if depth > c.lim.MaxNesting {
		return "", &LimitError{What: "MaxNesting", Limit: c.lim.MaxNesting}
	}
	switch s := s.(type) {
	case bool:
		if s {
			return "value", nil
		}
		return "", &UnsupportedError{Path: path, Keyword: "false", Detail: "a schema no value satisfies"}
	case map[string]any:
		return c.object(s, path, depth)
	}
	return "", &SchemaError{Path: path, Msg: "a schema must be an object or a boolean"}
}

func (c *compiler) object(s map[string]any, path string, depth int) (string, error) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !ignored[k] && !handled[k] {
			return "", &UnsupportedError{Path: path, Keyword: k}
		}
	}
	if ref, ok := s["$ref"]; ok {
		r, ok := ref.(string)
		if !ok {
			return "", &SchemaError{Path: path + "/$ref", Msg: "must be a string"}
		}
		return c.ref(r, path, depth)
	}
	if v, ok := s["const"]; ok {
		t, err := jsonText(v)
		if err != nil {
			return "", &SchemaError{Path: path + "/const", Msg: err.Error()}
		}
		return c.rule(literal(t) + " space")
	}
	if v, ok := s["enum"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", &SchemaError{Path: path + "/enum", Msg: "must be a non-empty array"}
		}
		alts := make([]string, len(list))
		for i, x := range list {
			t, err := jsonText(x)
			if err != nil {
				return "", &SchemaError{Path: path + "/enum", Msg: err.Error()}
			}
			alts[i] = literal(t)
		}
		return c.rule("(" + strings.Join(alts, " | ") + ") space")
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		v, ok := s[k]
		if !ok {
			continue
		}
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return "", &SchemaError{Path: path + "/" + k, Msg: "must be a non-empty array"}
		}
		if k == "allOf" && len(list) != 1 {
			return "", &UnsupportedError{Path: path, Keyword: "allOf", Detail: "only with a single schema"}
		}
		alts := make([]string, len(list))
		for i, x := range list {
			n, err := c.visit(x, fmt.Sprintf("%s/%s/%d", path, k, i), depth+1)
			if err != nil {
				return "", err
			}
			alts[i] = n
		}
		return c.rule(strings.Join(alts, " | "))
	}
	var types []string
	switch t := s["type"].(type) {
	case nil:
		switch {
		case s["properties"] != nil || s["additionalProperties"] != nil || s["required"] != nil:
			types = []string{"object"}
		case s["items"] != nil || s["minItems"] != nil || s["maxItems"] != nil:
			types = []string{"array"}
		case s["minLength"] != nil || s["maxLength"] != nil:
			types = []string{"string"}
		case s["minimum"] != nil || s["maximum"] != nil:
			types = []string{"number"}
		default:
			return "value", nil
		}
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			str, ok := x.(string)
			if !ok {
				return "", &SchemaError{Path: path + "/type", Msg: "must be a string or an array of strings"}
			}
			types = append(types, str)
		}
		if len(types) == 0 {
			return "", &SchemaError{Path: path + "/type", Msg: "empty"}
		}
	default:
		return "", &SchemaError{Path: path + "/type", Msg: "must be a string or an array of strings"}
	}
	alts := make([]string, len(types))
	for i, t := range types {
		n, err := c.typed(t, s, path, depth)
		if err != nil {
			return "", err
		}
		alts[i] = n
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.rule(strings.Join(alts, " | "))
}

func (c *compiler) ref(r, path string, depth int) (string, error) {
	if name, ok := c.refs[r]; ok {
		return name, nil
	}
	var target any
	switch {
	case r == "#":
		target = c.root
	case strings.HasPrefix(r, "#/$defs/") || strings.HasPrefix(r, "#/definitions/"):
		section, key, _ := strings.Cut(strings.TrimPrefix(r, "#/"), "/")
		key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
		root, _ := c.root.(map[string]any)
		defs, _ := root[section].(map[string]any)
		t, ok := defs[key]
		if !ok {
			return "", &SchemaError{Path: path + "/$ref", Msg: fmt.Sprintf("%q not found", r)}
		}
		target = t
	default:
		return "", &UnsupportedError{Path: path, Keyword: "$ref", Detail: fmt.Sprintf("%q: only \"#\", \"#/$defs/...\" and \"#/definitions/...\"", r)}
	}
	idx, name, err := c.reserve()
	if err != nil {
		return "", err
	}
	c.refs[r] = name
	body, err := c.visit(target, strings.TrimPrefix(r, "#"), depth+1)
	if err != nil {
		return "", err
	}
	c.rules[idx] = name + " ::= " + body
	return name, nil
}

// count reads a non-negative integer keyword, bounded by MaxRepeat.
func (c *compiler) count(s map[string]any, k, path string) (int, bool, error) {
	v, ok := s[k]
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	i, err := strconv.ParseInt(string(n), 10, 64)
	if !isNum || err != nil || i < 0 {
		return 0, false, &SchemaError{Path: path + "/" + k, Msg: "must be a non-negative integer"}
	}
	if i > int64(c.lim.MaxRepeat) {
		return 0, false, &LimitError{What: "MaxRepeat (" + k + ")", Limit: c.lim.MaxRepeat}
	}
	return int(i), true, nil
}

func (c *compiler) typed(t string, s map[string]any, path string, depth int) (string, error) {
	switch t {
	case "null":
		return "null", nil
	case "boolean":
		return "boolean", nil
	case "string":
		lo, _, err := c.count(s, "minLength", path)
		if err != nil {
			return "", err
		}
		hi, hasHi, err := c.count(s, "maxLength", path)
		if err != nil {
			return "", err
		}
		if !hasHi && lo == 0 {
			return "string", nil
		}
		if hasHi && hi < lo {
			return "", &SchemaError{Path: path, Msg: "maxLength below minLength"}
		}
		rep := fmt.Sprintf("{%d,}", lo)
		if hasHi {
			rep = fmt.Sprintf("{%d,%d}", lo, hi)
		}
		return c.rule(`"\"" char` + rep + ` "\"" space`)
	case "number":
		for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} {
			if _, ok := s[k]; ok {
				return "", &UnsupportedError{Path: path, Keyword: k, Detail: "bounds are supported on integers only"}
			}
		}
		return "number", nil
	case "integer":
		return c.integer(s, path)
	case "array":
		item := "value"
		if it, ok := s["items"]; ok {
			if _, isList := it.([]any); isList {
				return "", &UnsupportedError{Path: path, Keyword: "items", Detail: "an array of schemas (tuple)"}
			}
			var err error
			if item, err = c.visit(it, path+"/items", depth+1); err != nil {
				return "", err
			}
		}
		lo, _, err := c.count(s, "minItems", path)
		if err != nil {
			return "", err
		}
		hi, hasHi, err := c.count(s, "maxItems", path)
		if err != nil {
			return "", err
		}
		if hasHi && hi < lo {
			return "", &SchemaError{Path: path, Msg: "maxItems below minItems"}
		}
		if hasHi && hi == 0 {
			return c.rule(`"[" space "]" space`)
		}
		rest := "*"
		switch {
		case hasHi:
			rest = fmt.Sprintf("{%d,%d}", max(lo-1, 0), hi-1)
		case lo > 1:
			rest = fmt.Sprintf("{%d,}", lo-1)
		}
		body := item + ` ("," space ` + item + `)` + rest
		if lo == 0 {
			body = "(" + body + ")?"
		}
		return c.rule(`"[" space ` + body + ` "]" space`)
	case "object":
		return c.objectType(s, path, depth)
	}
	return "", &UnsupportedError{Path: path, Keyword: "type", Detail: fmt.Sprintf("%q", t)}
}

// objectType compiles properties, required and additionalProperties. The
// properties come in the schema's order, optional ones may be left out;
// two chains of rules (before and after the first member) put the commas
// right.
func (c *compiler) objectType(s map[string]any, path string, depth int) (string, error) {
	props, _ := s["properties"].(map[string]any)
	if _, ok := s["properties"]; ok && props == nil {
		return "", &SchemaError{Path: path + "/properties", Msg: "must be an object"}
	}
	required := map[string]bool{}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return "", &SchemaError{Path: path + "/required", Msg: "must be an array of strings"}
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return "", &SchemaError{Path: path + "/required", Msg: "must be an array of strings"}
			}
			if _, declared := props[name]; !declared {
				return "", &UnsupportedError{Path: path, Keyword: "required", Detail: fmt.Sprintf("%q is not among the properties", name)}
			}
			required[name] = true
		}
	}
	extra := ""
	switch a := s["additionalProperties"].(type) {
	case nil:
		extra = "value"
	case bool:
		if a {
			extra = "value"
		}
	default:
		var err error
		if extra, err = c.visit(a, path+"/additionalProperties", depth+1); err != nil {
			return "", err
		}
	}
	names := propertyOrder(props, c.order[path+"/properties"])
	// after[i]: members from i on, something already written (commas before).
	// first[i]: members from i on, nothing written yet.
	kv := make([]string, len(names))
	for i, n := range names {
		v, err := c.visit(props[n], path+"/properties/"+escapePointer(n), depth+1)
		if err != nil {
			return "", err
		}
		key, err := jsonText(n)
		if err != nil {
			return "", err
		}
		kv[i] = literal(key) + ` space ":" space ` + v
	}
	afterEnd, firstEnd := `""`, `""`
	if extra != "" {
		key := "string"
		if len(names) > 0 {
			var err error
			if key, err = c.otherKey(names); err != nil {
				return "", err
			}
		}
		ekv := key + ` ":" space ` + extra
		afterEnd = `("," space ` + ekv + `)*`
		firstEnd = `(` + ekv + ` ("," space ` + ekv + `)*)?`
	}
	after, first := afterEnd, firstEnd
	for i := len(names) - 1; i >= 0; i-- {
		var err error
		na, nf := after, first
		if required[names[i]] {
			if after, err = c.rule(`"," space ` + kv[i] + " " + na); err != nil {
				return "", err
			}
			if first, err = c.rule(kv[i] + " " + na); err != nil {
				return "", err
			}
			continue
		}
		if after, err = c.rule(`("," space ` + kv[i] + `)? ` + na); err != nil {
			return "", err
		}
		if first, err = c.rule(kv[i] + " " + na + " | " + nf); err != nil {
			return "", err
		}
	}
	return c.rule(`"{" space ` + first + ` "}" space`)
}

// otherKey returns a rule for a JSON string that is none of names (as
// llama.cpp does, so an additional property cannot repeat a declared
// one): a walk down the trie of the names' JSON texts that leaves it by a
// character no name continues with, or ends the string where no name
// ends. A key spelt with escapes where the name has plain characters is
// not recognised as the same.
func (c *compiler) otherKey(names []string) (string, error) {
	type tnode struct {
		kids map[rune]*tnode
		end  bool
	}
	root := &tnode{kids: map[rune]*tnode{}}
	for _, n := range names {
		t, err := jsonText(n)
		if err != nil {
			return "", err
		}
		t = t[1 : len(t)-1] // the text between the quotes
		x := root
		for _, r := range t {
			k, ok := x.kids[r]
			if !ok {
				k = &tnode{kids: map[rune]*tnode{}}
				x.kids[r] = k
			}
			x = k
		}
		x.end = true
	}
	var build func(x *tnode) (string, error)
	build = func(x *tnode) (string, error) {
		runes := make([]rune, 0, len(x.kids))
		for r := range x.kids {
			runes = append(runes, r)
		}
		slices.Sort(runes)
		var alts []string
		excl := `"\\`
		for _, r := range runes {
			sub, err := build(x.kids[r])
			if err != nil {
				return "", err
			}
			alts = append(alts, literal(string(r))+" "+sub)
			switch {
			case r == ']' || r == '\\':
				excl += `\` + string(r)
			case r == '^' || r == '-' || r < 0x20 || r == 0x7f:
				excl += fmt.Sprintf("\\x%02X", r)
			default:
				excl += string(r)
			}
		}
		// Leave the trie with a character no name continues with.
		alts = append(alts, `[^`+excl+`\x7F\x00-\x1F] char* "\"" space`)
		if _, ok := x.kids['\\']; !ok {
			alts = append(alts, `[\\] (["\\bfnrt/] | "u" [0-9a-fA-F]{4}) char* "\"" space`)
		}
		if !x.end {
			alts = append(alts, `"\"" space`)
		}
		return c.rule(strings.Join(alts, " | "))
	}
	body, err := build(root)
	if err != nil {
		return "", err
	}
	return c.rule(`"\"" ` + body)
}

// propertyOrder returns the property names in the order the schema text
// lists them (a repeated key where it last appears, as the decoded value
// has it), as llama.cpp keeps them.
func propertyOrder(props map[string]any, text []string) []string {
	names := make([]string, 0, len(props))
	for i, n := range text {
		if _, ok := props[n]; ok && !slices.Contains(text[i+1:], n) {
			names = append(names, n)
		}
	}
	if len(names) != len(props) { // cannot happen for the text decoded
		names = names[:0]
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	return names
}

// maxDigits bounds the integers an open-ended integer range reaches, as
// the integral-part rule does.
const maxDigits = 16

// integer compiles an integer with optional bounds to digit patterns.
func (c *compiler) integer(s map[string]any, path string) (string, error) {
	if _, ok := s["multipleOf"]; ok {
		return "", &UnsupportedError{Path: path, Keyword: "multipleOf"}
	}
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(maxDigits), nil)
	limit.Sub(limit, big.NewInt(1))
	lo, hi := new(big.Int).Neg(limit), new(big.Int).Set(limit)
	bounded := false
	bound := func(k string, up bool, excl bool) error {
		v, ok := s[k]
		if !ok {
			return nil
		}
		n, isNum := v.(json.Number)
		r, ok2 := new(big.Rat).SetString(string(n))
		if !isNum || !ok2 {
			return &SchemaError{Path: path + "/" + k, Msg: "must be a number"}
		}
		bounded = true
		// The integer bound: floor for a maximum, ceiling for a minimum,
		// one step in for an exclusive bound on an integer.
		q := new(big.Int).Quo(r.Num(), r.Denom())
		exact := r.IsInt()
		if up {
			if r.Sign() < 0 && !exact {
				q.Sub(q, big.NewInt(1))
			}
			if excl && exact {
				q.Sub(q, big.NewInt(1))
			}
			if q.Cmp(hi) < 0 {
				hi = q
			}
		} else {
			if r.Sign() > 0 && !exact {
				q.Add(q, big.NewInt(1))
			}
			if excl && exact {
				q.Add(q, big.NewInt(1))
			}
			if q.Cmp(lo) > 0 {
				lo = q
			}
		}
		return nil
	}
	for _, b := range []struct {
		k        string
		up, excl bool
	}{{"minimum", false, false}, {"maximum", true, false}, {"exclusiveMinimum", false, true}, {"exclusiveMaximum", true, true}} {
		if v, ok := s[b.k]; ok {
			if _, isBool := v.(bool); isBool {
				return "", &UnsupportedError{Path: path, Keyword: b.k, Detail: "the boolean form of draft 4"}
			}
		}
		if err := bound(b.k, b.up, b.excl); err != nil {
			return "", err
		}
	}
	if !bounded {
		return "integer", nil
	}
	if lo.Cmp(hi) > 0 {
		return "", &SchemaError{Path: path, Msg: "no integer lies within the bounds"}
	}
	var alts []string
	if lo.Sign() < 0 {
		// Negative part: "-" then |x| in [max(1, -hi), -lo].
		nlo := big.NewInt(1)
		if hi.Sign() < 0 {
			nlo.Neg(hi)
		}
		for _, a := range digitRanges(nlo.String(), new(big.Int).Neg(lo).String()) {
			alts = append(alts, `"-" `+a)
		}
	}
	if hi.Sign() >= 0 {
		from := big.NewInt(0)
		if lo.Sign() > 0 {
			from = lo
		}
		alts = append(alts, digitRanges(from.String(), hi.String())...)
	}
	return c.rule("(" + strings.Join(alts, " | ") + ") space")
}

// digitRanges returns GBNF sequences, one per alternative, matching the
// decimal numbers from lo to hi (0 <= lo <= hi, no leading zeros).
func digitRanges(lo, hi string) []string {
	var out []string
	for d := len(lo); d <= len(hi); d++ {
		a, b := lo, hi
		if d > len(lo) {
			a = "1" + strings.Repeat("0", d-1)
		}
		if d < len(hi) {
			b = strings.Repeat("9", d)
		}
		out = append(out, sameLength(a, b)...)
	}
	return out
}

// sameLength is digitRanges for lo and hi of the same length.
func sameLength(lo, hi string) []string {
	if len(lo) == 0 {
		return []string{`""`}
	}
	class := func(a, b byte) string {
		if a == b {
			return `"` + string(a) + `"`
		}
		return "[" + string(a) + "-" + string(b) + "]"
	}
	anyDigits := func(n int) string {
		switch n {
		case 0:
			return ""
		case 1:
			return " [0-9]"
		}
		return fmt.Sprintf(" [0-9]{%d}", n)
	}
	n := len(lo) - 1
	if lo[0] == hi[0] {
		var out []string
		for _, r := range sameLength(lo[1:], hi[1:]) {
			if r == `""` {
				out = append(out, class(lo[0], lo[0]))
			} else {
				out = append(out, class(lo[0], lo[0])+" "+r)
			}
		}
		return out
	}
	if strings.Trim(lo[1:], "0") == "" && strings.Trim(hi[1:], "9") == "" {
		return []string{class(lo[0], hi[0]) + anyDigits(n)}
	}
	var out []string
	for _, r := range sameLength(lo[1:], strings.Repeat("9", n)) {
		out = append(out, class(lo[0], lo[0])+" "+r)
	}
	if lo[0]+1 <= hi[0]-1 {
		out = append(out, class(lo[0]+1, hi[0]-1)+anyDigits(n))
	}
	for _, r := range sameLength(strings.Repeat("0", n), hi[1:]) {
		out = append(out, class(hi[0], hi[0])+" "+r)
	}
	return out
}
