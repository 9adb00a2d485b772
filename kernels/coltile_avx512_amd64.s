//go:build amd64 && !purego

#include "textflag.h"

// Column tiles, AVX-512 path (F): the products and softmax of coltile.go
// with the columns along the sixteen lanes of a ZMM register. Products
// are rounded before they are added (VMULPS then VADDPS, never a fused
// multiply-add) so that every lane is bit for bit its Go twin's sum; on
// AMD's cores the multiplies and the additions issue to different pipes,
// so the split costs no throughput there.

// BROW multiplies the broadcast a value at src by the four column
// vectors Z24-Z27 and adds the products to A0-A3.
#define BROW(src, A0, A1, A2, A3) \
	VBROADCASTSS src, Z28; \
	VMULPS Z24, Z28, Z29; \
	VADDPS Z29, A0, A0; \
	VMULPS Z25, Z28, Z30; \
	VADDPS Z30, A1, A1; \
	VMULPS Z26, Z28, Z31; \
	VADDPS Z31, A2, A2; \
	VMULPS Z27, Z28, Z29; \
	VADDPS Z29, A3, A3

// STORE4 writes A0-A3 to the 64 floats at R11 and moves R11 on a row.
#define STORE4(A0, A1, A2, A3) \
	VMOVUPS A0, (R11); \
	VMOVUPS A1, 64(R11); \
	VMOVUPS A2, 128(R11); \
	VMOVUPS A3, 192(R11); \
	ADDQ R9, R11

// func colTile6x64AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)
//
// Rows 0-2 of a are at SI, SI+BX, SI+2BX and rows 3-5 at R8 = SI+3BX,
// ... (BX, DX and R9 the strides in bytes, R13 the step along a's rows);
// the row of b at DI.
// Accumulator Z(4i+v) holds row i, columns 16v..16v+15.
TEXT ·colTile6x64AVX512(SB), NOSPLIT, $0-64
	MOVQ c+0(FP), R11
	MOVQ ldc+8(FP), R9
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), BX
	MOVQ ak+32(FP), R13
	MOVQ b+40(FP), DI
	MOVQ ldb+48(FP), DX
	MOVQ k+56(FP), CX
	SHLQ $2, R9
	SHLQ $2, BX
	SHLQ $2, R13
	SHLQ $2, DX
	LEAQ (SI)(BX*2), R8
	ADDQ BX, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
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
	TESTQ CX, CX
	JLE   c64_store

c64_loop:
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	VMOVUPS 128(DI), Z26
	VMOVUPS 192(DI), Z27
	BROW((SI), Z0, Z1, Z2, Z3)
	BROW((SI)(BX*1), Z4, Z5, Z6, Z7)
	BROW((SI)(BX*2), Z8, Z9, Z10, Z11)
	BROW((R8), Z12, Z13, Z14, Z15)
	BROW((R8)(BX*1), Z16, Z17, Z18, Z19)
	BROW((R8)(BX*2), Z20, Z21, Z22, Z23)
	ADDQ R13, SI
	ADDQ R13, R8
	ADDQ DX, DI
	DECQ CX
	JNZ  c64_loop

c64_store:
	STORE4(Z0, Z1, Z2, Z3)
	STORE4(Z4, Z5, Z6, Z7)
	STORE4(Z8, Z9, Z10, Z11)
	STORE4(Z12, Z13, Z14, Z15)
	STORE4(Z16, Z17, Z18, Z19)
	STORE4(Z20, Z21, Z22, Z23)
	VZEROUPPER
	RET

// BROW1 multiplies the a value at src, broadcast, by the column vector
// V and adds the product to A, with T a scratch register.
#define BROW1(src, V, A, T) \
	VMULPS.BCST src, V, T; \
	VADDPS T, A, A

// func colTile6x16AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)
//
// As colTile6x64AVX512, one column vector: accumulator Zi holds row i.
TEXT ·colTile6x16AVX512(SB), NOSPLIT, $0-64
	MOVQ c+0(FP), R11
	MOVQ ldc+8(FP), R9
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), BX
	MOVQ ak+32(FP), R13
	MOVQ b+40(FP), DI
	MOVQ ldb+48(FP), DX
	MOVQ k+56(FP), CX
	SHLQ $2, R9
	SHLQ $2, BX
	SHLQ $2, R13
	SHLQ $2, DX
	LEAQ (SI)(BX*2), R8
	ADDQ BX, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	TESTQ CX, CX
	JLE   c16_store

