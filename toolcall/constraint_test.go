package toolcall

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

var weather = Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}`)}
var add = Tool{Name: "add", Parameters: json.RawMessage(`{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}}}`)}

// TestForcedRoundTrip builds each format's constraint and checks that
// output written to it (Prefix, a value of the schema's shape, Suffix)
// parses back into the call, that the schema pins the name and embeds
// the client's parameter schema, and that one call is all a
// non-parallel constraint allows.
func TestForcedRoundTrip(t *testing.T) {
	cases := []struct {
		f        Format
		parallel bool
		value    string // a value the schema accepts, calling get_weather
		path     []string
		repeat   bool
		maxItems bool
	}{
		{Hermes, false, `{"name":"get_weather","arguments":{"location":"Paris"}}`, []string{"anyOf", "0"}, false, false},
		{Hermes, true, `{"name":"get_weather","arguments":{"location":"Paris"}}`, []string{"anyOf", "0"}, true, false},
		{Mistral, false, `[{"name":"get_weather","arguments":{"location":"Paris"},"id":"abc123XYZ"}]`, []string{"items", "anyOf", "0"}, false, true},
		{Mistral, true, `[{"name":"get_weather","arguments":{"location":"Paris"},"id":"abc123XYZ"}]`, []string{"items", "anyOf", "0"}, false, false},
		{Llama3, true, `{"name":"get_weather","parameters":{"location":"Paris"}}`, []string{"anyOf", "0"}, false, false},
		{Generic, false, `{"tool_call":{"name":"get_weather","arguments":{"location":"Paris"}}}`, []string{"properties", "tool_call", "anyOf", "0"}, false, false},
		{Generic, true, `{"tool_calls":[{"name":"get_weather","arguments":{"location":"Paris"},"id":"call1"}]}`, []string{"properties", "tool_calls", "items", "anyOf", "0"}, false, false},
	}
	for _, c := range cases {
		con, err := Forced(c.f, []Tool{weather, add}, c.parallel)
		if err != nil {
			t.Fatal(err)
		}
		if con.Repeat != c.repeat {
			t.Errorf("%s parallel=%v: Repeat %v", c.f, c.parallel, con.Repeat)
		}
		var schema any
		if err := json.Unmarshal(con.Schema, &schema); err != nil {
			t.Fatalf("%s: schema %s: %v", c.f, con.Schema, err)
		}
		call := walk(t, schema, c.path)
		name := walk(t, call, []string{"properties", "name", "const"})
		if name != "get_weather" {
			t.Errorf("%s: name const %v", c.f, name)
		}
		argKey := "arguments"
		if c.f == Llama3 {
			argKey = "parameters"
		}
		var want any
		_ = json.Unmarshal(weather.Parameters, &want)
		if got := walk(t, call, []string{"properties", argKey}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parameters %v, want %v", c.f, got, want)
		}
		if m, ok := schema.(map[string]any); ok && c.f == Mistral {
			if _, has := m["maxItems"]; has != c.maxItems {
				t.Errorf("mistral parallel=%v: maxItems present %v", c.parallel, has)
			}
		}
		out := con.Prefix + c.value + con.Suffix
		r, _ := Parse(c.f, out, Options{Tools: []string{"get_weather", "add"}})
		if len(r.Calls) != 1 || r.Calls[0].Name != "get_weather" || r.Calls[0].Arguments != `{"location":"Paris"}` || r.Err != nil {
			t.Errorf("%s: %q parses to %+v", c.f, out, r)
		}
	}
}

func walk(t *testing.T, v any, path []string) any {
	t.Helper()
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			if p != "0" || len(x) == 0 {
				t.Fatalf("path %v: list step %q", path, p)
			}
			v = x[0]
		default:
			t.Fatalf("path %v: %T at %q", path, v, p)
		}
	}
	return v
}

func TestForcedSingleTool(t *testing.T) {
	con, err := Forced(Hermes, []Tool{{Name: "ping"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"name":{"type":"string","const":"ping"},"arguments":{"type":"object","properties":{}}},"required":["name","arguments"],"additionalProperties":false}`
	if string(con.Schema) != want {
		t.Errorf("schema\n%s\nwant\n%s", con.Schema, want)
	}
	if g := con.GBNF("call"); g != "root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\n" {
		t.Errorf("GBNF %q", g)
	}
	par, _ := Forced(Hermes, []Tool{{Name: "ping"}}, true)
	if g := par.GBNF("call"); g != "root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\" (\"\\n\" \"<tool_call>\\n\" call \"\\n</tool_call>\")*\n" {
		t.Errorf("parallel GBNF %q", g)
	}
	l, _ := Forced(Llama3, []Tool{{Name: "ping"}}, false)
	if g := l.GBNF("call"); g != "root ::= call\n" {
		t.Errorf("llama GBNF %q", g)
	}
}

func TestForcedErrors(t *testing.T) {
	big := json.RawMessage(`{"description": "` + strings.Repeat("x", MaxSchema) + `"}`)
	cases := []struct {
		name  string
		f     Format
		tools []Tool
	}{
		{"no tools", Hermes, nil},
		{"bad name", Hermes, []Tool{{Name: "a b"}}},
		{"long name", Hermes, []Tool{{Name: strings.Repeat("a", MaxName+1)}}},
		{"schema not JSON", Hermes, []Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}},
		{"schema not an object", Hermes, []Tool{{Name: "f", Parameters: json.RawMessage(`[1]`)}}},
		{"schema too large", Hermes, []Tool{{Name: "f", Parameters: big}}},
		{"unknown format", "xml", []Tool{{Name: "f"}}},
	}
	for _, c := range cases {
		if _, err := Forced(c.f, c.tools, false); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		tmpl   string
		native bool
		want   Format
	}{
		{"...<tool_call>\n{\"name\"...</tool_call>", true, Hermes},
		{"[AVAILABLE_TOOLS]...[TOOL_CALLS]", true, Mistral},
		{"<|start_header_id|>ipython<|end_header_id|>", true, Llama3},
		{"<tool_call>", false, Generic},
		{"{% for m in messages %}{{ m.content }}{% endfor %}", true, Generic},
	}
	for _, c := range cases {
		if got := Detect(c.tmpl, c.native); got != c.want {
			t.Errorf("Detect(%q, %v) = %s, want %s", c.tmpl, c.native, got, c.want)
		}
	}
}

