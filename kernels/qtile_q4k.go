package kernels

import (
	"encoding/binary"
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// The prompt tile of Q4_K, the type most downloads are made of: the
// scheme of qtile.go (sixteen rows rewritten once per product, tokens
// broadcast to them) with a layout of its own, because a Q4_K value is
// d·sc·q - dmin·m, with a 6-bit scale and min per 32-value sub-block and
// d, dmin per 256 values. Per 256-value block of a group of sixteen rows:
//
//	codes  per sub-block k, 8 registers × 64 bytes: register j holds q
//	       (0..15) of values 4j..4j+3 of the sixteen rows, row r at bytes
//	       4r..4r+3 (qtile.go's register layout); then
//	sc     16 dwords: sub-block k's scale of row r in both 16-bit
//	       halves, so that VPMADDWD of two 16-bit pair sums with it
//	       multiplies both by the scale and adds them
//	m      8 × 16 dwords: sub-block k's min of row r in the low half
//	d      16 float32: the rows' d; then dmin, 16 float32
//
// Per row, token and 256-value block the kernels compute two exact
// integers, isum = Σ_k sc_k·Σ q·x over sub-block k and mins = Σ_k m_k·X_k
// with X_k the token's sum over sub-block k (from its bias, -X_k·128),
// and take the float steps of ggml's generic Q4_K dot (dotQ4KGeneric),
// each rounded to float32:
//
//	acc = acc + (d·dx)·float32(isum)
//	acc = acc - (dmin·dx)·float32(mins)
//
// (dx the token's Q8_K d), so that a token's result is bit for bit the
// one-token dot of the paths that keep that order (generic, avx2): a
// sequence's logits do not depend on how its tokens are batched or what
// shares the batch. The avx512 path's one-token Q4_K dots sum in vector
// lanes, so it keeps its multi-token row runs (dots.xn) instead: a tile
// kernel of its own (VNNI, eight tokens a pass) measured 2.1 times their
// speed (BenchmarkMatMulPrompt Q4_K 2048x5632, one thread, 300 against
// 140 GFLOP per CPU-second) but would need one-token dots in this order.
// |isum| < 8·63·15·128·32 < 2^31. qkTileGeneric is the pure-Go twin.

// qkBlockBytes is the size of one 256-value block of a group in the Q4_K
// tile layout.
const qkBlockBytes = 8*(8*64+64) + 8*64 + 2*64

// The offsets of the parts of a Q4_K layout block: sub-block k's codes
// at qkSubBytes·k and its scales right after them (the kernels stream
// them together), then the mins, d and dmin.
const (
	qkSubBytes = 8*64 + 64
	qkScOff    = 8 * 64
	qkMinOff   = 8 * qkSubBytes
	qkDOff     = qkMinOff + 8*64
	qkDminOff  = qkDOff + 64
)

// qkRepackGeneric rewrites rows (1..qtRows) Q4_K rows of rb bytes at w
// into the tile layout at dst (nb 32-value blocks a row, a multiple of
// 8); the rows of the group past rows get zero codes, scales and mins.
func qkRepackGeneric(dst, w []byte, rb, rows, nb int) {
	nk := nb / 8
	dst = dst[:nk*qkBlockBytes]
	clear(dst)
	for r := range rows {
		row := w[r*rb : r*rb+nk*q4KBytes]
		for i := range nk {
			blk := row[i*q4KBytes : (i+1)*q4KBytes]
			out := dst[i*qkBlockBytes : (i+1)*qkBlockBytes]
			for k := range 8 {
				sc, m := quant.ScaleMinK4(k, blk[4:16])
				binary.LittleEndian.PutUint32(out[qkSubBytes*k+qkScOff+4*r:], uint32(sc)|uint32(sc)<<16)
				binary.LittleEndian.PutUint32(out[qkMinOff+64*k+4*r:], uint32(m))
				qs := blk[16+32*(k/2) : 16+32*(k/2)+32]
				for v, b := range qs {
					q := b & 15
					if k%2 == 1 {
						q = b >> 4
					}
					out[qkSubBytes*k+64*(v/4)+4*r+v%4] = q
				}
			}
			binary.LittleEndian.PutUint32(out[qkDOff+4*r:], math.Float32bits(quant.F16ToF32(binary.LittleEndian.Uint16(blk))))
			binary.LittleEndian.PutUint32(out[qkDminOff+4*r:], math.Float32bits(quant.F16ToF32(binary.LittleEndian.Uint16(blk[2:]))))
		}
	}
}

// qkTileGeneric is the pure-Go Q4_K tile kernel (qtTileFunc, nb a
// multiple of 8), the twin of the assembly ones.
func qkTileGeneric(w []byte, xq []int8, xs []qtScale, nb, nt int, out []float32, ldo, rows int) {
	nk := nb / 8
	w = w[:nk*qkBlockBytes]
	for t := range nt {
		x, s := xq[t*nb*32:(t+1)*nb*32], xs[t*nb:(t+1)*nb]
		o := out[t*ldo : t*ldo+rows]
		for r := range o {
			var acc float32
			for i := range nk {
				blk := w[i*qkBlockBytes : (i+1)*qkBlockBytes]
				var isum, mins int32
				for k := range 8 {
					xb := x[256*i+32*k : 256*i+32*k+32]
					var sum int32
					for j := range 8 {
						for v, c := range blk[qkSubBytes*k+64*j+4*r : qkSubBytes*k+64*j+4*r+4] {
							sum += int32(c) * int32(xb[4*j+v])
						}
					}
					sc := int32(binary.LittleEndian.Uint16(blk[qkSubBytes*k+qkScOff+4*r:]))
					m := int32(binary.LittleEndian.Uint16(blk[qkMinOff+64*k+4*r:]))
					isum += sc * sum
					mins += m * (-s[8*i+k].bias / 128)
				}
				dx := s[8*i].d
				d := math.Float32frombits(binary.LittleEndian.Uint32(blk[qkDOff+4*r:]))
				dmin := math.Float32frombits(binary.LittleEndian.Uint32(blk[qkDminOff+4*r:]))
				acc = float32(acc + float32(float32(d*dx)*float32(isum)))
				acc = float32(acc - float32(float32(dmin*dx)*float32(mins)))
			}
			o[r] = acc
		}
	}
}
