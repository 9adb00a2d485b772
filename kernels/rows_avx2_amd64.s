//go:build amd64 && !purego

#include "textflag.h"

// Row-run dot products of Q4_0 and Q5_0 weights with Q8_0 activations,
// AVX2 path (AVX2, FMA, F16C): for each of rows consecutive weight rows
// of nb blocks at w, out[r] is the row's dot with the nb activation blocks
// at x (nb, rows >= 1). They sum in float32 vector lanes, as ggml's AVX2
// kernels do, instead of the one serial sum per block of the generic twin
// that the avx2 path's one-token dots (avx2_amd64.s) keep.
//
// Integer part, per block: the weight codes are unsigned bytes u (Q4_0:
// the nibble, 0..15; Q5_0: the nibble and the fifth bit, 0..31), VPMADDUBSW
// multiplies them with the signed activation bytes x and sums pairs into
// 16-bit lanes (at most 31*128*2 in magnitude, so it never saturates), and
// VPMADDWD with 16-bit ones sums those into dword lanes. Adding the offset
// lanes -o·Σx (o = 8 or 16, the code offset), which rowsPrepAVX2 computes
// once per product, leaves the exact Σ (u-o)·x of each lane's values for
// every code and every activation byte, -128 included. (No sign trick:
// VPSIGNB of an activation byte of -128 wraps.)
//
// Float part: the exact dword lanes are converted to float32 and fused-
// multiply-added with the block's dw·dx (float32) into float32 lanes,
// reduced once per row: the results equal the generic twins up to the
// rounding of the summation order, as ggml's own SIMD kernels do.
//
// Layout: a 256-bit register of codes holds a pair of blocks, values 0-15
// of both (low nibbles: block 0 in the lower 128-bit lane, block 1 in the
// upper) or values 16-31 of both (high nibbles), so that one VPSRLW and two
// VPANDs split the 32 qs bytes of two blocks, and one conversion and one
// fused multiply-add serve two blocks, their dw·dx spread four lanes each.
// The activations are brought into that order once per product by
// rowsPrepAVX2. A row takes eight blocks (four pairs) per iteration, each
// pair into an accumulator of its own (four fused multiply-add chains),
// and the last nb%8 blocks one at a time from x, codes [0-15 | 16-31] as
// they are stored.
//
// Scales: a group's eight f16 weight scales are gathered by VPINSRW in the
// order [0 2 4 6 1 3 5 7], converted at once, multiplied by the eight
// activation scales the prep stored as float32 in that order, and spread
// to the pairs' [dw·dx of block 2p ×4 | of block 2p+1 ×4] by one
// in-lane VPERMILPS each.

// rowsPrepAVX2's scratch, per whole group of eight blocks (416 bytes,
// q80ScrBytes's size): for each pair p of blocks (2p, 2p+1), at 96p, the
// activation bytes of values 0-15 of both (32 bytes), of values 16-31 of
// both (32 bytes) and the eight dword offset lanes -o·Σx of the codes'
// lanes (32 bytes); at 384 the eight activation scales as float32 in the
// order [0 2 4 6 1 3 5 7]. The first group starts at the scratch aligned
// up to 64 bytes.

// The activation scale of block k of a group of Q8_0 blocks at DI.
#define XD(k) (34*(k))(DI)

// PREPPAIR stores pair p's activations (blocks 2p and 2p+1 of the group of
// Q8_0 blocks at DI) and offset lanes at 96p(BX). Y13 holds o in every
// byte, Y12 -1 in every word. o·x pairs sum to at most 16*128*2, and two
// of them to 2^13, in 16-bit lanes.
#define PREPPAIR(p) \
	VMOVDQU     (68*(p)+2)(DI), X4 \
	VINSERTI128 $1, (68*(p)+36)(DI), Y4, Y4 \
	VMOVDQU     (68*(p)+18)(DI), X5 \
	VINSERTI128 $1, (68*(p)+52)(DI), Y5, Y5 \
	VMOVDQA     Y4, (96*(p))(BX) \
	VMOVDQA     Y5, (96*(p)+32)(BX) \
	VPMADDUBSW  Y4, Y13, Y4 \
	VPMADDUBSW  Y5, Y13, Y5 \
	VPADDW      Y5, Y4, Y4 \
	VPMADDWD    Y12, Y4, Y4 \
	VMOVDQA     Y4, (96*(p)+64)(BX)

