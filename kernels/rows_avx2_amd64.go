//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
)

// setRowsAVX2 puts the AVX2 row-run dots of Q4_0, Q5_0 and IQ4_NL
// (rows_avx2_amd64.s) into t's rows, with their activation work once per
// product (prep, prepRows): the one-token dot is a run of one row. They
// sum in float32 vector lanes, so they replace the four-token dots too,
// whose contract is to equal the one-token dot bit for bit.
func setRowsAVX2(t *table) {
	for _, k := range []q80Kernel{q80Q4_0AVX2, q80Q5_0AVX2, q80IQ4NLAVX2} {
		t.weights[k.typ()].q80 = dots[quant.BlockQ8_0]{
			one: k.one, rows: k.rows,
			prepLen: q80PrepLen, prep: k.prep, prepRows: k.prepRows,
		}
	}
}

// rowsPrepAVX2 writes the scratch of the AVX2 Q8_0-partner row-run dots
// for the nb blocks at x, off their code offset in every byte (nb >= 1;
// layout in rows_avx2_amd64.s, q80ScrBytes(nb) bytes).
//
//go:noescape
func rowsPrepAVX2(x *quant.BlockQ8_0, nb int, off uint32, scr *byte)

// dotQ4_0RowsAVX2, dotQ5_0RowsAVX2 and dotIQ4NLRowsAVX2 set out[r] to the
// dot of weight row r (rows rows of nb blocks at w) with the nb blocks at
// x, the activations of their whole groups of eight blocks read from scr,
// which rowsPrepAVX2 wrote (nb, rows >= 1).

//go:noescape
func dotQ4_0RowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotQ5_0RowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

//go:noescape
func dotIQ4NLRowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
