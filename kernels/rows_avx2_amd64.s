//go:build amd64 && !purego

#include "textflag.h"
#include "rowsum_amd64.h"

// Row-run dot products of Q4_0 and Q5_0 weights with Q8_0 activations,
// AVX2 path (AVX2, FMA, F16C): for each of rows consecutive weight rows
// of nb blocks at w, out[r] is the row's dot with the nb activation blocks
// at x (nb, rows >= 1). They sum in float32 vector lanes, as ggml's AVX2
// kernels do, instead of the one serial sum per block of the generic twin
// that the avx2 path's one-token dots (avx2_amd64.s) keep.
//
// Integer part: the weight codes are unsigned bytes u (Q4_0: the nibble,
// 0..15; Q5_0: the nibble and the fifth bit, 0..31), VPMADDUBSW multiplies
// them with the signed activation bytes x and sums pairs into 16-bit lanes
// (at most 31*128*2 in magnitude, so it never saturates), further 16-bit
// and dword sums (FOLD) reduce them to one dword per block, and adding the
// block's offset -o·Σx (o = 8 or 16, the code offset), which rowsPrepAVX2
// computes once per product, leaves the exact Σ (u-o)·x of the block for
// every code and every activation byte, -128 included. (No sign trick:
// VPSIGNB of an activation byte of -128 wraps.)
//
// Float part: the exact block sums are converted to float32 and fused-
// multiply-added with the blocks' dw·dx (float32) into float32 lanes,
// reduced once per row: the results equal the generic twins up to the
// rounding of the summation order, as ggml's own SIMD kernels do.
//
// Layout: a 256-bit register of codes holds a pair of blocks, values 0-15
// of both (low nibbles: block 0 in the lower 128-bit lane, block 1 in the
// upper) or values 16-31 of both (high nibbles), so that one VPSRLW and two
// VPANDs split the 32 qs bytes of two blocks. The activations are brought
// into that order once per product by rowsPrepAVX2. A row takes eight
// blocks (four pairs) per iteration: the two VPMADDUBSWs of a pair added
// leave 16-bit lanes of four products each, and FOLD sums a group's four
// pairs to one dword per block, in the order [0 2 4 6 1 3 5 7]: the
// quadwords of two pairs interleaved and added (eight products a 16-bit
// lane, at most 31*128*8 = 31744 in magnitude, so no overflow), VPMADDWD,
// and the even and odd dwords of two such registers picked (VSHUFPS) and
// added. Then one VPADDD of the offsets, one conversion and one fused
// multiply-add with the group's eight dw·dx. The last nb%8 blocks go one
// at a time from x, codes [0-15 | 16-31] as they are stored, into the
// same accumulator. From cache (BenchmarkQuantRows, avx2, alternated runs
// on a Zen 4 VM), that fold made Q4_0 26.0 GB/cpu-s and Q5_0 19.3,
// against 24.0 and 18.0 for a conversion, a fused multiply-add and an
// in-lane VPERMILPS spreading dw·dx per pair (four accumulators).
//
// Scales: a group's eight f16 weight scales are loaded and joined in
// general registers in the order [0 2 4 6 1 3 5 7] (two quadwords, moved
// by VMOVQ and VPINSRQ), converted at once and multiplied by the eight
// activation scales the prep stored as float32 in that order. Against a
// VPINSRW from memory per scale, that made Q4_0 28.2 GB/cpu-s against 26.0
// (Q5_0 the same, 19.3): the vector ports are the bound.
//
// The software prefetches are the avx512 row runs' (newq_avx512_amd64.s):
// 32 iterations ahead into L1, 96 into L2.

// rowsPrepAVX2's scratch, per whole group of eight blocks (320 bytes,
// within q80ScrBytes): for each pair p of blocks (2p, 2p+1), at 64p, the
// activation bytes of values 0-15 of both (32 bytes) and of values 16-31
// of both (32 bytes); at 256 the eight blocks' offsets -o·Σx as dwords and
// at 288 their scales as float32, both in the order [0 2 4 6 1 3 5 7].
// The first group starts at the scratch aligned up to 64 bytes.

// The activation scale of block k of a group of Q8_0 blocks at DI.
#define XD(k) (34*(k))(DI)

