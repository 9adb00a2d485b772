package quant

import (
	"encoding/binary"
	"math"
)

// F16ToF32 converts an IEEE 754 half-precision value to float32 exactly.
// Infinities keep their sign and NaNs keep sign and payload with the quiet
// bit set, as the x86 F16C conversion and ggml's software conversion do.
func F16ToF32(h uint16) float32 {
	b := uint32(h&0x7fff) << 13
	if b >= 0x0f800000 {
		// Exponent 31: infinity, or a NaN with the quiet bit forced on.
		b |= 0x7f800000
		if b != 0x7f800000 {
			b |= 0x400000
		}
	} else {
		// Shifted into float32 position, the half's bits read as its
		// value times 2^-112 (subnormals included); the product is exact.
		b = math.Float32bits(math.Float32frombits(b) * 0x1p112)
	}
	return math.Float32frombits(uint32(h&0x8000)<<16 | b)
}

// F32ToF16 converts f to IEEE 754 half precision, rounding to nearest with
// ties to even (subnormal results included); values beyond the half range
// become infinities and every NaN becomes the quiet NaN 0x7E00 with f's
// sign, as ggml's GGML_FP32_TO_FP16 does.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 112 // the half-precision biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e >= 1 {
		h := uint32(e)<<10 | man>>13
		low := man & 0x1fff
		if low > 0x1000 || (low == 0x1000 && h&1 == 1) {
			h++ // a carry into the exponent is the correct result, up to infinity
		}
		return sign | uint16(h)
	}
	// Subnormal or zero half: the value in units of 2^-24 is m >> shift.
	m := man | 0x800000
	if exp == 0 {
		m = man
		e = -111
	}
	shift := uint32(14 - e)
	if shift > 24 {
		return sign
	}
	q := m >> shift
	rem := m & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || (rem == half && q&1 == 1) {
		q++
	}
	return sign | uint16(q)
}

// BF16ToF32 converts a bfloat16 value to float32 exactly.
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts f to bfloat16 as ggml's ggml_compute_fp32_to_bf16
// does: a NaN keeps its upper half with the quiet bit forced on; any other
// value rounds to nearest with ties to even (overflowing to infinity).
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// DequantizeF32 decodes little-endian float32 values from src into dst;
// src must hold 4*len(dst) bytes.
func DequantizeF32(src []byte, dst []float32) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// QuantizeF32 encodes src as little-endian float32 into dst, which must
// hold 4*len(src) bytes.
func QuantizeF32(src []float32, dst []byte) {
	dst = dst[:4*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}

// DequantizeF16 converts little-endian half-precision values in src to dst;
// src must hold 2*len(dst) bytes.
func DequantizeF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = F16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
	}
}

// QuantizeF16 converts src to little-endian half precision with F32ToF16;
// dst must hold 2*len(src) bytes.
func QuantizeF16(src []float32, dst []byte) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToF16(v))
	}
}

// DequantizeBF16 converts little-endian bfloat16 values in src to dst; src
// must hold 2*len(dst) bytes.
func DequantizeBF16(src []byte, dst []float32) {
	src = src[:2*len(dst)]
	for i := range dst {
		dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
	}
}

// QuantizeBF16 converts src to little-endian bfloat16 with F32ToBF16; dst
// must hold 2*len(src) bytes.
func QuantizeBF16(src []float32, dst []byte) {
	dst = dst[:2*len(src)]
	for i, v := range src {
		binary.LittleEndian.PutUint16(dst[2*i:], F32ToBF16(v))
	}
}

// f16 reads the little-endian half at b[0:2] as float32.
func f16(b []byte) float32 {
	return F16ToF32(binary.LittleEndian.Uint16(b))
}

// nearestInt rounds f as ggml's nearest_int does: it adds 1.5*2^23 in
// float32 and reads the low 23 bits of the sum, so ties go to even and
// every input, even out of range or NaN, gives a defined result.
func nearestInt(f float32) int32 {
	v := float32(f) + 12582912
	return int32(math.Float32bits(v)&0x7fffff) - 0x400000
}

// truncInt32 converts f to int32 toward zero as x86-64's cvttss2si does:
// NaN and out-of-range values give math.MinInt32.
func truncInt32(f float32) int32 {
	if f != f || f >= 2147483648 || f < -2147483648 {
		return math.MinInt32
	}
	return int32(f)
}

// roundf rounds f half away from zero, as C's roundf.
func roundf(f float32) float32 {
	return float32(math.Round(float64(f)))
}

// roundfInt32 returns truncInt32(roundf(f)) without the float64 rounding
// call: f ± 0.5 in float64 cannot round across an integer (a float32 is
// never that close to a half-integer), so truncating it rounds half away
// from zero; NaN and values outside the int32 range give math.MinInt32.
func roundfInt32(f float32) int32 {
	r := float64(f) + math.Copysign(0.5, float64(f))
	if !(math.Abs(r) < 2147483648) {
		return math.MinInt32
	}
	return int32(r)
}

// absf returns |f| by clearing the sign bit, as C's fabsf.
func absf(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}

// clamp returns v limited to [lo, hi].
func clamp(v, lo, hi int32) int32 {
	return max(lo, min(hi, v))
}

// putF16 writes h little-endian to b[0:2].
func putF16(b []byte, h uint16) {
	binary.LittleEndian.PutUint16(b, h)
}

// sqrtf returns the correctly rounded float32 square root of f.
func sqrtf(f float32) float32 {
	return float32(math.Sqrt(float64(f)))
}
