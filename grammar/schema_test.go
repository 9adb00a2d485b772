package grammar

import (
	"errors"
	"testing"
)

func TestSchemaMatch(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		yes, no []string
	}{
		{"object strict", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`,
			[]string{`{"a":1}`, `{"a": -5, "b": "x"}`, "{\n  \"a\": 0,\n  \"b\": \"\\n\\u00e9\"\n}"},
			[]string{`{}`, `{"b":"x"}`, `{"a":1,"c":2}`, `{"a":01}`, `{"a":1,}`, `{"a":1.5}`}},
		{"optional only", `{"type":"object","properties":{"x":{"type":"boolean"},"y":{"type":"null"}},"additionalProperties":false}`,
			[]string{`{}`, `{"x":true}`, `{"y":null}`, `{"x":false,"y":null}`},
			[]string{`{,"y":null}`, `{"y":null,"x":true}`}},
		{"schema order kept", `{"type":"object","properties":{"z":{"type":"integer"},"a/b~":{"type":"integer"},"m":{"type":"integer"}},"required":["z","a/b~","m"],"additionalProperties":false}`,
			[]string{`{"z":1,"a/b~":2,"m":3}`}, []string{`{"a/b~":2,"m":3,"z":1}`, `{"z":1,"m":3,"a/b~":2}`}},
		{"additional", `{"type":"object","properties":{"x":{"type":"boolean"}},"additionalProperties":{"type":"integer"}}`,
			[]string{`{}`, `{"x":true,"k":1}`, `{"k":1,"j":2}`},
			[]string{`{"k":"s"}`}},
		{"extra keys are not declared ones", `{"type":"object","properties":{"ab":{"type":"integer"},"a-c":{"type":"integer"},"x]^":{"type":"integer"}}}`,
			[]string{`{}`, `{"ab":1,"a":2}`, `{"abc":"s"}`, `{"a-":1,"b":2,"":3,"x]":4}`, `{"x]^":1,"\u0061b":"s"}`},
			[]string{`{"ab":1,"ab":2}`, `{"ab":"s"}`, `{"a-c":"s"}`, `{"x]^":"s"}`, `{"ab":1,"x]^":2,"a-c":3}`}},
		{"enum const", `{"anyOf":[{"enum":["a","b",1,null]},{"const":{"k":[1,2]}}]}`,
			[]string{`"a"`, `1`, `null`, `{"k":[1,2]}`}, []string{`"c"`, `2`, `{"k":[1]}`}},
		{"array bounds", `{"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3}`,
			[]string{`[1]`, `[1,2,3]`, `[ 1 , 2 ]`}, []string{`[]`, `[1,2,3,4]`, `["a"]`}},
		{"array max 0", `{"type":"array","maxItems":0}`, []string{`[]`}, []string{`[1]`}},
		{"string length", `{"type":"string","minLength":2,"maxLength":3}`,
			[]string{`"ab"`, `"abc"`, `"\n\t"`}, []string{`"a"`, `"abcd"`}},
		{"int range", `{"type":"integer","minimum":-15,"maximum":123}`,
			[]string{"-15", "-1", "0", "9", "10", "99", "100", "123"}, []string{"-16", "124", "200", "1000", "-0x"}},
		{"int exclusive", `{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10}`,
			[]string{"1", "9"}, []string{"0", "10"}},
		{"int min only", `{"type":"integer","minimum":42}`, []string{"42", "99", "100", "123456"}, []string{"41", "0", "-1"}},
		{"type list", `{"type":["string","null"]}`, []string{`"x"`, "null"}, []string{"1"}},
		{"refs", `{"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["next"],"additionalProperties":false}},"$ref":"#/$defs/node"}`,
			[]string{`{"next":null}`, `{"next":{"next":null}}`}, []string{`{}`, `{"next":1}`}},
		{"definitions", `{"definitions":{"n":{"type":"number"}},"type":"array","items":{"$ref":"#/definitions/n"}}`,
			[]string{`[1.5e3,-2]`, `[]`}, []string{`["x"]`}},
		{"any", `{}`, []string{`1`, `{"a":[true,null]}`, `"s"`}, []string{`{`, `tru`}},
		{"whitespace bounded", `{"type":"array"}`, []string{"[\n  1]"}, []string{"[\n\n1]", "[" + repeat(" ", 30) + "1]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := FromJSONSchema([]byte(tc.schema), DefaultLimits())
			if err != nil {
				src, _ := SchemaToGBNF([]byte(tc.schema), DefaultLimits())
				t.Fatalf("%v\n%s", err, src)
			}
			for _, s := range tc.yes {
				if !accepts(t, g, s) {
					src, _ := SchemaToGBNF([]byte(tc.schema), DefaultLimits())
					t.Errorf("%q rejected\n%s", s, src)
				}
			}
			for _, s := range tc.no {
				if accepts(t, g, s) {
					t.Errorf("%q accepted", s)
				}
			}
		})
	}
}

func TestSchemaErrors(t *testing.T) {
	var un *UnsupportedError
	var se *SchemaError
	var lim *LimitError
	var none *NoTextError
	tests := []struct {
		name, schema string
		want         any
	}{
		{"pattern", `{"type":"string","pattern":"a+"}`, &un},
		{"format", `{"type":"string","format":"date"}`, &un},
		{"number bounds", `{"type":"number","minimum":1}`, &un},
		{"tuple", `{"type":"array","items":[{}]}`, &un},
		{"remote ref", `{"$ref":"http://x/y"}`, &un},
		{"allOf two", `{"allOf":[{},{}]}`, &un},
		{"unknown type", `{"type":"date"}`, &un},
		{"false", `false`, &un},
		{"not json", `{`, &se},
		{"trailing", `{} {}`, &se},
		{"missing ref", `{"$ref":"#/$defs/x"}`, &se},
		{"bad required", `{"type":"object","required":[1]}`, &se},
		{"empty int range", `{"type":"integer","minimum":5,"maximum":4}`, &se},
		{"huge maxItems", `{"type":"array","maxItems":100000}`, &lim},
		{"deep", repeat(`{"type":"array","items":`, 100) + "{}" + repeat("}", 100), &lim},
		{"self ref", `{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, &none},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromJSONSchema([]byte(tc.schema), DefaultLimits())
			if err == nil {
				t.Fatal("compiled")
			}
			if !errors.As(err, tc.want) {
				t.Fatalf("error %T %v", err, err)
			}
		})
	}
}