// FOLD leaves in r0 the dword sums of the 16-bit lanes of the group's four
// pairs r0-r3 (each [block 2p | block 2p+1], eight lanes a block) times
// the words of m, one per block in the order [0 2 4 6 1 3 5 7]. Clobbers
// r2, t.
#define FOLD(r0, r1, r2, r3, t, m) \
	VPUNPCKLQDQ r1, r0, t \
	VPUNPCKHQDQ r1, r0, r0 \
	VPADDW      t, r0, r0 \
	VPUNPCKLQDQ r3, r2, t \
	VPUNPCKHQDQ r3, r2, r2 \
	VPADDW      t, r2, r2 \
	VPMADDWD    m, r0, r0 \
	VPMADDWD    m, r2, r2 \
	VSHUFPS     $0x88, r2, r0, t \
	VSHUFPS     $0xdd, r2, r0, r0 \
	VPADDD      t, r0, r0

// PREPPAIR stores pair p's activations (blocks 2p and 2p+1 of the group of
// Q8_0 blocks at DI) at 64p(BX) and leaves o·x of them summed in pairs of
// values (16-bit lanes, the halves added) in y. Y13 holds o in every byte.
#define PREPPAIR(p, x, y, xt, yt) \
	VMOVDQU     (68*(p)+2)(DI), x \
	VINSERTI128 $1, (68*(p)+36)(DI), y, y \
	VMOVDQU     (68*(p)+18)(DI), xt \
	VINSERTI128 $1, (68*(p)+52)(DI), yt, yt \
	VMOVDQA     y, (64*(p))(BX) \
	VMOVDQA     yt, (64*(p)+32)(BX) \
	VPMADDUBSW  y, Y13, y \
	VPMADDUBSW  yt, Y13, yt \
	VPADDW      yt, y, y

// WSCALES leaves in Y4 dw·dx of the group of eight blocks of bb bytes at
// SI, in the order [0 2 4 6 1 3 5 7] (dx from 288(BX)). Clobbers AX, DX.
#define WSCALES(bb) \
	MOVWLZX   0(SI), AX \
	MOVWLZX   (2*(bb))(SI), DX \
	SHLL      $16, DX \
	ORL       DX, AX \
	MOVWLZX   (4*(bb))(SI), DX \
	SHLQ      $32, DX \
	ORQ       DX, AX \
	MOVWLZX   (6*(bb))(SI), DX \
	SHLQ      $48, DX \
	ORQ       DX, AX \
	VMOVQ     AX, X4 \
	MOVWLZX   (bb)(SI), AX \
	MOVWLZX   (3*(bb))(SI), DX \
	SHLL      $16, DX \
	ORL       DX, AX \
	MOVWLZX   (5*(bb))(SI), DX \
	SHLQ      $32, DX \
	ORQ       DX, AX \
	MOVWLZX   (7*(bb))(SI), DX \
	SHLQ      $48, DX \
	ORQ       DX, AX \
	VPINSRQ   $1, AX, X4, X4 \
	VCVTPH2PS X4, Y4 \
	VMULPS    288(BX), Y4, Y4

// PAIRMUL leaves in lo pair p's u·x summed in fours of values (16-bit
// lanes), its codes of values 0-15 in lo and of 16-31 in hi.
#define PAIRMUL(p, lo, hi) \
	VPMADDUBSW (64*(p))(BX), lo, lo \
	VPMADDUBSW (64*(p)+32)(BX), hi, hi \
	VPADDW     hi, lo, lo

// GROUPFIN folds the group's pairs (Y5-Y8, Y9 clobbered), adds the
// offsets, converts and accumulates into Y0 with the scales in Y4. Y14
// holds 1 in every word.
#define GROUPFIN \
	FOLD(Y5, Y6, Y7, Y8, Y9, Y14) \
	VPADDD      256(BX), Y5, Y5 \
	VCVTDQ2PS   Y5, Y5 \
	VFMADD231PS Y4, Y5, Y0

// Q4PAIR leaves the codes of Q4_0 pair p of the group at SI in lo (values
// 0-15; x its 128-bit name) and hi (16-31).
#define Q4PAIR(p, x, lo, hi) \
	VMOVDQU     (36*(p)+2)(SI), x \
	VINSERTI128 $1, (36*(p)+20)(SI), lo, lo \
	VPSRLW      $4, lo, hi \
	VPAND       Y15, lo, lo \
	VPAND       Y15, hi, hi

