package grammar

import (
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tokenizer"
)

// modelVocab builds the Vocab of a shared model's tokenizer as the engine
// would: Piece bytes, control/unknown/unused tokens special, the
// end-of-generation tokens as EOS.
func modelVocab(b testing.TB, name string) (*Vocab, func(int32) []byte) {
	f, err := gguf.Load(shared.Model(b, name), gguf.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	var eos []int32
	for id := range int32(tok.NVocab()) {
		if tok.IsEOG(id) {
			eos = append(eos, id)
		}
	}
	special := func(id int32) bool {
		switch tok.Type(id) {
		case tokenizer.TypeControl, tokenizer.TypeUnknown, tokenizer.TypeUnused:
			return true
		}
		return false
	}
	v, err := NewVocab(tok.NVocab(), tok.Piece, special, eos)
	if err != nil {
		b.Fatal(err)
	}
	return v, tok.Piece
}

// BenchmarkMask times one token mask on mini-24m's 32000-token vocabulary
// for a strict JSON Schema at typical states: the opening, a property
// name, a free string value (the costliest: most tokens fit), a bounded
// integer, and inside an array. Compare with a decode step of the model.
func BenchmarkMask(b *testing.B) {
	v, text := modelVocab(b, "mini-24m-q8_0.gguf")
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5}},"required":["name","age","email","tags"],"additionalProperties":false}`
	g, err := FromJSONSchema([]byte(schema), DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct{ name, prefix string }{
		{"start", ``},
		{"key", `{"name": "x", "ag`},
		{"bounded-string", `{"name": "ab`},
		{"string", `{"name": "x", "age": 42, "email": "ab`},
		{"integer", `{"name": "x", "age": 1`},
		{"array", `{"name": "x", "age": 42, "email": "x", "tags": ["a", `},
	} {
		b.Run(st.name, func(b *testing.B) {
			c, err := NewConstraint(g, v, text, DefaultLimits())
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Matcher().AcceptBytes([]byte(st.prefix)); err != nil {
				b.Fatal(err)
			}
			mask := make([]uint64, (v.Len()+63)/64)
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				if err := c.Allowed(mask); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N), "cpu-ns/op")
			n := 0
			for _, w := range mask {
				for ; w != 0; w &= w - 1 {
					n++
				}
			}
			b.ReportMetric(float64(n), "allowed")
		})
	}
}

// longestMatch splits text into tokens of v greedily (longest first).
func longestMatch(b testing.TB, v *Vocab, text []byte) []int32 {
	var out []int32
	for len(text) > 0 {
		n, best, bestLen := int32(0), int32(-1), 0
		for i := 0; i < len(text); i++ {
			tn := v.nodes[n]
			next := int32(-1)
			for _, e := range v.edges[tn.edgeLo:tn.edgeHi] {
				if e.b == text[i] {
					next = e.node
					break
				}
			}
			if next < 0 {
				break
			}
			n = next
			if c := v.nodes[n]; c.tokHi > c.tokLo {
				best, bestLen = v.toks[c.tokLo], i+1
			}
		}
		if best < 0 {
			b.Fatalf("no token for %q", text)
		}
		out = append(out, best)
		text = text[bestLen:]
	}
	return out
}

// BenchmarkMaskDocument times a whole constrained generation of a JSON
// document on mini-24m's vocabulary, from a fresh Constraint: a mask and
// an Accept per token, reported per token (cold caches included).
func BenchmarkMaskDocument(b *testing.B) {
	v, text := modelVocab(b, "mini-24m-q8_0.gguf")
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer","minimum":0,"maximum":150},"email":{"type":"string"},"tags":{"type":"array","items":{"type":"string"},"maxItems":5}},"required":["name","age","email","tags"],"additionalProperties":false}`
	g, err := FromJSONSchema([]byte(schema), DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	doc := longestMatch(b, v, []byte(`{"name": "Ada Lovelace", "age": 36, "email": "ada@example.org", "tags": ["math", "engines", "poetry"]}`))
	mask := make([]uint64, (v.Len()+63)/64)
	b.ReportAllocs()
	cpu0 := cputime.Process()
	for b.Loop() {
		c, err := NewConstraint(g, v, text, DefaultLimits())
		if err != nil {
			b.Fatal(err)
		}
		for _, tok := range doc {
			if err := c.Allowed(mask); err != nil {
				b.Fatal(err)
			}
			if mask[tok/64]&(1<<(tok%64)) == 0 {
				b.Fatalf("token %d %q not allowed", tok, text(tok))
			}
			if err := c.Accept(tok); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cputime.Process()-cpu0)/float64(b.N*len(doc)), "cpu-ns/token")
	b.ReportMetric(float64(len(doc)), "tokens")
}
