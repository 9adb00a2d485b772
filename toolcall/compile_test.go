package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/grammar"
)

// TestForcedCompiles: every format's forced-call constraint compiles with
// the grammar package (no keyword it lacks, such as pattern), and the
// grammar takes a well-formed call and refuses an envelope with an extra
// key.
func TestForcedCompiles(t *testing.T) {
	tools := []Tool{{Name: "add", Parameters: []byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`)}}
	cases := []struct {
		f        Format
		parallel bool
		good     string
		extra    string
	}{
		{Hermes, false, "<tool_call>\n{\"name\":\"add\",\"arguments\":{\"a\":1}}\n</tool_call>", "<tool_call>\n{\"name\":\"add\",\"arguments\":{\"a\":1},\"x\":1}\n</tool_call>"},
		{Hermes, true, "<tool_call>\n{\"name\":\"add\",\"arguments\":{\"a\":1}}\n</tool_call>\n<tool_call>\n{\"name\":\"add\",\"arguments\":{\"a\":2}}\n</tool_call>", ""},
		{Mistral, false, `[TOOL_CALLS][{"name":"add","arguments":{"a":1},"id":"abcDEF123"}]`, `[TOOL_CALLS][{"name":"add","arguments":{"a":1},"id":"abcDEF1234"}]`},
		{Llama3, false, `{"name":"add","parameters":{"a":1}}`, `{"name":"add","parameters":{"a":1},"x":2}`},
		{Generic, false, `{"tool_call":{"name":"add","arguments":{"a":1}}}`, `{"tool_call":{"name":"add","arguments":{"a":1}},"response":"x"}`},
		{Generic, true, `{"tool_calls":[{"name":"add","arguments":{"a":1},"id":"call1"}]}`, `{"tool_calls":[{"name":"add","arguments":{"a":1},"id":"c1"}]}`},
	}
	for _, c := range cases {
		con, err := Forced(c.f, tools, c.parallel)
		if err != nil {
			t.Fatal(err)
		}
		start, rules, err := grammar.SchemaRules(con.Schema, grammar.DefaultLimits())
		if err != nil {
			t.Fatalf("%s parallel=%v: %v", c.f, c.parallel, err)
		}
		g, err := grammar.ParseGBNF(con.GBNF(start)+rules, grammar.DefaultLimits())
		if err != nil {
			t.Fatalf("%s parallel=%v: %v", c.f, c.parallel, err)
		}
		for _, tt := range []struct {
			s  string
			ok bool
		}{{c.good, true}, {c.extra, false}} {
			if tt.s == "" {
				continue
			}
			m, err := grammar.NewMatcher(g, grammar.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			err = m.AcceptBytes([]byte(tt.s))
			if err != nil && !errors.Is(err, grammar.ErrRejected) {
				t.Fatal(err)
			}
			if got := err == nil && m.Complete(); got != tt.ok {
				t.Errorf("%s parallel=%v: %q accepted %v, want %v", c.f, c.parallel, tt.s, got, tt.ok)
			}
		}
	}
}

// harmonyGrammar compiles the forced Harmony call over tools as the
// engine does.
func harmonyGrammar(t *testing.T, tools []Tool) *grammar.Grammar {
	t.Helper()
	con, err := Forced(Harmony, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	starts, rules, err := grammar.SchemasRules(con.Schemas(), grammar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	g, err := grammar.ParseGBNF(con.GBNF(starts...)+rules, grammar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// whole reports whether g takes all of s and is complete after it.
func whole(t *testing.T, g *grammar.Grammar, s string) bool {
	t.Helper()
	m, err := grammar.NewMatcher(g, grammar.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AcceptBytes([]byte(s)); err != nil {
		if !errors.Is(err, grammar.ErrRejected) {
			t.Fatalf("%q: %v", s, err)
		}
		return false
	}
	return m.Complete()
}

// TestForcedHarmonyGrammar: the forced call's grammar takes the reply
// forms gpt-oss writes (the recipient in the channel's or the role's
// header, each content type, an analysis message first or none) and
// each parses back into the call; it refuses a final or commentary
// answer, a call to another function or in the analysis channel, bad or
// schema-breaking arguments, a second message after the analysis, an
// analysis of more than MaxLead characters, and text after the call.
func TestForcedHarmonyGrammar(t *testing.T) {
	addTool := Tool{Name: "add", Parameters: []byte(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`)}
	weather := Tool{Name: "get_weather", Parameters: []byte(`{"$defs":{"c":{"enum":["Paris","Oslo"]}},"type":"object","properties":{"city":{"$ref":"#/$defs/c"}},"required":["city"]}`)}
	required := harmonyGrammar(t, []Tool{addTool, weather})
	named := harmonyGrammar(t, []Tool{weather})
	const think = "<|channel|>analysis<|message|>"
	const next = "<|end|><|start|>assistant"
	cases := []struct {
		name     string
		out      string
		required bool // the required grammar takes it
		named    bool // the grammar of get_weather alone takes it
		call     string
		args     string
	}{
		{"channel header, constrain", `<|channel|>commentary to=functions.add <|constrain|>json<|message|>{"a":1}`, true, false, "add", `{"a":1}`},
		{"channel header, no type", `<|channel|>commentary to=functions.add<|message|>{"a": 12}`, true, false, "add", `{"a":12}`},
		{"role header, json", ` to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Oslo"}`, true, true, "get_weather", `{"city":"Oslo"}`},
		{"role header, constrain", ` to=functions.get_weather<|channel|>commentary<|constrain|>json<|message|>{"city":"Paris"}` + "\n", true, true, "get_weather", `{"city":"Paris"}`},
		{"analysis first", think + "The user wants Oslo; 1<2, a <b> tag and <|start|> are text." + next + `<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}`, true, true, "get_weather", `{"city":"Oslo"}`},
		{"empty analysis", think + next + ` to=functions.add<|channel|>commentary json<|message|>{"a":-3}`, true, false, "add", `{"a":-3}`},
		{"longest analysis", think + strings.Repeat("x", MaxLead) + next + `<|channel|>commentary to=functions.add<|message|>{"a":1}`, true, false, "add", `{"a":1}`},
		{"analysis too long", think + strings.Repeat("x", MaxLead+1) + next + `<|channel|>commentary to=functions.add<|message|>{"a":1}`, false, false, "", ""},
		{"final answer", `<|channel|>final<|message|>{"a":1}`, false, false, "", ""},
		{"analysis then final", think + "x" + next + `<|channel|>final<|message|>4`, false, false, "", ""},
		{"commentary answer", `<|channel|>commentary<|message|>{"a":1}`, false, false, "", ""},
		{"another function", `<|channel|>commentary to=functions.mul<|message|>{"a":1}`, false, false, "", ""},
		{"function prefix", `<|channel|>commentary to=functions.ad<|message|>{"a":1}`, false, false, "", ""},
		{"analysis channel call", `<|channel|>analysis to=functions.add<|message|>{"a":1}`, false, false, "", ""},
		{"bad JSON", `<|channel|>commentary to=functions.add<|message|>{"a":}`, false, false, "", ""},
		{"argument of another type", `<|channel|>commentary to=functions.add<|message|>{"a":"1"}`, false, false, "", ""},
		{"missing argument", `<|channel|>commentary to=functions.add<|message|>{}`, false, false, "", ""},
		{"not in the enum", `<|channel|>commentary to=functions.get_weather<|message|>{"city":"Lima"}`, false, false, "", ""},
		{"end marker inside the analysis", think + "a<|end|>b" + next + `<|channel|>commentary to=functions.add<|message|>{"a":1}`, false, false, "", ""},
		{"two analysis messages", think + "a" + next + think + "b" + next + `<|channel|>commentary to=functions.add<|message|>{"a":1}`, false, false, "", ""},
		{"call marker as text", `<|channel|>commentary to=functions.add<|message|>{"a":1}<|call|>`, false, false, "", ""},
		{"second call", `<|channel|>commentary to=functions.add<|message|>{"a":1}<|start|>assistant<|channel|>commentary to=functions.add<|message|>{"a":2}`, false, false, "", ""},
		{"no call", think + "x" + next, false, false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := whole(t, required, c.out); got != c.required {
				t.Errorf("required: accepted %v, want %v", got, c.required)
			}
			if got := whole(t, named, c.out); got != c.named {
				t.Errorf("named get_weather: accepted %v, want %v", got, c.named)
			}
			if !c.required {
				return
			}
			r, err := ParseReply(c.out, ReplyOptions{Format: Harmony, Calls: true, Options: Options{Tools: []string{"add", "get_weather"}, MaxCalls: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Calls) != 1 || r.Calls[0].Name != c.call || r.Calls[0].Arguments != c.args || r.Content != "" || r.Err != nil {
				t.Errorf("parses to %+v, want one call %s(%s)", r, c.call, c.args)
			}
		})
	}
}

// TestHarmonyLeadExcludesEnd draws analysis texts from pieces of <|end|>
// (and another character): every text the grammar takes holds no
// <|end|> and reads back as the reasoning, whole; every text without '<'
// is taken; some texts holding <|end|> were drawn.
func TestHarmonyLeadExcludesEnd(t *testing.T) {
	g := harmonyGrammar(t, []Tool{{Name: "f"}})
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"<", "|", "e", "n", "d", ">", "x", "<|", "<|e", "<|en", "<|end", "<|end|", "|>", "d|>", "nd|>"}
	taken, holding := 0, 0
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		if strings.Contains(text, "<|end|>") {
			holding++
		}
		out := "<|channel|>analysis<|message|>" + text + "<|end|><|start|>assistant<|channel|>commentary to=functions.f<|message|>{}"
		ok := whole(t, g, out)
		if !ok {
			if !strings.Contains(text, "<") {
				t.Errorf("%q refused", text)
			}
			continue
		}
		taken++
		if strings.Contains(text, "<|end|>") {
			t.Fatalf("%q taken: it holds the end marker", text)
		}
		r, err := ParseReply(out, ReplyOptions{Format: Harmony, Calls: true, Options: Options{Tools: []string{"f"}}})
		if err != nil || r.Reasoning != text || len(r.Calls) != 1 || r.Err != nil {
			t.Fatalf("%q reads as %+v, %v", text, r, err)
		}
	}
	if taken < 300 || holding < 30 {
		t.Errorf("%d of 3000 texts taken, %d holding the end marker: too few to tell", taken, holding)
	}
}