// TestForcedHarmony: gpt-oss's forced call is one alternative per tool
// (required: every tool; named: the one), each naming its function in a
// message header before the tool's own parameter schema, after an
// optional analysis message, ending with <|call|>; parallel_tool_calls
// changes nothing (a Harmony reply holds one call).
func TestForcedHarmony(t *testing.T) {
	cases := []struct {
		name     string
		tools    []Tool
		parallel bool
	}{
		{"required", []Tool{weather, add}, false},
		{"required parallel", []Tool{weather, add}, true},
		{"named", []Tool{add}, false},
		{"named parallel", []Tool{add}, true},
		{"no parameters", []Tool{{Name: "ping"}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			con, err := Forced(Harmony, c.tools, c.parallel)
			if err != nil {
				t.Fatal(err)
			}
			if con.Prefix != "" || con.Schema != nil || con.Suffix != "" || con.Repeat {
				t.Errorf("single-call fields set: %+v", con)
			}
			if con.EndToken != "<|call|>" {
				t.Errorf("end token %q", con.EndToken)
			}
			if l := con.Lead; l == nil || l.Open != "<|channel|>analysis<|message|>" || l.Stop != "<|end|>" || l.Then != "<|start|>assistant" || l.MaxChars != MaxLead {
				t.Errorf("lead %+v", con.Lead)
			}
			if len(con.Alts) != len(c.tools) {
				t.Fatalf("%d alternatives for %d tools", len(con.Alts), len(c.tools))
			}
			for i, a := range con.Alts {
				want := []string{"<|channel|>commentary to=functions." + c.tools[i].Name, " to=functions." + c.tools[i].Name + "<|channel|>commentary"}
				if !reflect.DeepEqual(a.Prefixes, want) {
					t.Errorf("alternative %d: prefixes %q, want %q", i, a.Prefixes, want)
				}
				params, err := parameters(c.tools[i].Parameters)
				if err != nil {
					t.Fatal(err)
				}
				if string(a.Schema) != string(params) || string(con.Schemas()[i]) != string(params) {
					t.Errorf("alternative %d: schema %s, want the tool's %s", i, a.Schema, params)
				}
			}
			for _, in := range con.Infix {
				if !strings.HasSuffix(in, "<|message|>") {
					t.Errorf("infix %q does not end the header", in)
				}
			}
		})
	}
	// the other formats have one schema
	h, _ := Forced(Hermes, []Tool{weather, add}, false)
	if s := h.Schemas(); len(s) != 1 || string(s[0]) != string(h.Schema) {
		t.Errorf("Hermes schemas %q", s)
	}
}

// TestForcedHarmonyErrors: the tools are checked as in every format.
func TestForcedHarmonyErrors(t *testing.T) {
	big := json.RawMessage(`{"description": "` + strings.Repeat("x", MaxSchema) + `"}`)
	half := json.RawMessage(`{"description": "` + strings.Repeat("x", MaxSchema/2) + `"}`)
	if _, err := Forced(Harmony, []Tool{{Name: "f", Parameters: half}}, false); err != nil {
		t.Fatalf("half the limit: %v", err)
	}
	for _, c := range []struct {
		name  string
		tools []Tool
	}{
		{"no tools", nil},
		{"bad name", []Tool{{Name: "a b"}}},
		{"name with markup", []Tool{{Name: "f<|call|>"}}},
		{"long name", []Tool{{Name: strings.Repeat("a", MaxName+1)}}},
		{"schema not JSON", []Tool{{Name: "f", Parameters: json.RawMessage(`{`)}}},
		{"schema not an object", []Tool{{Name: "f", Parameters: json.RawMessage(`[1]`)}}},
		{"schema too large", []Tool{{Name: "f", Parameters: big}}},
		{"schemas too large together", []Tool{{Name: "f", Parameters: half}, {Name: "g", Parameters: half}}},
	} {
		if _, err := Forced(Harmony, c.tools, false); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}

// TestLeadGBNF: the lead's text rules for a stop marker whose first
// character recurs in it fall back to text without that character.
func TestLeadGBNF(t *testing.T) {
	for _, c := range []struct {
		stop, want string
	}{
		{"<|end|>", "lead-6 ::= [^\\u003C\\u003E]\n"},
		{"abac", "lead-char ::= [^\\u0061]\n"},
		{"#", "lead-char ::= [^\\u0023]\n"},
	} {
		g := Lead{Open: "o", Stop: c.stop, Then: "t", MaxChars: 3}.gbnf()
		if !strings.HasPrefix(g, `lead ::= "o" lead-char{0,3} "`) || !strings.HasSuffix(g, c.want) {
			t.Errorf("stop %q: %q", c.stop, g)
		}
	}
	if g := (Lead{Open: "o", Stop: "s", Then: "t"}).gbnf(); g != "lead ::= \"o\" \"s\" \"t\"\n" {
		t.Errorf("no text: %q", g)
	}
}
