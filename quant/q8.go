package quant

import (
	"encoding/binary"
	"math"
)

// BlockQ8_0 is one Q8_0 block in Go form: 32 int8 values and their f16
// scale d (value j is Qs[j]*d). Its memory layout equals the 34-byte GGUF
// layout on little-endian machines.
type BlockQ8_0 struct {
	D  uint16 // scale, IEEE half-precision bits
	Qs [QK8_0]int8
}

// BlockQ8K is one Q8_K block, the activation format of the K-quant dot
// products: 256 int8 values, their float32 scale D (value j is Qs[j]*D) and
// the sums of each run of 16 values. Its memory layout equals the 292-byte
// GGUF layout on little-endian machines.
type BlockQ8K struct {
	D     float32
	Qs    [QK_K]int8
	Bsums [QK_K / 16]int16
}

// PutBlockQ8_0 writes b's 34-byte GGUF form to dst[:34].
func PutBlockQ8_0(dst []byte, b *BlockQ8_0) {
	dst = dst[:BlockQ8_0Bytes]
	binary.LittleEndian.PutUint16(dst, b.D)
	for j, q := range b.Qs {
		dst[2+j] = byte(q)
	}
}

// ReadBlockQ8_0 decodes the 34-byte GGUF form in src[:34] into b.
func ReadBlockQ8_0(src []byte, b *BlockQ8_0) {
	src = src[:BlockQ8_0Bytes]
	b.D = binary.LittleEndian.Uint16(src)
	for j := range b.Qs {
		b.Qs[j] = int8(src[2+j])
	}
}

// PutBlockQ8K writes b's 292-byte GGUF form to dst[:292].
func PutBlockQ8K(dst []byte, b *BlockQ8K) {
	dst = dst[:BlockQ8_KBytes]
	binary.LittleEndian.PutUint32(dst, math.Float32bits(b.D))
	for j, q := range b.Qs {
		dst[4+j] = byte(q)
	}
	for j, s := range b.Bsums {
		binary.LittleEndian.PutUint16(dst[4+QK_K+2*j:], uint16(s))
	}
}

// ReadBlockQ8K decodes the 292-byte GGUF form in src[:292] into b.
func ReadBlockQ8K(src []byte, b *BlockQ8K) {
	src = src[:BlockQ8_KBytes]
	b.D = math.Float32frombits(binary.LittleEndian.Uint32(src))
	for j := range b.Qs {
		b.Qs[j] = int8(src[4+j])
	}
	for j := range b.Bsums {
		b.Bsums[j] = int16(binary.LittleEndian.Uint16(src[4+QK_K+2*j:]))
	}
}

