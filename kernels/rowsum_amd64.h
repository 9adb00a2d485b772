// Macros shared by the row-run dots that keep a row's sum in the eight
// float lanes of Y0 (newq_avx512_amd64.s, mxfp4_amd64.s,
// rows_avx2_amd64.s, iq4xs_avx2_amd64.s).

// ROW_F16SCALE converts the dword lanes of one block in lanes and adds
// them into Y0 times the product of the f16 weight scale at 0(SI) and the
// f16 activation scale at 0(DI), rounded once; xa and ya (one register),
// xb and gp are clobbered, and AX.
#define ROW_F16SCALE(lanes, xa, ya, xb, gp) \
	VCVTDQ2PS    lanes, lanes \
	MOVWLZX      0(SI), AX \
	MOVWLZX      0(DI), gp \
	SHLL         $16, gp \
	ORL          gp, AX \
	VMOVD        AX, xa \
	VCVTPH2PS    xa, xa \
	VMOVSHDUP    xa, xb \
	VMULSS       xb, xa, xa \
	VBROADCASTSS xa, ya \
	VFMADD231PS  ya, lanes, Y0

// ROWSUM_Y0 stores the sum of the eight float lanes of Y0 to (R14) and
// advances R14 (X1 clobbered).
#define ROWSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X1, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0 \
	VMOVSS       X0, (R14) \
	ADDQ         $4, R14

// ROWS_PREFETCH prefetches three lines at t1(SI) into L2 and three at
// t0(SI) into L1: the 32-value row runs take it once per group of eight
// blocks, 96 groups ahead into L2 and 32 into L1 (the distances are the
// type's group size times those; newq_avx512_amd64.s says how they were
// chosen), and the avx512 IQ4_XS runs once per block, 96 and 16 blocks
// ahead.
//
// The far set goes first. With the L1 set first, a one-token product
// of Q4_0 weights streamed from DRAM (2048x5632, copies adding up to
// 512 MiB, the same pool multiplying with either kernel in turn, Zen 4
// VM) took 4-6% more time at one thread and 3-4% more at two; Q5_0 0-1%
// and 1-2.5%, the avx2 Q4_0 run 0 and 0-1.5% (three runs each; the same
// kernel against itself gave 0.99-1.005). Other distances, first or
// second, were slower: the L2 set 64 or 128 groups ahead (1-8%), the L1
// set 16 groups (0-2%), and no L1 set at all (2-9%); 48 groups matched.
#define ROWS_PREFETCH(t0, t1) \
	PREFETCHT1 t1(SI) \
	PREFETCHT1 (t1+64)(SI) \
	PREFETCHT1 (t1+128)(SI) \
	PREFETCHT0 t0(SI) \
	PREFETCHT0 (t0+64)(SI) \
	PREFETCHT0 (t0+128)(SI)

// A row-run kernel whose rows are short pays ROWSUM_Y0 at every row:
// seven dependent steps that the next row's loop can hide only in part
// (Q5_0 rows of 2048 values read 4% more GB/cpu-s from cache with it
// left out, 9% at 1024). ROWEND_Y0 instead keeps each row's lanes in the
// frame while at least eight rows of the run are left and sums eight
// rows at once (ROWS8_SUM): the same additions of the same lanes as
// ROWSUM_Y0 (IEEE addition commutes), so every row still equals the
// one-token dot, a run of one, bit for bit. A kernel that uses it has a
// frame of ROWS8_FRAME bytes, zeroes ROWS8_KEPT before its first row,
// counts its rows left (this one included) in R13 and its outputs in R14.

// ROWS8_FRAME is the frame ROWEND_Y0 uses: eight 32-byte slots of kept
// rows at 0(SP), and their count at ROWS8_KEPT.
#define ROWS8_FRAME 264
#define ROWS8_KEPT 256(SP)