c16_loop:
	VMOVUPS (DI), Z24
	BROW1((SI), Z24, Z0, Z26)
	BROW1((SI)(BX*1), Z24, Z1, Z27)
	BROW1((SI)(BX*2), Z24, Z2, Z28)
	BROW1((R8), Z24, Z3, Z29)
	BROW1((R8)(BX*1), Z24, Z4, Z30)
	BROW1((R8)(BX*2), Z24, Z5, Z31)
	ADDQ R13, SI
	ADDQ R13, R8
	ADDQ DX, DI
	DECQ CX
	JNZ  c16_loop

c16_store:
	VMOVUPS Z0, (R11)
	ADDQ    R9, R11
	VMOVUPS Z1, (R11)
	ADDQ    R9, R11
	VMOVUPS Z2, (R11)
	ADDQ    R9, R11
	VMOVUPS Z3, (R11)
	ADDQ    R9, R11
	VMOVUPS Z4, (R11)
	ADDQ    R9, R11
	VMOVUPS Z5, (R11)
	VZEROUPPER
	RET

// func colTile6x8AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)
//
// As colTile6x16AVX512 for eight columns, in YMM registers (AVX-512 VL
// for the broadcast operands): a decoding step's query heads of one KV
// head are often just eight, and on cores that split ZMM operations in
// two halves the YMM form does twice the work per cycle of a half-empty
// ZMM one.
TEXT ·colTile6x8AVX512(SB), NOSPLIT, $0-64
	MOVQ c+0(FP), R11
	MOVQ ldc+8(FP), R9
	MOVQ a+16(FP), SI
	MOVQ lda+24(FP), BX
	MOVQ ak+32(FP), R13
	MOVQ b+40(FP), DI
	MOVQ ldb+48(FP), DX
	MOVQ k+56(FP), CX
	SHLQ $2, R9
	SHLQ $2, BX
	SHLQ $2, R13
	SHLQ $2, DX
	LEAQ (SI)(BX*2), R8
	ADDQ BX, R8
	VPXORD Y0, Y0, Y0
	VPXORD Y1, Y1, Y1
	VPXORD Y2, Y2, Y2
	VPXORD Y3, Y3, Y3
	VPXORD Y4, Y4, Y4
	VPXORD Y5, Y5, Y5
	TESTQ CX, CX
	JLE   c8_store

c8_loop:
	VMOVUPS (DI), Y24
	BROW1((SI), Y24, Y0, Y26)
	BROW1((SI)(BX*1), Y24, Y1, Y27)
	BROW1((SI)(BX*2), Y24, Y2, Y28)
	BROW1((R8), Y24, Y3, Y29)
	BROW1((R8)(BX*1), Y24, Y4, Y30)
	BROW1((R8)(BX*2), Y24, Y5, Y31)
	ADDQ R13, SI
	ADDQ R13, R8
	ADDQ DX, DI
	DECQ CX
	JNZ  c8_loop

c8_store:
	VMOVUPS Y0, (R11)
	ADDQ    R9, R11
	VMOVUPS Y1, (R11)
	ADDQ    R9, R11
	VMOVUPS Y2, (R11)
	ADDQ    R9, R11
	VMOVUPS Y3, (R11)
	ADDQ    R9, R11
	VMOVUPS Y4, (R11)
	ADDQ    R9, R11
	VMOVUPS Y5, (R11)
	VZEROUPPER
	RET

// The float32 constants of expf (exp.go), as the AVX2 path's table
// holds them, and -Inf for the maxima.
DATA colexp<>+0(SB)/4, $0x3fb8aa3b  // log2(e)
DATA colexp<>+4(SB)/4, $0x3f318000  // C1
DATA colexp<>+8(SB)/4, $0xb95e8083  // C2
DATA colexp<>+12(SB)/4, $0x39506967 // P0
DATA colexp<>+16(SB)/4, $0x3ab743ce // P1
DATA colexp<>+20(SB)/4, $0x3c088908 // P2
DATA colexp<>+24(SB)/4, $0x3d2aa9c1 // P3
DATA colexp<>+28(SB)/4, $0x3e2aaaaa // P4
DATA colexp<>+32(SB)/4, $0x3f000000 // P5
DATA colexp<>+36(SB)/4, $0x3f800000 // 1
DATA colexp<>+40(SB)/4, $0x42b17218 // expHi
DATA colexp<>+44(SB)/4, $0xc2adcccd // expLo
DATA colexp<>+48(SB)/4, $0x40000000 // 2
DATA colexp<>+52(SB)/4, $0x7f800000 // +Inf
DATA colexp<>+56(SB)/4, $0x0000007e // int32 126, the bias of 2^(n-1)
DATA colexp<>+60(SB)/4, $0xff800000 // -Inf
GLOBL colexp<>(SB), RODATA|NOPTR, $64

