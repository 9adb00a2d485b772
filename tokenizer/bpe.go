package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// byteToRune is GPT-2's byte-level alphabet: printable bytes stand for
// themselves, the others (controls, space, DEL, NBSP, soft hyphen) for
// the code points from U+0100 up, in byte order.
var byteToRune = func() (m [256]rune) {
	next := rune(256)
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()

// runeToByte inverts byteToRune; it returns false for a rune outside the
// alphabet.
func runeToByte(r rune) (byte, bool) {
	switch {
	case r >= '!' && r <= '~', r >= 0xA1 && r <= 0xAC, r >= 0xAE && r <= 0xFF:
		return byte(r), true
	case r >= 256 && r < 256+68:
		return byte(lowByteOf[r-256]), true
	}
	return 0, false
}

// lowByteOf lists, in order, the bytes that byteToRune moves to U+0100+.
var lowByteOf = func() (m [68]byte) {
	i := 0
	for b := 0; b < 256; b++ {
		if byteToRune[b] >= 256 {
			m[i] = byte(b)
			i++
		}
	}
	return m
}()

// symbol is one run of bytes of a word during merging, in a doubly
// linked list.
type symbol struct {
	a, b       int   // byte range in the word
	id         int32 // token of the bytes, None when there is none
	prev, next int
}

// bigram is a candidate merge of the symbols left and right.
type bigram struct {
	left, right int
	lid, rid    int32 // ids the symbols had when it was queued
	rank        int32 // BPE: lower first
	score       float32
	size        int // SPM: total bytes when queued
}

// queue is a binary heap of bigrams ordered by before. It is written
// out rather than using container/heap so that pushes do not allocate.
type queue struct {
	items  []bigram
	before func(a, b *bigram) bool
}

// bpeBefore orders BPE bigrams by rank, then by position.
func bpeBefore(a, b *bigram) bool {
	return a.rank < b.rank || a.rank == b.rank && a.left < b.left
}

// spmBefore orders SentencePiece bigrams by score (highest first), then
// by position.
func spmBefore(a, b *bigram) bool {
	return a.score > b.score || a.score == b.score && a.left < b.left
}

func (q *queue) push(x bigram) {
	q.items = append(q.items, x)
	i := len(q.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !q.before(&q.items[i], &q.items[parent]) {
			break
		}
		q.items[i], q.items[parent] = q.items[parent], q.items[i]
		i = parent
	}
}

func (q *queue) pop() bigram {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.before(&q.items[l], &q.items[m]) {
			m = l
		}
		if r < last && q.before(&q.items[r], &q.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		q.items[i], q.items[m] = q.items[m], q.items[i]
		i = m
	}
	return top
}

// mergeResult is the rank of merging two tokens and the token it gives.
type mergeResult struct{ rank, id int32 }

// encodeBPE appends the tokens of raw text s (no special tokens).
func (t *Tokenizer) encodeBPE(s string, out []int32) []int32 {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // each invalid byte becomes U+FFFD, as llama.cpp
	}
	if t.pre.raw {
		s = strings.ReplaceAll(s, " ", "▁")
	}
	var word []byte
	var syms []symbol
	q := &queue{before: bpeBefore}
	for _, sp := range t.pre.split(s) {
		word = word[:0]
		if t.pre.raw {
			word = append(word, s[sp.a:sp.b]...)
		} else {
			for i := sp.a; i < sp.b; i++ {
				word = utf8.AppendRune(word, byteToRune[s[i]])
			}
		}
		whole := t.pre.ignoreMerges || t.pre.newlineWord && strings.Trim(string(word), "\n") == ""
		if whole {
			if id, ok := t.mergeID[string(word)]; ok {
				out = append(out, id)
				continue
			}
		}
		q.items = q.items[:0]
		syms = t.mergeWord(s[sp.a:sp.b], syms[:0], q)
		for i := 0; i >= 0 && len(syms) > 0; i = syms[i].next {
			sy := syms[i]
			if sy.id != None {
				out = append(out, sy.id)
				continue
			}
			for j := sy.a; j < sy.b; j++ {
				if id := t.byteTok[s[sp.a+j]]; id != None {
					out = append(out, id)
				}
			}
		}
	}
	return out
}

// mergeWord runs BPE on the bytes of w: one symbol per byte (per UTF-8
// character for a raw pre-tokenizer), then the lowest-ranked adjacent
// pair merged until none is left.
func (t *Tokenizer) mergeWord(w string, syms []symbol, q *queue) []symbol {
	for i := 0; i < len(w); {
		n, id := 1, t.byteTok[w[i]]
		if t.pre.raw {
			_, n = utf8.DecodeRuneInString(w[i:])
			var ok bool
			if id, ok = t.mergeID[w[i:i+n]]; !ok {
				id = None
			}
		}
		next := len(syms) + 1
		if i+n == len(w) {
			next = -1
		}
		syms = append(syms, symbol{a: i, b: i + n, id: id, prev: len(syms) - 1, next: next})
		i += n
	}
	push := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		lid, rid := syms[l].id, syms[r].id
		if lid == None || rid == None {
			return
		}
		if m, ok := t.ranks[pairKey(lid, rid)]; ok {
			q.push(bigram{left: l, right: r, lid: lid, rid: rid, rank: m.rank})
		}
	}
	for i := 1; i < len(syms); i++ {
		push(i-1, i)
	}
	for len(q.items) > 0 {
		bg := q.pop()
		l, r := &syms[bg.left], &syms[bg.right]
		if l.b == l.a || r.b == r.a || l.next != bg.right || l.id != bg.lid || r.id != bg.rid {
			continue // stale
		}
		l.id = t.ranks[pairKey(bg.lid, bg.rid)].id
		l.b = r.b
		r.a = r.b
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = bg.left
		}
		push(l.prev, bg.left)
		push(bg.left, l.next)
	}
	return syms
}
