// Package quant implements ggml's tensor storage formats: the scalar
// conversions F16 and BF16, the 32-value block formats Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q8_1, IQ4_NL and MXFP4, and the 256-value formats Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, Q8_K and IQ4_XS. Each type is one row of a conversion table
// (format); SupportedTypes lists them.
//
// For each format it provides dequantization (bit-exact with llama.cpp's
// dequantize_row_* functions; ggml has none for Q8_1), a reference quantizer that writes the bytes
// llama.cpp's reference quantizer (quantize_row_*_ref, no importance
// matrix) writes for the same float32 input, and, for the pairs the forward
// pass multiplies, reference dot products that serve as ground truth for the
// SIMD kernels in package kernels.
//
// # Weight layouts
//
// Weights stay raw little-endian bytes, exactly as they are in GGUF tensor
// data (usually a read-only memory map); blocks follow each other with no
// padding. Byte offsets inside one block:
//
//	Q4_0  18 B / 32 values:  d f16 @0, qs [16] @2 (value j in the low nibble of qs[j], j+16 in the high)
//	Q4_1  20 B / 32 values:  d f16 @0, m f16 @2, qs [16] @4 (value = code*d + m)
//	Q5_1  24 B / 32 values:  d f16 @0, m f16 @2, qh [4] @4, qs [16] @8
//	IQ4_NL 18 B / 32 values: d f16 @0, qs [16] @2 (value = d * codebook[code], nibbles as Q4_0)
//	MXFP4 17 B / 32 values:  e E8M0 @0, qs [16] @1 (value = E2M1[code] * 2^(e-127), nibbles as Q4_0)
//	Q2_K  84 B / 256 values: scales [16] @0 (low nibble scale, high min), qs [64] @16, d f16 @80, dmin f16 @82
//	Q3_K 110 B / 256 values: hmask [32] @0, qs [64] @32, scales [12] @96 (sixteen 6-bit), d f16 @108
//	IQ4_XS 136 B / 256 values: d f16 @0, scales_h u16 @2, scales_l [4] @4, qs [128] @8
//	Q5_0  22 B / 32 values:  d f16 @0, qh [4] @2 (bit j = fifth bit of value j), qs [16] @6
//	Q8_0  34 B / 32 values:  d f16 @0, qs int8[32] @2
//	Q8_1  36 B / 32 values:  d f16 @0, s f16 @2 (d times the sum of qs), qs int8[32] @4
//	Q4_K 144 B / 256 values: d f16 @0, dmin f16 @2, scales [12] @4, qs [128] @16
//	Q5_K 176 B / 256 values: d f16 @0, dmin f16 @2, scales [12] @4, qh [32] @16, qs [128] @48
//	Q6_K 210 B / 256 values: ql [128] @0, qh [64] @128, scales int8[16] @192, d f16 @208
//	Q8_K 292 B / 256 values: d f32 @0, qs int8[256] @4, bsums int16[16] @260
//
// In Q4_K and Q5_K the 12 scale bytes pack eight 6-bit scales and eight
// 6-bit mins, one pair per 32-value sub-block (see ScaleMinK4); value
// v of sub-block j is d*scale[j]*q - dmin*min[j]. Their 4-bit codes come
// in runs of 64 values: value 64*i+l (l < 32) is the low nibble of
// qs[32*i+l] and value 64*i+32+l its high nibble (Q5_K adds bit 2*i of
// qh[l] and bit 2*i+1 as the fifth bits). Q6_K has sixteen 16-value
// sub-blocks, value d*scales[j]*(q-32) with q the 6-bit code laid out as
// Q6KCode describes.
//
// # Activations
//
// The activation partner formats have Go struct forms, BlockQ8_0 and
// BlockQ8K, whose memory layouts equal the byte layouts above (their sizes
// are asserted in the tests). The kernels quantize a row of activations once
// per matrix product (QuantizeRowQ8_0, QuantizeRowQ8K) and then take integer
// dot products block by block (DotQ8_0Q8_0, DotQ4KQ8K, DotQ6KQ8K, and one
// Dot function per weight type: Q4_0, Q5_0, IQ4_NL and MXFP4 pair with Q8_0,
// Q4_1 and Q5_1 with Q8_1 (BlockQ8_1, QuantizeRowQ8_1), the 256-value
// types with Q8_K), each with ggml's generic C kernel's integer sums and
// float order, so that the results equal ggml's bit for bit.
// QuantizeRowQ8_0 is llama.cpp's reference Q8_0 quantizer (ties away from
// zero); QuantizeRowQ8_0Act is the variant llama.cpp's x86 build applies to
// activations at inference time (ties to even).
//
// # Entry points
//
// Dequantize and Quantize check lengths and return a *LengthError (or
// ErrUnsupported) instead of converting. The per-type functions
// (DequantizeQ4K, QuantizeQ6K, ...) convert whole blocks and expect the
// lengths those entry points check; they never read or write outside their
// slices (a too-short slice is a Go bounds-check panic, not a silent
// overrun). Any bytes are a valid encoding: decoding hostile data cannot
// fail, it only yields odd values (NaN and infinite scales included).
//
// # Bit-exactness
//
// llama.cpp's reference code does plain float32 arithmetic, one rounding
// per operation, with no fused multiply-add. Go may fuse x*y+z on some
// architectures, so every product here that feeds an addition is written
// float32(x*y). Rounding to integers follows ggml's nearest_int, the float
// trick that adds 1.5*2^23 and reads the low mantissa bits (ties to even,
// and defined results for any input), and ggml's roundf (ties away from
// zero) where ggml uses roundf. Float-to-int8 casts behave as the x86-64
// code llama.cpp compiles to: out-of-range and NaN values become
// math.MinInt32 before the truncation to 8 bits. NaN bit patterns produced
// by arithmetic are the hardware's (0xFFC00000 on amd64), as in llama.cpp.
// MXFP4's exponent, floorf(log2f(amax)) - 2 + 127 cast to uint8_t, is
// taken through int32 the same way: a block holding an infinity gets
// exponent 0 and a block of subnormals wraps to 232 or so, as ggml's x86
// build writes them.
//
// The tests check every block type byte for byte and bit for bit against
// llama.cpp's ggml library: its reference quantizers, its dequantizers (of
// their output and of random hostile bytes) and its generic dot products,
// on adversarial and random rows (testdata/ref, written by
// testdata/gen/gen.sh through ggml's type traits); Q8_0, Q4_K and Q6_K also
// against shared/ref/quant and every tensor of the shared test models, and
// the F16 and BF16 conversions against IEEE 754 rounding over every half
// value and a million random float32s. Two ggml behaviours are undefined
// and not reproduced: an all-zero IQ4_NL block keeps whatever codes
// ggml's stack held (here the previous block's, or zeros), and an
// all-zero Q8_K block's bsums are left unwritten (here zero).
package quant
