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
	t.weights[tensor.IQ4_XS].q8k = dots[quant.BlockQ8K]{
		one: oneOfRows(rows), rows: rows,
		prepLen: iq4xsPrepLen,
		prep: func(x []quant.BlockQ8K, scr []byte) {
			scr = scr[:iq4xsPrepLen(len(x))]
			if len(scr) == 0 {
				return
			}
			iq4xsPrepAVX2(&x[0], len(x), &scr[0])
		},
		prepRows: func(w []byte, x []quant.BlockQ8K, scr []byte, out []float32) {
			nb := len(x)
			w = w[:quant.BlockIQ4_XSBytes*nb*len(out)]
			scr = scr[:iq4xsPrepLen(nb)]
			if len(scr) == 0 || len(out) == 0 {
				rows(w, x, out)
				return
			}
			dotIQ4XSRowsPrepAVX2(&w[0], &scr[0], nb, len(out), &out[0])
		},
	}
}

// iq4xsPrepBlockBytes is the prepared activations of one block (see
// iq4xs_avx2_amd64.s).
const iq4xsPrepBlockBytes = 576

// iq4xsPrepLen is the dots.prepLen of the AVX2 IQ4_XS row-run dot: 63
// bytes to align the scratch, then every block's prepared activations;
// 0 for no blocks.
func iq4xsPrepLen(nb int) int {
	if nb < 1 {
		return 0
	}
	return 63 + nb*iq4xsPrepBlockBytes
}

// dotIQ4XSRowsAVX2 sets out[r] to the dot of weight row r (the r-th nb
// IQ4_XS blocks at w) with the nb blocks at x, for rows rows (nb, rows >=
// 1).
//
//go:noescape
func dotIQ4XSRowsAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)

// iq4xsPrepAVX2 writes the prepared activations of the nb blocks at x
// (nb >= 1) to scr, iq4xsPrepLen(nb) bytes.
//
//go:noescape
func iq4xsPrepAVX2(x *quant.BlockQ8K, nb int, scr *byte)

// dotIQ4XSRowsPrepAVX2 works like dotIQ4XSRowsAVX2, bit for bit, with the
// activations iq4xsPrepAVX2 wrote to scr.
//
//go:noescape
func dotIQ4XSRowsPrepAVX2(w *byte, scr *byte, nb, rows int, out *float32)
