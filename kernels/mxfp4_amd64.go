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
// dot, whose one-token dot is a run of one row, with its activation work
// split out (prep, prepRows) for the pool's one-token products, and the
// eight-token dot; they sum in vector lanes, so the AVX2 four-token dot
// (which equals the generic order) goes too.
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
	t.weights[tensor.MXFP4].q80 = dots[quant.BlockQ8_0]{
		one: mxfp4One, rows: mxfp4Rows, x8: x8,
		prepLen: mxfp4PrepLen, prep: mxfp4Prep, prepRows: mxfp4PrepRows,
	}
}

// mxfp4ScrBytes is the scratch of the MXFP4 row-run dot for rows of nb
// blocks (mxfp4PrepAVX512's layout): 64 bytes to align it, every whole
// group's activations, then all nb activation scales as float32.
func mxfp4ScrBytes(nb int) int { return 64 + nb/8*q80XsGroupBytes + 4*nb }

// The stack arrays of mxfp4Rows, mxfp4ScrBytes of the three widths.
const (
	mxfp4ScrTiny  = 64 + q80RowsTinyBlocks/8*q80XsGroupBytes + 4*q80RowsTinyBlocks
	mxfp4ScrSmall = 64 + q80RowsSmallBlocks/8*q80XsGroupBytes + 4*q80RowsSmallBlocks
	mxfp4ScrLarge = 64 + q80RowsMaxBlocks/8*q80XsGroupBytes + 4*q80RowsMaxBlocks
)

// mxfp4PrepLen is the dots.prepLen of the MXFP4 row-run dot: its scratch
// for rows of nb blocks, 0 (rows alone) for rows wider than
// q80RowsMaxBlocks, which take the generic twin.
func mxfp4PrepLen(nb int) int {
	if nb < 1 || nb > q80RowsMaxBlocks {
		return 0
	}
	return mxfp4ScrBytes(nb)
}

// mxfp4Rows is the MXFP4 row-run dot: the activations prepared into
// scratch in stack arrays of one of three sizes (Go zeroes them at every
// call, so the narrower rows take smaller ones), then the kernel; rows
// wider than q80RowsMaxBlocks take the generic twin row by row, so that
// the one-token dot (a run of one) still equals every row.
func mxfp4Rows(w []byte, x []quant.BlockQ8_0, out []float32) {
	nb := len(x)
	w = w[:quant.BlockMXFP4Bytes*nb*len(out)]
	switch {
	case nb == 0 || len(out) == 0:
		clear(out)
	case nb <= q80RowsTinyBlocks:
		var scr [mxfp4ScrTiny]byte
		mxfp4PrepAVX512(&x[0], nb, &scr[0])
		dotMXFP4RowsAVX512(&w[0], &x[0], nb, len(out), &out[0], &scr[0])
	case nb <= q80RowsSmallBlocks:
		mxfp4RowsSmall(w, x, out)
	case nb <= q80RowsMaxBlocks:
		mxfp4RowsLarge(w, x, out)
	default:
		rb := quant.BlockMXFP4Bytes * nb
		for r := range out {
			out[r] = quant.DotMXFP4Q8_0(w[r*rb:(r+1)*rb], x)
		}
	}
}

// mxfp4RowsSmall and mxfp4RowsLarge keep their arrays out of the
// narrower rows' frames.
func mxfp4RowsSmall(w []byte, x []quant.BlockQ8_0, out []float32) {
	var scr [mxfp4ScrSmall]byte
	mxfp4PrepAVX512(&x[0], len(x), &scr[0])
	dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], &scr[0])
}

func mxfp4RowsLarge(w []byte, x []quant.BlockQ8_0, out []float32) {
	var scr [mxfp4ScrLarge]byte
	mxfp4PrepAVX512(&x[0], len(x), &scr[0])
	dotMXFP4RowsAVX512(&w[0], &x[0], len(x), len(out), &out[0], &scr[0])
}

// mxfp4One is the one-token dot, a run of one row of mxfp4Rows (its
// result array does not escape: no allocation per call).
func mxfp4One(w []byte, x []quant.BlockQ8_0) float32 {
	var out [1]float32
	mxfp4Rows(w, x, out[:])
	return out[0]
}

// mxfp4Prep is the dots.prep of the MXFP4 row-run dot: its activation
// work, once per product (1 <= len(x) <= q80RowsMaxBlocks, len(scr) >=
// mxfp4PrepLen(len(x))).
func mxfp4Prep(x []quant.BlockQ8_0, scr []byte) {
	scr = scr[:mxfp4PrepLen(len(x))]
	if len(scr) == 0 {
		return
	}
	mxfp4PrepAVX512(&x[0], len(x), &scr[0])
}

// mxfp4PrepRows is the dots.prepRows of the MXFP4 row-run dot: mxfp4Rows's
// dots from the scratch mxfp4Prep wrote from x, bit for bit.
func mxfp4PrepRows(w []byte, x []quant.BlockQ8_0, scr []byte, out []float32) {
	nb := len(x)
	w = w[:quant.BlockMXFP4Bytes*nb*len(out)]
	scr = scr[:mxfp4PrepLen(nb)]
	if len(scr) == 0 || len(out) == 0 {
		mxfp4Rows(w, x, out)
		return
	}
	dotMXFP4RowsAVX512(&w[0], &x[0], nb, len(out), &out[0], &scr[0])
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
// blocks at x (1 <= nb <= q80RowsMaxBlocks, mxfp4ScrBytes(nb) bytes at
// scr): the activations of every whole group of eight blocks, in the
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
