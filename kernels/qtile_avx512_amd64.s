//go:build amd64 && !purego

#include "textflag.h"
#include "q8act_amd64.h"
#include "qtile_amd64.h"

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