// WSCALES leaves in Y4 dw·dx of the group of eight blocks of bb bytes at
// SI, in the order [0 2 4 6 1 3 5 7] (dx from 384(BX)). Clobbers AX.
#define WSCALES(bb) \
	MOVWLZX   0(SI), AX \
	VMOVD     AX, X4 \
	VPINSRW   $1, (2*(bb))(SI), X4, X4 \
	VPINSRW   $2, (4*(bb))(SI), X4, X4 \
	VPINSRW   $3, (6*(bb))(SI), X4, X4 \
	VPINSRW   $4, (bb)(SI), X4, X4 \
	VPINSRW   $5, (3*(bb))(SI), X4, X4 \
	VPINSRW   $6, (5*(bb))(SI), X4, X4 \
	VPINSRW   $7, (7*(bb))(SI), X4, X4 \
	VCVTPH2PS X4, Y4 \
	VMULPS    384(BX), Y4, Y4

// PAIRFIN adds pair p's Σ (u-o)·x lanes, the codes of values 0-15 in Y6
// and of values 16-31 in Y7, times its dw·dx (VPERMILPS imm picks them
// out of Y4) into acc. Y14 holds 1 in every word.
#define PAIRFIN(p, imm, acc) \
	VPMADDUBSW  (96*(p))(BX), Y6, Y6 \
	VPMADDUBSW  (96*(p)+32)(BX), Y7, Y7 \
	VPADDW      Y7, Y6, Y6 \
	VPMADDWD    Y14, Y6, Y6 \
	VPADDD      (96*(p)+64)(BX), Y6, Y6 \
	VCVTDQ2PS   Y6, Y6 \
	VPERMILPS   imm, Y4, Y7 \
	VFMADD231PS Y7, Y6, acc

// Q4PAIR leaves the codes of Q4_0 pair p of the group at SI in Y6 (values
// 0-15) and Y7 (16-31).
#define Q4PAIR(p) \
	VMOVDQU     (36*(p)+2)(SI), X6 \
	VINSERTI128 $1, (36*(p)+20)(SI), Y6, Y6 \
	VPSRLW      $4, Y6, Y7 \
	VPAND       Y15, Y6, Y6 \
	VPAND       Y15, Y7, Y7

// Q5PAIR leaves the codes of Q5_0 pair p of the group at SI in Y6 and Y7:
// the nibbles, and 16 where the fifth bit is set. The two blocks' qh
// dwords, one per 128-bit lane, are spread a byte per value (VPSHUFB: Y13
// for values 0-15, Y12 for 16-31), the value's bit isolated and compared
// (Y11: 1<<(j%8) in byte j) and the result masked to 16 (Y10).
#define Q5PAIR(p) \
	VMOVDQU      (44*(p)+6)(SI), X6 \
	VINSERTI128  $1, (44*(p)+28)(SI), Y6, Y6 \
	VPSRLW       $4, Y6, Y7 \
	VPAND        Y15, Y6, Y6 \
	VPAND        Y15, Y7, Y7 \
	VPBROADCASTD (44*(p)+2)(SI), Y8 \
	VPBROADCASTD (44*(p)+24)(SI), Y9 \
	VPBLENDD     $0xf0, Y9, Y8, Y8 \
	VPSHUFB      Y12, Y8, Y9 \
	VPSHUFB      Y13, Y8, Y8 \
	VPAND        Y11, Y8, Y8 \
	VPAND        Y11, Y9, Y9 \
	VPCMPEQB     Y11, Y8, Y8 \
	VPCMPEQB     Y11, Y9, Y9 \
	VPAND        Y10, Y8, Y8 \
	VPAND        Y10, Y9, Y9 \
	VPOR         Y8, Y6, Y6 \
	VPOR         Y9, Y7, Y7

