package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/model/sample"
)

// testVocab is a small vocabulary shaped like a real one: every ASCII
// byte, pieces that span JSON tokens, words, a character split over two
// tokens, raw continuation and invalid bytes, and special tokens
// (0: <s>, 1: </s> the EOS, 2: a control token).
func testVocab(t testing.TB) (*Vocab, [][]byte) {
	texts := [][]byte{[]byte("<s>"), []byte("</s>"), []byte("<|ctl|>")}
	for b := 0x20; b < 0x7f; b++ {
		texts = append(texts, []byte{byte(b)})
	}
	for _, s := range []string{"\n", "\t", "\n  ", "  ", `{"`, `":`, `": `, `",`, `","`, `"}`, `},`, `[{`, `}]`, `""`,
		"true", "false", "null", "nu", "ll", "12", "345", "-1", "0.5", "e+", `\n`, `\u00`, "é", "日本",
		"name", "age", "tags", "id", "the", " the", "ing", "a,", "1,", ",\"", "\xc3", "\xa9", "\xff", "\x80abc"} {
		texts = append(texts, []byte(s))
	}
	v, err := NewVocab(len(texts), func(id int32) []byte { return texts[id] },
		func(id int32) bool { return id < 3 }, []int32{1})
	if err != nil {
		t.Fatal(err)
	}
	return v, texts
}

