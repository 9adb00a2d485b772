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

// The repacks of whole groups (sixteen rows of rb bytes at w): the
// rows' dwords at one offset of a block are gathered into one register
// (Z20 holds the rows' byte offsets r·rb), which is the layout's
// register as it stands; nibbles are split and mapped to codes by a
// VPSHUFB of a 16-byte table (Z14), bytes by flipping their top bit.

// QT_ONES sets K1 to all sixteen lanes for the next gather (which
// clears it).
#define QT_ONES KMOVW K2, K1

// QT_NIB gathers the four qs bytes at qoff of every row and stores the
// codes of their low nibbles as register j and of their high nibbles as
// register j+4 of the block at DI.
#define QT_NIB(qoff, lo, hi) \
	QT_ONES \
	VPGATHERDD (qoff)(SI)(Z20*1), K1, Z10 \
	VPSRLD     $4, Z10, Z11 \
	VPANDD     Z15, Z10, Z10 \
	VPANDD     Z15, Z11, Z11 \
	VPSHUFB    Z10, Z14, Z10 \
	VPSHUFB    Z11, Z14, Z11 \
	VMOVDQU64  Z10, (lo)(DI) \
	VMOVDQU64  Z11, (hi)(DI)

// QT_D16 gathers the rows' f16 scales at doff and stores them as float32
// at 512(DI).
#define QT_D16(doff) \
	QT_ONES \
	VPGATHERDD doff(SI)(Z20*1), K1, Z9 \
	VPMOVDW    Z9, Y9 \
	VCVTPH2PS  Y9, Z9 \
	VMOVUPS    Z9, 512(DI)

// QT_PROLOGUE loads the arguments of a repack and the row offsets.
#define QT_PROLOGUE \
	MOVQ dst+0(FP), DI \
	MOVQ w+8(FP), SI \
	MOVQ rb+16(FP), AX \
	MOVQ nb+24(FP), CX \
	VPBROADCASTD AX, Z20 \
	VPMULLD qtLanes<>(SB), Z20, Z20 \
	MOVL $0xffff, AX \
	KMOVW AX, K2 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z15

// QT_BIT5 puts the fifth bits at bit sh of qh (Z21) into bit 4 of the
// four bytes of dst.
#define QT_BIT5(sh, dst) \
	VPSRLD  $(sh), Z21, dst \
	VPANDD  Z19, dst, dst \
	VPMULLD Z13, dst, dst \
	VPANDD  Z12, dst, dst \
	VPSLLD  $4, dst, dst

// QT_NIB5 stores the Q5_0 codes of the four qs bytes at qoff (values
// 4j..4j+3 and 16+4j..16+4j+3, their fifth bits at bit sh and sh+16) as
// registers lo and hi.
#define QT_NIB5(qoff, sh, lo, hi) \
	QT_ONES \
	VPGATHERDD (qoff)(SI)(Z20*1), K1, Z10 \
	VPSRLD     $4, Z10, Z11 \
	VPANDD     Z15, Z10, Z10 \
	VPANDD     Z15, Z11, Z11 \
	QT_BIT5(sh, Z9) \
	VPORD      Z9, Z10, Z10 \
	QT_BIT5(sh+16, Z9) \
	VPORD      Z9, Z11, Z11 \
	VPADDB     Z14, Z10, Z10 \
	VPADDB     Z14, Z11, Z11 \
	VMOVDQU64  Z10, (lo)(DI) \
	VMOVDQU64  Z11, (hi)(DI)

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

DATA qtLanes<>+0(SB)/4, $0
DATA qtLanes<>+4(SB)/4, $1
DATA qtLanes<>+8(SB)/4, $2
DATA qtLanes<>+12(SB)/4, $3
DATA qtLanes<>+16(SB)/4, $4
DATA qtLanes<>+20(SB)/4, $5
DATA qtLanes<>+24(SB)/4, $6
DATA qtLanes<>+28(SB)/4, $7
DATA qtLanes<>+32(SB)/4, $8
DATA qtLanes<>+36(SB)/4, $9
DATA qtLanes<>+40(SB)/4, $10
DATA qtLanes<>+44(SB)/4, $11
DATA qtLanes<>+48(SB)/4, $12
DATA qtLanes<>+52(SB)/4, $13
DATA qtLanes<>+56(SB)/4, $14
DATA qtLanes<>+60(SB)/4, $15
GLOBL qtLanes<>(SB), RODATA|NOPTR, $64

// func qtRepackNib18AVX512(dst, w *byte, rb, nb int, lut *[16]byte)
// Q4_0 and IQ4_NL: 18-byte blocks, f16 scale then 16 bytes of nibbles.
TEXT ·qtRepackNib18AVX512(SB), NOSPLIT, $0-40
	QT_PROLOGUE
	MOVQ lut+32(FP), AX
	VBROADCASTI32X4 (AX), Z14