// TAILFIN adds the Σ (u-o)·x lanes of one block, its codes [values 0-15 |
// 16-31] in Y6, the Q8_0 block at DI, times dw·dx (dw at 0(SI)) into Y0;
// ob holds o in every byte. Clobbers AX, DX, Y7, Y8.
#define TAILFIN(ob) \
	VMOVDQU      2(DI), Y7 \
	VPMADDUBSW   Y7, Y6, Y6 \
	VPMADDUBSW   Y7, ob, Y7 \
	VPSUBW       Y7, Y6, Y6 \
	VPMADDWD     Y14, Y6, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	MOVWLZX      0(SI), AX \
	MOVWLZX      0(DI), DX \
	SHLL         $16, DX \
	ORL          DX, AX \
	VMOVD        AX, X7 \
	VCVTPH2PS    X7, X7 \
	VMOVSHDUP    X7, X8 \
	VMULSS       X8, X7, X7 \
	VBROADCASTSS X7, Y7 \
	VFMADD231PS  Y7, Y6, Y0

// ROWSETUP loads the arguments (w SI, nb R12, rows R13, out R14, the
// scratch aligned up to 64 bytes R8), the tail's first activation block
// (R9, past the whole groups), the whole groups (R10), 0x0f bytes (Y15)
// and 1 words (Y14).
#define ROWSETUP \
	MOVQ w+0(FP), SI \
	MOVQ x+8(FP), R9 \
	MOVQ nb+16(FP), R12 \
	MOVQ rows+24(FP), R13 \
	MOVQ out+32(FP), R14 \
	MOVQ scr+40(FP), R8 \
	ADDQ $63, R8 \
	ANDQ $-64, R8 \
	MOVQ R12, R10 \
	SHRQ $3, R10 \
	IMUL3Q $272, R10, AX \
	ADDQ AX, R9 \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15 \
	MOVL $0x00010001, AX \
	VMOVD AX, X14 \
	VPBROADCASTD X14, Y14

// ROWSTART zeroes the accumulators and points BX at the scratch and CX
// at the whole groups of the row.
#define ROWSTART \
	MOVQ   R8, BX \
	MOVQ   R10, CX \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// ROWFOLD adds the four accumulators into Y0 and points DI and CX at the
// tail's activation blocks and count.
#define ROWFOLD \
	VADDPS Y1, Y0, Y0 \
	VADDPS Y3, Y2, Y2 \
	VADDPS Y2, Y0, Y0 \
	MOVQ   R9, DI \
	MOVQ   R12, CX \
	ANDQ   $7, CX

// HSUMROW stores the sum of the eight float lanes of Y0 to (R14) and
// advances R14.
#define HSUMROW \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X1, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, (R14) \
	ADDQ         $4, R14

// func dotQ4_0RowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotQ4_0RowsAVX2(SB), NOSPLIT, $0-48
	ROWSETUP
	MOVL $0x08080808, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
q40row:
	ROWSTART
	TESTQ CX, CX
	JZ    q40fold
q40group:
	PREFETCHT0 4608(SI)
	PREFETCHT0 (4608+64)(SI)
	PREFETCHT0 (4608+128)(SI)
	PREFETCHT1 13824(SI)
	PREFETCHT1 (13824+64)(SI)
	PREFETCHT1 (13824+128)(SI)
	WSCALES(18)
	Q4PAIR(0)
	PAIRFIN(0, $0x00, Y0)
	Q4PAIR(1)
	PAIRFIN(1, $0x55, Y1)
	Q4PAIR(2)
	PAIRFIN(2, $0xaa, Y2)
	Q4PAIR(3)
	PAIRFIN(3, $0xff, Y3)
	ADDQ $144, SI
	ADDQ $416, BX
	DECQ CX
	JNZ  q40group
q40fold:
	ROWFOLD
	JZ   q40done
q40tail:
	VMOVDQU     2(SI), X6
	VPSRLW      $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND       Y15, Y6, Y6
	TAILFIN(Y13)
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q40tail
q40done:
	HSUMROW
	DECQ R13
	JNZ  q40row
	VZEROUPPER
	RET