func TestMaskMatchesBruteForce(t *testing.T) {
	v, texts := testVocab(t)
	text := func(id int32) []byte { return texts[id] }
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":8},"age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array","items":{"enum":["a","é"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false}`
	g, err := FromJSONSchema([]byte(schema), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	mask := make([]uint64, (v.Len()+63)/64)
	// Odd trials share a MaskCache, so their masks come from one another
	// as much as from their own walks: they must be as right.
	shared := NewMaskCache(g, v, 1<<20)
	for trial := range 12 {
		c, err := NewConstraint(g, v, text, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if trial%2 == 1 {
			if err := c.ShareMasks(shared); err != nil {
				t.Fatal(err)
			}
		}
		var prefix []byte
		for step := range 40 {
			if err := c.Allowed(mask); err != nil {
				t.Fatal(err)
			}
			var allowed []int32
			for id := range int32(v.Len()) {
				got := mask[id/64]&(1<<(id%64)) != 0
				want := bruteAllowed(t, g, prefix, texts[id], id)
				if got != want {
					t.Fatalf("trial %d step %d after %q: token %d %q allowed %v, brute force %v", trial, step, prefix, id, texts[id], got, want)
				}
				if ok, err := c.AllowsToken(id); err != nil || ok != got {
					t.Fatalf("after %q: AllowsToken(%d %q) = %v, %v; mask %v", prefix, id, texts[id], ok, err, got)
				}
				if got {
					allowed = append(allowed, id)
				}
			}
			if len(allowed) == 0 {
				t.Fatalf("after %q: nothing allowed", prefix)
			}
			tok := allowed[r.IntN(len(allowed))]
			if tok == 1 {
				break
			}
			if err := c.Accept(tok); err != nil {
				t.Fatal(err)
			}
			prefix = append(prefix, texts[tok]...)
		}
	}
	if shared.hits == 0 {
		t.Fatal("the shared cache served no mask")
	}
	t.Logf("%d masks from the shared cache", shared.hits)
}

// TestMaskCache checks the shared cache's refusals and bounds: a cache of
// another grammar or vocabulary is refused, a full cache starts afresh,
// and a mask larger than the budget is not kept.
func TestMaskCache(t *testing.T) {
	v, texts := testVocab(t)
	text := func(id int32) []byte { return texts[id] }
	v2, _ := testVocab(t)
	g, g2 := JSONObject(), JSONObject()
	c, err := NewConstraint(g, v, text, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range []*MaskCache{NewMaskCache(g2, v, 1<<20), NewMaskCache(g, v2, 1<<20)} {
		if err := c.ShareMasks(mc); !errors.Is(err, ErrCacheMismatch) {
			t.Fatalf("ShareMasks of another grammar or vocabulary: %v", err)
		}
	}
	words := (v.Len() + 63) / 64
	mc := NewMaskCache(g, v, 3*(8*words+4))
	mask := make([]uint64, words)
	for i := range 5 {
		mask[0] = uint64(i)
		mc.put([]byte{byte(i), 1, 2, 3}, mask)
		if len(mc.masks) > 3 || mc.bytes > mc.maxBytes {
			t.Fatalf("after %d masks: %d kept, %d bytes of %d", i+1, len(mc.masks), mc.bytes, mc.maxBytes)
		}
		got := make([]uint64, words)
		if !mc.get([]byte{byte(i), 1, 2, 3}, got) || got[0] != uint64(i) {
			t.Fatalf("mask %d not kept: %v", i, got)
		}
	}
	small := NewMaskCache(g, v, 8*words)
	small.put([]byte{1}, mask)
	if len(small.masks) != 0 {
		t.Fatal("a mask over the budget was kept")
	}
}

// bruteAllowed reports whether g takes prefix then tok's bytes (EOS: is
// prefix complete) on a fresh matcher.
func bruteAllowed(t *testing.T, g *Grammar, prefix, tok []byte, id int32) bool {
	m, err := NewMatcher(g, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AcceptBytes(prefix); err != nil {
		t.Fatal(err)
	}
	switch id {
	case 0, 2:
		return false
	case 1:
		return m.Complete()
	}
	err = m.AcceptBytes(tok)
	if err != nil && !errors.Is(err, ErrRejected) {
		t.Fatal(err)
	}
	return err == nil
}

// validate checks v (decoded with UseNumber) against the subset of JSON
// Schema the compiler supports.
func validate(s map[string]any, root map[string]any, v any) error {
	if ref, ok := s["$ref"].(string); ok {
		var section, key string
		fmt.Sscanf(ref, "#/%s", &section)
		for i := range section {
			if section[i] == '/' {
				section, key = section[:i], section[i+1:]
				break
			}
		}
		return validate(root[section].(map[string]any)[key].(map[string]any), root, v)
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, v) {
		return fmt.Errorf("%v is not the const %v", v, c)
	}
	if e, ok := s["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || reflect.DeepEqual(x, v)
		}
		if !found {
			return fmt.Errorf("%v not in enum %v", v, e)
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if validate(a.(map[string]any), root, v) == nil {
				return nil
			}
		}
		return fmt.Errorf("%v matches no anyOf branch", v)
	}
	num := func(k string) (float64, bool) {
		n, ok := s[k].(json.Number)
		f, _ := n.Float64()
		return f, ok
	}
	switch s["type"] {
	case "object":
		o, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is not an object", v)
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range s["required"].([]any) {
			if _, ok := o[r.(string)]; !ok {
				return fmt.Errorf("missing %q", r)
			}
		}
		for k, x := range o {
			p, ok := props[k]
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("extra property %q", k)
				}
				continue
			}
			if err := validate(p.(map[string]any), root, x); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%v is not an array", v)
		}
		if lo, ok := num("minItems"); ok && float64(len(a)) < lo {
			return fmt.Errorf("%d items < %v", len(a), lo)
		}
		if hi, ok := num("maxItems"); ok && float64(len(a)) > hi {
			return fmt.Errorf("%d items > %v", len(a), hi)
		}
		for _, x := range a {
			if err := validate(s["items"].(map[string]any), root, x); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%v is not a string", v)
		}
		n := float64(utf8.RuneCountInString(str))
		if lo, ok := num("minLength"); ok && n < lo {
			return fmt.Errorf("%q shorter than %v", str, lo)
		}
		if hi, ok := num("maxLength"); ok && n > hi {
			return fmt.Errorf("%q longer than %v", str, hi)
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%v is not a number", v)
		}
		f, err := n.Float64()
		if err != nil {
			return err
		}
		if s["type"] == "integer" && (f != math.Trunc(f) || bytes.ContainsAny([]byte(n), ".eE")) {
			return fmt.Errorf("%v is not an integer", n)
		}
		if lo, ok := num("minimum"); ok && f < lo {
			return fmt.Errorf("%v < %v", f, lo)
		}
		if hi, ok := num("maximum"); ok && f > hi {
			return fmt.Errorf("%v > %v", f, hi)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%v is not a boolean", v)
		}
	case "null":
		if v != nil {
			return fmt.Errorf("%v is not null", v)
		}
	}
	return nil
}

func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("text after the value")
	}
	return v, nil
}