// EXPZ sets Z7 to expf(Z2) lane by lane with expf's operations in
// expf's order (as the AVX2 path's expSubSum), using Z3-Z9, K2-K4 and the
// constants in Z10 and Z16-Z30.
#define EXPZ \
	VMINPS      Z16, Z2, Z3; \
	VMAXPS      Z17, Z3, Z3; \
	VMULPS      Z18, Z3, Z4; \
	VRNDSCALEPS $0, Z4, Z4; \
	VMULPS      Z19, Z4, Z5; \
	VSUBPS      Z5, Z3, Z6; \
	VMULPS      Z20, Z4, Z5; \
	VSUBPS      Z5, Z6, Z6; \
	VMULPS      Z21, Z6, Z7; \
	VADDPS      Z22, Z7, Z7; \
	VMULPS      Z6, Z7, Z7; \
	VADDPS      Z23, Z7, Z7; \
	VMULPS      Z6, Z7, Z7; \
	VADDPS      Z24, Z7, Z7; \
	VMULPS      Z6, Z7, Z7; \
	VADDPS      Z25, Z7, Z7; \
	VMULPS      Z6, Z7, Z7; \
	VADDPS      Z26, Z7, Z7; \
	VMULPS      Z6, Z6, Z8; \
	VMULPS      Z8, Z7, Z7; \
	VADDPS      Z6, Z7, Z7; \
	VADDPS      Z27, Z7, Z7; \
	VCVTPS2DQ   Z4, Z9; \
	VPADDD      Z30, Z9, Z9; \
	VPSLLD      $23, Z9, Z9; \
	VMULPS      Z9, Z7, Z7; \
	VMULPS      Z28, Z7, Z7; \
	VCMPPS      $0x1e, Z16, Z2, K2; \
	VMOVAPS     Z29, K2, Z7; \
	VCMPPS      $0x11, Z17, Z2, K3; \
	VMOVAPS     Z10, K3, Z7; \
	VCMPPS      $3, Z2, Z2, K4; \
	VMOVAPS     Z2, K4, Z7

// func softmaxColsAVX512(x *float32, ld, rows, n int, mx, sum *float32)
//
// For each group of sixteen columns (AX its first row; the last group
// may be eight, loaded and stored as YMM registers, no masked memory
// operations): the maxima in Z0 over the rows, then each row's
// exponentials (EXPZ of x = v - m) written back and added to Z1. The
// constants stay in Z10 (zero) and Z16-Z31.
TEXT ·softmaxColsAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), AX
	MOVQ ld+8(FP), R10
	MOVQ rows+16(FP), BX
	MOVQ n+24(FP), R9
	MOVQ mx+32(FP), R11
	MOVQ sum+40(FP), R12
	SHLQ $2, R10
	VBROADCASTSS colexp<>+40(SB), Z16
	VBROADCASTSS colexp<>+44(SB), Z17
	VBROADCASTSS colexp<>+0(SB), Z18
	VBROADCASTSS colexp<>+4(SB), Z19
	VBROADCASTSS colexp<>+8(SB), Z20
	VBROADCASTSS colexp<>+12(SB), Z21
	VBROADCASTSS colexp<>+16(SB), Z22
	VBROADCASTSS colexp<>+20(SB), Z23
	VBROADCASTSS colexp<>+24(SB), Z24
	VBROADCASTSS colexp<>+28(SB), Z25
	VBROADCASTSS colexp<>+32(SB), Z26
	VBROADCASTSS colexp<>+36(SB), Z27
	VBROADCASTSS colexp<>+48(SB), Z28
	VBROADCASTSS colexp<>+52(SB), Z29
	VPBROADCASTD colexp<>+56(SB), Z30
	VBROADCASTSS colexp<>+60(SB), Z31
	VPXORD       Z10, Z10, Z10