// TestForcedHarmonyManyTools: a required call over 128 tools (OpenAI's
// most) compiles and its matcher follows one path per function name:
// within the stack limit from the first byte.
func TestForcedHarmonyManyTools(t *testing.T) {
	tools := make([]Tool, 128)
	for i := range tools {
		tools[i] = Tool{Name: fmt.Sprintf("fn_%d", i), Parameters: []byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`)}
	}
	g := harmonyGrammar(t, tools)
	for _, out := range []string{
		`<|channel|>commentary to=functions.fn_127<|message|>{"n":1}`,
		` to=functions.fn_0<|channel|>commentary json<|message|>{}`,
	} {
		if !whole(t, g, out) {
			t.Errorf("%q refused", out)
		}
	}
}

// FuzzForcedHarmony compiles the forced Harmony call of a client's tool
// (any name, any schema) and offers it a reply made of an analysis text,
// the call's header and arguments: whatever the grammar takes holds no
// <|end|> in its analysis and reads back as exactly that reasoning (none
// when it is white space) and that one call, its arguments compacted
// (arguments that are not an object, which a schema of annotations alone
// lets through, are no call). Bad names and schemas are errors, never
// panics.
func FuzzForcedHarmony(f *testing.F) {
	f.Add("add", `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`, "Sum it.", `{"a": 1}`)
	f.Add("f", "", "", "{}")
	f.Add("get-x.y", `{"type":"object","properties":{"s":{"type":"string"}}}`, "1<2 <|e", `{"s":"<|end|>"}`)
	f.Add("w", `{"$defs":{"d":{"enum":[1,2]}},"type":"object","properties":{"d":{"$ref":"#/$defs/d"}}}`, "<<|x", `{"d":2}`)
	f.Fuzz(func(t *testing.T, name, schema, analysis, args string) {
		if len(schema) > 1<<12 || len(analysis) > 1<<11 || len(args) > 1<<11 {
			return
		}
		con, err := Forced(Harmony, []Tool{{Name: name, Parameters: json.RawMessage(schema)}}, false)
		if err != nil {
			return
		}
		lim := grammar.DefaultLimits()
		starts, rules, err := grammar.SchemasRules(con.Schemas(), lim)
		if err != nil {
			return
		}
		g, err := grammar.ParseGBNF(con.GBNF(starts...)+rules, lim)
		if err != nil {
			t.Fatalf("the grammar of a compiled schema does not parse: %v", err)
		}
		out := "<|channel|>analysis<|message|>" + analysis + "<|end|><|start|>assistant<|channel|>commentary to=functions." + name + "<|message|>" + args
		m, err := grammar.NewMatcher(g, lim)
		if err != nil {
			t.Fatal(err)
		}
		var le *grammar.LimitError
		if err := m.AcceptBytes([]byte(out)); err != nil {
			if !errors.Is(err, grammar.ErrRejected) && !errors.As(err, &le) {
				t.Fatal(err)
			}
			return
		}
		if !m.Complete() {
			return
		}
		if strings.Contains(analysis, "<|end|>") {
			t.Fatalf("analysis %q taken: it holds the end marker", analysis)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(args)); err != nil {
			t.Fatalf("arguments %q taken: %v", args, err)
		}
		r, err := ParseReply(out, ReplyOptions{Format: Harmony, Calls: true, Options: Options{Tools: []string{name}, MaxCalls: 1}})
		if err != nil {
			t.Fatal(err)
		}
		want := analysis
		if strings.Trim(want, spaces) == "" {
			want = "" // reasoning of white space alone is none
		}
		if !strings.HasPrefix(compact.String(), "{") {
			// A schema that does not make the arguments an object (one of
			// annotations alone) lets other values through, in every
			// format: they are no call.
			if r.Reasoning != want || len(r.Calls) != 0 || r.Err == nil {
				t.Fatalf("%q reads as %+v", out, r)
			}
			return
		}
		if r.Reasoning != want || len(r.Calls) != 1 || r.Calls[0].Name != name || r.Calls[0].Arguments != compact.String() || r.Content != "" || r.Err != nil {
			t.Fatalf("%q reads as %+v", out, r)
		}
	})
}
