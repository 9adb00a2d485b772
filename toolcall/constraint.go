package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Detect returns the call format of a chat template: the family's own
// when the template describes tools itself (native, as chat.DescribesTools
// reports), else Generic, the format chat.Render describes to a family it
// renders in Go, and the syntax of a forced call for a Jinja template
// that shows no tools (its model is told of none, as in the current
// llama.cpp, and its unforced reply is content: chat.ToolsUntold).
func Detect(tmpl string, native bool) Format {
	if strings.Contains(tmpl, "<|channel|>") {
		return Harmony // gpt-oss: its replies are channels, whatever its tools
	}
	if !native {
		return Generic
	}
	switch {
	case strings.Contains(tmpl, "<tool_call>"):
		return Hermes
	case strings.Contains(tmpl, "[TOOL_CALLS]"):
		return Mistral
	case strings.Contains(tmpl, "<|start_header_id|>") || strings.Contains(tmpl, "<|python_tag|>"):
		return Llama3
	}
	return Generic
}

// Tool is a function a forced call may name.
type Tool struct {
	Name string
	// Parameters is the JSON Schema of the arguments; empty, null or {}
	// mean {"type": "object", "properties": {}}.
	Parameters json.RawMessage
}

// MaxSchema is the largest parameter schema Forced accepts, in bytes.
const MaxSchema = 256 << 10

// MaxLead bounds the analysis message a forced Harmony call may open with,
// in characters (a '<' and the few characters that follow it may count
// as one): a model that reasons on and on, a weak one above all, must
// still come to the call tool_choice asks for, within the budget.
const MaxLead = 1000

// Constraint is the syntax a forced call must follow: Prefix, a JSON
// value matching Schema, Suffix; with Repeat, further calls follow, each
// after Separator. With Alts, the call is one of them in place of Prefix
// and Schema: a format that names the function before its arguments
// (Harmony's message header) needs a prefix per function; Infix, when
// not empty, is a choice of literals between an Alt's prefix and its
// value, written once for all (a matcher then follows one path per
// function and header form, not one per content type too). Lead, when not
// nil, is a free-text message the reply may open with; EndToken, when
// not "", is the text of the end-of-generation token that alone may end
// a complete reply. The literals may contain the text of special tokens
// ([TOOL_CALLS], <|python_tag|>, <|channel|>; <tool_call> is plain text
// in Qwen's vocabulary); a grammar compiler matches them as text against
// the tokens' pieces.
type Constraint struct {
	Prefix, Suffix string
	Schema         json.RawMessage
	Repeat         bool
	Separator      string
	Alts           []Alt
	Infix          []string
	Lead           *Lead
	EndToken       string
}

// Alt is one call a Constraint with alternatives may make: one of
// Prefixes, then a JSON value matching Schema.
type Alt struct {
	Prefixes []string
	Schema   json.RawMessage
}

// Lead is a free-text message before a call (Harmony's analysis
// reasoning): Open, at most MaxChars characters of text that never
// holds Stop, then Stop and Then.
type Lead struct {
	Open, Stop, Then string
	MaxChars         int
}

// Forced returns the constraint that makes a model of format f call one
// of tools (tool_choice "required"; for a named function pass only that
// tool). With parallel false (parallel_tool_calls: false) exactly one
// call is allowed; a Harmony reply holds one call either way, as gpt-oss
// ends its turn with <|call|>. The argument schemas are the clients' own:
// they are checked to be JSON and bounded here, compiled (and refused
// when unsupported) by the grammar package.
func Forced(f Format, tools []Tool, parallel bool) (Constraint, error) {
	if f != Harmony {
		if err := check(f, 0); err != nil {
			return Constraint{}, err
		}
	}
	schemas, err := checkTools(tools)
	if err != nil {
		return Constraint{}, err
	}
	if f == Harmony {
		return harmonyForced(tools, schemas), nil
	}
	argKey := "arguments"
	if f == Llama3 {
		argKey = "parameters"
	}
	calls := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		props := []kv{{"name", obj(kv{"type", "string"}, kv{"const", t.Name})}, {argKey, schemas[i]}}
		required := []string{"name", argKey}
		switch {
		case f == Mistral:
			// Mistral Nemo's template requires 9-character ids. The
			// grammar compiler has no pattern: the length is forced, and
			// an id of other characters is replaced by the parser.
			props = append(props, kv{"id", obj(kv{"type", "string"}, kv{"minLength", 9}, kv{"maxLength", 9})})
			required = append(required, "id")
		case f == Generic && parallel:
			// Bounded, as every string of the envelope: a weak model
			// would otherwise write an id until the budget ends.
			props = append(props, kv{"id", obj(kv{"type", "string"}, kv{"minLength", 4}, kv{"maxLength", 32})})
			required = append(required, "id")
		}
		// The envelope takes no other keys: they would be text the model
		// writes instead of the call.
		calls[i] = obj(kv{"type", "object"}, kv{"properties", obj(props...)}, kv{"required", required}, kv{"additionalProperties", false})
	}
	call := calls[0]
	if len(calls) > 1 {
		call = obj(kv{"anyOf", calls})
	}
	switch f {
	case Hermes:
		return Constraint{Prefix: "<tool_call>\n", Schema: call, Suffix: "\n</tool_call>", Repeat: parallel, Separator: "\n"}, nil
	case Mistral:
		arr := []kv{{"type", "array"}, {"items", call}, {"minItems", 1}}
		if !parallel {
			arr = append(arr, kv{"maxItems", 1})
		}
		return Constraint{Prefix: "[TOOL_CALLS]", Schema: obj(arr...)}, nil
	case Llama3:
		// Llama 3.x templates refuse more than one call per message.
		return Constraint{Schema: call}, nil
	}
	if parallel {
		return Constraint{Schema: obj(kv{"type", "object"}, kv{"properties", obj(kv{"tool_calls",
			obj(kv{"type", "array"}, kv{"items", call}, kv{"minItems", 1})})}, kv{"required", []string{"tool_calls"}},
			kv{"additionalProperties", false})}, nil
	}
	return Constraint{Schema: obj(kv{"type", "object"}, kv{"properties", obj(kv{"tool_call", call})},
		kv{"required", []string{"tool_call"}}, kv{"additionalProperties", false})}, nil
}

