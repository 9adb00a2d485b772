package grammar

import (
	"errors"
	"fmt"
	"slices"
)

// Vocab is a byte trie over a model's token texts: tokens sharing a prefix
// share the path of that prefix, so a mask walks it once. It is immutable
// and safe for concurrent use; build it once per model.
type Vocab struct {
	n      int
	nodes  []trieNode
	edges  []trieEdge
	toks   []int32 // tokens ending at a node: nodes[i].tokLo:tokHi
	eos    []int32
	tokLen []int32 // bytes of each token; -1 for a special token
}

type trieNode struct {
	edgeLo, edgeHi int32
	tokLo, tokHi   int32
}

type trieEdge struct {
	b    byte
	node int32
}

// ErrNoEOS is returned by NewVocab for a vocabulary without an
// end-of-generation token.
var ErrNoEOS = errors.New("grammar: the vocabulary has no end-of-generation token")

// NewVocab builds the trie. text returns the bytes a token stands for;
// special reports control tokens (never allowed by a grammar), eos the
// end-of-generation tokens (allowed, and only, when the grammar is
// complete).
func NewVocab(n int, text func(id int32) []byte, special func(id int32) bool, eos []int32) (*Vocab, error) {
	if len(eos) == 0 {
		return nil, ErrNoEOS
	}
	for _, e := range eos {
		if e < 0 || int(e) >= n {
			return nil, fmt.Errorf("grammar: end-of-generation token %d outside a vocabulary of %d", e, n)
		}
	}
	type entry struct {
		text []byte
		id   int32
	}
	var es []entry
	v := &Vocab{n: n, eos: slices.Clone(eos), tokLen: make([]int32, n)}
	for id := range int32(n) {
		t := text(id)
		if special(id) || len(t) == 0 {
			v.tokLen[id] = -1
			continue
		}
		v.tokLen[id] = int32(len(t))
		es = append(es, entry{t, id})
	}
	slices.SortFunc(es, func(a, b entry) int {
		if c := slices.Compare(a.text, b.text); c != 0 {
			return c
		}
		return int(a.id - b.id)
	})
	// Build the trie depth-first from the sorted texts: the children of a
	// node are the distinct next bytes of a run of entries sharing its
	// prefix.
	var build func(lo, hi, depth int) int32
	build = func(lo, hi, depth int) int32 {
		id := int32(len(v.nodes))
		v.nodes = append(v.nodes, trieNode{})
		tokLo := int32(len(v.toks))
		for lo < hi && len(es[lo].text) == depth {
			v.toks = append(v.toks, es[lo].id)
			lo++
		}
		v.nodes[id].tokLo, v.nodes[id].tokHi = tokLo, int32(len(v.toks))
		type child struct {
			b      byte
			lo, hi int
		}
		var kids []child
		for i := lo; i < hi; {
			b := es[i].text[depth]
			j := i
			for j < hi && es[j].text[depth] == b {
				j++
			}
			kids = append(kids, child{b, i, j})
			i = j
		}
		edgeLo := int32(len(v.edges))
		v.edges = append(v.edges, make([]trieEdge, len(kids))...)
		for k, c := range kids {
			v.edges[int(edgeLo)+k] = trieEdge{b: c.b, node: build(c.lo, c.hi, depth+1)}
		}
		v.nodes[id].edgeLo, v.nodes[id].edgeHi = edgeLo, edgeLo+int32(len(kids))
		return id
	}
	build(0, len(es), 0)
	return v, nil
}

// Len returns the vocabulary size.
func (v *Vocab) Len() int { return v.n }

// Constraint restricts a generation to a grammar over a vocabulary: the
// mask of the tokens allowed next, and the advance over the token chosen.
// It satisfies model/sample's Constraint. Not safe for concurrent use.
type Constraint struct {
	m      *Matcher
	v      *Vocab
	check  [2][]int32 // scratch of AllowsToken
	text   func(id int32) []byte
	shared *MaskCache // masks shared with other Constraints (ShareMasks), or nil
	key    []byte     // scratch of the shared cache's key
	ends   []int32    // the end-of-generation tokens that may end it (EndWith); nil: all
}

