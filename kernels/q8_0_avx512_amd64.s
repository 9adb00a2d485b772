//go:build amd64 && !purego

#include "textflag.h"

// Q8_0 × Q8_0 dot products, AVX-512 path (F, BW, VL, VNNI), 256-bit
// vectors only: the 512-bit VNNI unit is on port 0 alone, while the
// 256-bit VPDPBUSD issues on ports 0 and 1.
//
// Integer part, per 32-value block: VPDPBUSD multiplies unsigned by signed
// bytes, so the activation codes are offset to x+128 (x XOR 0x80, in
// 0..255) and the weight codes stay signed; each dword lane l holds
//   Σ_{k<4} (x[4l+k]+128)·w[4l+k] − 128·Σ_{k<4} w[4l+k]
// = Σ_{k<4} x[4l+k]·w[4l+k], exact for every code including -128.
//
// Float part, per lane: the lane's integer is converted to float32 and
// fused-multiply-added with the block scale dw·dx (rounded to float32)
// into one of two accumulators, even blocks in A and odd blocks in B.
// Once per row, v = A+B and the lanes are summed as
// ((v0+v2)+(v1+v3)) + ((v4+v6)+(v5+v7)).
// The one-, four- and eight-token dots share this order exactly, so each
// token's result is bit-identical across them.
//
// Block scales: the f16 scales of eight blocks (one token) or of eight
// tokens (one block) are inserted word by word with VPINSRW from memory
// and converted together by VCVTPH2PS (measured here: as fast as a
// VPGATHERDD and its VPMOVDW, and much faster than word stores read back
// as one vector, which defeat store forwarding); each product dw·dx is
// taken from its lane by a VPERMPS with a register of lane numbers, not
// stored and broadcast back from the stack (a 32-byte store read back in
// four-byte pieces stalls on store forwarding: on an AMD Zen 5 that made
// the one-token dot 1.4 times and the eight-token dot 1.35 times slower).
// The tail of the one-token dot, at most seven blocks a row, still takes
// its scales from the stack. Every function reads only the nb blocks of
// weights and of each token's activations.

// Q80_ONE does block k of the one-token dot: weights at off(SI),
// activations at off(DI), scale at smem, into accumulator acc. Y14 holds
// 0x80 bytes.
#define Q80_ONE(off, smem, acc) \
	Q80_INT(off) \
	VFMADD231PS.BCST smem, Y6, acc

// Q80_ONER works like Q80_ONE with the scale taken from lane idx of Y2
// (idx holds that lane number in every lane) by a permute instead of a
// broadcast from the stack: a vector store read back as four-byte pieces
// defeats store forwarding, which stalled every block.
#define Q80_ONER(off, idx, acc) \
	Q80_INT(off) \
	VPERMPS     Y2, idx, Y7 \
	VFMADD231PS Y7, Y6, acc

// Q80_INT leaves the eight lane sums of block off, as float32, in Y6.
#define Q80_INT(off) \
	VPXOR       off+2(DI), Y14, Y4 \
	VPXOR       Y5, Y5, Y5 \
	VPDPBUSD    off+2(SI), Y14, Y5 \
	VPXOR       Y6, Y6, Y6 \
	VPDPBUSD    off+2(SI), Y4, Y6 \
	VPSUBD      Y5, Y6, Y6 \
	VCVTDQ2PS   Y6, Y6

// Q80_CVT8 converts the eight weight scales at 0(SP) and the eight
// activation scales at 16(SP) and stores their products to 32(SP).
#define Q80_CVT8 \
	VCVTPH2PS 0(SP), Y2 \
	VCVTPH2PS 16(SP), Y3 \
	VMULPS    Y3, Y2, Y2 \
	VMOVUPS   Y2, 32(SP)

// Q80_LANES loads lane numbers 0..7 into Y16..Y23, each in every lane,
// the indexes the permutes of the scales use.
#define Q80_LANES \
	MOVL $0, AX \
	VPBROADCASTD AX, Y16 \
	MOVL $1, AX \
	VPBROADCASTD AX, Y17 \
	MOVL $2, AX \
	VPBROADCASTD AX, Y18 \
	MOVL $3, AX \
	VPBROADCASTD AX, Y19 \
	MOVL $4, AX \
	VPBROADCASTD AX, Y20 \
	MOVL $5, AX \
	VPBROADCASTD AX, Y21 \
	MOVL $6, AX \
	VPBROADCASTD AX, Y22 \
	MOVL $7, AX \
	VPBROADCASTD AX, Y23

