//go:build amd64 && !purego

#include "textflag.h"

// Activation quantization to Q8_K, AVX-512 path (F, BW, VL). It writes
// the same bytes as quant.QuantizeRowQ8K (llama.cpp's
// quantize_row_q8_K_ref): m is the first value of largest magnitude (NaNs
// never win, as in the scalar loop's a > amax), iscale = -127/m, each code
// is min(127, nearest(iscale*x)) with the scalar code's magic-number
// rounding (add 1.5*2^23, keep the low mantissa bits), truncated to int8,
// d = 1/iscale, and each of the 16 sums adds 16 truncated codes. A block
// whose largest magnitude is 0 (all zeros or NaNs) becomes all zeros.

DATA q8kConst<>+0(SB)/4, $0x7fffffff  // abs mask
DATA q8kConst<>+4(SB)/4, $0x4b400000  // 12582912.0 = 1.5*2^23
DATA q8kConst<>+8(SB)/4, $0x007fffff  // mantissa mask
DATA q8kConst<>+12(SB)/4, $0x00400000 // the magic number's mantissa
DATA q8kConst<>+16(SB)/4, $127
DATA q8kConst<>+20(SB)/4, $0xc2fe0000 // -127.0
DATA q8kConst<>+24(SB)/4, $0x3f800000 // 1.0
DATA q8kConst<>+28(SB)/4, $0x80808080 // the int8 sign bits
GLOBL q8kConst<>(SB), RODATA|NOPTR, $32

// Even and odd qword indices of two vectors, for VPERMT2Q.
DATA q8kEven<>+0(SB)/8, $0
DATA q8kEven<>+8(SB)/8, $2
DATA q8kEven<>+16(SB)/8, $4
DATA q8kEven<>+24(SB)/8, $6
DATA q8kEven<>+32(SB)/8, $8
DATA q8kEven<>+40(SB)/8, $10
DATA q8kEven<>+48(SB)/8, $12
DATA q8kEven<>+56(SB)/8, $14
GLOBL q8kEven<>(SB), RODATA|NOPTR, $64
DATA q8kOdd<>+0(SB)/8, $1
DATA q8kOdd<>+8(SB)/8, $3
DATA q8kOdd<>+16(SB)/8, $5
DATA q8kOdd<>+24(SB)/8, $7
DATA q8kOdd<>+32(SB)/8, $9
DATA q8kOdd<>+40(SB)/8, $11
DATA q8kOdd<>+48(SB)/8, $13
DATA q8kOdd<>+56(SB)/8, $15
GLOBL q8kOdd<>(SB), RODATA|NOPTR, $64

// Q8K_AMAX folds |x| of the 16 floats at off(SI) into Z16; a NaN in x
// leaves Z16 as it was (VMAXPS returns its second source then).
#define Q8K_AMAX(off) \
	VANDPS off(SI), Z24, Z17 \
	VMAXPS Z16, Z17, Z16

// Q8K_CODES quantizes the 16 floats at off(SI) to int8 codes in dst
// (an X register).
#define Q8K_CODES(off, dst) \
	VMULPS off(SI), Z19, Z17 \
	VADDPS Z25, Z17, Z17 \
	VPANDD Z26, Z17, Z17 \
	VPSUBD Z27, Z17, Z17 \
	VPMINSD Z28, Z17, Z17 \
	VPMOVDB Z17, dst

// Q8K_QUAD quantizes 64 floats at off(SI) into the 64 codes of zmm dst
// (xmm names x0..x3 of scratch registers), stores them at qoff(DI) and
// leaves their bytes in dst for the sums.
#define Q8K_QUAD(off, qoff, dst, x1, x2, x3) \
	Q8K_CODES(off, X0) \
	Q8K_CODES(off+64, x1) \
	Q8K_CODES(off+128, x2) \
	Q8K_CODES(off+192, x3) \
	VINSERTI32X4 $1, x1, Z0, Z0 \
	VINSERTI32X4 $2, x2, Z0, Z0 \
	VINSERTI32X4 $3, x3, Z0, dst \
	VMOVDQU64 dst, qoff(DI)

// func quantizeQ8KAVX512(x *float32, b *quant.BlockQ8K, nb int)
TEXT ·quantizeQ8KAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ nb+16(FP), CX
	VPBROADCASTD q8kConst<>+0(SB), Z24
	VPBROADCASTD q8kConst<>+4(SB), Z25
	VPBROADCASTD q8kConst<>+8(SB), Z26
	VPBROADCASTD q8kConst<>+12(SB), Z27
	VPBROADCASTD q8kConst<>+16(SB), Z28
	VPBROADCASTD q8kConst<>+28(SB), Z29
	VMOVDQU64 q8kEven<>(SB), Z30
	VMOVDQU64 q8kOdd<>(SB), Z31
	TESTQ CX, CX
	JEQ q8kdone