// checkTools checks the tools of a forced call (at least one, valid
// names, parameter schemas that are JSON objects and MaxSchema bytes at
// most together) and returns their parameter schemas, compacted, with
// llama.cpp's default for a missing one.
func checkTools(tools []Tool) ([]json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, fmt.Errorf("toolcall: a forced call needs at least one tool")
	}
	schemas := make([]json.RawMessage, len(tools))
	total := 0
	for i, t := range tools {
		if !validName(t.Name) {
			return nil, fmt.Errorf("toolcall: tool %d: bad function name %q", i, truncate(t.Name))
		}
		if total += len(t.Parameters); total > MaxSchema {
			return nil, fmt.Errorf("%w: parameter schemas of more than %d bytes", ErrTooLarge, MaxSchema)
		}
		params, err := parameters(t.Parameters)
		if err != nil {
			return nil, fmt.Errorf("toolcall: tool %d (%s): parameters: %w", i, t.Name, err)
		}
		schemas[i] = params
	}
	return schemas, nil
}

// harmonyForced is Forced for gpt-oss. The generation prompt ends with
// <|start|>assistant; the reply may first reason in one analysis message
// (bounded by MaxLead), then must be a commentary message to one of the
// functions whose body is its arguments, and end with <|call|>, as
// llama.cpp's grammar for tool_choice required asks (which allows any
// number of analysis and commentary messages first, unbounded).
func harmonyForced(tools []Tool, schemas []json.RawMessage) Constraint {
	alts := make([]Alt, len(tools))
	for i, t := range tools {
		// The recipient in the channel's header (as gpt-oss writes it)
		// or in the role's (as its template renders a call).
		to := hTo + "functions." + t.Name
		alts[i] = Alt{Prefixes: []string{hChannel + "commentary" + to, to + hChannel + "commentary"}, Schema: schemas[i]}
	}
	// The arguments' content type, or none, in the forms the reader
	// (parseHeader) takes, then the body.
	infix := []string{hMessage, " json" + hMessage, " " + hConstrain + "json" + hMessage, hConstrain + "json" + hMessage}
	return Constraint{Alts: alts, Infix: infix, EndToken: hCall,
		Lead: &Lead{Open: hChannel + "analysis" + hMessage, Stop: hEnd, Then: hStart, MaxChars: MaxLead}}
}

// Schemas returns the schemas of the values the constraint holds, in the
// order GBNF takes the names of their rules: each Alt's, else Schema.
func (c Constraint) Schemas() [][]byte {
	if len(c.Alts) == 0 {
		return [][]byte{c.Schema}
	}
	out := make([][]byte, len(c.Alts))
	for i, a := range c.Alts {
		out[i] = a.Schema
	}
	return out
}