// ROWS8_ARGS opens the group count and loads a row run's arguments
// (func(w *byte, x *X, nb, rows int, out *float32, ...)): w in SI, x in
// R11, nb in R12, rows in R13, out in R14. Only in a kernel with a frame
// of ROWS8_FRAME bytes or more: ROWS8_KEPT is in the frame.
#define ROWS8_ARGS \
	MOVQ $0, ROWS8_KEPT \
	MOVQ w+0(FP), SI \
	MOVQ x+8(FP), R11 \
	MOVQ nb+16(FP), R12 \
	MOVQ rows+24(FP), R13 \
	MOVQ out+32(FP), R14

// ROWS8_PAIRS leaves in yd, for the four rows kept in the slots at a,
// a+32, a+64 and a+96, lanes 0-1 the first row's two pair sums (its lanes
// 0+4+2+6 and 1+5+3+7, added as ROWSUM_Y0 adds them), lanes 2-3 the
// third's, 4-5 the second's and 6-7 the fourth's. Y1 and Y2 (X1, X2) are
// clobbered.
#define ROWS8_PAIRS(a, xd, yd) \
	VMOVUPS     a+0(SP), X1 \
	VINSERTF128 $1, a+32(SP), Y1, Y1 \
	VMOVUPS     a+16(SP), X2 \
	VINSERTF128 $1, a+48(SP), Y2, Y2 \
	VADDPS      Y2, Y1, Y1 \
	VMOVUPS     a+64(SP), xd \
	VINSERTF128 $1, a+96(SP), yd, yd \
	VMOVUPS     a+80(SP), X2 \
	VINSERTF128 $1, a+112(SP), Y2, Y2 \
	VADDPS      Y2, yd, Y2 \
	VUNPCKLPD   Y2, Y1, yd \
	VUNPCKHPD   Y2, Y1, Y1 \
	VADDPS      Y1, yd, yd

// ROWS8_SUM stores the sums of the eight rows kept in the slots to the
// eight floats that end at (R14): each row's two pair sums added, then
// the rows put in order by one permute (VSHUFPS leaves them 0 2 4 6 1 3
// 5 7). Clobbers Y1-Y4, AX.
#define ROWS8_SUM \
	ROWS8_PAIRS(0, X3, Y3) \
	ROWS8_PAIRS(128, X4, Y4) \
	VSHUFPS   $0x88, Y4, Y3, Y1 \
	VSHUFPS   $0xdd, Y4, Y3, Y2 \
	VADDPS    Y2, Y1, Y1 \
	MOVQ      $0x0703060205010400, AX \
	VMOVQ     AX, X2 \
	VPMOVZXBD X2, Y2 \
	VPERMPS   Y1, Y2, Y1 \
	VMOVUPS   Y1, -28(R14)

// ROWEND_Y0 ends a row whose eight float lanes are in Y0 (R13 rows left,
// this one included; R14 its output) and goes back to row while rows
// are left, else on past the macro: when a group of eight rows is open,
// or one can be (eight rows left), it keeps the lanes in the group's next
// slot and sums the group when full (ROWS8_SUM); otherwise it sums the
// row alone (ROWSUM_Y0). kept, advance and next name labels of the
// expansion. Clobbers Y1-Y4, AX, DX.
#define ROWEND_Y0(row, kept, advance, next) \
	MOVQ    ROWS8_KEPT, AX \
	TESTQ   AX, AX \
	JNZ     kept \
	CMPQ    R13, $8 \
	JGE     kept \
	ROWSUM_Y0 \
	JMP     next \
kept: \
	MOVQ    AX, DX \
	SHLQ    $5, DX \
	VMOVUPS Y0, (SP)(DX*1) \
	INCQ    AX \
	MOVQ    AX, ROWS8_KEPT \
	CMPQ    AX, $8 \
	JLT     advance \
	MOVQ    $0, ROWS8_KEPT \
	ROWS8_SUM \
advance: \
	ADDQ    $4, R14 \
next: \
	DECQ    R13 \
	JNZ     row