// Q80_SCALES8 leaves dw·dx of the eight blocks at SI and DI in Y2,
// inserting the f16 scales into X2 and X3 word by word (the first by a
// broadcast, so that no iteration waits for the previous one's X2, X3).
#define Q80_SCALES8 \
	VPBROADCASTW 0(SI), X2 \
	VPINSRW $1, 34(SI), X2, X2 \
	VPINSRW $2, 68(SI), X2, X2 \
	VPINSRW $3, 102(SI), X2, X2 \
	VPINSRW $4, 136(SI), X2, X2 \
	VPINSRW $5, 170(SI), X2, X2 \
	VPINSRW $6, 204(SI), X2, X2 \
	VPINSRW $7, 238(SI), X2, X2 \
	VPBROADCASTW 0(DI), X3 \
	VPINSRW $1, 34(DI), X3, X3 \
	VPINSRW $2, 68(DI), X3, X3 \
	VPINSRW $3, 102(DI), X3, X3 \
	VPINSRW $4, 136(DI), X3, X3 \
	VPINSRW $5, 170(DI), X3, X3 \
	VPINSRW $6, 204(DI), X3, X3 \
	VPINSRW $7, 238(DI), X3, X3 \
	VCVTPH2PS X2, Y2 \
	VCVTPH2PS X3, Y3 \
	VMULPS    Y3, Y2, Y2

// func dotQ8_0AVX512(w *byte, x *quant.BlockQ8_0, nb int) float32
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $64-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Y14
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	Q80_LANES
	CMPQ CX, $8
	JLT  q80tail

q80loop8:
	// A second set of prefetches into L2 six times as far ahead as the
	// first: weights streamed from DRAM (BenchmarkMatVecStreamPair, one
	// thread, huge pages, Zen 4 VM) went from 23.4-24.6 GB/s to
	// 25.5-26.3, as for the Q4_0 and Q5_0 row runs (newq_avx512_amd64.s).
	// Unlike theirs (ROWS_PREFETCH), this kernel gained nothing from
	// taking the L2 set first: 0.997-1.001 of the time at one thread,
	// 0.984-0.998 at two (three runs each, the method rowsum_amd64.h
	// describes), within what the kernel against itself gives.
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	PREFETCHT0 2496(SI)
	PREFETCHT0 2560(SI)
	PREFETCHT1 13056(SI)
	PREFETCHT1 (13056+64)(SI)
	PREFETCHT1 (13056+128)(SI)
	PREFETCHT1 (13056+192)(SI)
	PREFETCHT1 (13056+256)(SI)
	Q80_SCALES8
	Q80_ONER(0, Y16, Y0)
	Q80_ONER(34, Y17, Y1)
	Q80_ONER(68, Y18, Y0)
	Q80_ONER(102, Y19, Y1)
	Q80_ONER(136, Y20, Y0)
	Q80_ONER(170, Y21, Y1)
	Q80_ONER(204, Y22, Y0)
	Q80_ONER(238, Y23, Y1)
	ADDQ $272, SI
	ADDQ $272, DI
	SUBQ $8, CX
	CMPQ CX, $8
	JGE  q80loop8

q80tail:
	// The last nb mod 8 blocks: copy their scales to the stack, then one
	// block at a time, alternating accumulators as the main loop does.
	// The words of the slots past the last block are left as they are
	// (whatever the frame held) and their products never used.
	TESTQ CX, CX
	JEQ   q80sum
	MOVQ  SI, R10
	MOVQ  DI, R11
	XORQ  AX, AX

q80tailw:
	MOVWLZX (R10), R9
	MOVW    R9, 0(SP)(AX*2)
	MOVWLZX (R11), R9
	MOVW    R9, 16(SP)(AX*2)
	ADDQ    $34, R10
	ADDQ    $34, R11
	INCQ    AX
	CMPQ    AX, CX
	JLT     q80tailw
	Q80_CVT8
	LEAQ 32(SP), BX

q80tail2:
	CMPQ CX, $2
	JLT  q80tail1
	Q80_ONE(0, 0(BX), Y0)
	Q80_ONE(34, 4(BX), Y1)
	ADDQ $68, SI
	ADDQ $68, DI
	ADDQ $8, BX
	SUBQ $2, CX
	JMP  q80tail2

q80tail1:
	TESTQ CX, CX
	JEQ   q80sum
	Q80_ONE(0, 0(BX), Y0)

q80sum:
	VADDPS    Y1, Y0, Y0
	VPERMILPS $0x4e, Y0, Y1
	VADDPS    Y1, Y0, Y0
	VPERMILPS $0xb1, Y0, Y1
	VADDPS    Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDSS    X1, X0, X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// Q80_PREP starts block off of a multi-token dot: prefetches the weights,
// loads the block's codes into Y16 and −128·Σw per lane into Y17, and
// leaves dw·dx of each token (its f16 scales inserted into X21 by dxins)
// in the lanes of X21.
#define Q80_PREP(off, dxins) \
	PREFETCHT0  2304+off(SI) \
	VMOVDQU32   off+2(SI), Y16 \
	VPXORD      Y20, Y20, Y20 \
	VPDPBUSD    Y16, Y18, Y20 \
	VPXORD      Y17, Y17, Y17 \
	VPSUBD      Y20, Y17, Y17 \
	dxins \
	VCVTPH2PS   X21, X21 \
	VPBROADCASTW off(SI), X22 \
	VCVTPH2PS   X22, X22 \
	VMULPS      X22, X21, X21

// Q80_DX4 inserts the f16 scales of block off of four tokens into the
// words of X21, the first by a broadcast that ends the dependency on the
// previous block's X21.
#define Q80_DX4(off) \
	VPBROADCASTW off(DI), X21 \
	VPINSRW $1, off(DI)(BX*1), X21, X21 \
	VPINSRW $2, off(DI)(BX*2), X21, X21 \
	VPINSRW $3, off(DI)(R8*1), X21, X21

// Q80_TOK does one token's share of a block: activation codes at xmem,
// its scale in the lane of Y21 that idx names, into accumulator acc.
#define Q80_TOK(xmem, idx, acc) \
	VPXORD      xmem, Y18, Y23 \
	VMOVDQA64   Y17, Y24 \
	VPDPBUSD    Y16, Y23, Y24 \
	VCVTDQ2PS   Y24, Y24 \
	VPERMPS     Y21, idx, Y20 \
	VFMADD231PS Y20, Y24, acc

// Q80_X4 does block off of the four-token dot into accumulators a0..a3.
#define Q80_X4(off, a0, a1, a2, a3) \
	Q80_PREP(off, Q80_DX4(off)) \
	Q80_TOK(off+2(DI), Y25, a0) \
	Q80_TOK(off+2(DI)(BX*1), Y26, a1) \
	Q80_TOK(off+2(DI)(BX*2), Y27, a2) \
	Q80_TOK(off+2(DI)(R8*1), Y28, a3)

// Q80_SETUP loads the arguments of a multi-token dot: SI weights, DI
// token 0's blocks, BX the bytes of one token's nb blocks, R8 three times
// that, DX token 4's blocks, CX nb; Y18 0x80 bytes; the lane numbers
// 0..6 in Y25..Y31 and 7 in Y19, each in every lane (the permutes'
// indexes).
#define Q80_SETUP \
	MOVQ   w+0(FP), SI \
	MOVQ   x+8(FP), DI \
	MOVQ   nb+16(FP), CX \
	IMUL3Q $34, CX, BX \
	LEAQ   (BX)(BX*2), R8 \
	LEAQ   (DI)(BX*4), DX \
	MOVL   $0x80808080, AX \
	VPBROADCASTD AX, Y18 \
	MOVL   $0, AX \
	VPBROADCASTD AX, Y25 \
	MOVL   $1, AX \
	VPBROADCASTD AX, Y26 \
	MOVL   $2, AX \
	VPBROADCASTD AX, Y27 \
	MOVL   $3, AX \
	VPBROADCASTD AX, Y28 \
	MOVL   $4, AX \
	VPBROADCASTD AX, Y29 \
	MOVL   $5, AX \
	VPBROADCASTD AX, Y30 \
	MOVL   $6, AX \
	VPBROADCASTD AX, Y31 \
	MOVL   $7, AX \
	VPBROADCASTD AX, Y19

// Q80_PAIRPS and Q80_PAIRPD are the two steps of the transposing lane sum
// of the multi-token dots. Q80_PAIRPS(a, b) leaves, in each 128-bit half,
// [a0+a2, b0+b2, a1+a3, b1+b3]; Q80_PAIRPD of two such results p and q
// leaves [p0+p2, p1+p3, q0+q2, q1+q3]: per token, ((v0+v2)+(v1+v3)) in
// the low half and ((v4+v6)+(v5+v7)) in the high half. t is clobbered.
#define Q80_PAIRPS(a, b, dst, t) \
	VUNPCKLPS b, a, dst \
	VUNPCKHPS b, a, t \
	VADDPS    t, dst, dst

#define Q80_PAIRPD(a, b, dst, t) \
	VUNPCKLPD b, a, dst \
	VUNPCKHPD b, a, t \
	VADDPS    t, dst, dst