// q5Spread spreads the qh dword of each 128-bit lane a byte per value:
// values 0-15 (Lo), 16-31 (Hi), and for one block, values 0-31 (One).
DATA q5SpreadLo<>+0(SB)/8, $0x0000000000000000
DATA q5SpreadLo<>+8(SB)/8, $0x0101010101010101
DATA q5SpreadLo<>+16(SB)/8, $0x0000000000000000
DATA q5SpreadLo<>+24(SB)/8, $0x0101010101010101
GLOBL q5SpreadLo<>(SB), RODATA|NOPTR, $32
DATA q5SpreadHi<>+0(SB)/8, $0x0202020202020202
DATA q5SpreadHi<>+8(SB)/8, $0x0303030303030303
DATA q5SpreadHi<>+16(SB)/8, $0x0202020202020202
DATA q5SpreadHi<>+24(SB)/8, $0x0303030303030303
GLOBL q5SpreadHi<>(SB), RODATA|NOPTR, $32
DATA q5SpreadOne<>+0(SB)/8, $0x0000000000000000
DATA q5SpreadOne<>+8(SB)/8, $0x0101010101010101
DATA q5SpreadOne<>+16(SB)/8, $0x0202020202020202
DATA q5SpreadOne<>+24(SB)/8, $0x0303030303030303
GLOBL q5SpreadOne<>(SB), RODATA|NOPTR, $32

// func dotQ5_0RowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotQ5_0RowsAVX2(SB), NOSPLIT, $0-48
	ROWSETUP
	VMOVDQU q5SpreadLo<>(SB), Y13
	VMOVDQU q5SpreadHi<>(SB), Y12
	MOVQ $0x8040201008040201, AX
	VMOVQ AX, X11
	VPBROADCASTQ X11, Y11
	MOVL $0x10101010, AX
	VMOVD AX, X10
	VPBROADCASTD X10, Y10
q50row:
	ROWSTART
	TESTQ CX, CX
	JZ    q50fold
q50group:
	PREFETCHT0 5632(SI)
	PREFETCHT0 (5632+64)(SI)
	PREFETCHT0 (5632+128)(SI)
	PREFETCHT1 16896(SI)
	PREFETCHT1 (16896+64)(SI)
	PREFETCHT1 (16896+128)(SI)
	WSCALES(22)
	Q5PAIR(0)
	PAIRFIN(0, $0x00, Y0)
	Q5PAIR(1)
	PAIRFIN(1, $0x55, Y1)
	Q5PAIR(2)
	PAIRFIN(2, $0xaa, Y2)
	Q5PAIR(3)
	PAIRFIN(3, $0xff, Y3)
	ADDQ $176, SI
	ADDQ $416, BX
	DECQ CX
	JNZ  q50group
q50fold:
	ROWFOLD
	JZ   q50done
q50tail:
	VMOVDQU      6(SI), X6
	VPSRLW       $4, X6, X7
	VINSERTI128  $1, X7, Y6, Y6
	VPAND        Y15, Y6, Y6
	VPBROADCASTD 2(SI), Y7
	VPSHUFB      q5SpreadOne<>(SB), Y7, Y7
	VPAND        Y11, Y7, Y7
	VPCMPEQB     Y11, Y7, Y7
	VPAND        Y10, Y7, Y7
	VPOR         Y7, Y6, Y6
	TAILFIN(Y10)
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50tail
q50done:
	HSUMROW
	DECQ R13
	JNZ  q50row
	VZEROUPPER
	RET

// func rowsPrepAVX2(x *quant.BlockQ8_0, nb int, off uint32, scr *byte)
//
// rowsPrepAVX2 writes the scratch of the AVX2 row-run dots for the nb
// blocks at x, off the code offset o in every byte (nb >= 1): nothing
// for nb < 8 (the tail reads x).
TEXT ·rowsPrepAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), DI
	MOVQ nb+8(FP), CX
	MOVL off+16(FP), AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
	VPCMPEQW Y12, Y12, Y12
	MOVQ scr+24(FP), BX
	ADDQ $63, BX
	ANDQ $-64, BX
	SHRQ $3, CX
	JZ   prepdone
prep:
	PREPPAIR(0)
	PREPPAIR(1)
	PREPPAIR(2)
	PREPPAIR(3)
	MOVWLZX   XD(0), AX
	VMOVD     AX, X4
	VPINSRW   $1, XD(2), X4, X4
	VPINSRW   $2, XD(4), X4, X4
	VPINSRW   $3, XD(6), X4, X4
	VPINSRW   $4, XD(1), X4, X4
	VPINSRW   $5, XD(3), X4, X4
	VPINSRW   $6, XD(5), X4, X4
	VPINSRW   $7, XD(7), X4, X4
	VCVTPH2PS X4, Y4
	VMOVDQA   Y4, 384(BX)
	ADDQ $272, DI
	ADDQ $416, BX
	DECQ CX
	JNZ  prep
prepdone:
	VZEROUPPER
	RET
