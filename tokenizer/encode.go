package tokenizer

import "strings"

// fragment is a piece of the text: raw text [a, b) or a special token.
type fragment struct {
	a, b int
	id   int32 // None for raw text
}

// Encode returns the tokens of text. With addSpecial it adds BOS and EOS
// as the vocabulary asks (AddBOS, AddEOS). With parseSpecial the texts of
// control tokens in text become those tokens; user-defined tokens always
// do (as in llama.cpp and Hugging Face tokenizers). Raw user input must
// be encoded with parseSpecial false.
func (t *Tokenizer) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	var out []int32
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	prevSpecial := true
	for _, f := range t.partition(text, parseSpecial) {
		if f.id != None {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		raw := text[f.a:f.b]
		if t.kind == kindSPM {
			if t.addSpace && prevSpecial {
				raw = " " + raw
			}
			out = t.encodeSPM(raw, out)
		} else {
			out = t.encodeBPE(raw, out)
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

// partition cuts text into raw fragments and special tokens the way
// llama.cpp does: for each special token, longest text first, every
// occurrence in the remaining raw fragments is cut out. Only the special
// tokens that occur at all are tried, which keeps the cost at one scan
// of the text per occurring token.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{a: 0, b: len(text), id: None}}
	if len(t.special) == 0 {
		return frags
	}
	var next []fragment
	for _, id := range t.special {
		ty := t.types[id]
		if !parseSpecial && ty != TypeUserDefined {
			continue
		}
		tok := t.tokens[id]
		if !strings.Contains(text, tok) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.id != None {
				next = append(next, f)
				continue
			}
			strip := t.strip[id]
			a := f.a
			for a < f.b {
				k := strings.Index(text[a:f.b], tok)
				if k < 0 {
					break
				}
				left := a + k
				if strip&lstrip != 0 {
					for left > a && isCSpace(text[left-1]) {
						left--
					}
				}
				if left > a {
					next = append(next, fragment{a: a, b: left, id: None})
				}
				next = append(next, fragment{a: a + k, b: a + k + len(tok), id: id})
				a += k + len(tok)
				if strip&rstrip != 0 {
					for a < f.b && isCSpace(text[a]) {
						a++
					}
				}
			}
			if a < f.b {
				next = append(next, fragment{a: a, b: f.b, id: None})
			}
		}
		frags, next = next, frags
	}
	return frags
}

// isCSpace is C's isspace in the "C" locale, which llama.cpp uses to
// strip whitespace around special tokens.
func isCSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }
