//go:build amd64 && !purego

#include "textflag.h"

// Blocked float matrix product, AVX-512 path (F, BW, VL): the register
// tile of gemm6x4AVX512 and the weight conversions that fill its tiles.
// Each works like its generic twin in gemm.go and reads and writes only
// the values it is given (tails through K1-masked loads and stores, which
// do not touch the masked-off memory).

// MASK sets K1 to the low CX bits (CX < 16), using AX.
#define MASK \
	MOVL $1, AX; \
	SHLL CX, AX; \
	DECL AX; \
	KMOVW AX, K1

// ROW multiplies the weight vector W by the four token vectors Z24-Z27
// into accumulators A0-A3.
#define ROW(W, A0, A1, A2, A3) \
	VFMADD231PS Z24, W, A0; \
	VFMADD231PS Z25, W, A1; \
	VFMADD231PS Z26, W, A2; \
	VFMADD231PS Z27, W, A3

// REDUCE adds the sixteen lanes of each of A0-A3 (one row, tokens 0-3) and
// stores the four sums at off(R11). It uses Z24-Z27.
#define REDUCE(A0, A1, A2, A3, off) \
	VUNPCKLPS A1, A0, Z24; \
	VUNPCKHPS A1, A0, Z25; \
	VADDPS Z25, Z24, Z24; \
	VUNPCKLPS A3, A2, Z26; \
	VUNPCKHPS A3, A2, Z27; \
	VADDPS Z27, Z26, Z26; \
	VSHUFPS $0x44, Z26, Z24, Z25; \
	VSHUFPS $0xEE, Z26, Z24, Z27; \
	VADDPS Z27, Z25, Z25; \
	VEXTRACTF64X4 $1, Z25, Y26; \
	VADDPS Y26, Y25, Y25; \
	VEXTRACTF32X4 $1, Y25, X26; \
	VADDPS X26, X25, X25; \
	VMOVUPS X25, off(R11)

// func gemm6x4AVX512(w *float32, ldw int, x *float32, ldx, k int, out *[24]float32, pf *byte)
//
// Rows 0-2 are at SI, SI+BX, SI+2BX and rows 3-5 at R8 = SI+3BX, ...;
// tokens 0-2 at DI, DI+DX, DI+2DX and token 3 at R10 = DI+3DX (BX and DX
// the strides in bytes). Accumulator Z(4r+t) holds row r, token t. Each
// pass of the loop also asks for the next cache line at R12 (from pf)
// to be brought to the second-level cache.
TEXT ·gemm6x4AVX512(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ ldw+8(FP), BX
	MOVQ x+16(FP), DI
	MOVQ ldx+24(FP), DX
	MOVQ k+32(FP), CX
	MOVQ out+40(FP), R11
	MOVQ pf+48(FP), R12
	TESTQ R12, R12
	CMOVQEQ DI, R12
	SHLQ $2, BX
	SHLQ $2, DX
	LEAQ (SI)(BX*2), R8
	ADDQ BX, R8
	LEAQ (DI)(DX*2), R10
	ADDQ DX, R10
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
	SUBQ $16, CX
	JL   gemm_tail

gemm_loop:
	VMOVUPS (DI), Z24
	VMOVUPS (DI)(DX*1), Z25
	VMOVUPS (DI)(DX*2), Z26
	VMOVUPS (R10), Z27
	VMOVUPS (SI), Z28
	ROW(Z28, Z0, Z1, Z2, Z3)
	VMOVUPS (SI)(BX*1), Z29
	ROW(Z29, Z4, Z5, Z6, Z7)
	VMOVUPS (SI)(BX*2), Z28
	ROW(Z28, Z8, Z9, Z10, Z11)
	VMOVUPS (R8), Z29
	ROW(Z29, Z12, Z13, Z14, Z15)
	VMOVUPS (R8)(BX*1), Z28
	ROW(Z28, Z16, Z17, Z18, Z19)
	VMOVUPS (R8)(BX*2), Z29
	ROW(Z29, Z20, Z21, Z22, Z23)
	PREFETCHT1 (R12)
	ADDQ $64, R12
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ $64, DI
	ADDQ $64, R10
	SUBQ $16, CX
	JGE  gemm_loop

gemm_tail:
	ADDQ $16, CX
	JZ   gemm_reduce
	MASK
	VMOVUPS.Z (DI), K1, Z24
	VMOVUPS.Z (DI)(DX*1), K1, Z25
	VMOVUPS.Z (DI)(DX*2), K1, Z26
	VMOVUPS.Z (R10), K1, Z27
	VMOVUPS.Z (SI), K1, Z28
	ROW(Z28, Z0, Z1, Z2, Z3)
	VMOVUPS.Z (SI)(BX*1), K1, Z29
	ROW(Z29, Z4, Z5, Z6, Z7)
	VMOVUPS.Z (SI)(BX*2), K1, Z28
	ROW(Z28, Z8, Z9, Z10, Z11)
	VMOVUPS.Z (R8), K1, Z29
	ROW(Z29, Z12, Z13, Z14, Z15)
	VMOVUPS.Z (R8)(BX*1), K1, Z28
	ROW(Z28, Z16, Z17, Z18, Z19)
	VMOVUPS.Z (R8)(BX*2), K1, Z29
	ROW(Z29, Z20, Z21, Z22, Z23)

gemm_reduce:
	REDUCE(Z0, Z1, Z2, Z3, 0)
	REDUCE(Z4, Z5, Z6, Z7, 16)
	REDUCE(Z8, Z9, Z10, Z11, 32)
	REDUCE(Z12, Z13, Z14, Z15, 48)
	REDUCE(Z16, Z17, Z18, Z19, 64)
	REDUCE(Z20, Z21, Z22, Z23, 80)
	VZEROUPPER
	RET

// func widenF16AVX512(dst *float32, w *byte, n int)
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	SUBQ $32, CX
	JL   f16_one

f16_loop:
	VCVTPH2PS (SI), Z0
	VCVTPH2PS 32(SI), Z1
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JGE       f16_loop

f16_one:
	ADDQ $16, CX
	JL   f16_tail
	VCVTPH2PS (SI), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX

f16_tail:
	ADDQ $16, CX
	JZ   f16_done
	MASK
	VMOVDQU16.Z (SI), K1, Y1
	VCVTPH2PS   Y1, Z0
	VMOVUPS     Z0, K1, (DI)

f16_done:
	VZEROUPPER
	RET

// func widenBF16AVX512(dst *float32, w *byte, n int)
TEXT ·widenBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	SUBQ $32, CX
	JL   bf16_one

bf16_loop:
	VPMOVZXWD (SI), Z0
	VPMOVZXWD 32(SI), Z1
	VPSLLD    $16, Z0, Z0
	VPSLLD    $16, Z1, Z1
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	ADDQ      $64, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JGE       bf16_loop

bf16_one:
	ADDQ $16, CX
	JL   bf16_tail
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX

bf16_tail:
	ADDQ $16, CX
	JZ   bf16_done
	MASK
	VMOVDQU16.Z (SI), K1, Y1
	VPMOVZXWD   Y1, Z0
	VPSLLD      $16, Z0, Z0
	VMOVUPS     Z0, K1, (DI)

bf16_done:
	VZEROUPPER
	RET

// func widenF32AVX512(dst *float32, w *byte, n int)
TEXT ·widenF32AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX
	SUBQ $32, CX
	JL   f32_one

f32_loop:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ    $128, SI
	ADDQ    $128, DI
	SUBQ    $32, CX
	JGE     f32_loop

f32_one:
	ADDQ $16, CX
	JL   f32_tail
	VMOVUPS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $64, DI
	SUBQ    $16, CX

f32_tail:
	ADDQ $16, CX
	JZ   f32_done
	MASK
	VMOVUPS.Z (SI), K1, Z0
	VMOVUPS   Z0, K1, (DI)

f32_done:
	VZEROUPPER
	RET