// The eight-token dot takes two blocks, k and k+1, at a time in 512-bit
// vectors: block k in the low 256 bits and block k+1 in the high 256 of
// the weight codes (Z16), of each token's codes (Z23) and of the scales,
// so each accumulator Z0..Z7 holds the even blocks' lanes (A) in its low
// half and the odd blocks' (B) in its high half, lane for lane the sums
// the one-token dot keeps in Y0 and Y1. The tokens' block scales come
// converted to float32 from the caller, block-major (dx[b*8+t]), so that
// no scale is gathered from eight tokens' blocks here: the sixteen
// products dw·dx of a pair are one multiply of sixteen loaded dx by the
// two blocks' dw, and token t's pair of scales is taken from lanes t and
// 8+t by a VPERMPS with the lane numbers held in Z8+t.

// Q80Z_TOK does token t's share of a pair of blocks: codes at xa (block
// k) and xb (block k+1), scales in lanes t and 8+t of Z21 (idx names
// them), into accumulator acc.
#define Q80Z_TOK(xa, xb, idx, acc) \
	VMOVDQU64    xa, Y23 \
	VINSERTI64X4 $1, xb, Z23, Z23 \
	VPXORD       Z18, Z23, Z23 \
	VMOVDQA64    Z17, Z24 \
	VPDPBUSD     Z16, Z23, Z24 \
	VCVTDQ2PS    Z24, Z24 \
	VPERMPS      Z21, idx, Z20 \
	VFMADD231PS  Z20, Z24, acc

// Q80Z_PAIR does blocks off/34 and off/34+1 of the eight-token dot, with
// the tokens' scales of the two blocks at (R9).
#define Q80Z_PAIR(off) \
	PREFETCHT0   2304+off(SI) \
	PREFETCHT0   2368+off(SI) \
	VMOVDQU64    off+2(SI), Y16 \
	VINSERTI64X4 $1, off+36(SI), Z16, Z16 \
	VPXORD       Z20, Z20, Z20 \
	VPDPBUSD     Z16, Z18, Z20 \
	VPXORD       Z17, Z17, Z17 \
	VPSUBD       Z20, Z17, Z17 \
	VPBROADCASTW off(SI), X22 \
	VPBROADCASTW off+34(SI), X20 \
	VINSERTI32X4 $1, X20, Y22, Y22 \
	VCVTPH2PS    Y22, Z22 \
	VMOVUPS      (R9), Z21 \
	VMULPS       Z22, Z21, Z21 \
	Q80Z_TOK(off+2(DI), off+36(DI), Z8, Z0) \
	Q80Z_TOK(off+2(DI)(BX*1), off+36(DI)(BX*1), Z9, Z1) \
	Q80Z_TOK(off+2(DI)(BX*2), off+36(DI)(BX*2), Z10, Z2) \
	Q80Z_TOK(off+2(DI)(R8*1), off+36(DI)(R8*1), Z11, Z3) \
	Q80Z_TOK(off+2(DX), off+36(DX), Z12, Z4) \
	Q80Z_TOK(off+2(DX)(BX*1), off+36(DX)(BX*1), Z13, Z5) \
	Q80Z_TOK(off+2(DX)(BX*2), off+36(DX)(BX*2), Z14, Z6) \
	Q80Z_TOK(off+2(DX)(R8*1), off+36(DX)(R8*1), Z15, Z7)

// Q80Z_TAIL does the last block (nb odd) alone, in the low halves: the
// high halves of the weight codes, of −128·Σw and of the scales are zero
// (the token codes' high half repeats the block and multiplies those
// zeros), so B gains exact zeros.
#define Q80Z_TAIL \
	VMOVDQU64    2(SI), Y16 \
	VPXORD       Z20, Z20, Z20 \
	VPDPBUSD     Z16, Z18, Z20 \
	VPXORD       Z17, Z17, Z17 \
	VPSUBD       Z20, Z17, Z17 \
	VPBROADCASTW (SI), X22 \
	VCVTPH2PS    X22, Y22 \
	VMOVUPS      (R9), Y21 \
	VMULPS       Y22, Y21, Y21 \
	Q80Z_TOK(2(DI), 2(DI), Z8, Z0) \
	Q80Z_TOK(2(DI)(BX*1), 2(DI)(BX*1), Z9, Z1) \
	Q80Z_TOK(2(DI)(BX*2), 2(DI)(BX*2), Z10, Z2) \
	Q80Z_TOK(2(DI)(R8*1), 2(DI)(R8*1), Z11, Z3) \
	Q80Z_TOK(2(DX), 2(DX), Z12, Z4) \
	Q80Z_TOK(2(DX)(BX*1), 2(DX)(BX*1), Z13, Z5) \
	Q80Z_TOK(2(DX)(BX*2), 2(DX)(BX*2), Z14, Z6) \
	Q80Z_TOK(2(DX)(R8*1), 2(DX)(R8*1), Z15, Z7)

