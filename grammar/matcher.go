package grammar

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// node is one frame of a stack: a grammar position and the frame below
// (the position to return to once the rule at pos ends). Node 0 is the
// empty stack. Nodes are hash-consed, so two stacks are equal exactly when
// their top nodes are, and a set of stacks is a set of node ids.
type node struct {
	pos    int32
	parent int32
	depth  int32
}

// ErrRejected is returned (wrapped) when the grammar cannot take a byte.
var ErrRejected = errors.New("rejected by the grammar")

// utf8State is a partly decoded UTF-8 sequence: the bits so far and how
// many continuation bytes are still to come.
type utf8State struct {
	val  rune
	need int8
}

// Matcher follows one generation through a Grammar. It is not safe for
// concurrent use.
type Matcher struct {
	g        *Grammar
	lim      Limits
	nodes    []node
	index    table // (pos, parent) -> node id
	seen     table // expansions done in the current step
	cur      []int32
	part     utf8State
	work     int   // expansions in the current mask or step, against MaxMaskNodes
	outBase  int   // where the current step's output starts in its buffer
	cache    table // step cache: hash of (set, rune) -> cacheEnt index
	cacheEnt []cacheEntry
	cacheBuf []int32
	setTab   table // hash of a stack set -> set id
	setOff   []int32
	setBuf   []int32
	trans    table    // (set id, UTF-8 state, byte) -> set id, -1 when rejected
	masks    table    // (set id, UTF-8 state) -> index of its mask in maskBuf
	maskBuf  []uint64 // masks computed, for states met again
	dense    []int32  // per set id: its row in denseBuf, or -1
	denseBuf []int32  // rows of 256 transitions from a set at a code point start
	scratch  []int32
	err      error
}

