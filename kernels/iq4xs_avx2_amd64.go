//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// setIQ4XSAVX2 puts the AVX2 IQ4_XS row-run dots (iq4xs_avx2_amd64.s)
// into t's row: rows, whose run of one row is the one-token dot, and its
// split (prep, prepRows) for the pool's one-token products, which
// prepares the activations once per product and gives the same bits.
// They sum in float32 vector lanes, so they equal the generic twin up to
// the rounding of the summation order, and there is no four-token dot
// (x4 must equal one bit for bit).
func setIQ4XSAVX2(t *table) {
	rows := func(w []byte, x []quant.BlockQ8K, out []float32) {
		w = w[:quant.BlockIQ4_XSBytes*len(x)*len(out)]
		if len(x) == 0 || len(out) == 0 {
			clear(out)
			return
		}
		dotIQ4XSRowsAVX2(&w[0], &x[0], len(x), len(out), &out[0])
	}
	t.weights[tensor.IQ4_XS].q8k = dots[quant.BlockQ8K]{one: oneOfRows(rows), rows: rows}
	iq4xsPrepAVX2Split.set(t)
}

// iq4xsPrepAVX2Split is the AVX2 IQ4_XS row run's split: each activation
// in two parts, 576 bytes a block (iq4xs_avx2_amd64.s).
var iq4xsPrepAVX2Split = q8kPrep{tensor.IQ4_XS, quant.BlockIQ4_XSBytes, 576, iq4xsPrepAVX2, dotIQ4XSRowsPrepAVX2}

// dotIQ4XSRowsAVX2 sets out[r] to the dot of weight row r (the r-th nb
// IQ4_XS blocks at w) with the nb blocks at x, for rows rows (nb, rows >=
// 1).
//
//go:noescape
func dotIQ4XSRowsAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// iq4xsPrepAVX2 writes the prepared activations of the nb blocks at x
// (nb >= 1) to scr, iq4xsPrepAVX2Split.prepLen(nb) bytes.
//
//go:noescape
func iq4xsPrepAVX2(x *quant.BlockQ8K, nb int, scr *byte)

// dotIQ4XSRowsPrepAVX2 works like dotIQ4XSRowsAVX2, bit for bit, with the
// activations iq4xsPrepAVX2 wrote to scr (x is not read).
//
//go:noescape
func dotIQ4XSRowsPrepAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
