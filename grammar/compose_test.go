package grammar

import (
	"errors"
	"strings"
	"testing"
)

// TestUTF8Forms: a byte sequence that is not UTF-8 (an overlong form, a
// surrogate, a code point past U+10FFFF, a lead byte that cannot lead to
// the class) is refused, even as a prefix a token could end in, so that a
// mask never allows a byte token whose output would be U+FFFD.
func TestUTF8Forms(t *testing.T) {
	g, err := ParseGBNF(`root ::= [^"]* "\""`, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	ascii, err := ParseGBNF(`root ::= [a-z]`, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		g     *Grammar
		bytes string
		ok    bool
	}{
		{"two-byte", g, "\xc3\xa9", true},
		{"three-byte", g, "\xe2\x82\xac", true},
		{"four-byte", g, "\xf0\x9f\x98\x80", true},
		{"max rune", g, "\xf4\x8f\xbf\xbf", true},
		{"overlong two-byte lead C0", g, "\xc0", false},
		{"overlong two-byte lead C1", g, "\xc1", false},
		{"overlong three-byte", g, "\xe0\x80", false},
		{"surrogate", g, "\xed\xa0", false},
		{"overlong four-byte", g, "\xf0\x80", false},
		{"past U+10FFFF", g, "\xf4\x90", false},
		{"lead F5", g, "\xf5", false},
		{"ASCII class, lead C2", ascii, "\xc2", false},
		{"ASCII class, lead E0", ascii, "\xe0", false},
		{"ASCII class, lead F0", ascii, "\xf0", false},
		{"ASCII class, letter", ascii, "q", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMatcher(tt.g, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			err = m.AcceptBytes([]byte(tt.bytes))
			if (err == nil) != tt.ok {
				t.Fatalf("accept %q: %v, want ok=%v", tt.bytes, err, tt.ok)
			}
		})
	}
}

// TestSchemaRules: a schema's rules compose under a root of the caller's
// (a tool call's envelope around the arguments), with no rule named root.
func TestSchemaRules(t *testing.T) {
	start, rules, err := SchemaRules([]byte(`{"type":"object","properties":{"n":{"type":"integer"},"self":{"$ref":"#"}},"required":["n"]}`), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGBNF(`root ::= "<call>" `+start+` "</call>"`+"\n"+rules, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{`<call>{"n": 1}</call>`, true},
		{`<call>{"n": 1, "self": {"n": 2}}</call>`, true},
		{`<call>{"n": 1}`, false},
		{`{"n": 1}`, false},
		{`<call>{"m": 1}</call>`, false},
	} {
		if got := accepts(t, g, tt.s); got != tt.ok {
			t.Errorf("%q: accepted %v, want %v", tt.s, got, tt.ok)
		}
	}
	whole, err := SchemaToGBNF([]byte(`{"type":"integer"}`), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	start, rules, err = SchemaRules([]byte(`{"type":"integer"}`), DefaultLimits())
	if err != nil || whole != "root ::= "+start+"\n"+rules {
		t.Errorf("SchemaToGBNF is not root over SchemaRules: %v", err)
	}
}

// TestSchemasRules: several schemas compile into one set of rules, each
// value's rule named apart, each schema's $refs resolved against itself
// (two schemas with a definition of the same name mean two things), and
// one schema gives what SchemaRules gives.
func TestSchemasRules(t *testing.T) {
	ints := []byte(`{"$defs":{"v":{"type":"integer"}},"type":"object","properties":{"v":{"$ref":"#/$defs/v"}},"required":["v"],"additionalProperties":false}`)
	bools := []byte(`{"$defs":{"v":{"type":"boolean"}},"type":"object","properties":{"v":{"$ref":"#/$defs/v"}},"required":["v"],"additionalProperties":false}`)
	starts, rules, err := SchemasRules([][]byte{ints, bools}, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(starts) != 2 || starts[0] == starts[1] {
		t.Fatalf("starts %q", starts)
	}
	g, err := ParseGBNF(`root ::= "i" `+starts[0]+` | "b" `+starts[1]+"\n"+rules, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		s  string
		ok bool
	}{
		{`i{"v": 1}`, true},
		{`b{"v": true}`, true},
		{`i{"v": true}`, false},
		{`b{"v": 1}`, false},
	} {
		if got := accepts(t, g, tt.s); got != tt.ok {
			t.Errorf("%q: accepted %v, want %v", tt.s, got, tt.ok)
		}
	}
	start, one, err := SchemaRules(ints, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if starts, rules, err := SchemasRules([][]byte{ints}, DefaultLimits()); err != nil || starts[0] != start || rules != one {
		t.Errorf("one schema: %q %v, want SchemaRules' %q", starts, err, start)
	}
}

// TestSchemasRulesLimits: the limits hold for the schemas together: each
// alone fits, both do not; an error names the schema it is in.
func TestSchemasRulesLimits(t *testing.T) {
	s := []byte(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}}}`)
	alone, _, err := SchemasRules([][]byte{s}, DefaultLimits())
	if err != nil || len(alone) != 1 {
		t.Fatal(err)
	}
	lim := DefaultLimits()
	_, r, _ := SchemaRules(s, lim)
	n := strings.Count(r, " ::= ") - strings.Count(jsonPrimitives, " ::= ") // the schema's own rules
	if n < 1 {
		t.Fatalf("no rules of the schema in %q", r)
	}
	lim.MaxRules = n + n/2
	if _, _, err := SchemasRules([][]byte{s}, lim); err != nil {
		t.Fatalf("one schema within the limit: %v", err)
	}
	var le *LimitError
	if _, _, err := SchemasRules([][]byte{s, s}, lim); !errors.As(err, &le) || le.What != "MaxRules" {
		t.Errorf("two schemas over MaxRules: %v", err)
	}
	lim = DefaultLimits()
	lim.MaxSource = len(s) + 10
	if _, _, err := SchemasRules([][]byte{s, s}, lim); !errors.As(err, &le) || le.What != "MaxSource" {
		t.Errorf("two schemas over MaxSource: %v", err)
	}
	var se *SchemaError
	_, _, err = SchemasRules([][]byte{s, []byte(`{"$ref":"#/$defs/none"}`)}, DefaultLimits())
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "schema 1") {
		t.Errorf("a bad second schema: %v", err)
	}
}