// Q5PAIR leaves the codes of Q5_0 pair p of the group at SI in lo and hi:
// the nibbles, and 16 where the fifth bit is set. The two blocks' qh
// dwords, one per 128-bit lane, are spread a byte per value (VPSHUFB: Y13
// for values 0-15, Y12 for 16-31), the value's bit isolated and compared
// (Y11: 1<<(j%8) in byte j) and the result masked to 16 (Y10). Clobbers
// t1, t2.
#define Q5PAIR(p, x, lo, hi, t1, t2) \
	VMOVDQU      (44*(p)+6)(SI), x \
	VINSERTI128  $1, (44*(p)+28)(SI), lo, lo \
	VPSRLW       $4, lo, hi \
	VPAND        Y15, lo, lo \
	VPAND        Y15, hi, hi \
	VPBROADCASTD (44*(p)+2)(SI), t1 \
	VPBROADCASTD (44*(p)+24)(SI), t2 \
	VPBLENDD     $0xf0, t2, t1, t1 \
	VPSHUFB      Y12, t1, t2 \
	VPSHUFB      Y13, t1, t1 \
	VPAND        Y11, t1, t1 \
	VPAND        Y11, t2, t2 \
	VPCMPEQB     Y11, t1, t1 \
	VPCMPEQB     Y11, t2, t2 \
	VPAND        Y10, t1, t1 \
	VPAND        Y10, t2, t2 \
	VPOR         t1, lo, lo \
	VPOR         t2, hi, hi

// TAILFIN adds the Σ (u-o)·x lanes of one block, its codes [values 0-15 |
// 16-31] in Y6, the Q8_0 block at DI, times dw·dx (dw at 0(SI)) into Y0;
// ob holds o in every byte. Clobbers AX, DX, Y7, Y8.
#define TAILFIN(ob) \
	VMOVDQU      2(DI), Y7 \
	VPMADDUBSW   Y7, Y6, Y6 \
	VPMADDUBSW   Y7, ob, Y7 \
	VPSUBW       Y7, Y6, Y6 \
	VPMADDWD     Y14, Y6, Y6 \
	TAILSCALE

// TAILSCALE converts the dword lanes of one block in Y6 and adds them
// times dw·dx (dw at 0(SI), dx at 0(DI)) into Y0. Clobbers AX, DX, Y7,
// Y8.
#define TAILSCALE ROW_F16SCALE(Y6, X7, Y7, X8, DX)

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

// ROWSTART zeroes the accumulator and points BX at the scratch and CX at
// the whole groups of the row.
#define ROWSTART \
	MOVQ   R8, BX \
	MOVQ   R10, CX \
	VXORPS Y0, Y0, Y0

// ROWTAIL points DI and CX at the tail's activation blocks and count.
#define ROWTAIL \
	MOVQ   R9, DI \
	MOVQ   R12, CX \
	ANDQ   $7, CX

// func dotQ4_0RowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotQ4_0RowsAVX2(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWSETUP
	MOVQ $0, ROWS8_KEPT
	MOVL $0x08080808, AX
	VMOVD AX, X13
	VPBROADCASTD X13, Y13
q40row:
	ROWSTART
	TESTQ CX, CX
	JZ    q40fold
q40group:
	ROWS_PREFETCH(4608, 13824)
	WSCALES(18)
	Q4PAIR(0, X5, Y5, Y1)
	PAIRMUL(0, Y5, Y1)
	Q4PAIR(1, X6, Y6, Y2)
	PAIRMUL(1, Y6, Y2)
	Q4PAIR(2, X7, Y7, Y3)
	PAIRMUL(2, Y7, Y3)
	Q4PAIR(3, X8, Y8, Y1)
	PAIRMUL(3, Y8, Y1)
	GROUPFIN
	ADDQ $144, SI
	ADDQ $320, BX
	DECQ CX
	JNZ  q40group