// NewConstraint starts g over v; text returns a token's bytes (as given to
// NewVocab).
func NewConstraint(g *Grammar, v *Vocab, text func(id int32) []byte, lim Limits) (*Constraint, error) {
	m, err := NewMatcher(g, lim)
	if err != nil {
		return nil, err
	}
	return &Constraint{m: m, v: v, text: text}, nil
}

// Matcher returns the Constraint's matcher (its state after the tokens
// accepted so far).
func (c *Constraint) Matcher() *Matcher { return c.m }

// ErrNotEnd is returned by Constraint.EndWith for a token that is not one
// of the vocabulary's end-of-generation tokens.
var ErrNotEnd = errors.New("grammar: not an end-of-generation token of the vocabulary")

// EndWith lets only ids, of the vocabulary's end-of-generation tokens, end
// the generation once the grammar is complete (by default any of them
// does): a Harmony call ends with <|call|>, not with <|return|>. The
// masks shared with other Constraints (ShareMasks) are not changed: the
// other ends are cleared from each mask given out.
func (c *Constraint) EndWith(ids []int32) error {
	if len(ids) == 0 {
		return fmt.Errorf("%w: no token given", ErrNotEnd)
	}
	for _, id := range ids {
		if !slices.Contains(c.v.eos, id) {
			return fmt.Errorf("%w: token %d", ErrNotEnd, id)
		}
	}
	c.ends = slices.Clone(ids)
	return nil
}

// endAllowed reports whether eos token tok may end the generation (the
// grammar being complete).
func (c *Constraint) endAllowed(tok int32) bool {
	return c.ends == nil || slices.Contains(c.ends, tok)
}

// Allowed sets in mask (one bit per token, token i at bit i%64 of word
// i/64) the tokens the grammar can take next and clears the others. EOS
// tokens are allowed when the grammar is complete (only those of
// EndWith, when given), special tokens never. It returns a *LimitError
// when the walk would cost more than the limits allow.
func (c *Constraint) Allowed(mask []uint64) error {
	if err := c.allowed(mask); err != nil {
		return err
	}
	if c.ends != nil {
		for _, e := range c.v.eos {
			if !c.endAllowed(e) {
				mask[e/64] &^= 1 << (e % 64)
			}
		}
	}
	return nil
}

// allowed is Allowed with every EOS token of the vocabulary: the masks
// it remembers and shares are those.
func (c *Constraint) allowed(mask []uint64) error {
	if len(mask)*64 < c.v.n {
		return fmt.Errorf("grammar: mask of %d words for %d tokens", len(mask), c.v.n)
	}
	clear(mask)
	m := c.m
	m.err = nil
	m.work = 0
	if len(m.setBuf)+len(m.cacheBuf) > maxCache {
		m.resetCache()
	}
	set := m.internSet(m.cur)
	// The mask depends only on the state: a state met again (inside an
	// unbounded string, after every ordinary token) reuses its mask.
	key := uint64(uint32(set))<<32 | uint64(m.part.need)<<24 | uint64(m.part.val&0xffff)
	words := (c.v.n + 63) / 64
	if at, ok := m.masks.get(key); ok {
		copy(mask, m.maskBuf[int(at)*words:(int(at)+1)*words])
		return nil
	}
	if c.shared != nil {
		c.key = m.stateKey(c.key[:0])
	}
	if c.shared == nil || !c.shared.get(c.key, mask[:words]) {
		c.walk(0, set, m.part, mask)
		if m.err != nil {
			return fmt.Errorf("grammar: token mask: %w", m.err)
		}
		if m.Complete() {
			for _, e := range c.v.eos {
				mask[e/64] |= 1 << (e % 64)
			}
		}
		if c.shared != nil {
			c.shared.put(c.key, mask[:words])
		}
	}
	if (len(m.maskBuf)+words)*8 > maxMaskBytes {
		m.masks.next()
		m.maskBuf = m.maskBuf[:0]
	}
	m.masks.put(key, int32(len(m.maskBuf)/words))
	m.maskBuf = append(m.maskBuf, mask[:words]...)
	return nil
}

