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