// quantizeBlockQ8 quantizes 32 values symmetrically to int8 as ggml's
// quantize_row_q8_0_ref does: d = max|x|/127, q = roundf(x/d) computed as
// x*(1/d). It returns d (before its conversion to f16).
func quantizeBlockQ8(x []float32, qs *[32]int8) float32 {
	x = x[:32]
	var amax float32
	for _, v := range x {
		if a := absf(v); !(amax > a) {
			amax = a // MAX(amax, |v|) with C's macro semantics
		}
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	for j, v := range x {
		qs[j] = int8(roundfInt32(v * id))
	}
	return d
}

// QuantizeRowQ8_0 quantizes src (32*len(dst) values) into Q8_0 blocks with
// llama.cpp's reference quantizer, quantize_row_q8_0_ref: per block
// d = max|x|/127 stored as f16, q = roundf(x * (1/d)) (ties away from
// zero); an all-zero block gets d = 0 and q = 0. (llama.cpp's AVX2
// activation quantizer rounds ties to even instead and may differ by one
// in a few codes.)
func QuantizeRowQ8_0(src []float32, dst []BlockQ8_0) {
	src = src[:QK8_0*len(dst)]
	for i := range dst {
		d := quantizeBlockQ8(src[QK8_0*i:], &dst[i].Qs)
		dst[i].D = F32ToF16(d)
	}
}

// QuantizeRowQ8_0Act quantizes src (32*len(dst) values) into Q8_0 blocks
// as llama.cpp's x86 activation quantizer (the AVX2 branch of
// quantize_row_q8_0, also used by AVX-512 builds) does before a Q8_0 dot
// product: d = max|x|/127 stored as f16 as in QuantizeRowQ8_0, but
// q = round-to-even(x * (127/max|x|)), saturated to int8. Its codes can
// differ from QuantizeRowQ8_0's by one where x/d falls on or next to a
// half; use it to reproduce llama.cpp's inference, and QuantizeRowQ8_0 to
// reproduce its stored files. A block containing a NaN gets a NaN scale
// and all codes -128: x86 converts a NaN, and a product out of int32's
// range, to 0x80000000, which saturates to -128. That range is left only
// where 127/max|x| overflows to +Inf (a block of subnormals): its
// nonzero values then code -128 whatever their sign, and its zeros
// (0·Inf is NaN) too.
func QuantizeRowQ8_0Act(src []float32, dst []BlockQ8_0) {
	src = src[:QK8_0*len(dst)]
	for i := range dst {
		x := src[QK8_0*i : QK8_0*(i+1)]
		var amax float32
		for _, v := range x {
			amax = max(amax, absf(v))
		}
		dst[i].D = F32ToF16(amax / 127)
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range x {
			r := math.RoundToEven(float64(v * id))
			if !(r >= math.MinInt32 && r <= math.MaxInt32) {
				r = -128 // cvtps2dq gives 0x80000000, which packs saturate
			}
			dst[i].Qs[j] = int8(max(-128, min(127, r)))
		}
	}
}

// QuantizeQ8_0 quantizes src (a multiple of 32 values) into Q8_0 bytes in
// dst (34 bytes per block), byte-identical with quantize_row_q8_0_ref.
func QuantizeQ8_0(src []float32, dst []byte) {
	var b BlockQ8_0
	nb := len(src) / QK8_0
	for i := range nb {
		d := quantizeBlockQ8(src[QK8_0*i:], &b.Qs)
		b.D = F32ToF16(d)
		PutBlockQ8_0(dst[BlockQ8_0Bytes*i:], &b)
	}
}

// DequantizeQ8_0 decodes Q8_0 bytes (34 per 32 values) into dst: value j
// of a block is float32(qs[j]) * d.
func DequantizeQ8_0(src []byte, dst []float32) {
	nb := len(dst) / QK8_0
	for i := range nb {
		blk := src[BlockQ8_0Bytes*i : BlockQ8_0Bytes*(i+1)]
		d := f16(blk)
		y := dst[QK8_0*i : QK8_0*(i+1)]
		for j := range y {
			y[j] = float32(int8(blk[2+j])) * d
		}
	}
}

// QuantizeQ8_1 quantizes src into Q8_1 bytes (36 per 32 values) as
// quantize_row_q8_1_ref does: the Q8_0 codes, d as f16, and s = f16(d *
// sum of the codes).
func QuantizeQ8_1(src []float32, dst []byte) {
	var qs [32]int8
	nb := len(src) / QK8_1
	for i := range nb {
		blk := dst[BlockQ8_1Bytes*i : BlockQ8_1Bytes*(i+1)]
		d := quantizeBlockQ8(src[QK8_1*i:], &qs)
		var sum int32
		for j, q := range qs {
			sum += int32(q)
			blk[4+j] = byte(q)
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		binary.LittleEndian.PutUint16(blk[2:], F32ToF16(float32(sum)*d))
	}
}

// DequantizeQ8_1 decodes Q8_1 bytes into dst: value j of a block is
// float32(qs[j]) * d (the stored sum s is not needed). ggml itself has no
// Q8_1 dequantizer; this is the one its format implies.
func DequantizeQ8_1(src []byte, dst []float32) {
	nb := len(dst) / QK8_1
	for i := range nb {
		blk := src[BlockQ8_1Bytes*i : BlockQ8_1Bytes*(i+1)]
		d := f16(blk)
		y := dst[QK8_1*i : QK8_1*(i+1)]
		for j := range y {
			y[j] = float32(int8(blk[4+j])) * d
		}
	}
}

// quantizeBlockQ8K quantizes 256 values into b as quantize_row_q8_K_ref
// does.
func quantizeBlockQ8K(x []float32, b *BlockQ8K) {
	x = x[:QK_K]
	var amax, vmax float32
	for _, v := range x {
		if a := absf(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax == 0 {
		*b = BlockQ8K{}
		return
	}
	iscale := -127 / vmax
	for j := range b.Bsums {
		xs := x[16*j : 16*j+16 : 16*j+16]
		qs := b.Qs[16*j : 16*j+16 : 16*j+16]
		var sum int32
		for k, v := range xs {
			q := int8(min(127, nearestInt(float32(iscale*v))))
			qs[k] = q
			sum += int32(q)
		}
		b.Bsums[j] = int16(sum)
	}
	b.D = 1 / iscale
}

// QuantizeRowQ8K quantizes src (256*len(dst) values) into Q8_K blocks as
// llama.cpp's quantize_row_q8_K_ref does: with m the value of largest
// magnitude, iscale = -127/m, q = min(127, nearest_int(iscale*x)) (ties to
// even), d = 1/iscale, and Bsums the sums of each 16 codes. A block whose
// values are all zero becomes all zeros (ggml leaves its bsums unset; they
// are zero here).
func QuantizeRowQ8K(src []float32, dst []BlockQ8K) {
	src = src[:QK_K*len(dst)]
	for i := range dst {
		quantizeBlockQ8K(src[QK_K*i:], &dst[i])
	}
}

// QuantizeQ8K quantizes src into Q8_K bytes (292 per 256 values) with the
// algorithm of QuantizeRowQ8K.
func QuantizeQ8K(src []float32, dst []byte) {
	var b BlockQ8K
	nb := len(src) / QK_K
	for i := range nb {
		quantizeBlockQ8K(src[QK_K*i:], &b)
		PutBlockQ8K(dst[BlockQ8_KBytes*i:], &b)
	}
}

// DequantizeQ8K decodes Q8_K bytes into dst: value j of a block is d *
// float32(qs[j]), as dequantize_row_q8_K.
func DequantizeQ8K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ8_KBytes*i : BlockQ8_KBytes*(i+1)]
		d := math.Float32frombits(binary.LittleEndian.Uint32(blk))
		y := dst[QK_K*i : QK_K*(i+1)]
		for j := range y {
			y[j] = d * float32(int8(blk[4+j]))
		}
	}
}

// BlockQ8_1 is one Q8_1 block in Go form, the activation format of the
// Q4_1 and Q5_1 dot products: 32 int8 values, their f16 scale D and S, the
// f16 of D times the sum of the values. Its memory layout equals the
// 36-byte GGUF layout on little-endian machines.
type BlockQ8_1 struct {
	D  uint16 // scale, IEEE half-precision bits
	S  uint16 // D times the sum of Qs, IEEE half-precision bits
	Qs [QK8_1]int8
}

// QuantizeRowQ8_1Act quantizes src (32*len(dst) values) into Q8_1 blocks
// as llama.cpp's x86 activation quantizer (the AVX2 branch of
// quantize_row_q8_1) does before a Q4_1 or Q5_1 dot product: the codes and
// D of QuantizeRowQ8_0Act, S = f16(d * sum of the codes) with d = max|x|/127
// before its rounding to f16. Its codes can differ from QuantizeRowQ8_1's
// by one where x/d falls on or next to a half, as QuantizeRowQ8_0Act's do.
func QuantizeRowQ8_1Act(src []float32, dst []BlockQ8_1) {
	src = src[:QK8_1*len(dst)]
	var b0 [1]BlockQ8_0
	for i := range dst {
		x := src[QK8_1*i : QK8_1*(i+1)]
		QuantizeRowQ8_0Act(x, b0[:])
		var amax float32
		for _, v := range x {
			amax = max(amax, absf(v))
		}
		var sum int32
		for _, q := range b0[0].Qs {
			sum += int32(q)
		}
		dst[i] = BlockQ8_1{D: b0[0].D, S: F32ToF16(amax / 127 * float32(sum)), Qs: b0[0].Qs}
	}
}

// QuantizeRowQ8_1 quantizes src (32*len(dst) values) into Q8_1 blocks as
// quantize_row_q8_1_ref does (the codes and D of QuantizeRowQ8_0, S =
// f16(sum of the codes * d) with d before its rounding to f16).
func QuantizeRowQ8_1(src []float32, dst []BlockQ8_1) {
	src = src[:QK8_1*len(dst)]
	for i := range dst {
		b := &dst[i]
		d := quantizeBlockQ8(src[QK8_1*i:], &b.Qs)
		var sum int32
		for _, q := range b.Qs {
			sum += int32(q)
		}
		b.D = F32ToF16(d)
		b.S = F32ToF16(float32(sum) * d)
	}
}
