package tokenizer

import (
	"cmp"
	"slices"
	"strings"
)

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
	return t.encodeFragments(text, t.partition(text, 0, len(text), parseSpecial), addSpecial)
}

// encodeFragments encodes the fragments of text in order.
func (t *Tokenizer) encodeFragments(text string, frags []fragment, addSpecial bool) []int32 {
	var out []int32
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	prevSpecial := true
	for _, f := range frags {
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

// Range is the byte range [A, B) of a text.
type Range struct{ A, B int }

// EncodeGuarded encodes a prompt in which the ranges plain hold client
// text that must never become a control token. When no special token
// that parsing finds in text overlaps a range of plain (a user-defined
// token wholly inside one, which raw text gives too, excepted), the result
// is Encode(text, addSpecial, true), identical to llama.cpp's. Otherwise
// text is cut at the edges of every range; the ranges are encoded with
// special parsing off, the text between them with it on, so no byte of a
// range is part of a control token. Ranges outside text are clipped;
// overlapping or unordered ones are merged.
func (t *Tokenizer) EncodeGuarded(text string, addSpecial bool, plain []Range) []int32 {
	plain = normalize(plain, len(text))
	frags := t.partition(text, 0, len(text), true)
	if !t.overlaps(frags, plain) {
		return t.encodeFragments(text, frags, addSpecial)
	}
	frags = nil
	at := 0
	for _, r := range plain {
		frags = append(frags, t.partition(text, at, r.A, true)...)
		frags = append(frags, t.partition(text, r.A, r.B, false)...)
		at = r.B
	}
	frags = append(frags, t.partition(text, at, len(text), true)...)
	return t.encodeFragments(text, frags, addSpecial)
}

// overlaps reports whether a special fragment takes bytes of a range
// other than as a user-defined token inside it.
func (t *Tokenizer) overlaps(frags []fragment, plain []Range) bool {
	k := 0
	for _, f := range frags {
		if f.id == None {
			continue
		}
		for k < len(plain) && plain[k].B <= f.a {
			k++
		}
		for j := k; j < len(plain) && plain[j].A < f.b; j++ {
			inside := plain[j].A <= f.a && f.b <= plain[j].B
			if !inside || t.types[f.id] != TypeUserDefined {
				return true
			}
		}
	}
	return false
}

// normalize clips the ranges to [0, n), drops empty ones, sorts and
// merges them.
func normalize(rs []Range, n int) []Range {
	out := make([]Range, 0, len(rs))
	for _, r := range rs {
		r.A, r.B = max(r.A, 0), min(r.B, n)
		if r.A < r.B {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(x, y Range) int { return cmp.Compare(x.A, y.A) })
	merged := out[:0]
	for _, r := range out {
		if k := len(merged) - 1; k >= 0 && r.A <= merged[k].B {
			merged[k].B = max(merged[k].B, r.B)
			continue
		}
		merged = append(merged, r)
	}
	return merged
}

// partition cuts text[from:to] into raw fragments and special tokens the way
// llama.cpp does: for each special token, longest text first, every
// occurrence in the remaining raw fragments is cut out. Only the special
// tokens that occur at all are tried, which keeps the cost at one scan
// of the text per occurring token.
func (t *Tokenizer) partition(text string, from, to int, parseSpecial bool) []fragment {
	if from >= to {
		return nil
	}
	frags := []fragment{{a: from, b: to, id: None}}
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
		if !strings.Contains(text[from:to], tok) {
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