qtn18loop:
	QT_D16(0)
	QT_NIB(2, 0, 256)
	QT_NIB(6, 64, 320)
	QT_NIB(10, 128, 384)
	QT_NIB(14, 192, 448)
	ADDQ $18, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  qtn18loop
	VZEROUPPER
	RET

// func qtRepackQ8_0AVX512(dst, w *byte, rb, nb int)
TEXT ·qtRepackQ8_0AVX512(SB), NOSPLIT, $0-32
	QT_PROLOGUE
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z14

#define QT_BYTES(qoff, off) \
	QT_ONES \
	VPGATHERDD qoff(SI)(Z20*1), K1, Z10 \
	VPXORD     Z14, Z10, Z10 \
	VMOVDQU64  Z10, off(DI)

qt80loop:
	QT_D16(0)
	QT_BYTES(2, 0)
	QT_BYTES(6, 64)
	QT_BYTES(10, 128)
	QT_BYTES(14, 192)
	QT_BYTES(18, 256)
	QT_BYTES(22, 320)
	QT_BYTES(26, 384)
	QT_BYTES(30, 448)
	ADDQ $34, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  qt80loop
	VZEROUPPER
	RET

// func qtRepackIQ4XSAVX512(dst, w *byte, rb, nb int, lut *[16]byte)
// nb counts 256-value blocks (eight layout blocks each). Sub-block k's
// scale is d·(ls-32) with ls = (scales_l nibble k) | (scales_h bits
// 2k..2k+1) << 4; Z21 holds d as float32, Z22 scales_h, Z23 scales_l.
TEXT ·qtRepackIQ4XSAVX512(SB), NOSPLIT, $0-40
	QT_PROLOGUE
	MOVQ lut+32(FP), AX
	VBROADCASTI32X4 (AX), Z14
	MOVL $3, AX
	VPBROADCASTD AX, Z13
	MOVL $32, AX
	VPBROADCASTD AX, Z12
	MOVL $15, AX
	VPBROADCASTD AX, Z19

#define QT_XS_SUB(k, qoff) \
	VPSRLD    $(4*k), Z23, Z9 \
	VPANDD    Z19, Z9, Z9 \
	VPSRLD    $(2*k), Z22, Z10 \
	VPANDD    Z13, Z10, Z10 \
	VPSLLD    $4, Z10, Z10 \
	VPORD     Z10, Z9, Z9 \
	VPSUBD    Z12, Z9, Z9 \
	VCVTDQ2PS Z9, Z9 \
	VMULPS    Z21, Z9, Z9 \
	VMOVUPS   Z9, (512+576*k)(DI) \
	QT_NIB(qoff, (576*k), (576*k+256)) \
	QT_NIB(qoff+4, (576*k+64), (576*k+320)) \
	QT_NIB(qoff+8, (576*k+128), (576*k+384)) \
	QT_NIB(qoff+12, (576*k+192), (576*k+448))

qtxsloop:
	QT_ONES
	VPGATHERDD 0(SI)(Z20*1), K1, Z9
	VPSRLD     $16, Z9, Z22
	VPMOVDW    Z9, Y9
	VCVTPH2PS  Y9, Z21
	QT_ONES
	VPGATHERDD 4(SI)(Z20*1), K1, Z23
	QT_XS_SUB(0, 8)
	QT_XS_SUB(1, 24)
	QT_XS_SUB(2, 40)
	QT_XS_SUB(3, 56)
	QT_XS_SUB(4, 72)
	QT_XS_SUB(5, 88)
	QT_XS_SUB(6, 104)
	QT_XS_SUB(7, 120)
	ADDQ $136, SI
	ADDQ $4608, DI
	DECQ CX
	JNZ  qtxsloop
	VZEROUPPER
	RET

// func qtRepackQ5_0AVX512(dst, w *byte, rb, nb int)
// Q5_0: 22-byte blocks, f16 scale, 32 fifth bits (qh), 16 bytes of
// nibbles. Value i's fifth bit is bit i of qh: for register j (values
// 4j..4j+3) the four bits at 4j are spread to the four bytes' bit 4 by a
// multiply with 0x00204081 (bit a lands on bit a+7s of term s, no two
// terms on one bit), masked with 0x01010101 and shifted left by four;
// the code is (nibble | that) + 112 (q5 - 16 + 128).
TEXT ·qtRepackQ5_0AVX512(SB), NOSPLIT, $0-32
	QT_PROLOGUE
	MOVL $0x70707070, AX
	VPBROADCASTD AX, Z14
	MOVL $0x00204081, AX
	VPBROADCASTD AX, Z13
	MOVL $0x01010101, AX
	VPBROADCASTD AX, Z12
	MOVL $15, AX
	VPBROADCASTD AX, Z19

qt50loop:
	QT_D16(0)
	QT_ONES
	VPGATHERDD 2(SI)(Z20*1), K1, Z21
	QT_NIB5(6, 0, 0, 256)
	QT_NIB5(10, 4, 64, 320)
	QT_NIB5(14, 8, 128, 384)
	QT_NIB5(18, 12, 192, 448)
	ADDQ $22, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  qt50loop
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
