package toolcall

import (
	"errors"
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