q40fold:
	ROWTAIL
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
	ROWEND_Y0(q40row, q40kept, q40adv, q40next)
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
TEXT ·dotQ5_0RowsAVX2(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWSETUP
	MOVQ $0, ROWS8_KEPT
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
	ROWS_PREFETCH(5632, 16896)
	WSCALES(22)
	Q5PAIR(0, X5, Y5, Y1, Y2, Y3)
	PAIRMUL(0, Y5, Y1)
	Q5PAIR(1, X6, Y6, Y1, Y2, Y3)
	PAIRMUL(1, Y6, Y1)
	Q5PAIR(2, X7, Y7, Y1, Y2, Y3)
	PAIRMUL(2, Y7, Y1)
	Q5PAIR(3, X8, Y8, Y1, Y2, Y3)
	PAIRMUL(3, Y8, Y1)
	GROUPFIN
	ADDQ $176, SI
	ADDQ $320, BX
	DECQ CX
	JNZ  q50group
q50fold:
	ROWTAIL
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
	ROWEND_Y0(q50row, q50kept, q50adv, q50next)
	VZEROUPPER
	RET

// IQ4_NL's codes stand for signed codebook values w (-127..113), whose
// offset form (w+128 up to 241) would saturate VPMADDUBSW. Its kernel
// multiplies |x| (VPABSB: 128 for -128, as an unsigned byte) by w with
// x's sign (VPSIGNB of the weights, which never hold -128, so nothing
// wraps): pairs of at most 2*128*127, summed to dwords per register
// before FOLDD adds the two halves and the pairs. The prep's offsets are
// zero (offset 0) and not read.

// iq4Signed is IQ4_NL's codebook as signed bytes, twice (one copy per
// 128-bit lane of a VPSHUFB).
DATA iq4Signed<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4Signed<>+8(SB)/8, $0x7159453526190d01
DATA iq4Signed<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4Signed<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4Signed<>(SB), RODATA|NOPTR, $32

// FOLDD is FOLD for pairs already in dwords (four a block).
#define FOLDD(r0, r1, r2, r3, t) \
	VPUNPCKLQDQ r1, r0, t \
	VPUNPCKHQDQ r1, r0, r0 \
	VPADDD      t, r0, r0 \
	VPUNPCKLQDQ r3, r2, t \
	VPUNPCKHQDQ r3, r2, r2 \
	VPADDD      t, r2, r2 \
	VSHUFPS     $0x88, r2, r0, t \
	VSHUFPS     $0xdd, r2, r0, r0 \
	VPADDD      t, r0, r0

// NLPAIR leaves in lo IQ4_NL pair p's Σ w·x in dwords (four a block),
// the group at SI, its activations at 64p(BX), Y13 the codebook. Clobbers
// hi, t.
#define NLPAIR(p, x, lo, hi, t) \
	VMOVDQU     (36*(p)+2)(SI), x \
	VINSERTI128 $1, (36*(p)+20)(SI), lo, lo \
	VPSRLW      $4, lo, hi \
	VPAND       Y15, lo, lo \
	VPAND       Y15, hi, hi \
	VPSHUFB     lo, Y13, lo \
	VPSHUFB     hi, Y13, hi \
	VPSIGNB     (64*(p))(BX), lo, lo \
	VPSIGNB     (64*(p)+32)(BX), hi, hi \
	VPABSB      (64*(p))(BX), t \
	VPMADDUBSW  lo, t, lo \
	VPABSB      (64*(p)+32)(BX), t \
	VPMADDUBSW  hi, t, hi \
	VPMADDWD    Y14, lo, lo \
	VPMADDWD    Y14, hi, hi \
	VPADDD      hi, lo, lo

// func dotIQ4NLRowsAVX2(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotIQ4NLRowsAVX2(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWSETUP
	MOVQ $0, ROWS8_KEPT
	VMOVDQU iq4Signed<>(SB), Y13
iq4nlrow:
	ROWSTART
	TESTQ CX, CX
	JZ    iq4nlfold
iq4nlgroup:
	ROWS_PREFETCH(4608, 13824)
	WSCALES(18)
	NLPAIR(0, X5, Y5, Y1, Y2)
	NLPAIR(1, X6, Y6, Y1, Y2)
	NLPAIR(2, X7, Y7, Y1, Y2)
	NLPAIR(3, X8, Y8, Y1, Y2)
	FOLDD(Y5, Y6, Y7, Y8, Y9)
	VCVTDQ2PS   Y5, Y5
	VFMADD231PS Y4, Y5, Y0
	ADDQ $144, SI
	ADDQ $320, BX
	DECQ CX
	JNZ  iq4nlgroup
iq4nlfold:
	ROWTAIL
	JZ   iq4nldone
iq4nltail:
	VMOVDQU     2(SI), X6
	VPSRLW      $4, X6, X7
	VINSERTI128 $1, X7, Y6, Y6
	VPAND       Y15, Y6, Y6
	VPSHUFB     Y6, Y13, Y6
	VPSIGNB     2(DI), Y6, Y6
	VPABSB      2(DI), Y7
	VPMADDUBSW  Y6, Y7, Y6
	VPMADDWD    Y14, Y6, Y6
	TAILSCALE
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4nltail
iq4nldone:
	ROWEND_Y0(iq4nlrow, iq4nlkept, iq4nladv, iq4nlnext)
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
	PREPPAIR(0, X5, Y5, X1, Y1)
	PREPPAIR(1, X6, Y6, X1, Y1)
	PREPPAIR(2, X7, Y7, X1, Y1)
	PREPPAIR(3, X8, Y8, X1, Y1)
	FOLD(Y5, Y6, Y7, Y8, Y9, Y12)
	VMOVDQA   Y5, 256(BX)
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
	VMOVDQA   Y4, 288(BX)
	ADDQ $272, DI
	ADDQ $320, BX
	DECQ CX
	JNZ  prep
prepdone:
	VZEROUPPER
	RET
