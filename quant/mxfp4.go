package quant

import "math"

// MXFP4Values is the E2M1 (FP4) value table of MXFP4 doubled, as ggml
// keeps it (kvalues_mxfp4): code c stands for MXFP4Values[c] times half
// the block's power-of-two scale. Codes 0..7 are +0, 0.5, 1, 1.5, 2, 3, 4
// and 6; codes 8..15 the same negated (8 is -0, stored as 0).
var MXFP4Values = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// E8M0Half returns half the value of the E8M0 exponent byte e, 2^(e-128),
// as ggml's GGML_E8M0_TO_FP32_HALF: exact for every byte, subnormal for
// e = 0 and 1, and no NaN for 0xFF (ggml reads it as 2^127, halved).
func E8M0Half(e uint8) float32 {
	if e < 2 {
		return math.Float32frombits(0x00200000 << e)
	}
	return math.Float32frombits(uint32(e-1) << 23)
}

// mxfp4Exponent returns the exponent byte quantize_row_mxfp4_ref picks for
// a block whose largest magnitude is amax: floorf(log2f(amax)) - 2 + 127
// cast to uint8_t as x86-64 does (through int32, so that a subnormal amax
// wraps to 232.. and an infinite one gives 0), or 0 when amax is not
// positive. floor(float32(log2(amax))) equals glibc's floorf(log2f(amax))
// for every positive finite float32 (checked exhaustively; the test keeps
// the decisive values just below each power of two).
func mxfp4Exponent(amax float32) uint8 {
	if !(amax > 0) {
		return 0
	}
	l := float32(math.Floor(float64(float32(math.Log2(float64(amax))))))
	return uint8(truncInt32(float32(float32(l-2) + 127)))
}

// bestIndexMXFP4 returns the code whose value times d is nearest x, as
// ggml's best_index_mxfp4: a linear scan keeping the first of equal
// errors, so ties go to the smaller code and a NaN or infinite x to 0.
func bestIndexMXFP4(x, d float32) uint8 {
	best := uint8(0)
	bestErr := absf(float32(float32(MXFP4Values[0])*d) - x)
	for i := 1; i < 16; i++ {
		if err := absf(float32(float32(MXFP4Values[i])*d) - x); err < bestErr {
			best, bestErr = uint8(i), err
		}
	}
	return best
}

// QuantizeMXFP4 quantizes src into MXFP4 bytes (17 per 32 values) as
// quantize_row_mxfp4_ref does: per block the exponent byte e of the
// largest magnitude (NaNs ignored) less 2, so that it lands in the top
// table entries, and each value's nearest code against d = E8M0Half(e).
func QuantizeMXFP4(src []float32, dst []byte) {
	nb := len(src) / QKMXFP4
	for i := range nb {
		x := src[QKMXFP4*i : QKMXFP4*(i+1)]
		blk := dst[BlockMXFP4Bytes*i : BlockMXFP4Bytes*(i+1)]
		var amax float32
		for _, v := range x {
			if a := absf(v); amax < a {
				amax = a
			}
		}
		e := mxfp4Exponent(amax)
		d := E8M0Half(e)
		blk[0] = e
		for j := range 16 {
			blk[1+j] = bestIndexMXFP4(x[j], d) | bestIndexMXFP4(x[j+16], d)<<4
		}
	}
}

// DequantizeMXFP4 decodes MXFP4 bytes into dst: value j of a block is
// MXFP4Values[code] * E8M0Half(e), low nibbles first as in Q4_0.
func DequantizeMXFP4(src []byte, dst []float32) {
	nb := len(dst) / QKMXFP4
	for i := range nb {
		blk := src[BlockMXFP4Bytes*i : BlockMXFP4Bytes*(i+1)]
		d := E8M0Half(blk[0])
		y := dst[QKMXFP4*i : QKMXFP4*(i+1)]
		for j, q := range blk[1:17] {
			y[j] = float32(MXFP4Values[q&0xf]) * d
			y[j+16] = float32(MXFP4Values[q>>4]) * d
		}
	}
}

// DotMXFP4Q8_0 returns the dot product of one row of MXFP4 weight blocks
// (17 bytes each) with len(x) Q8_0 blocks as ggml's generic
// ggml_vec_dot_mxfp4_q8_0: per block sum += (dx*E8M0Half(e)) *
// float32(isum), isum the exact sum of doubled E2M1 value times q8. w must
// hold at least 17*len(x) bytes (it panics otherwise).
func DotMXFP4Q8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockMXFP4Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockMXFP4Bytes*i : BlockMXFP4Bytes*(i+1)]
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[1:17] {
			isum += int32(MXFP4Values[q&0xf])*int32(a[j]) + int32(MXFP4Values[q>>4])*int32(a[j+16])
		}
		d := float32(F16ToF32(x[i].D) * E8M0Half(blk[0]))
		sum += float32(d * float32(isum))
	}
	return sum
}