sm_group:
	CMPQ R9, $16
	JL   sm_half

	// The maxima: m = v unless m > v.
	VMOVAPS Z31, Z0
	MOVQ    AX, SI
	MOVQ    BX, CX

sm_max:
	VMAXPS  (SI), Z0, Z0
	ADDQ    R10, SI
	DECQ    CX
	JNZ     sm_max
	VMOVUPS Z0, (R11)
	VPXORD  Z1, Z1, Z1
	MOVQ    AX, SI
	MOVQ    BX, CX

sm_exp:
	VMOVUPS (SI), Z2
	VSUBPS  Z0, Z2, Z2
	EXPZ
	VMOVUPS Z7, (SI)
	VADDPS  Z7, Z1, Z1
	ADDQ    R10, SI
	DECQ    CX
	JNZ     sm_exp
	VMOVUPS Z1, (R12)
	JMP     sm_next

sm_half:
	// Eight columns: YMM loads (the upper lanes zero) and stores.
	VMOVAPS Z31, Z0
	MOVQ    AX, SI
	MOVQ    BX, CX

sm_max8:
	VMOVUPS (SI), Y2
	VMAXPS  Z2, Z0, Z0
	ADDQ    R10, SI
	DECQ    CX
	JNZ     sm_max8
	VMOVUPS Y0, (R11)
	VPXORD  Z1, Z1, Z1
	MOVQ    AX, SI
	MOVQ    BX, CX

sm_exp8:
	VMOVUPS (SI), Y2
	VSUBPS  Z0, Z2, Z2
	EXPZ
	VMOVUPS Y7, (SI)
	VADDPS  Z7, Z1, Z1
	ADDQ    R10, SI
	DECQ    CX
	JNZ     sm_exp8
	VMOVUPS Y1, (R12)

sm_next:
	ADDQ $64, AX
	ADDQ $64, R11
	ADDQ $64, R12
	SUBQ $16, R9
	JG   sm_group
	VZEROUPPER
	RET

// func widenQ8_0AVX512(dst *float32, src *byte, nb int)
//
// Per block: the f16 scale broadcast to sixteen halves and widened, the
// 32 codes sign-extended and converted in two halves, each multiplied
// by the scale.
TEXT ·widenQ8_0AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nb+16(FP), CX

q8_loop:
	VPBROADCASTW (SI), Y0
	VCVTPH2PS    Y0, Z0
	VPMOVSXBD    2(SI), Z1
	VPMOVSXBD    18(SI), Z2
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VMULPS       Z0, Z1, Z1
	VMULPS       Z0, Z2, Z2
	VMOVUPS      Z1, (DI)
	VMOVUPS      Z2, 64(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JNZ          q8_loop
	VZEROUPPER
	RET

// func foldColsAVX512(o *float32, ldo int, u *float32, ldu, rows int, a, b *float32, n int)
//
// Per row, sixteen columns at a time (the last eight in YMM registers):
// o·a and u·b rounded, then added.
TEXT ·foldColsAVX512(SB), NOSPLIT, $0-64
	MOVQ o+0(FP), AX
	MOVQ ldo+8(FP), R10
	MOVQ u+16(FP), BX
	MOVQ ldu+24(FP), R11
	MOVQ rows+32(FP), DX
	MOVQ a+40(FP), R12
	MOVQ b+48(FP), R13
	SHLQ $2, R10
	SHLQ $2, R11

fold_row:
	MOVQ AX, SI
	MOVQ BX, DI
	MOVQ R12, R8
	MOVQ R13, R9
	MOVQ n+56(FP), CX

fold_16:
	CMPQ    CX, $16
	JL      fold_8
	VMOVUPS (SI), Z0
	VMULPS  (R8), Z0, Z0
	VMOVUPS (DI), Z1
	VMULPS  (R9), Z1, Z1
	VADDPS  Z1, Z0, Z0
	VMOVUPS Z0, (SI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, R8
	ADDQ    $64, R9
	SUBQ    $16, CX
	JMP     fold_16

fold_8:
	TESTQ   CX, CX
	JZ      fold_next
	VMOVUPS (SI), Y0
	VMULPS  (R8), Y0, Y0
	VMOVUPS (DI), Y1
	VMULPS  (R9), Y1, Y1
	VADDPS  Y1, Y0, Y0
	VMOVUPS Y0, (SI)

fold_next:
	ADDQ R10, AX
	ADDQ R11, BX
	DECQ DX
	JNZ  fold_row
	VZEROUPPER
	RET
