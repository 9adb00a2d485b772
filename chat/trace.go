package chat

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrUntraceable is returned by RenderTraced when the template transforms
// message content in a way that hides which bytes of the prompt came
// from it (slicing, splitting on a substring, JSON-encoding, …).
var ErrUntraceable = errors.New("chat: the template's use of message content cannot be traced")

// Span is the byte range [A, B) of a rendered prompt.
type Span struct{ A, B int }

// RenderTraced renders msgs as Render does and also returns, in
// increasing order, the byte ranges of the output that may have come from
// message content and could take part in a special token: every byte of
// a rune for which alphabet is true (a rune of one of the model's special
// token texts; utf8.RuneError stands for an invalid byte) and was copied from a message's content, on the safe side.
//
// Provenance is found by rendering a second time with a marker byte,
// absent from the template, the BOS and EOS texts and every message,
// before each such rune of each content (leading and trailing white space
// left unmarked so that trim and strip behave the same), then deleting
// the markers: when that gives the first rendering back byte for byte,
// the marked runes are exactly the content runes the template copied, at
// their places. A template that slices, splits or re-encodes content
// breaks the equality and the rendering fails with ErrUntraceable (the
// first rendering's errors come first). Unmarked edge white space cannot
// be told from the template's own, so when some special text contains a
// white-space rune every such rune outside the marked ranges counts as
// content.
//
// A template that derives output from content without copying it (a
// count, a length that survives the markers, a branch) writes template
// text, not client text; it is not marked.
//
// Only message content is traced: tool definitions, tool-call names,
// arguments and ids go through JSON and tojson, which no marker
// survives. A caller that keeps client text out of special tokens must
// refuse those that hold a special token's text; ToolStrings lists them.
func RenderTraced(tmpl string, msgs []Message, o Options, alphabet func(rune) bool) (string, []Span, error) {
	text, err := Render(tmpl, msgs, o)
	if err != nil {
		return "", nil, err
	}
	spaceInAlphabet := false
	for _, rg := range unicode.White_Space.R16 {
		for r := rg.Lo; r <= rg.Hi; r += rg.Stride {
			spaceInAlphabet = spaceInAlphabet || alphabet(rune(r))
		}
	}
	mark, ok := pickMarker(tmpl, msgs, o, alphabet)
	if !ok {
		return "", nil, fmt.Errorf("%w: the messages use every byte that could mark them", ErrUntraceable)
	}
	marked := make([]Message, len(msgs))
	anyMarked := false
	for i, m := range msgs {
		c, n := markContent(m.Content, mark, alphabet)
		marked[i] = m
		marked[i].Content = c
		anyMarked = anyMarked || n > 0 || (spaceInAlphabet && m.Content != "")
	}
	if !anyMarked {
		return text, nil, nil
	}
	out, err := Render(tmpl, marked, o)
	if err != nil {
		return "", nil, fmt.Errorf("%w: rendering with content marked: %v", ErrUntraceable, err)
	}
	spans, ok := unmark(out, text, mark)
	if !ok {
		return "", nil, fmt.Errorf("%w: the template changes message content before writing it", ErrUntraceable)
	}
	if spaceInAlphabet {
		spans = addSpaces(text, spans, alphabet)
	}
	return text, spans, nil
}

// markCandidates are the bytes tried as markers: ASCII controls that no
// trim or strip removes and no special token text is expected to hold.
const markCandidates = "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x7f"

// pickMarker returns a byte found in none of the inputs of the rendering
// and no special text.
func pickMarker(tmpl string, msgs []Message, o Options, alphabet func(rune) bool) (byte, bool) {
	for i := 0; i < len(markCandidates); i++ {
		c := markCandidates[i]
		s := string(rune(c))
		if alphabet(rune(c)) || strings.Contains(tmpl, s) || strings.Contains(o.BOS, s) || strings.Contains(o.EOS, s) {
			continue
		}
		used := false
		for _, m := range msgs {
			if strings.Contains(m.Content, s) || strings.Contains(m.Role, s) {
				used = true
				break
			}
		}
		if !used {
			return c, true
		}
	}
	return 0, false
}

// markContent puts mark before every rune of c in alphabet, except in
// its leading and trailing white space, and counts the marks.
func markContent(c string, mark byte, alphabet func(rune) bool) (string, int) {
	mid := strings.TrimFunc(c, unicode.IsSpace)
	if mid == "" {
		return c, 0
	}
	lead := strings.Index(c, mid)
	var b strings.Builder
	b.WriteString(c[:lead])
	n := 0
	for _, r := range mid {
		// An invalid byte is marked whatever the alphabet: a special
		// text need not be valid UTF-8.
		if alphabet(r) || r == utf8.RuneError {
			b.WriteByte(mark)
			n++
		}
		b.WriteRune(r)
	}
	b.WriteString(c[lead+len(mid):])
	return b.String(), n
}

// unmark deletes the markers from out and returns the ranges of the
// marked runes in the result, which must equal want.
func unmark(out, want string, mark byte) ([]Span, bool) {
	var spans []Span
	j := 0 // position in want
	for i := 0; i < len(out); {
		if out[i] != mark {
			if j >= len(want) || want[j] != out[i] {
				return nil, false
			}
			i++
			j++
			continue
		}
		i++
		if i >= len(out) || out[i] == mark {
			return nil, false
		}
		_, n := utf8.DecodeRuneInString(out[i:])
		if j+n > len(want) || out[i:i+n] != want[j:j+n] {
			return nil, false
		}
		if k := len(spans) - 1; k >= 0 && spans[k].B == j {
			spans[k].B = j + n
		} else {
			spans = append(spans, Span{A: j, B: j + n})
		}
		i += n
		j += n
	}
	return spans, j == len(want)
}

// addSpaces adds to spans every white-space rune of text in alphabet
// that they do not cover, keeping them ordered and merged.
func addSpaces(text string, spans []Span, alphabet func(rune) bool) []Span {
	var out []Span
	add := func(s Span) {
		if k := len(out) - 1; k >= 0 && out[k].B >= s.A {
			out[k].B = max(out[k].B, s.B)
			return
		}
		out = append(out, s)
	}
	k := 0
	for i, r := range text {
		for k < len(spans) && spans[k].A <= i {
			add(spans[k])
			k++
		}
		if unicode.IsSpace(r) && alphabet(r) {
			add(Span{A: i, B: i + utf8.RuneLen(r)})
		}
	}
	for ; k < len(spans); k++ {
		add(spans[k])
	}
	return out
}

// TrimAddedTraced is TrimAdded for a traced rendering: it removes the
// BOS and EOS texts only where no byte of them came from content, and
// shifts spans to the trimmed text.
func TrimAddedTraced(text string, spans []Span, bosText, eosText string, addBOS, addEOS bool) (string, []Span) {
	cut := func(a, b int) bool {
		for _, s := range spans {
			if s.A < b && a < s.B {
				return false
			}
		}
		return true
	}
	if addBOS && bosText != "" && strings.HasPrefix(text, bosText) && cut(0, len(bosText)) {
		text = text[len(bosText):]
		shifted := make([]Span, len(spans))
		for i, s := range spans {
			shifted[i] = Span{A: s.A - len(bosText), B: s.B - len(bosText)}
		}
		spans = shifted
	}
	if addEOS && eosText != "" && strings.HasSuffix(text, eosText) && cut(len(text)-len(eosText), len(text)) {
		text = text[:len(text)-len(eosText)]
	}
	return text, spans
}
