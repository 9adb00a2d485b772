package tokenizer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// makePiece computes the bytes token id stands for in detokenized text.
func (t *Tokenizer) makePiece(id int32) []byte {
	text := t.tokens[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown:
		return nil
	case TypeUserDefined:
		return []byte(text)
	case TypeByte:
		if b, ok := parseByteToken(text); ok {
			return []byte{b}
		}
		return nil
	case TypeNormal:
		if t.kind == kindSPM || t.pre.raw {
			return []byte(strings.ReplaceAll(text, "▁", " "))
		}
		return decodeByteLevel(text)
	}
	return nil // unused and undefined tokens render as nothing, as in llama.cpp
}

// parseByteToken parses "<0xNN>".
func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	n, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(n), err == nil
}

// decodeByteLevel maps the characters of a byte-level token back to the
// bytes they stand for. A character outside the alphabet is rendered as
// llama.cpp does, as "[UNK_BYTE_0x…]".
func decodeByteLevel(text string) []byte {
	out := make([]byte, 0, len(text))
	for _, r := range text {
		if b, ok := runeToByte(r); ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, c := range []byte(string(r)) {
			out = fmt.Appendf(out, "%02x", c)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// Piece returns the bytes token id stands for when detokenized: byte
// tokens give their byte, "▁" gives a space, byte-level characters give
// their bytes, and control, unknown and unused tokens give nothing. The
// result may be a fragment of a UTF-8 character; it must not be modified.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	p := t.pieces[id]
	return p[:len(p):len(p)]
}

// PieceSpecial is Piece, except that control and unknown tokens give
// their text (for showing prompts, as llama.cpp's "special" rendering).
func (t *Tokenizer) PieceSpecial(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	if ty := t.types[id]; ty == TypeControl || ty == TypeUnknown {
		return []byte(t.tokens[id])
	}
	return t.Piece(id)
}

// Decode returns the text of ids as llama.cpp's detokenizer does with
// special tokens neither removed nor rendered: the pieces joined, the
// leading space of the first piece dropped for vocabularies that add a
// space prefix (so a leading BOS keeps the space of the word after it),
// and for most BPE vocabularies spaces before ?!., and some apostrophe
// contractions cleaned up. The result may be invalid UTF-8 when byte
// tokens do not form whole characters. Out-of-range ids give nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	var out []byte
	for i, id := range ids {
		p := t.Piece(id)
		if i == 0 && t.addSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		out = append(out, p...)
	}
	if t.clean {
		out = cleanSpaces(out)
	}
	return string(out)
}

// cleanSpaces applies llama.cpp's three clean-up passes: " ?", " !", " .",
// " ," lose the space; " ' " loses both spaces; " 's", " 'm", " 're",
// " 've" lose the space.
func cleanSpaces(in []byte) []byte {
	if len(in) == 0 {
		return in
	}
	out := []byte{in[0]}
	for i := 1; i < len(in); i++ {
		x := in[i]
		if in[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			out = out[:len(out)-1]
		}
		out = append(out, x)
	}
	in, out = out, []byte{out[0]}
	for i := 1; i < len(in); i++ {
		x := in[i]
		if x == '\'' && i+1 < len(in) && in[i-1] == ' ' && in[i+1] == ' ' {
			out = out[:len(out)-1]
			i++
			in[i] = 0 // the skipped space no longer counts as a space
		}
		out = append(out, x)
	}
	in, out = out, []byte{out[0]}
	for i := 1; i < len(in); i++ {
		x := in[i]
		if in[i-1] == ' ' && x == '\'' && i+1 < len(in) {
			x1 := in[i+1]
			switch {
			case x1 == 's' || x1 == 'm':
				out = out[:len(out)-1]
			case x1 == 't' || x1 == 'd':
			case i+2 < len(in) && (x1 == 'r' || x1 == 'v') && in[i+2] == 'e':
				out = out[:len(out)-1]
			}
		}
		out = append(out, x)
	}
	return out
}

// StreamDecoder turns a stream of tokens into text piece by piece. Its
// output is always valid UTF-8: a piece ending inside a character is held
// back until the character is complete, and bytes that can never form a
// character become U+FFFD, one per byte. The concatenated output equals
// Decode of the same ids with invalid bytes so replaced, except for the
// BPE space clean-up, which needs the whole text and is not applied.
type StreamDecoder struct {
	t         *Tokenizer
	pending   []byte
	started   bool
	continues bool
}

// NewStreamDecoder returns a StreamDecoder at the start of a text: the
// first piece loses its leading space as in Decode.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// NewContinuationDecoder returns a StreamDecoder for tokens that continue
// a prompt (generated text): the first piece keeps its leading space, as
// it does when Decode sees the prompt before it.
func (t *Tokenizer) NewContinuationDecoder() *StreamDecoder {
	return &StreamDecoder{t: t, started: true, continues: true}
}

// Add decodes one more token and returns the text that is now complete.
func (d *StreamDecoder) Add(id int32) string {
	p := d.t.Piece(id)
	if !d.started {
		d.started = true
		if d.t.addSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
	}
	d.pending = append(d.pending, p...)
	var out strings.Builder
	i := 0
	for i < len(d.pending) && utf8.FullRune(d.pending[i:]) {
		r, n := utf8.DecodeRune(d.pending[i:])
		if r == utf8.RuneError && n == 1 {
			out.WriteRune(utf8.RuneError)
		} else {
			out.Write(d.pending[i : i+n])
		}
		i += n
	}
	d.pending = append(d.pending[:0], d.pending[i:]...)
	return out.String()
}

// Flush returns what is held back (an incomplete character, as U+FFFD
// per byte) and resets d for a new text of the kind it was made for.
func (d *StreamDecoder) Flush() string {
	s := strings.Repeat(string(utf8.RuneError), len(d.pending))
	d.pending = d.pending[:0]
	d.started = d.continues
	return s
}
