//go:build amd64 && !purego

#include "textflag.h"

// Activation quantization to Q8_K, AVX2 path: the same bytes as
// quant.QuantizeRowQ8K and the AVX-512 kernel (q8k_avx512_amd64.s, whose
// comment gives the rules), with 256-bit instructions: m is the first
// value of largest magnitude (NaNs never win), iscale = -127/m, each code
// min(127, nearest(iscale·x)) by the magic-number rounding, truncated to
// int8 (the low byte of each dword, which AND 0xff and the unsigned packs
// keep), d = 1/iscale, and each of the 16 sums adds 16 truncated codes. A
// block whose largest magnitude is 0 (all zeros or NaNs) becomes all zeros.

DATA q8k2Const<>+0(SB)/4, $0x7fffffff  // abs mask
DATA q8k2Const<>+4(SB)/4, $0x4b400000  // 12582912.0 = 1.5*2^23
DATA q8k2Const<>+8(SB)/4, $0x007fffff  // mantissa mask
DATA q8k2Const<>+12(SB)/4, $0x00400000 // the magic number's mantissa
DATA q8k2Const<>+16(SB)/4, $127
DATA q8k2Const<>+20(SB)/4, $0xc2fe0000 // -127.0
DATA q8k2Const<>+24(SB)/4, $0x3f800000 // 1.0
DATA q8k2Const<>+28(SB)/4, $0x80808080 // the int8 sign bits
DATA q8k2Const<>+32(SB)/4, $0x000000ff // a dword's low byte
GLOBL q8k2Const<>(SB), RODATA|NOPTR, $36

// q8k2Perm brings the dwords of the two packs (four codes each) back into
// value order.
DATA q8k2Perm<>+0(SB)/4, $0
DATA q8k2Perm<>+4(SB)/4, $4
DATA q8k2Perm<>+8(SB)/4, $1
DATA q8k2Perm<>+12(SB)/4, $5
DATA q8k2Perm<>+16(SB)/4, $2
DATA q8k2Perm<>+20(SB)/4, $6
DATA q8k2Perm<>+24(SB)/4, $3
DATA q8k2Perm<>+28(SB)/4, $7
GLOBL q8k2Perm<>(SB), RODATA|NOPTR, $32

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
	VPBROADCASTD q8k2Const<>+0(SB), Y15
	VPBROADCASTD q8k2Const<>+4(SB), Y14
	VPBROADCASTD q8k2Const<>+8(SB), Y13
	VPBROADCASTD q8k2Const<>+12(SB), Y12
	VPBROADCASTD q8k2Const<>+16(SB), Y11
	VPBROADCASTD q8k2Const<>+32(SB), Y10
	VMOVDQU q8k2Perm<>(SB), Y9
	VPBROADCASTD q8k2Const<>+28(SB), Y8
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
	VMOVSS q8k2Const<>+20(SB), X3
	VDIVSS X2, X3, X3 // iscale = -127/m
	VMOVSS q8k2Const<>+24(SB), X4
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