q8kblock:
	VPXORD Z16, Z16, Z16
	Q8K_AMAX(0)
	Q8K_AMAX(64)
	Q8K_AMAX(128)
	Q8K_AMAX(192)
	Q8K_AMAX(256)
	Q8K_AMAX(320)
	Q8K_AMAX(384)
	Q8K_AMAX(448)
	Q8K_AMAX(512)
	Q8K_AMAX(576)
	Q8K_AMAX(640)
	Q8K_AMAX(704)
	Q8K_AMAX(768)
	Q8K_AMAX(832)
	Q8K_AMAX(896)
	Q8K_AMAX(960)
	// Horizontal maximum (no NaNs left), broadcast to every lane of Z16.
	VEXTRACTF64X4 $1, Z16, Y17
	VMAXPS Y17, Y16, Y16
	VEXTRACTF32X4 $1, Y16, X17
	VMAXPS X17, X16, X16
	VPERMILPS $0x4e, X16, X17
	VMAXPS X17, X16, X16
	VPERMILPS $0xb1, X16, X17
	VMAXPS X17, X16, X16
	VXORPS X17, X17, X17
	VUCOMISS X17, X16
	JNE q8knonzero

	// Largest magnitude 0: an all-zero block (292 bytes).
	VPXORD Z17, Z17, Z17
	VMOVDQU64 Z17, 0(DI)
	VMOVDQU64 Z17, 64(DI)
	VMOVDQU64 Z17, 128(DI)
	VMOVDQU64 Z17, 192(DI)
	VMOVDQU32 Y17, 256(DI)
	MOVL $0, 288(DI)
	JMP q8knext

q8knonzero:
	// The first value whose magnitude equals the maximum: m.
	VBROADCASTSS X16, Z16
	MOVQ SI, R8
	MOVQ $16, R9

q8kfind:
	VANDPS (R8), Z24, Z17
	VCMPPS $0, Z16, Z17, K1
	KMOVW K1, AX
	TESTL AX, AX
	JNZ q8kfound
	ADDQ $64, R8
	DECQ R9
	JNZ q8kfind
	// Not reached: the maximum is one of the magnitudes.
	MOVQ SI, R8
	MOVL $1, AX

q8kfound:
	BSFL AX, AX
	VMOVSS (R8)(AX*4), X18
	VBROADCASTSS q8kConst<>+20(SB), X19
	VDIVSS X18, X19, X19 // iscale = -127/m
	VBROADCASTSS q8kConst<>+24(SB), X20
	VDIVSS X19, X20, X20 // d = 1/iscale
	VMOVSS X20, 0(DI)
	VBROADCASTSS X19, Z19

	Q8K_QUAD(0, 4, Z20, X1, X2, X3)
	Q8K_QUAD(256, 68, Z21, X1, X2, X3)
	Q8K_QUAD(512, 132, Z22, X1, X2, X3)
	Q8K_QUAD(768, 196, Z23, X1, X2, X3)

	// Sums: VPSADBW of the codes with their sign bits flipped (q+128 as
	// unsigned bytes) against zero sums each 8 codes into a qword; the
	// two qwords of a group of 16 are added and 16*128 taken off.
	VPXORD Z29, Z20, Z20
	VPXORD Z29, Z21, Z21
	VPXORD Z29, Z22, Z22
	VPXORD Z29, Z23, Z23
	VPXORD Z17, Z17, Z17
	VPSADBW Z17, Z20, Z20
	VPSADBW Z17, Z21, Z21
	VPSADBW Z17, Z22, Z22
	VPSADBW Z17, Z23, Z23
	VMOVDQA64 Z30, Z1
	VPERMI2Q Z21, Z20, Z1  // even qwords of Z20, Z21: groups 0-7, first halves
	VPERMT2Q Z21, Z31, Z20 // odd qwords: second halves
	VPADDQ Z20, Z1, Z1
	VMOVDQA64 Z30, Z2
	VPERMI2Q Z23, Z22, Z2
	VPERMT2Q Z23, Z31, Z22
	VPADDQ Z22, Z2, Z2
	VPMOVQW Z1, X1
	VPMOVQW Z2, X2
	MOVL $0x08000800, AX // 2048 in each word
	VPBROADCASTD AX, X3
	VPSUBW X3, X1, X1
	VPSUBW X3, X2, X2
	VMOVDQU X1, 260(DI)
	VMOVDQU X2, 276(DI)

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q8kblock

q8kdone:
	VZEROUPPER
	RET
