//go:build amd64 && !purego

#include "textflag.h"
#include "q8act_amd64.h"

// Activation quantization to Q8_0, AVX-512 (F, BW) and AVX2 paths: the
// bytes quant.QuantizeRowQ8_0Act writes, which are llama.cpp's x86
// quantize_row_q8_0's. Per block of 32 values: max|x| as the largest of
// the values' bit patterns with the sign cleared (a non-negative float's
// order is its bits' order), d = max/127 to f16 rounding to nearest even,
// id = 127/max (0 for a zero block), and each code x·id converted to int32
// with the default rounding (to nearest, ties to even) and saturated to
// int8; out of int32's range (a NaN, or ±Inf where 127/max overflowed)
// the conversion gives 0x80000000, which saturates to -128, as in
// llama.cpp. A block whose max|x| is NaN stops the kernel before it is
// written: its count of blocks done is returned and the caller's twin
// takes that block (its f16 NaN is the twin's, whatever the payload).
//
// The Q8_1 kernels (the partner of Q4_1 and Q5_1) write the same codes
// and D, and S = f16(d·Σ codes) with d = max/127 before its rounding;
// they stop also at a block whose max is infinite (d·0 is a NaN whose
// f16 differs from the twin's).

// Q8ACT_ARGS loads the arguments (x SI, b DI, nb CX), zeroes the count of
// blocks done (DX), puts 0x7fffffff in every dword of abs (Y15 or Z15),
// 127.0 in X14 and q8actPerm in Y13, and jumps to done when nb is 0.
#define Q8ACT_ARGS(abs, done) \
	MOVQ         x+0(FP), SI \
	MOVQ         b+8(FP), DI \
	MOVQ         nb+16(FP), CX \
	XORQ         DX, DX \
	MOVL         $0x7fffffff, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, abs \
	MOVL         $0x42fe0000, AX \
	VMOVD        AX, X14 \
	VMOVDQU      q8actPerm<>(SB), Y13 \
	TESTQ        CX, CX \
	JZ           done

// Q8ACT_NEXT moves to the next block (bytes, the block's size) and loops
// to loop while blocks are left.
#define Q8ACT_NEXT(bytes, loop) \
	ADDQ $128, SI \
	ADDQ bytes, DI \
	INCQ DX \
	CMPQ DX, CX \
	JB   loop

// Q8ACT_SCALES leaves, for max|x| in X2 (bits in AX), the block's f16
// scale at 0(DI), d in X4 (before its rounding) and id in X5 (127.0 in
// X14); it jumps to done for a max whose bits are above lim. Clobbers
// BX, X9.
#define Q8ACT_SCALES(lim, done) \
	VMOVD     X2, AX \
	CMPL      AX, lim \
	JA        done \
	VDIVSS    X14, X2, X4 \
	VCVTPS2PH $0, X4, X9 \
	VMOVD     X9, BX \
	MOVW      BX, 0(DI) \
	VXORPS    X5, X5, X5 \
	TESTL     AX, AX \
	JZ        2(PC) \
	VDIVSS    X2, X14, X5

// Q8ACT_SUM stores at 2(DI) the f16 of d (X4) times the sum of the 32
// codes in Y0 (0x80 bytes in Y12, zero in Y11; Q8ACT_SUMARGS): the codes
// plus 128 summed by VPSADBW, less 32·128. Clobbers AX, X1, X6.
#define Q8ACT_SUM \
	VPXOR        Y12, Y0, Y1 \
	VPSADBW      Y11, Y1, Y1 \
	VEXTRACTI128 $1, Y1, X6 \
	VPADDQ       X6, X1, X1 \
	VPSHUFD      $0x4e, X1, X6 \
	VPADDQ       X6, X1, X1 \
	VMOVD        X1, AX \
	SUBL         $4096, AX \
	VCVTSI2SSL   AX, X6, X6 \
	VMULSS       X6, X4, X6 \
	VCVTPS2PH    $0, X6, X6 \
	VMOVD        X6, AX \
	MOVW         AX, 2(DI)

// Q8ACT_SUMARGS puts Q8ACT_SUM's constants in Y12 and Y11.
#define Q8ACT_SUMARGS \
	MOVL         $0x80808080, AX \
	VMOVD        AX, X12 \
	VPBROADCASTD X12, Y12 \
	VPXOR        Y11, Y11, Y11

// func quantizeQ8_0AVX512(x *float32, b *quant.BlockQ8_0, nb int) int
TEXT ·quantizeQ8_0AVX512(SB), NOSPLIT, $0-32
	Q8ACT_ARGS(Z15, q8a5done)
q8a5loop:
	Q8ACT_AMAX512
	Q8ACT_SCALES($0x7f800000, q8a5done)
	Q8ACT_CODES512
	VMOVDQU X0, 2(DI)
	VMOVDQU X1, 18(DI)
	Q8ACT_NEXT($34, q8a5loop)
q8a5done:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

// func quantizeQ8_0AVX2(x *float32, b *quant.BlockQ8_0, nb int) int
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-32
	Q8ACT_ARGS(Y15, q8a2done)
q8a2loop:
	Q8ACT_AMAX256
	Q8ACT_SCALES($0x7f800000, q8a2done)
	Q8ACT_CODES256
	VMOVDQU Y0, 2(DI)
	Q8ACT_NEXT($34, q8a2loop)
q8a2done:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

// func quantizeQ8_1AVX512(x *float32, b *quant.BlockQ8_1, nb int) int
TEXT ·quantizeQ8_1AVX512(SB), NOSPLIT, $0-32
	Q8ACT_SUMARGS
	Q8ACT_ARGS(Z15, q81a5done)
q81a5loop:
	Q8ACT_AMAX512
	Q8ACT_SCALES($0x7f7fffff, q81a5done)
	Q8ACT_CODES512
	VINSERTI128 $1, X1, Y0, Y0
	VMOVDQU Y0, 4(DI)
	Q8ACT_SUM
	Q8ACT_NEXT($36, q81a5loop)
q81a5done:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET

// func quantizeQ8_1AVX2(x *float32, b *quant.BlockQ8_1, nb int) int
TEXT ·quantizeQ8_1AVX2(SB), NOSPLIT, $0-32
	Q8ACT_SUMARGS
	Q8ACT_ARGS(Y15, q81a2done)
q81a2loop:
	Q8ACT_AMAX256
	Q8ACT_SCALES($0x7f7fffff, q81a2done)
	Q8ACT_CODES256
	VMOVDQU Y0, 4(DI)
	Q8ACT_SUM
	Q8ACT_NEXT($36, q81a2loop)
q81a2done:
	MOVQ DX, ret+24(FP)
	VZEROUPPER
	RET
