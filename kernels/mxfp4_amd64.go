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
// dot (q80MXFP4, one of the Q8_0-partner row runs), whose one-token dot is
// a run of one row, with its activation work split out (prep, prepRows)
// for the pool's one-token products, and the eight-token dot; they sum
// in vector lanes, so the AVX2 four-token dot (which equals the generic
// order) goes too.
func setMXFP4AVX512(t *table) {
	x8 := func(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32) {
		x, dx = x[:8*nb], dx[:8*nb]
		w = w[:quant.BlockMXFP4Bytes*nb]
		if nb == 0 {
			*out = [8]float32{}
			return
		}
		dotMXFP4x8AVX512(&w[0], &x[0], &dx[0], nb, out)
	}
	k := q80MXFP4
	t.weights[tensor.MXFP4].q80 = dots[quant.BlockQ8_0]{
		one: k.one, rows: k.rows, x8: x8,
		prepLen: q80PrepLen, prep: k.prep, prepRows: k.prepRows,
	}
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

// mxfp4PrepAVX512 writes the scratch of the MXFP4 row-run dot for the nb
// blocks at x (1 <= nb <= q80RowsMaxBlocks; q80ScrBytes(nb) bytes at scr
// hold it): the activations of every whole group of eight blocks, in the
// order the kernel takes the codes and with their offset lanes, and the
// nb activation scales as float32.
//
//go:noescape
func mxfp4PrepAVX512(x *quant.BlockQ8_0, nb int, scr *byte)

// dotMXFP4RowsAVX512 sets out[r] to the dot of weight row r (the r-th nb
// blocks at w) with the nb blocks at x, for rows rows (nb, rows >= 1,
// nb <= q80RowsMaxBlocks), one row at a time, from the scratch
// mxfp4PrepAVX512 wrote from x.
//
//go:noescape
func dotMXFP4RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)

// dotMXFP4x8AVX512 sets out[t] to the dot of the nb blocks at w with
// token t's nb blocks at x[t*nb:], for eight tokens (nb >= 1), dx the
// tokens' block scales as float32 in q80Scales's layout.
//
//go:noescape
func dotMXFP4x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
