//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// setIQ4XSAVX2 puts the AVX2 IQ4_XS row-run dot (iq4xs_avx2_amd64.s)
// into t's row: the one-token dot is a run of one row. It sums in float32
// vector lanes, so it equals the generic twin up to the rounding of the
// summation order, and there is no four-token dot (x4 must equal one bit
// for bit).
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
}

// dotIQ4XSRowsAVX2 sets out[r] to the dot of weight row r (the r-th nb
// IQ4_XS blocks at w) with the nb blocks at x, for rows rows (nb, rows >=
// 1).
//
//go:noescape
func dotIQ4XSRowsAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
