//go:build amd64 && !purego

#include "textflag.h"
#include "q8act_amd64.h"

// The prompt tile (qtile.go): sixteen weight rows, one per float32 lane,
// times one or eight tokens. Per 32-value block the rows' codes are eight
// registers (Z0-Z7: register j holds values 4j..4j+3 of every row) and
// their scales one (Z8). Per token: the integer lanes start at the
// token's bias (-128·Σx, broadcast), take eight VPDPBUSDs of the codes
// (unsigned) with the token's four activation bytes j broadcast from
// memory (signed), which leaves Σ v·x exactly; then they are converted
// (exactly: |Σ| < 2^21) and fused-multiply-added with dw·dx (dx
// broadcast from memory) into the token's accumulator. After the last
// block each accumulator is stored to the token's output row under the
// mask of valid rows.

// Token t's codes (QX) and scales (QS): tokens follow one another at
// R11 bytes (codes) and R9 bytes (scales); R12 and BX point at token 4's.
#define QX0(off) off(DI)
#define QX1(off) off(DI)(R11*1)
#define QX2(off) off(DI)(R11*2)
#define QX3(off) off(DI)(R13*1)
#define QX4(off) off(R12)
#define QX5(off) off(R12)(R11*1)
#define QX6(off) off(R12)(R11*2)
#define QX7(off) off(R12)(R13*1)
#define QS0(off) off(R8)
#define QS1(off) off(R8)(R9*1)
#define QS2(off) off(R8)(R9*2)
#define QS3(off) off(R8)(R10*1)
#define QS4(off) off(BX)
#define QS5(off) off(BX)(R9*1)
#define QS6(off) off(BX)(R9*2)
#define QS7(off) off(BX)(R10*1)

// QT_LOAD loads one block of the group at SI: codes into Z0-Z7, scales
// into Z8.
#define QT_LOAD \
	VMOVDQU64 0(SI), Z0 \
	VMOVDQU64 64(SI), Z1 \
	VMOVDQU64 128(SI), Z2 \
	VMOVDQU64 192(SI), Z3 \
	VMOVDQU64 256(SI), Z4 \
	VMOVDQU64 320(SI), Z5 \
	VMOVDQU64 384(SI), Z6 \
	VMOVDQU64 448(SI), Z7 \
	VMOVUPS   512(SI), Z8

// QT_TOK adds one token's block (codes at qx, scale and bias at qs) to
// acc, with ti and tf as temporaries.
#define QT_TOK(qx, qs, acc, ti, tf) \
	VPBROADCASTD  qs(4), ti \
	VPDPBUSD.BCST qx(0), Z0, ti \
	VPDPBUSD.BCST qx(4), Z1, ti \
	VPDPBUSD.BCST qx(8), Z2, ti \
	VPDPBUSD.BCST qx(12), Z3, ti \
	VPDPBUSD.BCST qx(16), Z4, ti \
	VPDPBUSD.BCST qx(20), Z5, ti \
	VPDPBUSD.BCST qx(24), Z6, ti \
	VPDPBUSD.BCST qx(28), Z7, ti \
	VCVTDQ2PS     ti, ti \
	VMULPS.BCST   qs(0), Z8, tf \
	VFMADD231PS   tf, ti, acc

// func qtile8AVX512(w *byte, xq *int8, xs *qtScale, nb, ldo int, mask uint16, out *float32)
TEXT ·qtile8AVX512(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVQ CX, R11
	SHLQ $5, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	LEAQ (CX*8), R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R8)(R9*4), BX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

qt8loop:
	QT_LOAD
	QT_TOK(QX0, QS0, Z16, Z9, Z10)
	QT_TOK(QX1, QS1, Z17, Z11, Z12)
	QT_TOK(QX2, QS2, Z18, Z13, Z14)
	QT_TOK(QX3, QS3, Z19, Z15, Z24)
	QT_TOK(QX4, QS4, Z20, Z9, Z10)
	QT_TOK(QX5, QS5, Z21, Z11, Z12)
	QT_TOK(QX6, QS6, Z22, Z13, Z14)
	QT_TOK(QX7, QS7, Z23, Z15, Z24)
	ADDQ $576, SI
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $8, R8
	ADDQ $8, BX
	DECQ CX
	JNZ  qt8loop

	MOVQ  ldo+32(FP), AX
	SHLQ  $2, AX
	KMOVW mask+40(FP), K1
	MOVQ  out+48(FP), DX
	VMOVUPS Z16, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z17, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z18, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z19, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z20, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z21, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z22, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z23, K1, (DX)
	VZEROUPPER
	RET

// func qtile1AVX512(w *byte, xq *int8, xs *qtScale, nb int, mask uint16, out *float32)
TEXT ·qtile1AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nb+24(FP), CX
	VPXORD Z16, Z16, Z16

