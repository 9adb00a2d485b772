//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// q8kPrep is a Q8_K-partner row run (avx512 or avx2) split for the pool's
// one-token products (dots.prep, dots.prepRows): prep writes the
// activation work of every block once per product, prepBlock bytes a
// block from the scratch's first 64-byte boundary, and rows then gives
// the row run's results, bit for bit, from it.
type q8kPrep struct {
	typ        tensor.Type
	blockBytes int // of a weight block
	prepBlock  int // prepared bytes of an activation block
	prep       func(x *quant.BlockQ8K, nb int, scr *byte)
	rows       func(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
}

// prepLen is the dots.prepLen of k: 63 bytes to align the scratch, then
// every block's prepared activations; 0 for no blocks.
func (k q8kPrep) prepLen(nb int) int {
	if nb < 1 {
		return 0
	}
	return 63 + nb*k.prepBlock
}

// set gives t's row-run dot of k.typ its split.
func (k q8kPrep) set(t *table) {
	d := &t.weights[k.typ].q8k
	rows := d.rows
	d.prepLen = k.prepLen
	d.prep = func(x []quant.BlockQ8K, scr []byte) {
		scr = scr[:k.prepLen(len(x))]
		if len(scr) == 0 {
			return
		}
		k.prep(&x[0], len(x), &scr[0])
	}
	d.prepRows = func(w []byte, x []quant.BlockQ8K, scr []byte, out []float32) {
		nb := len(x)
		w = w[:k.blockBytes*nb*len(out)]
		scr = scr[:k.prepLen(nb)]
		if len(scr) == 0 || len(out) == 0 {
			rows(w, x, out)
			return
		}
		k.rows(&w[0], &x[0], nb, len(out), &out[0], &scr[0])
	}
}
