package grammar

import (
	"errors"
	"slices"
	"testing"
)

// fuzzLimits are small limits so the fuzzer reaches them.
func fuzzLimits() Limits {
	l := DefaultLimits()
	l.MaxSource = 4096
	l.MaxRules = 256
	l.MaxElements = 4096
	l.MaxRepeat = 50
	l.MaxStacks = 64
	l.MaxDepth = 64
	l.MaxMaskNodes = 20000
	return l
}

// checkMatcher runs input through a matcher of g: it may reject or hit a
// limit with a typed error, never panic or hang.
func checkMatcher(t *testing.T, g *Grammar, input []byte) {
	m, err := NewMatcher(g, fuzzLimits())
	if err != nil {
		var lim *LimitError
		if !errors.As(err, &lim) {
			t.Fatalf("new matcher: %v", err)
		}
		return
	}
	for i := 0; i < len(input); i += 3 {
		err := m.AcceptBytes(input[i:min(i+3, len(input))])
		var lim *LimitError
		if err != nil && !errors.Is(err, ErrRejected) && !errors.As(err, &lim) {
			t.Fatalf("accept: %v", err)
		}
		if err != nil {
			return
		}
	}
	m.Complete()
}

func FuzzGBNF(f *testing.F) {
	for _, s := range []string{
		`root ::= "a" | [b-d]+ x{2,3}` + "\nx ::= (\"y\" | [^z])?",
		`root ::= ("a" | "a" | "aa")* "b"`,
		"root ::= (\n \"\\x41\" # c\n)+ .",
		`root ::= root "a"`,
		`root ::= [\]\\-]{0,5} "\u00e9"`,
		JSONObjectGBNF,
	} {
		f.Add(s, []byte(`{"a":[1,2]}aaab`))
	}
	f.Fuzz(func(t *testing.T, src string, input []byte) {
		g, err := ParseGBNF(src, fuzzLimits())
		if err != nil {
			var syn *SyntaxError
			var lim *LimitError
			var left *LeftRecursionError
			var none *NoTextError
			if !errors.As(err, &syn) && !errors.As(err, &lim) && !errors.As(err, &left) && !errors.As(err, &none) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		checkMatcher(t, g, input)
	})
}

func FuzzSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"integer","minimum":-3,"maximum":1234}},"required":["a"],"additionalProperties":false}`,
		`{"anyOf":[{"enum":[1,"x",null]},{"type":"array","items":{"$ref":"#"},"maxItems":2}]}`,
		`{"$defs":{"n":{"type":"string","minLength":1,"maxLength":3}},"$ref":"#/$defs/n"}`,
		`{"type":["integer","null"],"exclusiveMinimum":0.5}`,
	} {
		f.Add(s, []byte(`{"a":12}`))
	}
	f.Fuzz(func(t *testing.T, schema string, input []byte) {
		g, err := FromJSONSchema([]byte(schema), fuzzLimits())
		if err != nil {
			var syn *SyntaxError
			var lim *LimitError
			var left *LeftRecursionError
			var un *UnsupportedError
			var se *SchemaError
			var none *NoTextError
			if !errors.As(err, &syn) && !errors.As(err, &lim) && !errors.As(err, &left) && !errors.As(err, &un) && !errors.As(err, &se) && !errors.As(err, &none) {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			if errors.As(err, &syn) {
				t.Fatalf("compiled grammar does not parse: %v", err)
			}
			return
		}
		checkMatcher(t, g, input)
	})
}

// FuzzMask checks token masks against accepting token by token: any
// token the mask allows is accepted, and no rejected token is allowed.
// The choices run twice, with two Constraints sharing a MaskCache: the
// second mostly gets its masks from the first's walks, and they must be
// the same masks.
func FuzzMask(f *testing.F) {
	f.Add([]byte{3, 40, 7, 90, 12, 5})
	f.Fuzz(func(t *testing.T, choices []byte) {
		v, texts := testVocab(t)
		g := JSONObject()
		shared := NewMaskCache(g, v, 1<<20)
		run := func() [][]uint64 {
			c, err := NewConstraint(g, v, func(id int32) []byte { return texts[id] }, fuzzLimits())
			if err != nil {
				t.Fatal(err)
			}
			if err := c.ShareMasks(shared); err != nil {
				t.Fatal(err)
			}
			var masks [][]uint64
			for _, ch := range choices {
				mask := make([]uint64, (v.Len()+63)/64)
				if err := c.Allowed(mask); err != nil {
					var lim *LimitError
					if errors.As(err, &lim) {
						return masks
					}
					t.Fatal(err)
				}
				masks = append(masks, mask)
				tok := int32(int(ch) % v.Len())
				allowed := mask[tok/64]&(1<<(tok%64)) != 0
				err := c.Accept(tok)
				if allowed && err != nil {
					t.Fatalf("token %d %q allowed but rejected: %v", tok, texts[tok], err)
				}
				if !allowed && err == nil && tok != 1 {
					t.Fatalf("token %d %q not allowed but accepted", tok, texts[tok])
				}
				if err != nil {
					return masks
				}
			}
			return masks
		}
		first, second := run(), run()
		if len(first) != len(second) {
			t.Fatalf("%d masks, then %d", len(first), len(second))
		}
		for i := range first {
			if !slices.Equal(first[i], second[i]) {
				t.Fatalf("step %d: mask %x, from the shared cache %x", i, first[i], second[i])
			}
		}
	})
}
