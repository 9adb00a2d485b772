package tokenizer

import "strings"

// utf8Len is the length llama.cpp gives a UTF-8 sequence from its first
// byte (a stray continuation byte counts as one).
func utf8Len(c byte) int {
	switch {
	case c < 0xC0:
		return 1
	case c < 0xE0:
		return 2
	case c < 0xF0:
		return 3
	}
	return 4
}

// encodeSPM appends the SentencePiece tokens of raw text s, to which the
// caller has already added the space prefix.
func (t *Tokenizer) encodeSPM(s string, out []int32) []int32 {
	s = strings.ReplaceAll(s, " ", "▁")
	var syms []symbol
	for p := 0; p < len(s); {
		n := min(utf8Len(s[p]), len(s)-p)
		syms = append(syms, symbol{a: p, b: p + n, prev: len(syms) - 1, next: len(syms) + 1})
		p += n
	}
	if len(syms) == 0 {
		return out
	}
	syms[len(syms)-1].next = -1
	q := &queue{before: spmBefore}
	push := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		text := s[syms[l].a:syms[r].b]
		if id, ok := t.mergeID[text]; ok {
			q.push(bigram{left: l, right: r, score: t.scores[id], size: len(text)})
		}
	}
	for i := 1; i < len(syms); i++ {
		push(i-1, i)
	}
	for len(q.items) > 0 {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.a == l.b || r.a == r.b || (l.b-l.a)+(r.b-r.a) != bg.size {
			continue // one side already merged elsewhere
		}
		l.b = r.b
		r.a = r.b
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		push(l.prev, bg.left)
		push(bg.left, l.next)
	}
	for i := 0; i >= 0; i = syms[i].next {
		out = t.spmSymbol(s[syms[i].a:syms[i].b], out)
	}
	return out
}

// spmSymbol appends the token of one merged symbol, or its bytes as byte
// tokens when it is not a token (UNK for a byte with no token).
func (t *Tokenizer) spmSymbol(text string, out []int32) []int32 {
	if id, ok := t.mergeID[text]; ok {
		return append(out, id)
	}
	for i := 0; i < len(text); i++ {
		switch id := t.byteTok[text[i]]; {
		case id != None:
			out = append(out, id)
		case t.unk != None:
			out = append(out, t.unk)
		}
	}
	return out
}
