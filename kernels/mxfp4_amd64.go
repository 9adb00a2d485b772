//go:build amd64 && !purego

package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// setMXFP4AVX2 puts the AVX2 MXFP4 dots (mxfp4_amd64.s) into t's row: the
// one-token dot and a four-token dot that decodes a weight block once
// for four tokens, both equal to quant.DotMXFP4Q8_0 bit for bit.
func setMXFP4AVX2(t *table) {
	t.weights[tensor.MXFP4].q80.one = func(w []byte, x []quant.BlockQ8_0) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:quant.BlockMXFP4Bytes*len(x)]
		return dotMXFP4AVX2(&w[0], &x[0], len(x))
	}
	t.weights[tensor.MXFP4].q80.x4 = func(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32) {
		x = x[:4*nb]
		w = w[:quant.BlockMXFP4Bytes*nb]
		if nb == 0 {
			*out = [4]float32{}
			return
		}
		dotMXFP4x4AVX2(&w[0], &x[0], nb, out)
	}
}

// setMXFP4AVX512 replaces t's MXFP4 row with the AVX-512 (VNNI) row-run
// dot, whose one-token dot is a run of one row, and the eight-token dot;
// they sum in vector lanes, so the AVX2 four-token dot (which equals the
// generic order) goes too.
func setMXFP4AVX512(t *table) {
	rows := func(w []byte, x []quant.BlockQ8_0, out []float32) {
		w = w[:quant.BlockMXFP4Bytes*len(x)*len(out)]
		if len(x) == 0 || len(out) == 0 {
			clear(out)
			return
		}
		if len(x) > q80RowsMaxBlocks {
			// Wider than any model's rows: the generic twin row by row,
			// so that the one-token dot (a run of one) still equals
			// every row.
			rb := quant.BlockMXFP4Bytes * len(x)
			for r := range out {
				out[r] = quant.DotMXFP4Q8_0(w[r*rb:(r+1)*rb], x)
			}
			return
		}
		// The activation scales as float32 and the activations in the
		// codes' order, written by the kernel once per call into arrays
		// on the stack (no allocation), of one of three sizes, since Go
		// zeroes them at every call.
		switch {
		case len(x) <= q80RowsTinyBlocks:
			var dx [q80RowsTinyBlocks]float32
			var xs [q80RowsTinyBlocks/8*q80XsGroupBytes + 64]byte
			dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], &dx[0], &xs[0])
		case len(x) <= q80RowsSmallBlocks:
			mxfp4RowsSmall(w, x, out)
		default:
			mxfp4RowsLarge(w, x, out)
		}
	}
	x8 := func(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32) {
		x, dx = x[:8*nb], dx[:8*nb]
		w = w[:quant.BlockMXFP4Bytes*nb]
		if nb == 0 {
			*out = [8]float32{}
			return
		}
		dotMXFP4x8AVX512(&w[0], &x[0], &dx[0], nb, out)
	}
	t.weights[tensor.MXFP4].q80 = dots[quant.BlockQ8_0]{one: oneOfRows(rows), rows: rows, x8: x8}
}

// mxfp4RowsSmall and mxfp4RowsLarge run the row-run dot with their
// arrays out of the narrower rows' frames (nb <= q80RowsSmallBlocks and
// nb <= q80RowsMaxBlocks).
func mxfp4RowsSmall(w []byte, x []quant.BlockQ8_0, out []float32) {
	var dx [q80RowsSmallBlocks]float32
	var xs [q80RowsSmallBlocks/8*q80XsGroupBytes + 64]byte
	dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], &dx[0], &xs[0])
}

func mxfp4RowsLarge(w []byte, x []quant.BlockQ8_0, out []float32) {
	var dx [q80RowsMaxBlocks]float32
	var xs [q80RowsMaxBlocks/8*q80XsGroupBytes + 64]byte
	dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], &dx[0], &xs[0])
}

// dotMXFP4AVX2 works like quant.DotMXFP4Q8_0 on nb >= 1 blocks at w and x.
//
//go:noescape
func dotMXFP4AVX2(w *byte, x *quant.BlockQ8_0, nb int) float32

// dotMXFP4x4AVX2 sets out[t] to dotMXFP4AVX2 of the nb blocks at w with
// token t's nb blocks at x[t*nb:], for four tokens (nb >= 1).
//
//go:noescape
func dotMXFP4x4AVX2(w *byte, x *quant.BlockQ8_0, nb int, out *[4]float32)

// dotMXFP4RowsAVX512 sets out[r] to the dot of weight row r (the r-th nb
// blocks at w) with the nb blocks at x, for rows rows (nb, rows >= 1,
// nb <= q80RowsMaxBlocks), one row at a time, after writing the nb
// activation scales as float32 to dx and the activations of every whole
// group of eight blocks, in the order it takes the codes and with their
// offset lanes, to xs (nb/8*q80XsGroupBytes bytes after aligning up to
// 64).
//
//go:noescape
func dotMXFP4RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out, dx *float32, xs *byte)

// dotMXFP4x8AVX512 sets out[t] to the dot of the nb blocks at w with
// token t's nb blocks at x[t*nb:], for eight tokens (nb >= 1), dx the
// tokens' block scales as float32 in q80Scales's layout.
//
//go:noescape
func dotMXFP4x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
