//go:build amd64 && !purego

#include "textflag.h"
#include "q8act_amd64.h"

// Activation quantization to Q8_K, AVX-512 (F, BW, VL) and AVX2 paths.
// Both write the same bytes as quant.QuantizeRowQ8K (llama.cpp's
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
DATA q8kConst<>+32(SB)/4, $0x000000ff // a dword's low byte (AVX2)
GLOBL q8kConst<>(SB), RODATA|NOPTR, $36

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

// The AVX2 kernel follows the same rules with 256-bit instructions; the
// truncation to int8 keeps each dword's low byte by AND 0xff and the
// unsigned packs, whose order q8actPerm (q8act_amd64.h) restores.

// Q8K2_CODES leaves in y the low bytes (0..255) of the int32 codes of the
// eight floats at off(R8), iscale in Y3.
#define Q8K2_CODES(off, y) \
	VMULPS  off(R8), Y3, y \
	VADDPS  Y14, y, y \
	VPAND   Y13, y, y \
	VPSUBD  Y12, y, y \
	VPMINSD Y11, y, y \
	VPAND   Y10, y, y

// func quantizeQ8KAVX2(x *float32, b *quant.BlockQ8K, nb int)
TEXT ·quantizeQ8KAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ nb+16(FP), CX
	VPBROADCASTD q8kConst<>+0(SB), Y15
	VPBROADCASTD q8kConst<>+4(SB), Y14
	VPBROADCASTD q8kConst<>+8(SB), Y13
	VPBROADCASTD q8kConst<>+12(SB), Y12
	VPBROADCASTD q8kConst<>+16(SB), Y11
	VPBROADCASTD q8kConst<>+32(SB), Y10
	VMOVDQU q8actPerm<>(SB), Y9
	VPBROADCASTD q8kConst<>+28(SB), Y8
	TESTQ CX, CX
	JEQ q8k2done

q8k2block:
	// The largest magnitude: VMAXPS returns its second source (the
	// running maximum) where the value is a NaN.
	VXORPS Y0, Y0, Y0
	MOVQ SI, R8
	MOVQ $8, R9
q8k2amax:
	VANDPS  0(R8), Y15, Y1
	VMAXPS  Y0, Y1, Y0
	VANDPS  32(R8), Y15, Y1
	VMAXPS  Y0, Y1, Y0
	VANDPS  64(R8), Y15, Y1
	VMAXPS  Y0, Y1, Y0
	VANDPS  96(R8), Y15, Y1
	VMAXPS  Y0, Y1, Y0
	ADDQ $128, R8
	DECQ R9
	JNZ  q8k2amax
	VEXTRACTF128 $1, Y0, X1
	VMAXPS    X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS    X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS    X1, X0, X0
	VXORPS    X1, X1, X1
	VUCOMISS  X1, X0
	JNE q8k2nonzero

	// Largest magnitude 0: an all-zero block (292 bytes).
	VPXOR   Y1, Y1, Y1
	VMOVDQU Y1, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y1, 64(DI)
	VMOVDQU Y1, 96(DI)
	VMOVDQU Y1, 128(DI)
	VMOVDQU Y1, 160(DI)
	VMOVDQU Y1, 192(DI)
	VMOVDQU Y1, 224(DI)
	VMOVDQU Y1, 256(DI)
	MOVL $0, 288(DI)
	JMP q8k2next

q8k2nonzero:
	// The first value whose magnitude equals the maximum: m.
	VBROADCASTSS X0, Y0
	MOVQ SI, R8
	MOVQ $32, R9
q8k2find:
	VANDPS    (R8), Y15, Y1
	VCMPPS    $0, Y0, Y1, Y1
	VMOVMSKPS Y1, AX
	TESTL AX, AX
	JNZ q8k2found
	ADDQ $32, R8
	DECQ R9
	JNZ q8k2find
	// Not reached: the maximum is one of the magnitudes.
	MOVQ SI, R8
	MOVL $1, AX

q8k2found:
	BSFL AX, AX
	VMOVSS (R8)(AX*4), X2
	VMOVSS q8kConst<>+20(SB), X3
	VDIVSS X2, X3, X3 // iscale = -127/m
	VMOVSS q8kConst<>+24(SB), X4
	VDIVSS X3, X4, X4 // d = 1/iscale
	VMOVSS X4, 0(DI)
	VBROADCASTSS X3, Y3

	// Eight groups of 32 codes, each with its two sums: VPSADBW of the
	// codes with their sign bits flipped (q+128 as unsigned bytes)
	// against zero sums each 8 codes into a qword; a lane's two qwords
	// are a sum of 16, less 16·128.
	MOVQ SI, R8
	MOVQ DI, R10
	MOVQ $8, R9
q8k2group:
	Q8K2_CODES(0, Y4)
	Q8K2_CODES(32, Y5)
	Q8K2_CODES(64, Y6)
	Q8K2_CODES(96, Y7)
	VPACKUSDW Y5, Y4, Y4
	VPACKUSDW Y7, Y6, Y6
	VPACKUSWB Y6, Y4, Y4
	VPERMD    Y4, Y9, Y4
	VMOVDQU   Y4, 4(R10)
	VPXOR     Y8, Y4, Y4
	VPXOR     Y1, Y1, Y1
	VPSADBW   Y1, Y4, Y4
	VPSHUFD   $0x4e, Y4, Y5
	VPADDQ    Y5, Y4, Y4
	VMOVQ     X4, AX
	SUBL      $2048, AX
	MOVW      AX, 260(DI)
	VEXTRACTI128 $1, Y4, X5
	VMOVQ     X5, AX
	SUBL      $2048, AX
	MOVW      AX, 262(DI)
	ADDQ $128, R8
	ADDQ $32, R10
	ADDQ $4, DI
	DECQ R9
	JNZ  q8k2group
	SUBQ $32, DI

q8k2next:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q8k2block

q8k2done:
	VZEROUPPER
	RET