// maxMaskBytes bounds the memory of remembered masks (per Matcher).
const maxMaskBytes = 4 << 20

// walk visits the children of trie node n with the stack set set and
// UTF-8 state part, marking the tokens that end on a path the grammar
// takes. Transitions are memoized by (set, state, byte), so the walk
// mostly costs one table lookup per trie edge.
func (c *Constraint) walk(n, set int32, part utf8State, mask []uint64) {
	m := c.m
	tn := c.v.nodes[n]
	for _, e := range c.v.edges[tn.edgeLo:tn.edgeHi] {
		if m.err != nil {
			return
		}
		p, _, _, ok := utf8Next(part, e.b)
		if !ok {
			continue
		}
		next := int32(unknownSet)
		var row []int32
		if part.need == 0 {
			row = m.denseRow(set)
		}
		if row != nil {
			next = row[e.b]
		} else if v, hit := m.trans.get(uint64(uint32(set))<<32 | uint64(part.need)<<24 | uint64(part.val&0xffff)<<8 | uint64(e.b)); hit {
			next = v
		}
		if next == unknownSet {
			out, _, ok := m.feed(m.setSlice(set), part, e.b, m.scratch[:0])
			m.scratch = out
			next = -1
			if ok && m.err == nil {
				next = m.internSet(out)
			}
			if row != nil {
				row[e.b] = next
			} else {
				m.trans.put(uint64(uint32(set))<<32|uint64(part.need)<<24|uint64(part.val&0xffff)<<8|uint64(e.b), next)
			}
		}
		if next < 0 {
			continue
		}
		child := c.v.nodes[e.node]
		for _, t := range c.v.toks[child.tokLo:child.tokHi] {
			mask[t/64] |= 1 << (t % 64)
		}
		if child.edgeHi > child.edgeLo {
			c.walk(e.node, next, p, mask)
		}
	}
}

// AllowsToken reports whether the grammar can take token tok next, without
// changing the state: the cheap check model/sample makes on its
// unconstrained choice before it computes a whole mask, as llama.cpp's
// sampler does.
func (c *Constraint) AllowsToken(tok int32) (bool, error) {
	if tok < 0 || int(tok) >= c.v.n {
		return false, fmt.Errorf("grammar: token %d outside a vocabulary of %d", tok, c.v.n)
	}
	if slices.Contains(c.v.eos, tok) {
		return c.m.Complete() && c.endAllowed(tok), nil
	}
	if c.v.tokLen[tok] < 0 {
		return false, nil
	}
	m := c.m
	m.err = nil
	m.work = 0
	set, part := m.cur, m.part
	for i, b := range c.text(tok) {
		next, p, ok := m.feed(set, part, b, c.check[i%2][:0])
		c.check[i%2] = next
		if m.err != nil {
			return false, fmt.Errorf("grammar: token %d: %w", tok, m.err)
		}
		if !ok {
			return false, nil
		}
		set, part = next, p
	}
	return true, nil
}

// Accept advances the grammar over token tok. A special token is
// rejected; an EOS token is accepted only when the grammar is complete
// (and EndWith lets it end it) and leaves the state unchanged.
func (c *Constraint) Accept(tok int32) error {
	if tok < 0 || int(tok) >= c.v.n {
		return fmt.Errorf("grammar: token %d outside a vocabulary of %d", tok, c.v.n)
	}
	if slices.Contains(c.v.eos, tok) {
		if !c.m.Complete() {
			return fmt.Errorf("grammar: end of generation before the grammar is complete: %w", ErrRejected)
		}
		if !c.endAllowed(tok) {
			return fmt.Errorf("grammar: end-of-generation token %d is not one that may end this grammar: %w", tok, ErrRejected)
		}
		return nil
	}
	if c.v.tokLen[tok] < 0 {
		return fmt.Errorf("grammar: special token %d: %w", tok, ErrRejected)
	}
	return c.m.AcceptBytes(c.text(tok))
}