// Q80Z_IDX sets z to lane number t in its low eight lanes and 8+t in its
// high eight.
#define Q80Z_IDX(t, z) \
	MOVL         $t, AX \
	VPBROADCASTD AX, Y20 \
	MOVL         $(8+t), AX \
	VPBROADCASTD AX, Y24 \
	VINSERTI64X4 $1, Y24, Z20, z

// Q80Z_HALVES leaves A+B of accumulator z (zmm) in its low half y.
#define Q80Z_HALVES(z, y) \
	VEXTRACTF64X4 $1, z, Y20 \
	VADDPS        Y20, y, y

// func dotQ8_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
TEXT ·dotQ8_0x8AVX512(SB), NOSPLIT, $0-40
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   dx+16(FP), R9
	MOVQ   nb+24(FP), CX
	IMUL3Q $34, CX, BX
	LEAQ   (BX)(BX*2), R8
	LEAQ   (DI)(BX*4), DX
	MOVL   $0x80808080, AX
	VPBROADCASTD AX, Z18
	Q80Z_IDX(0, Z8)
	Q80Z_IDX(1, Z9)
	Q80Z_IDX(2, Z10)
	Q80Z_IDX(3, Z11)
	Q80Z_IDX(4, Z12)
	Q80Z_IDX(5, Z13)
	Q80Z_IDX(6, Z14)
	Q80Z_IDX(7, Z15)
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

q80x8loop:
	CMPQ CX, $2
	JLT  q80x8tail
	Q80Z_PAIR(0)
	ADDQ $68, SI
	ADDQ $68, DI
	ADDQ $68, DX
	ADDQ $64, R9
	SUBQ $2, CX
	JMP  q80x8loop

q80x8tail:
	TESTQ CX, CX
	JEQ   q80x8sum
	Q80Z_TAIL

q80x8sum:
	Q80Z_HALVES(Z0, Y0)
	Q80Z_HALVES(Z1, Y1)
	Q80Z_HALVES(Z2, Y2)
	Q80Z_HALVES(Z3, Y3)
	Q80Z_HALVES(Z4, Y4)
	Q80Z_HALVES(Z5, Y5)
	Q80Z_HALVES(Z6, Y6)
	Q80Z_HALVES(Z7, Y7)
	Q80_PAIRPS(Y0, Y1, Y8, Y9)
	Q80_PAIRPS(Y2, Y3, Y10, Y11)
	Q80_PAIRPS(Y4, Y5, Y12, Y13)
	Q80_PAIRPS(Y6, Y7, Y14, Y15)
	Q80_PAIRPD(Y8, Y10, Y0, Y1)
	Q80_PAIRPD(Y12, Y14, Y2, Y3)
	VPERM2F128 $0x20, Y2, Y0, Y4
	VPERM2F128 $0x31, Y2, Y0, Y5
	VADDPS Y5, Y4, Y4
	MOVQ out+32(FP), AX
	VMOVUPS Y4, (AX)
	VZEROUPPER
	RET

// func dotQ8_0x4AVX512(w *byte, x *quant.BlockQ8_0, nb int, out *[4]float32)
TEXT ·dotQ8_0x4AVX512(SB), NOSPLIT, $0-32
	Q80_SETUP
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

q80x4loop:
	CMPQ CX, $2
	JLT  q80x4tail
	Q80_X4(0, Y0, Y1, Y2, Y3)
	Q80_X4(34, Y8, Y9, Y10, Y11)
	ADDQ $68, SI
	ADDQ $68, DI
	SUBQ $2, CX
	JMP  q80x4loop

q80x4tail:
	TESTQ CX, CX
	JEQ   q80x4sum
	Q80_X4(0, Y0, Y1, Y2, Y3)

q80x4sum:
	VADDPS Y8, Y0, Y0
	VADDPS Y9, Y1, Y1
	VADDPS Y10, Y2, Y2
	VADDPS Y11, Y3, Y3
	Q80_PAIRPS(Y0, Y1, Y8, Y9)
	Q80_PAIRPS(Y2, Y3, Y10, Y11)
	Q80_PAIRPD(Y8, Y10, Y0, Y1)
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	MOVQ out+24(FP), AX
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET
