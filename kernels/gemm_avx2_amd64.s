//go:build amd64 && !purego

#include "textflag.h"

// Blocked float matrix product, AVX2+FMA path: a three-row, four-token
// register tile (gemmAVX2Go calls it twice for the six rows of the Go
// tile) and the weight conversions for multiples of eight values. Each
// works like its generic twin in gemm.go and reads and writes only the
// values it is given (the kernel's tail through VMASKMOVPS, which does
// not touch masked-off memory).

// gemmMask holds eight -1 words then eight 0 words: the eight words at
// gemmMask+4(8-r) enable the first r lanes.
DATA gemmMask<>+0(SB)/8, $0xffffffffffffffff
DATA gemmMask<>+8(SB)/8, $0xffffffffffffffff
DATA gemmMask<>+16(SB)/8, $0xffffffffffffffff
DATA gemmMask<>+24(SB)/8, $0xffffffffffffffff
DATA gemmMask<>+32(SB)/8, $0
DATA gemmMask<>+40(SB)/8, $0
DATA gemmMask<>+48(SB)/8, $0
DATA gemmMask<>+56(SB)/8, $0
GLOBL gemmMask<>(SB), RODATA|NOPTR, $64

// TOK multiplies token vector X by the three weight vectors Y12-Y14 into
// accumulators A0-A2 (rows 0-2 of that token).
#define TOK(X, A0, A1, A2) \
	VFMADD231PS X, Y12, A0; \
	VFMADD231PS X, Y13, A1; \
	VFMADD231PS X, Y14, A2

// REDUCE4 adds the eight lanes of each of A0-A3 (one row, tokens 0-3) and
// stores the four sums at off(R11); X0 is the low half of A0. It
// overwrites A0 and A2.
#define REDUCE4(A0, A1, A2, A3, X0, off) \
	VHADDPS A1, A0, A0; \
	VHADDPS A3, A2, A2; \
	VHADDPS A2, A0, A0; \
	VEXTRACTF128 $1, A0, X15; \
	VADDPS X15, X0, X0; \
	VMOVUPS X0, off(R11)

// func gemm3x4AVX2(w *float32, ldw int, x *float32, ldx, k int, out *[12]float32, pf *byte)
//
// Rows 0-2 at SI, SI+BX, SI+2BX; tokens 0-2 at DI, DI+DX, DI+2DX and
// token 3 at R10 = DI+3DX (BX and DX the strides in bytes). Accumulator
// Y(r+3t) holds row r, token t. Each pass of the loop also asks for the
// cache line at R12 (from pf, 16 bytes on per pass) to be brought to the
// second-level cache.
TEXT ·gemm3x4AVX2(SB), NOSPLIT, $0-56
	MOVQ    w+0(FP), SI
	MOVQ    ldw+8(FP), BX
	MOVQ    x+16(FP), DI
	MOVQ    ldx+24(FP), DX
	MOVQ    k+32(FP), CX
	MOVQ    out+40(FP), R11
	MOVQ    pf+48(FP), R12
	TESTQ   R12, R12
	CMOVQEQ DI, R12
	SHLQ    $2, BX
	SHLQ    $2, DX
	LEAQ    (DI)(DX*2), R10
	ADDQ    DX, R10
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	VXORPS  Y4, Y4, Y4
	VXORPS  Y5, Y5, Y5
	VXORPS  Y6, Y6, Y6
	VXORPS  Y7, Y7, Y7
	VXORPS  Y8, Y8, Y8
	VXORPS  Y9, Y9, Y9
	VXORPS  Y10, Y10, Y10
	VXORPS  Y11, Y11, Y11
	SUBQ    $8, CX
	JL      avx2_tail

avx2_loop:
	VMOVUPS    (SI), Y12
	VMOVUPS    (SI)(BX*1), Y13
	VMOVUPS    (SI)(BX*2), Y14
	VMOVUPS    (DI), Y15
	TOK(Y15, Y0, Y1, Y2)
	VMOVUPS    (DI)(DX*1), Y15
	TOK(Y15, Y3, Y4, Y5)
	VMOVUPS    (DI)(DX*2), Y15
	TOK(Y15, Y6, Y7, Y8)
	VMOVUPS    (R10), Y15
	TOK(Y15, Y9, Y10, Y11)
	PREFETCHT1 (R12)
	ADDQ       $16, R12
	ADDQ       $32, SI
	ADDQ       $32, DI
	ADDQ       $32, R10
	SUBQ       $8, CX
	JGE        avx2_loop

avx2_tail:
	ADDQ $8, CX
	JZ   avx2_reduce

	// The tail of r = CX values: load the mask for r lanes into Y15 and
	// use it for every operand (Y15 is taken by the token vector, so the
	// mask is reloaded for each).
	LEAQ       gemmMask<>(SB), AX
	NEGQ       CX
	LEAQ       32(AX)(CX*4), AX
	VMOVUPS    (AX), Y15
	VMASKMOVPS (SI), Y15, Y12
	VMASKMOVPS (SI)(BX*1), Y15, Y13
	VMASKMOVPS (SI)(BX*2), Y15, Y14
	VMASKMOVPS (DI), Y15, Y15
	TOK(Y15, Y0, Y1, Y2)
	VMOVUPS    (AX), Y15
	VMASKMOVPS (DI)(DX*1), Y15, Y15
	TOK(Y15, Y3, Y4, Y5)
	VMOVUPS    (AX), Y15
	VMASKMOVPS (DI)(DX*2), Y15, Y15
	TOK(Y15, Y6, Y7, Y8)
	VMOVUPS    (AX), Y15
	VMASKMOVPS (R10), Y15, Y15
	TOK(Y15, Y9, Y10, Y11)

avx2_reduce:
	REDUCE4(Y0, Y3, Y6, Y9, X0, 0)
	REDUCE4(Y1, Y4, Y7, Y10, X1, 16)
	REDUCE4(Y2, Y5, Y8, Y11, X2, 32)
	VZEROUPPER
	RET

// func widenF16AVX2(dst *float32, w *byte, n int)
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

f16a_loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JG        f16a_loop
	VZEROUPPER
	RET

// func widenBF16AVX2(dst *float32, w *byte, n int)
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

bf16a_loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JG        bf16a_loop
	VZEROUPPER
	RET

// func widenF32AVX2(dst *float32, w *byte, n int)
TEXT ·widenF32AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ n+16(FP), CX

f32a_loop:
	VMOVUPS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JG      f32a_loop
	VZEROUPPER
	RET
