package grammar

import (
	"encoding/binary"
	"errors"
	"sync"
)

// MaskCache shares token masks between the Constraints of one Grammar over
// one Vocab, so that requests with the same grammar (a server's repeated
// json_object or schema) walk the trie for a state once, not once per
// request: a mask walk costs about a millisecond on a 32k vocabulary, a
// decode step of a small model half that. A mask is keyed by the state
// itself (each stack's grammar positions and the partial UTF-8 sequence),
// which determines it, not by a Matcher's own numbering. It is safe for
// concurrent use; its memory is bounded by the byte budget given to
// NewMaskCache (it starts afresh when full).
type MaskCache struct {
	g        *Grammar
	v        *Vocab
	maxBytes int

	mu    sync.Mutex
	masks map[string][]uint64
	bytes int
	hits  int // masks served, for tests
}

// NewMaskCache returns an empty cache for g's masks over v, holding at
// most maxBytes of masks and keys.
func NewMaskCache(g *Grammar, v *Vocab, maxBytes int) *MaskCache {
	return &MaskCache{g: g, v: v, maxBytes: maxBytes, masks: map[string][]uint64{}}
}

// ErrCacheMismatch is returned by Constraint.ShareMasks for a cache of
// another grammar or vocabulary.
var ErrCacheMismatch = errors.New("grammar: mask cache of another grammar or vocabulary")

// ShareMasks makes c look masks up in mc, and add those it computes,
// besides its own cache. mc must be of c's Grammar and Vocab.
func (c *Constraint) ShareMasks(mc *MaskCache) error {
	if mc.g != c.m.g || mc.v != c.v {
		return ErrCacheMismatch
	}
	c.shared = mc
	return nil
}

// get copies the mask of key into dst and reports whether there was one.
func (mc *MaskCache) get(key []byte, dst []uint64) bool {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	m, ok := mc.masks[string(key)] // no allocation for the lookup
	if ok {
		copy(dst, m)
		mc.hits++
	}
	return ok
}

// put remembers mask as the mask of key.
func (mc *MaskCache) put(key []byte, mask []uint64) {
	size := len(key) + 8*len(mask)
	if size > mc.maxBytes {
		return
	}
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if _, ok := mc.masks[string(key)]; ok {
		return
	}
	if mc.bytes+size > mc.maxBytes {
		clear(mc.masks)
		mc.bytes = 0
	}
	mc.masks[string(key)] = append([]uint64(nil), mask...)
	mc.bytes += size
}

// stateKey appends to dst the Matcher's state as the cache keys it: the
// partial UTF-8 sequence, then each stack's positions from the top down,
// each stack ended by a zero (positions are stored plus one).
func (m *Matcher) stateKey(dst []byte) []byte {
	dst = append(dst, byte(m.part.need))
	dst = binary.AppendUvarint(dst, uint64(uint32(m.part.val)))
	for _, s := range m.cur {
		for n := s; n != 0; n = m.nodes[n].parent {
			dst = binary.AppendUvarint(dst, uint64(m.nodes[n].pos)+1)
		}
		dst = append(dst, 0)
	}
	return dst
}
