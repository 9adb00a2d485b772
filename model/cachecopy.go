package model

import "fmt"

// CopyPrefix makes the first n positions of sequence dst those of
// sequence src (the prompt of a request with several choices, evaluated
// once in src) and drops whatever dst held past them. Positions below
// from are taken to be equal already (a prefix dst shares with src) and
// are not copied.
func (c *Cache) CopyPrefix(dst, src, from, n int) error {
	if err := c.checkSeq(dst); err != nil {
		return err
	}
	if err := c.checkSeq(src); err != nil {
		return err
	}
	if from < 0 || from > n || n > c.lens[src] || from > c.lens[dst] {
		return fmt.Errorf("model: copy positions %d..%d of sequence %d (%d held) to %d (%d held): %w",
			from, n, src, c.lens[src], dst, c.lens[dst], ErrInvalid)
	}
	if dst != src {
		for l := range c.nLayer {
			// Keys are one contiguous run of rows per sequence, values
			// one run of positions per value dimension.
			ka, kb := c.keyOff(l, src, from), c.keyOff(l, src, n)
			kd := c.keyOff(l, dst, from)
			if c.kv == KVF16 {
				copy(c.k16[kd:], c.k16[ka:kb])
				for d := range c.width {
					vs, vd := c.valOff(l, src, d), c.valOff(l, dst, d)
					copy(c.v16[vd+from:vd+n], c.v16[vs+from:vs+n])
				}
			} else {
				copy(c.k32[kd:], c.k32[ka:kb])
				for d := range c.width {
					vs, vd := c.valOff(l, src, d), c.valOff(l, dst, d)
					copy(c.v32[vd+from:vd+n], c.v32[vs+from:vs+n])
				}
			}
		}
	}
	c.lens[dst] = n
	return nil
}