// NewMatcher returns a Matcher at the start of g.
func NewMatcher(g *Grammar, lim Limits) (*Matcher, error) {
	m := &Matcher{g: g, lim: lim, nodes: []node{{pos: -1, parent: -1}}}
	m.index.init(64)
	m.seen.init(64)
	m.cache.init(64)
	m.setTab.init(64)
	m.trans.init(64)
	m.masks.init(64)
	m.seen.next()
	var err error
	m.cur, err = m.start(nil)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// start expands the root rule's alternatives into out.
func (m *Matcher) start(out []int32) ([]int32, error) {
	m.err = nil
	m.work = 0
	m.outBase = len(out)
	for _, a := range m.g.alts[m.g.root] {
		out = m.expand(0, a, out)
	}
	return out, m.err
}

// intern returns the node (pos, parent), making it if new.
func (m *Matcher) intern(pos, parent int32) int32 {
	key := uint64(uint32(pos))<<32 | uint64(uint32(parent))
	if id, ok := m.index.get(key); ok {
		return id
	}
	d := m.nodes[parent].depth + 1
	if int(d) > m.lim.MaxDepth {
		m.fail(&LimitError{What: "MaxDepth", Limit: m.lim.MaxDepth})
	}
	id := int32(len(m.nodes))
	m.nodes = append(m.nodes, node{pos: pos, parent: parent, depth: d})
	m.index.put(key, id)
	return id
}

func (m *Matcher) fail(err error) {
	if m.err == nil {
		m.err = err
	}
}

// expand adds to out the stacks reached from position pos over parent
// without consuming input: through rule references (pushing the return
// position unless it is the end of an alternative, so right recursion
// keeps a flat stack) and ends of alternatives (popping). Stacks whose top
// is a character class are added; the empty stack (node 0) means the
// grammar is complete. Each (pos, parent) is expanded once per step, which
// keeps ambiguous grammars polynomial.
func (m *Matcher) expand(parent, pos int32, out []int32) []int32 {
	for {
		if m.err != nil {
			return out
		}
		key := uint64(uint32(pos))<<32 | uint64(uint32(parent))
		if _, done := m.seen.get(key); done {
			return out
		}
		m.seen.put(key, 0)
		m.work++
		if m.work > m.lim.MaxMaskNodes {
			m.fail(&LimitError{What: "MaxMaskNodes", Limit: m.lim.MaxMaskNodes})
			return out
		}
		e := m.g.elems[pos]
		switch e.kind {
		case kChar:
			if len(out)-m.outBase >= m.lim.MaxStacks {
				m.fail(&LimitError{What: "MaxStacks", Limit: m.lim.MaxStacks})
				return out
			}
			return append(out, m.intern(pos, parent))
		case kEnd:
			if parent == 0 {
				return append(out, 0)
			}
			pn := m.nodes[parent]
			parent, pos = pn.parent, pn.pos
		case kRef:
			ret := parent
			if m.g.elems[pos+1].kind != kEnd {
				ret = m.intern(pos+1, parent)
			}
			alts := m.g.alts[e.ref]
			for _, a := range alts[:len(alts)-1] {
				out = m.expand(ret, a, out)
			}
			parent, pos = ret, alts[len(alts)-1]
		}
	}
}

// maxCache bounds the ints the step cache holds before it starts over.
const maxCache = 1 << 20

// step advances the stacks in set over code point r into out. Results are
// cached by (set, r): a mask walk meets the same few sets again and again
// (inside a string, every ordinary character leads back to one set), and
// node ids never change until compact, which empties the cache.
func (m *Matcher) step(set []int32, r rune, out []int32) []int32 {
	h := uint64(r)*0x9e3779b97f4a7c15 ^ uint64(len(set))
	for _, s := range set {
		h = hash64(h ^ uint64(uint32(s)))
	}
	if i, ok := m.cache.get(h); ok {
		e := m.cacheEnt[i]
		if e.r == r && slicesEqual(m.cacheBuf[e.in:e.in+e.nIn], set) {
			return append(out, m.cacheBuf[e.out:e.out+e.nOut]...)
		}
	}
	n0 := len(out)
	out = m.stepSlow(set, r, out)
	if m.err != nil {
		return out
	}
	if len(m.cacheBuf)+len(set)+len(out)-n0 > maxCache {
		m.resetCache()
	}
	e := cacheEntry{r: r, in: int32(len(m.cacheBuf)), nIn: int32(len(set))}
	m.cacheBuf = append(m.cacheBuf, set...)
	e.out, e.nOut = int32(len(m.cacheBuf)), int32(len(out)-n0)
	m.cacheBuf = append(m.cacheBuf, out[n0:]...)
	m.cache.put(h, int32(len(m.cacheEnt)))
	m.cacheEnt = append(m.cacheEnt, e)
	return out
}

// cacheEntry is one cached step: input set and output set in cacheBuf.
type cacheEntry struct {
	r         rune
	in, nIn   int32
	out, nOut int32
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (m *Matcher) resetCache() {
	m.cache.next()
	m.cacheBuf = m.cacheBuf[:0]
	m.cacheEnt = m.cacheEnt[:0]
	m.setTab.next()
	m.setOff = m.setOff[:0]
	m.setBuf = m.setBuf[:0]
	m.trans.next()
	m.dense = m.dense[:0]
	m.denseBuf = m.denseBuf[:0]
	m.masks.next()
	m.maskBuf = m.maskBuf[:0]
}

// unknownSet marks a transition not computed yet.
const unknownSet = -2

// maxDenseRows bounds the sets with a direct transition row (1 KiB each).
const maxDenseRows = 2048

// denseRow returns the 256 byte transitions of set id at a code point
// start (unknownSet where not computed yet), making the row on first use,
// or nil when there are too many rows (the hash table serves then). Most
// trie edges are ASCII bytes from such a state, and an array index is
// several times cheaper than a hash lookup.
func (m *Matcher) denseRow(id int32) []int32 {
	for int(id) >= len(m.dense) {
		m.dense = append(m.dense, -1)
	}
	r := m.dense[id]
	if r < 0 {
		if len(m.denseBuf) >= maxDenseRows*256 {
			return nil
		}
		r = int32(len(m.denseBuf))
		for range 256 {
			m.denseBuf = append(m.denseBuf, unknownSet)
		}
		m.dense[id] = r
	}
	return m.denseBuf[r : r+256 : r+256]
}

// internSet returns the id of the stack set s, making one if new. Set ids
// let a mask walk memoize byte transitions: (set, UTF-8 state, byte) ->
// set.
func (m *Matcher) internSet(s []int32) int32 {
	h := uint64(len(s))
	for _, x := range s {
		h = hash64(h ^ uint64(uint32(x)))
	}
	for {
		id, ok := m.setTab.get(h)
		if !ok {
			break
		}
		if slicesEqual(m.setSlice(id), s) {
			return id
		}
		h++ // a collision: probe the next hash
	}
	id := int32(len(m.setOff) / 2)
	m.setOff = append(m.setOff, int32(len(m.setBuf)), int32(len(s)))
	m.setBuf = append(m.setBuf, s...)
	m.setTab.put(h, id)
	return id
}

// setSlice returns the stacks of set id.
func (m *Matcher) setSlice(id int32) []int32 {
	off, n := m.setOff[2*id], m.setOff[2*id+1]
	return m.setBuf[off : off+n]
}

// stepSlow is step without the cache.
func (m *Matcher) stepSlow(set []int32, r rune, out []int32) []int32 {
	m.seen.next()
	m.outBase = len(out)
	for _, s := range set {
		if s == 0 {
			continue
		}
		n := m.nodes[s]
		if m.g.matches(m.g.elems[n.pos], r) {
			out = m.expand(n.parent, n.pos+1, out)
		}
	}
	return out
}

// utf8Next advances a UTF-8 decoding state over byte b: ok is false for
// a byte that cannot come next, done is set when b completes code point r.
func utf8Next(part utf8State, b byte) (next utf8State, r rune, done, ok bool) {
	if part.need == 0 {
		switch {
		case b < 0x80:
			return part, rune(b), true, true
		case b>>5 == 6 && b >= 0xc2: // C0 and C1 would only start overlong forms
			return utf8State{rune(b & 0x1f), 1}, 0, false, true
		case b>>4 == 14:
			return utf8State{rune(b & 0x0f), 2}, 0, false, true
		case b>>3 == 30 && b <= 0xf4: // past F4 lies beyond U+10FFFF
			return utf8State{rune(b & 0x07), 3}, 0, false, true
		}
		return part, 0, false, false
	}
	if b>>6 != 2 {
		return part, 0, false, false
	}
	// The byte after a lead byte decides what UTF-8 forbids: overlong
	// forms (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and code
	// points past U+10FFFF (F4 90..BF). need and val tell the lead byte
	// apart: need 2 is only ever right after a three-byte lead, need 3
	// after a four-byte one.
	switch {
	case part.need == 2 && part.val == 0 && b < 0xa0,
		part.need == 2 && part.val == 0xd && b >= 0xa0,
		part.need == 3 && part.val == 0 && b < 0x90,
		part.need == 3 && part.val == 4 && b >= 0x90:
		return part, 0, false, false
	}
	next = utf8State{part.val<<6 | rune(b&0x3f), part.need - 1}
	if next.need == 0 {
		return utf8State{}, next.val, true, true
	}
	return next, 0, false, true
}

// feed advances (set, part) over one byte into out; ok is false when the
// grammar cannot take it.
func (m *Matcher) feed(set []int32, part utf8State, b byte, out []int32) ([]int32, utf8State, bool) {
	n0 := len(out)
	part, r, done, ok := utf8Next(part, b)
	if !ok {
		return out, part, false
	}
	if done {
		out = m.step(set, r, out)
		return out, part, len(out) > n0
	}
	// Mid-sequence: keep the stacks only if some completion could match.
	shift := 6 * uint(part.need)
	lo := part.val << shift
	hi := min(lo|(1<<shift-1), utf8.MaxRune)
	// Right after a lead byte, val holds only the lead's bits: the
	// sequence's length still bounds the code point from below (a
	// three-byte form is at least U+0800), which later bytes enforce.
	lo = max(lo, [4]rune{0, 0x80, 0x800, 0x10000}[part.need])
	for _, s := range set {
		if s != 0 && m.g.mayMatch(m.g.elems[m.nodes[s].pos], lo, hi) {
			return append(out, set...), part, true
		}
	}
	return out, part, false
}

// AcceptBytes advances the Matcher over b. On error the Matcher is
// unchanged.
func (m *Matcher) AcceptBytes(b []byte) error {
	m.err = nil
	m.work = 0
	set, part := m.cur, m.part
	var buf [2][]int32
	for i, c := range b {
		next, p, ok := m.feed(set, part, c, buf[i%2][:0])
		if m.err != nil {
			return fmt.Errorf("grammar: at byte %d of %q: %w", i, b, m.err)
		}
		if !ok {
			return fmt.Errorf("grammar: byte %d of %q: %w", i, b, ErrRejected)
		}
		buf[i%2] = next
		set, part = next, p
	}
	m.cur = append(m.cur[:0:0], set...)
	m.part = part
	m.compact()
	return nil
}

// Complete reports whether the text so far is a whole sentence of the
// grammar (generation may end here).
func (m *Matcher) Complete() bool {
	if m.part.need != 0 {
		return false
	}
	for _, s := range m.cur {
		if s == 0 {
			return true
		}
	}
	return false
}

// Done reports whether the grammar can take nothing more.
func (m *Matcher) Done() bool {
	for _, s := range m.cur {
		if s != 0 {
			return false
		}
	}
	return true
}

// compactNodes is the arena size (12 bytes a node) that triggers compact.
const compactNodes = 1 << 18

// compact drops the nodes no current stack uses, so the arena does not
// grow with the length of the generation.
func (m *Matcher) compact() {
	// Rarely: compaction renumbers nodes and so empties the caches that
	// make the next masks cheap.
	if len(m.nodes) < compactNodes {
		return
	}
	remap := make(map[int32]int32, len(m.cur)*4)
	remap[0] = 0
	nodes := []node{m.nodes[0]}
	var copyNode func(id int32) int32
	copyNode = func(id int32) int32 {
		if nid, ok := remap[id]; ok {
			return nid
		}
		n := m.nodes[id]
		n.parent = copyNode(n.parent)
		nid := int32(len(nodes))
		nodes = append(nodes, n)
		remap[id] = nid
		return nid
	}
	for i, s := range m.cur {
		m.cur[i] = copyNode(s)
	}
	m.nodes = nodes
	m.resetCache()
	m.index.init(len(nodes) * 2)
	for id, n := range nodes[1:] {
		m.index.put(uint64(uint32(n.pos))<<32|uint64(uint32(n.parent)), int32(id+1))
	}
}

// table is an open-addressing hash map from uint64 to int32 whose entries
// all vanish at once when the generation moves on (next), so clearing it
// every step costs nothing.
type table struct {
	keys  []uint64
	vals  []int32
	gens  []uint32
	gen   uint32
	count int
}

func (t *table) init(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t.keys = make([]uint64, size)
	t.vals = make([]int32, size)
	t.gens = make([]uint32, size)
	t.gen = 1
	t.count = 0
}

// next forgets every entry.
func (t *table) next() {
	t.gen++
	t.count = 0
	if t.gen == 0 { // wrapped: stale stamps could look current
		clear(t.gens)
		t.gen = 1
	}
}

func hash64(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

func (t *table) get(k uint64) (int32, bool) {
	mask := uint64(len(t.keys) - 1)
	for i := hash64(k) & mask; ; i = (i + 1) & mask {
		if t.gens[i] != t.gen {
			return 0, false
		}
		if t.keys[i] == k {
			return t.vals[i], true
		}
	}
}

func (t *table) put(k uint64, v int32) {
	if 2*(t.count+1) > len(t.keys) {
		t.grow()
	}
	mask := uint64(len(t.keys) - 1)
	for i := hash64(k) & mask; ; i = (i + 1) & mask {
		if t.gens[i] != t.gen {
			t.keys[i], t.vals[i], t.gens[i] = k, v, t.gen
			t.count++
			return
		}
		if t.keys[i] == k {
			t.vals[i] = v
			return
		}
	}
}

func (t *table) grow() {
	keys, vals, gens, gen := t.keys, t.vals, t.gens, t.gen
	t.init(len(keys))
	for i := range keys {
		if gens[i] == gen {
			t.put(keys[i], vals[i])
		}
	}
}