qt1loop:
	QT_LOAD
	QT_TOK(QX0, QS0, Z16, Z9, Z10)
	ADDQ $576, SI
	ADDQ $32, DI
	ADDQ $8, R8
	DECQ CX
	JNZ  qt1loop

	KMOVW mask+32(FP), K1
	MOVQ  out+40(FP), DX
	VMOVUPS Z16, K1, (DX)
	VZEROUPPER
	RET

// func qtQuantQ8_0AVX512(src *float32, xq *int8, xs *qtScale, nb int)
// The tile's activations straight from float32, as
// quant.QuantizeRowQ8_0Act then qtActsQ8_0: per 32 values amax is the
// largest |x| taken as integers (sign cleared; a NaN's bits exceed
// infinity's, so a NaN wins as Go's max makes it), d = f16(amax/127),
// id = 127/amax (0 when amax is 0), codes = round-to-even(x·id)
// saturated to int8 (a NaN converts to 0x80000000 and saturates to
// -128), and bias = -128·Σ codes.
TEXT ·qtQuantQ8_0AVX512(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z15
	MOVL $0x42fe0000, AX
	VMOVD AX, X14

qq8loop:
	Q8ACT_AMAX512
	VDIVSS    X14, X2, X4
	VCVTPS2PH $4, X4, X4
	VCVTPH2PS X4, X4
	VMOVSS    X4, 0(R8)
	VXORPS X5, X5, X5
	VMOVD  X2, AX
	TESTL  AX, AX
	JZ     qq8zero
	VDIVSS X2, X14, X5

qq8zero:
	Q8ACT_CODES512
	VMOVDQU   X0, 0(DI)
	VMOVDQU   X1, 16(DI)
	VPMOVSXBD X0, Z0
	VPMOVSXBD X1, Z1
	VPADDD    Z1, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD    Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD    X1, X0, X0
	VPSHUFD   $0x4e, X0, X1
	VPADDD    X1, X0, X0
	VPSHUFD   $0xb1, X0, X1
	VPADDD    X1, X0, X0
	VMOVD     X0, AX
	SHLL      $7, AX
	NEGL      AX
	MOVL      AX, 4(R8)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $8, R8
	DECQ CX
	JNZ  qq8loop
	VZEROUPPER
	RET

// The Q4_K tile (qtile_q4k.go's layout): sixteen rows times eight tokens,
// or one. Per sub-block k the rows' codes q (0..15) and scales are
// loaded; per token eight VPDPBUSDs from zero leave the exact sum of the
// sub-block's q·x, which VPMULLD multiplies by the scales (the low words
// of the doubled ones) and VPADDD adds to the token's isum (Z8-Z15).
// After the eight sub-blocks the rows' mins are loaded into Z0-Z7 and,
// per token, VPDPWSSD adds m_k times the low word of its bias shifted
// right by 7 (-X_k) into Z26, -mins; then the float steps of
// qkTileGeneric into the token's accumulator (Z16-Z23), with the rows'
// d and dmin in Z29 and Z30. (Not in the avx512 table: see
// qtile_q4k.go.)

// QK5_TOK adds one token's sub-block (activations at qx) times the scales
// in Z25 to isum.
#define QK5_TOK(qx, isum) \
	VPXORD        Z24, Z24, Z24 \
	VPDPBUSD.BCST qx(0), Z0, Z24 \
	VPDPBUSD.BCST qx(4), Z1, Z24 \
	VPDPBUSD.BCST qx(8), Z2, Z24 \
	VPDPBUSD.BCST qx(12), Z3, Z24 \
	VPDPBUSD.BCST qx(16), Z4, Z24 \
	VPDPBUSD.BCST qx(20), Z5, Z24 \
	VPDPBUSD.BCST qx(24), Z6, Z24 \
	VPDPBUSD.BCST qx(28), Z7, Z24 \
	VPMULLD       Z25, Z24, Z24 \
	VPADDD        Z24, isum, isum

// QK5_CODES loads sub-block k's codes into Z0-Z7 and its scales (the low
// words, Z31 holding 0xffff in every dword) into Z25.
#define QK5_CODES(k) \
	VMOVDQU64 (576*k)(SI), Z0 \
	VMOVDQU64 (576*k+64)(SI), Z1 \
	VMOVDQU64 (576*k+128)(SI), Z2 \
	VMOVDQU64 (576*k+192)(SI), Z3 \
	VMOVDQU64 (576*k+256)(SI), Z4 \
	VMOVDQU64 (576*k+320)(SI), Z5 \
	VMOVDQU64 (576*k+384)(SI), Z6 \
	VMOVDQU64 (576*k+448)(SI), Z7 \
	VPANDD    (576*k+512)(SI), Z31, Z25

// QK5_SUB8 adds sub-block k of the eight tokens to their isums and moves
// their codes on.
#define QK5_SUB8(k) \
	QK5_CODES(k) \
	QK5_TOK(QX0, Z8) \
	QK5_TOK(QX1, Z9) \
	QK5_TOK(QX2, Z10) \
	QK5_TOK(QX3, Z11) \
	QK5_TOK(QX4, Z12) \
	QK5_TOK(QX5, Z13) \
	QK5_TOK(QX6, Z14) \
	QK5_TOK(QX7, Z15) \
	ADDQ $32, DI \
	ADDQ $32, R12

// QK5_MINS loads the block's mins into Z0-Z7 and d, dmin into Z29, Z30.
#define QK5_MINS \
	VMOVDQU64 4608(SI), Z0 \
	VMOVDQU64 4672(SI), Z1 \
	VMOVDQU64 4736(SI), Z2 \
	VMOVDQU64 4800(SI), Z3 \
	VMOVDQU64 4864(SI), Z4 \
	VMOVDQU64 4928(SI), Z5 \
	VMOVDQU64 4992(SI), Z6 \
	VMOVDQU64 5056(SI), Z7 \
	VMOVUPS   5120(SI), Z29 \
	VMOVUPS   5184(SI), Z30

// QK5_MIN adds m_k times the token's -X_k (from its bias at qs) to Z26.
#define QK5_MIN(qs, k, mk) \
	VPSRAD.BCST $7, qs(8*k+4), Z28 \
	VPDPWSSD    mk, Z28, Z26

// QK5_FLOAT takes the token's two float steps into acc and zeroes isum.
#define QK5_FLOAT(qs, isum, acc) \
	VPXORD      Z26, Z26, Z26 \
	QK5_MIN(qs, 0, Z0) \
	QK5_MIN(qs, 1, Z1) \
	QK5_MIN(qs, 2, Z2) \
	QK5_MIN(qs, 3, Z3) \
	QK5_MIN(qs, 4, Z4) \
	QK5_MIN(qs, 5, Z5) \
	QK5_MIN(qs, 6, Z6) \
	QK5_MIN(qs, 7, Z7) \
	VCVTDQ2PS   isum, isum \
	VMULPS.BCST qs(0), Z29, Z27 \
	VMULPS      isum, Z27, Z27 \
	VADDPS      Z27, acc, acc \
	VCVTDQ2PS   Z26, Z26 \
	VMULPS.BCST qs(0), Z30, Z27 \
	VMULPS      Z26, Z27, Z27 \
	VADDPS      Z27, acc, acc \
	VPXORD      isum, isum, isum

// func qkTile8AVX512(w *byte, xq *int8, xs *qtScale, nk, ldo int, mask uint16, out *float32)
TEXT ·qkTile8AVX512(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nk+24(FP), CX
	MOVQ CX, R11
	SHLQ $8, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVQ CX, R9
	SHLQ $6, R9
	LEAQ (R9)(R9*2), R10
	LEAQ (R8)(R9*4), BX
	MOVL $0xffff, AX
	VPBROADCASTD AX, Z31
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

qk8loop:
	QK5_SUB8(0)
	QK5_SUB8(1)
	QK5_SUB8(2)
	QK5_SUB8(3)
	QK5_SUB8(4)
	QK5_SUB8(5)
	QK5_SUB8(6)
	QK5_SUB8(7)
	QK5_MINS
	QK5_FLOAT(QS0, Z8, Z16)
	QK5_FLOAT(QS1, Z9, Z17)
	QK5_FLOAT(QS2, Z10, Z18)
	QK5_FLOAT(QS3, Z11, Z19)
	QK5_FLOAT(QS4, Z12, Z20)
	QK5_FLOAT(QS5, Z13, Z21)
	QK5_FLOAT(QS6, Z14, Z22)
	QK5_FLOAT(QS7, Z15, Z23)
	ADDQ $5248, SI
	ADDQ $64, R8
	ADDQ $64, BX
	DECQ CX
	JNZ  qk8loop

	MOVQ  ldo+32(FP), AX
	SHLQ  $2, AX
	KMOVW mask+40(FP), K1
	MOVQ  out+48(FP), DX
	VMOVUPS Z16, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z17, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z18, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z19, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z20, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z21, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z22, K1, (DX)
	ADDQ  AX, DX
	VMOVUPS Z23, K1, (DX)
	VZEROUPPER
	RET

// func qkTile1AVX512(w *byte, xq *int8, xs *qtScale, nk int, mask uint16, out *float32)
TEXT ·qkTile1AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nk+24(FP), CX
	MOVL $0xffff, AX
	VPBROADCASTD AX, Z31
	VPXORD Z8, Z8, Z8
	VPXORD Z16, Z16, Z16

qk1loop:
	QK5_CODES(0)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(1)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(2)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(3)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(4)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(5)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(6)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_CODES(7)
	QK5_TOK(QX0, Z8)
	ADDQ $32, DI
	QK5_MINS
	QK5_FLOAT(QS0, Z8, Z16)
	ADDQ $5248, SI
	ADDQ $64, R8
	DECQ CX
	JNZ  qk1loop

	KMOVW mask+32(FP), K1
	MOVQ  out+40(FP), DX
	VMOVUPS Z16, K1, (DX)
	VZEROUPPER
	RET