// GBNF writes the constraint as GBNF: a root rule over valueRules, the
// rules the grammar compiler made of Schemas (one per Alt, else one),
// and the rules of its Infix and Lead (rules infix, lead and lead-*).
func (c Constraint) GBNF(valueRules ...string) string {
	rule := func(i int) string {
		if i < len(valueRules) {
			return valueRules[i]
		}
		return "undefined-value-" + strconv.Itoa(i) // the grammar parser refuses it
	}
	var one, more string
	if len(c.Alts) == 0 {
		one = strings.TrimSpace(strings.Join([]string{gbnfLiteral(c.Prefix), rule(0), gbnfLiteral(c.Suffix)}, " "))
		one = strings.Join(strings.Fields(one), " ")
	} else {
		infix := gbnfChoice(c.Infix)
		if infix != "" {
			more = "infix ::= " + infix + "\n"
			infix = "infix"
		}
		alts := make([]string, len(c.Alts))
		for i, a := range c.Alts {
			alts[i] = spaced(gbnfChoice(a.Prefixes), infix, rule(i))
		}
		one = spaced("("+strings.Join(alts, " | ")+")", gbnfLiteral(c.Suffix))
	}
	root := one
	if c.Repeat {
		root = one + " (" + strings.TrimSpace(gbnfLiteral(c.Separator)+" "+one) + ")*"
	}
	if c.Lead == nil {
		return "root ::= " + root + "\n" + more
	}
	return "root ::= lead? " + root + "\n" + more + c.Lead.gbnf()
}

// gbnf writes the rules of the lead message, rule lead. Its text is a
// bounded repetition of lead-char, which takes one character other than
// Stop's first, or Stop's first and a run of Stop's next characters
// broken off by a character that neither goes on with Stop nor starts it
// again: every such sequence returns to where no part of Stop is matched,
// so the text never holds Stop. That holds when Stop's first character
// does not recur in it (Harmony's <|end|>); otherwise the text never holds
// Stop's first character.
func (l Lead) gbnf() string {
	text := ""
	if l.MaxChars > 0 && l.Stop != "" {
		text = fmt.Sprintf("lead-char{0,%d}", l.MaxChars)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lead ::= %s\n", spaced(gbnfLiteral(l.Open), text, gbnfLiteral(l.Stop), gbnfLiteral(l.Then)))
	if text == "" {
		return b.String()
	}
	stop := []rune(l.Stop)
	first := stop[0]
	if len(stop) == 1 || slices.Contains(stop[1:], first) {
		fmt.Fprintf(&b, "lead-char ::= %s\n", gbnfNotIn(first))
		return b.String()
	}
	fmt.Fprintf(&b, "lead-char ::= %s | %s lead-1\n", gbnfNotIn(first), gbnfLiteral(string(first)))
	for k := 1; k < len(stop); k++ {
		fmt.Fprintf(&b, "lead-%d ::= %s", k, gbnfNotIn(first, stop[k]))
		if k+1 < len(stop) {
			fmt.Fprintf(&b, " | %s lead-%d", gbnfLiteral(string(stop[k])), k+1)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// spaced joins the non-empty parts with spaces.
func spaced(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, " ")
}

// gbnfChoice writes a choice of literals ("" when there is none; optional
// when one of them is empty).
func gbnfChoice(lits []string) string {
	var alts []string
	empty := false
	for _, l := range lits {
		if l == "" {
			empty = true
			continue
		}
		alts = append(alts, gbnfLiteral(l))
	}
	if len(alts) == 0 {
		return ""
	}
	g := "(" + strings.Join(alts, " | ") + ")"
	if empty {
		g += "?"
	}
	return g
}

// gbnfNotIn writes a character class of every character but rs.
func gbnfNotIn(rs ...rune) string {
	var b strings.Builder
	b.WriteString("[^")
	for _, r := range rs {
		if r <= 0xFFFF {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// gbnfLiteral quotes s as a GBNF string ("" for an empty s).
func gbnfLiteral(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parameters checks a parameter schema, with llama.cpp's default for a
// missing, null or empty one.
func parameters(p json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(p)
	if len(t) == 0 || string(t) == "null" {
		return obj(kv{"type", "object"}, kv{"properties", obj()}), nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(t, &v); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if len(v) == 0 {
		return obj(kv{"type", "object"}, kv{"properties", obj()}), nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// kv is one member of an ordered JSON object.
type kv struct {
	k string
	v any
}

// obj writes an object with its members in the given order (a schema's
// property order is the order a model is asked to write them in).
func obj(members ...kv) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		b.Write(k)
		b.WriteByte(':')
		v, _ := json.Marshal(m.v) // strings, numbers, slices and RawMessage only
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Markup returns the texts of call markup that a vocabulary may hold as
// special tokens (Mistral's [TOOL_CALLS], Llama's <|python_tag|>, the
// Hermes tags): an engine renders these tokens as their text in the
// output it parses, and lets a forced call's grammar match them.
func Markup() []string {
	return []string{"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>"}
}

// HarmonyMarkup returns the texts of Harmony's special tokens a reply is
// read by (gpt-oss's <|channel|>, <|message|>, …): an engine renders them
// as their text in the output of a Harmony model only (another model's
// <|end|> or <|start|> means something else).
func HarmonyMarkup() []string {
	return []string{hChannel, hMessage, "<|start|>", hEnd, hConstrain, hCall}
}