// TestGenerateUnderSchema samples random logits through model/sample with
// the grammar as its constraint until EOS, and checks the text parses and
// validates.
func TestGenerateUnderSchema(t *testing.T) {
	v, texts := testVocab(t)
	text := func(id int32) []byte { return texts[id] }
	schemas := []string{
		`{"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":-20,"maximum":150},"ok":{"type":"boolean"},"tags":{"type":"array","items":{"enum":["a","é",null]},"minItems":1,"maxItems":3}},"required":["name","age","tags"],"additionalProperties":false}`,
		`{"type":"array","items":{"anyOf":[{"type":"integer","minimum":10,"maximum":99},{"const":"x"},{"type":"null"}]},"maxItems":4}`,
		`{"$defs":{"p":{"type":"object","properties":{"id":{"type":"integer","minimum":0,"maximum":9}},"required":["id"],"additionalProperties":false}},"type":"object","properties":{"a":{"$ref":"#/$defs/p"},"b":{"type":"array","items":{"$ref":"#/$defs/p"},"maxItems":2}},"required":["a","b"],"additionalProperties":false}`,
	}
	r := rand.New(rand.NewPCG(9, 9))
	for si, schema := range schemas {
		g, err := FromJSONSchema([]byte(schema), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var root map[string]any
		d := json.NewDecoder(bytes.NewReader([]byte(schema)))
		d.UseNumber()
		if err := d.Decode(&root); err != nil {
			t.Fatal(err)
		}
		for run := range 8 {
			c, err := NewConstraint(g, v, text, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			s, err := sample.New(sample.Params{Temperature: 1.5, TopP: 0.95, Seed: uint64(run)}, v.Len())
			if err != nil {
				t.Fatal(err)
			}
			s.SetConstraint(c)
			var out []byte
			logits := make([]float32, v.Len())
			done := false
			for range 2000 {
				for i := range logits {
					logits[i] = float32(r.NormFloat64())
				}
				logits[1] -= 3 // EOS unlikely unless forced, so outputs get long
				tok, err := s.Sample(logits)
				if err != nil {
					t.Fatalf("schema %d run %d after %q: %v", si, run, out, err)
				}
				if tok == 1 {
					done = true
					break
				}
				if err := c.Accept(tok); err != nil {
					t.Fatalf("schema %d: accept %d after %q: %v", si, tok, out, err)
				}
				out = append(out, texts[tok]...)
			}
			if !done {
				t.Fatalf("schema %d run %d: no EOS after 2000 tokens: %q", si, run, out)
			}
			val, err := decode(out)
			if err != nil {
				t.Fatalf("schema %d run %d: %q does not parse: %v", si, run, out, err)
			}
			if err := validate(root, root, val); err != nil {
				t.Fatalf("schema %d run %d: %q does not validate: %v", si, run, out, err)
			}
		}
	}
}

func TestJSONObjectOutput(t *testing.T) {
	g := JSONObject()
	for _, s := range []string{`{}`, `{"a":[1,{"b":null}],"c":"\u00e9"}`, "{\n  \"k\": -1.5e+3\n}"} {
		if !accepts(t, g, s) {
			t.Errorf("%q rejected", s)
		}
	}
	for _, s := range []string{`[]`, `"x"`, `{"a"}`, `{"a":01}`} {
		if accepts(t, g, s) {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestEndWith: a Constraint told which end-of-generation tokens end it
// allows only those once complete (in masks, in AllowsToken, in Accept),
// refuses a token that is no end, and leaves the masks it shares with
// another Constraint of the grammar as they were: that one still ends
// with either.
func TestEndWith(t *testing.T) {
	texts := [][]byte{[]byte("<e0>"), []byte("<e1>"), []byte("a"), []byte("b")}
	text := func(id int32) []byte { return texts[id] }
	v, err := NewVocab(len(texts), text, func(id int32) bool { return id < 2 }, []int32{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGBNF(`root ::= "a"`, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	mc := NewMaskCache(g, v, 1<<20)
	both, err := NewConstraint(g, v, text, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	one, err := NewConstraint(g, v, text, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Constraint{both, one} {
		if err := c.ShareMasks(mc); err != nil {
			t.Fatal(err)
		}
	}
	if err := one.EndWith([]int32{2}); !errors.Is(err, ErrNotEnd) {
		t.Errorf("EndWith of a text token: %v", err)
	}
	if err := one.EndWith(nil); !errors.Is(err, ErrNotEnd) {
		t.Errorf("EndWith of no token: %v", err)
	}
	if err := one.EndWith([]int32{1}); err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, 1)
	for _, c := range []*Constraint{both, one} {
		if err := c.Allowed(mask); err != nil || mask[0] != 1<<2 {
			t.Fatalf("mask before the text: %b, %v", mask[0], err)
		}
		if ok, err := c.AllowsToken(1); ok || err != nil {
			t.Errorf("an end before the grammar is complete: %v %v", ok, err)
		}
		if err := c.Accept(2); err != nil {
			t.Fatal(err)
		}
	}
	// the shared cache is filled by the first, used by the second
	for _, tt := range []struct {
		name string
		c    *Constraint
		mask uint64
	}{{"default", both, 0b11}, {"EndWith", one, 0b10}, {"default again", both, 0b11}} {
		if err := tt.c.Allowed(mask); err != nil || mask[0] != tt.mask {
			t.Errorf("%s: mask %b, want %b (%v)", tt.name, mask[0], tt.mask, err)
		}
		for id := int32(0); id < 2; id++ {
			want := tt.mask&(1<<id) != 0
			if ok, err := tt.c.AllowsToken(id); ok != want || err != nil {
				t.Errorf("%s: AllowsToken(%d) = %v, want %v (%v)", tt.name, id, ok, want, err)
			}
		}
	}
	if err := one.Accept(0); !errors.Is(err, ErrRejected) {
		t.Errorf("another end accepted: %v", err)
	}
	if err := one.Accept(1); err != nil {
		t.Errorf("its end refused: %v", err)
	}
	if err := both.Accept(0); err != nil {
		t.Errorf("the default refuses an end: %v", err)
	}
}
