//go:build amd64 && !purego

#include "textflag.h"
#include "rowsum_amd64.h"
#include "q80x_amd64.h"

// Row-run dot products of the 4- and 5-bit weight types added after Q4_K,
// Q6_K and Q8_0, AVX-512 path (F, BW, VL, VNNI): Q4_0, Q5_0 and IQ4_NL
// against Q8_0 activations, IQ4_XS and Q5_K against Q8_K. For each of rows
// consecutive weight rows of nb blocks at w, out[r] is the row's dot with
// the nb activation blocks at x (nb, rows >= 1); each reads exactly those
// blocks.
//
// Integer part, per 32 values: the weight codes are made unsigned bytes u
// (Q4_0: the nibble, 0..15; Q5_0: the nibble and the fifth bit, 0..31;
// IQ4_NL and IQ4_XS: the codebook value plus 128, 1..241, by a VPSHUFB
// table lookup), VPDPBUSD sums u·x over each group of four values in a
// dword lane, and a second VPDPBUSD with the offset o (8, 16 or 128) in
// every byte gives o·Σx, which is subtracted (in the main loops -o·Σx,
// computed once for all rows, is the accumulator's start; IQ4_XS takes it
// from the bsums): each lane holds the exact Σ (u-o)·x of its values, for
// every code and every activation byte including -128. (Q5_K's and Q3_K's
// row-run dots are in quant_avx512_amd64.s beside the Q4_K one whose
// macros and tables they share.)
//
// Float part: the exact integer lanes are converted to float32 and fused-
// multiply-added with the block scale product (dw·dx as float32) into
// float32 lanes, reduced once per row. So the results equal the generic twins (package quant's
// dots, which follow ggml's generic C order) up to the rounding of the
// summation order, as ggml's own SIMD kernels do.

// iq4Shifted is IQ4_NL's codebook plus 128, twice (one copy per 128-bit
// lane of a VPSHUFB).
DATA iq4Shifted<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4Shifted<>+8(SB)/8, $0xf1d9c5b5a6998d81
DATA iq4Shifted<>+16(SB)/8, $0x766a5d4f3f2d1801
DATA iq4Shifted<>+24(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4Shifted<>(SB), RODATA|NOPTR, $32

// NIB32 leaves the 32 nibbles of the 16 bytes at qoff(SI) in Y2 as bytes:
// the low nibbles (values 0..15) in the lower half, the high ones (values
// 16..31) in the upper. Y15 holds 0x0f bytes.
#define NIB32(qoff) \
	VMOVDQU     qoff(SI), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y15, Y2, Y2

// OFFDOT leaves in Y5 the exact Σ (u-o)·x of each lane's four values, u
// the unsigned codes in Y2, x the 32 activation bytes at xa, o the offset
// bytes in Y13.
#define OFFDOT(xa) \
	VPXOR    Y5, Y5, Y5 \
	VPDPBUSD xa, Y2, Y5 \
	VPXOR    Y6, Y6, Y6 \
	VPDPBUSD xa, Y13, Y6 \
	VPSUBD   Y6, Y5, Y5

// Q80FIN converts the lanes in Y5 and accumulates them into Y0 with the
// product of the f16 weight scale at 0(SI) and the f16 activation scale
// at 0(DI). Clobbers AX, BX.
#define Q80FIN ROW_F16SCALE(Y5, X6, Y6, X7, BX)

// ROWS_PROLOGUE loads the arguments (ROWS8_ARGS: w SI, x R11, nb R12,
// rows R13, out R14; the kernel has ROWS8_FRAME) and 0x0f bytes into Y15.
#define ROWS_PROLOGUE \
	ROWS8_ARGS \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Y15

// PAIR2 puts the 64 nibbles of the 16 qs bytes of two blocks (at q0(SI)
// and q1(SI)) in Z2 in value order: [block 0 low, block 0 high, block 1
// low, block 1 high] (VSHUFI64X2 $0xd8 reorders the four 128-bit lanes).
#define PAIR2(q0, q1) \
	VMOVDQU      q0(SI), X2 \
	VINSERTI128  $1, q1(SI), Y2, Y2 \
	VPSRLW       $4, Y2, Y3 \
	VINSERTI64X4 $1, Y3, Z2, Z2 \
	VSHUFI64X2   $0xd8, Z2, Z2, Z2 \
	VPANDD       Z15, Z2, Z2

// The Q8_0-partner row-run dots (Q4_0, Q5_0, IQ4_NL) take one row at a
// time and eight blocks per iteration, four blocks per 512-bit register
// (see Q80N_LOAD18 and q5GatherIdx below); the last nb%8 blocks go one at a
// time. A row's result does not depend on its neighbours: every row of a
// run equals the one-token dot (a run of one). Two rows in lockstep, which
// share the activation work, were faster from cache but slower from
// memory: with weights streamed from DRAM (BenchmarkMatVecStream, a decode
// step's case) two rows at a time gave 12.1 GB/cpu-s for Q4_0 against 15.9
// one row at a time, and 10.0 against 15.4 for IQ4_XS.
//
// Their software prefetches run 32 iterations (256 blocks) ahead: against
// 16, called alternately in one process on weights streamed from DRAM
// (a loaded machine, 150 calls of 5632 rows each, four runs), that was
// 1.05 times as fast for Q5_0 and 1.07 for Q4_0 (medians of the paired
// ratios; 24 iterations ahead gave about half of that). A second set
// into L2 (PREFETCHT1) 96 iterations ahead added, on a Zen 4 VM with the
// weights in huge pages, 7-10% for Q5_0 and about 15% for Q4_0
// (BenchmarkMatVecStreamPair at one thread against the Q8_0 kernel
// without it, four pairs each; 64 or 128 iterations ahead did the same);
// without any software prefetch Q5_0 lost a sixth. The same second set
// did nothing for the Q4_K, Q6_K, Q5_K and Q3_K row runs (a little
// slower, not kept there). It does for IQ4_XS (ROWS_PREFETCH 96 blocks
// ahead, the first set three lines a block where it was two): streamed
// from DRAM with the kernel before it in one pool, 0.78-0.81 of the time
// at one thread and 0.94-0.99 at two (four runs each); the two lines of
// the second set alone took 1.12 times the time, which leaves part of
// every 136-byte block to the hardware. Its from-cache rate is a third
// above its streamed one. Measured again on the Zen 4 VM the same way:
// Q4_K 0.98-0.99 at one thread, 0.97-1.0 at two (not kept); Q6_K, whose
// streamed rate is a fifth under its from-cache one, 0.86-0.93 at one
// thread but 1.02-1.07 at two 96 blocks ahead, 0.92 and 0.92-1.04
// (median 1.01) 48 ahead, 0.88-0.91 and 0.93-1.05 128 ahead (not kept:
// decode runs on every core); the AVX2 IQ4_XS run 1.0-1.03 (not kept).
//
// Scales, which were a third of the time when gathered word by word
// (VPINSRW, or scalar loads joined in general registers): the activation
// scales are converted to float32 once per product (q80PrepAVX512, into
// the scratch the caller provides), and a row's eight f16 weight scales,
// at a stride of the block size, are picked out of the eight blocks'
// loaded bytes by one two-table word permute (VPERMT2W), or two merge-
// masked ones for Q5_0's wider blocks (q5GatherIdx).

// q80W18Idx picks the scale words of eight 18-byte blocks (Q4_0, IQ4_NL)
// out of their first 128 bytes.
DATA q80W18Idx<>+0(SB)/8, $0x001b001200090000
DATA q80W18Idx<>+8(SB)/8, $0x003f0036002d0024
DATA q80W18Idx<>+16(SB)/8, $0x0000000000000000
DATA q80W18Idx<>+24(SB)/8, $0x0000000000000000
DATA q80W18Idx<>+32(SB)/8, $0x0000000000000000
DATA q80W18Idx<>+40(SB)/8, $0x0000000000000000
DATA q80W18Idx<>+48(SB)/8, $0x0000000000000000
DATA q80W18Idx<>+56(SB)/8, $0x0000000000000000
GLOBL q80W18Idx<>(SB), RODATA|NOPTR, $64

// RA addresses the current row.
#define RA(off) off(SI)

// In the main loops a register of codes holds four blocks, one per 128-bit
// lane, in their stored order: one word permute (VPERMT2W) picks the 16 qs
// bytes of each of four blocks out of two loaded 64-byte windows of the
// row (no load reads past the eight blocks), and the mask and a shift of
// four split them into the low nibbles (values 0-15 of each block) and the
// high ones (16-31). The activations are brought into that order instead
// (Q80N_X): then both nibble halves of a block sit in the same lane as its
// scale, one integer accumulator takes both VPDPBUSDs, and every four
// blocks need one conversion and one fused multiply-add, with dw·dx spread
// four lanes each (before: one per two blocks, and a subtraction); the
// offset lanes -o·Σx start the accumulator.

// q4Qs03 and q4Qs47 pick the qs words of blocks 0-3 out of bytes 0-127 of
// eight 18-byte blocks (Q4_0, IQ4_NL) and of blocks 4-7 out of bytes
// 64-127 and 80-143; q5Qs03 and q5Qs47 those of eight 22-byte blocks
// (Q5_0) out of bytes 0-127 and 64-175 (the loads at 64 and 112).
DATA q4Qs03<>+0(SB)/8, $0x0004000300020001
DATA q4Qs03<>+8(SB)/8, $0x0008000700060005
DATA q4Qs03<>+16(SB)/8, $0x000d000c000b000a
DATA q4Qs03<>+24(SB)/8, $0x00110010000f000e
DATA q4Qs03<>+32(SB)/8, $0x0016001500140013
DATA q4Qs03<>+40(SB)/8, $0x001a001900180017
DATA q4Qs03<>+48(SB)/8, $0x001f001e001d001c
DATA q4Qs03<>+56(SB)/8, $0x0023002200210020
GLOBL q4Qs03<>(SB), RODATA|NOPTR, $64

DATA q4Qs47<>+0(SB)/8, $0x0020000700060005
DATA q4Qs47<>+8(SB)/8, $0x0024002300220021
DATA q4Qs47<>+16(SB)/8, $0x0029002800270026
DATA q4Qs47<>+24(SB)/8, $0x002d002c002b002a
DATA q4Qs47<>+32(SB)/8, $0x003200310030002f
DATA q4Qs47<>+40(SB)/8, $0x0036003500340033
DATA q4Qs47<>+48(SB)/8, $0x003b003a00390038
DATA q4Qs47<>+56(SB)/8, $0x003f003e003d003c
GLOBL q4Qs47<>(SB), RODATA|NOPTR, $64

DATA q5Qs03<>+0(SB)/8, $0x0006000500040003
DATA q5Qs03<>+8(SB)/8, $0x000a000900080007
DATA q5Qs03<>+16(SB)/8, $0x00110010000f000e
DATA q5Qs03<>+24(SB)/8, $0x0015001400130012
DATA q5Qs03<>+32(SB)/8, $0x001c001b001a0019
DATA q5Qs03<>+40(SB)/8, $0x0020001f001e001d
DATA q5Qs03<>+48(SB)/8, $0x0027002600250024
DATA q5Qs03<>+56(SB)/8, $0x002b002a00290028
GLOBL q5Qs03<>(SB), RODATA|NOPTR, $64

DATA q5Qs47<>+0(SB)/8, $0x001200110010000f
DATA q5Qs47<>+8(SB)/8, $0x0016001500140013
DATA q5Qs47<>+16(SB)/8, $0x001d001c001b001a
DATA q5Qs47<>+24(SB)/8, $0x00290028001f001e
DATA q5Qs47<>+32(SB)/8, $0x0030002f002e002d
DATA q5Qs47<>+40(SB)/8, $0x0034003300320031
DATA q5Qs47<>+48(SB)/8, $0x003b003a00390038
DATA q5Qs47<>+56(SB)/8, $0x003f003e003d003c
GLOBL q5Qs47<>(SB), RODATA|NOPTR, $64

// Q80N_X is Q80X4 of four consecutive blocks, the first at x0(DI).
#define Q80N_X(x0, xl, xh, on) Q80X4(x0, x0+34, x0+68, x0+102, xl, xh, on)

// Q80N_LOAD18 loads the eight 18-byte blocks at SI (Q4_0, IQ4_NL) once, in
// three overlapping 64-byte loads (bytes 0-63, 64-127 and 80-143), and
// leaves dw·dx of blocks 0-3 in Z25 and of blocks 4-7 in Z26, spread four
// lanes each (dx from (R10)), and their qs words, picked out of the loaded
// registers, in Z4 (blocks 0-3) and Z5 (4-7). Against two 64-byte loads
// per permute (six per eight blocks, the scales' and each four blocks'
// own), from cache (BenchmarkQuantRows, Q4_0, interleaved, on a Zen 4 VM)
// that was 32.5 GB/s against 29. A 16-byte load of bytes 128-143 instead
// of the one at 80 made streaming from DRAM a third slower
// (BenchmarkMatVecStream, 14 GB/s against 21), for a reason not pinned
// down. Clobbers Z1, Z6, Z10.
#define Q80N_LOAD18 \
	VMOVDQU64 0(SI), Z4 \
	VMOVDQU64 64(SI), Z5 \
	VMOVDQU64 80(SI), Z6 \
	VMOVDQA64 Z4, Z10 \
	VPERMT2W  Z5, Z21, Z10 \
	VCVTPH2PS X10, Y1 \
	VMULPS    (R10), Y1, Y1 \
	VPERMPS   Z1, Z16, Z25 \
	VPERMPS   Z1, Z17, Z26 \
	VPERMT2W  Z5, Z18, Z4 \
	VPERMT2W  Z6, Z19, Z5

// Q80N_SPLIT leaves the codes of the four blocks whose qs bytes are in
// src in Z2 (low nibbles) and Z3 (high).
#define Q80N_SPLIT(src) \
	VPSRLW $4, src, Z3 \
	VPANDD Z15, src, Z2 \
	VPANDD Z15, Z3, Z3

// Q80N_SPLITNL looks the codes up in IQ4_NL's codebook plus 128 (Z11).
#define Q80N_SPLITNL(src) \
	Q80N_SPLIT(src) \
	VPSHUFB Z2, Z11, Z2 \
	VPSHUFB Z3, Z11, Z3

// The three also take the activation work out of their row loops: once
// per product (a product's rows come in many calls, one per piece of
// the pool), q80PrepAVX512 brings the activations of every whole group of
// eight blocks into the codes' order and stores them with their offset
// lanes in the scratch the caller provides, which every row then reads
// as memory operands of its VPDPBUSDs instead of redoing, per four blocks
// and row, four loads, two lane shuffles and two more VPDPBUSDs (the
// 512-bit ones issue on one port only). The integer lanes and the float
// steps stay those of the loop that did that work per row, in the same
// order.
//
// Q5_0's eight blocks (176 bytes) come from three overlapping loads (0, 64
// and 112). Two merge-masked two-table permutes (VPERMI2W under K2 and
// K3, q5GatherIdx) pick out of them into one register the eight scales,
// which are converted, multiplied and spread as Q4_0's are, and the eight
// qh words split in halves: four blocks' low (high) halves in a quadword
// are already the byte mask of their values 0-15 (16-31), so the register
// is stored to the frame and the four masks loaded from it by KMOVQ; 16
// is added to the codes under them. The qs bytes are picked by one
// permute per four blocks (q5Qs03, q5Qs47). The masks were made before
// from four scalar loads and four PEXTs per four blocks: with that loop
// as the other kernel in one pool, on weights streamed from DRAM (as
// rowsum_amd64.h says), it took 6.5-12% more time at one thread and 0-7%
// more at two (six runs each, a loaded machine). From cache
// (BenchmarkQuantRows/Q5_0/avx512, on a Zen 4 VM with 512-bit
// instructions in two halves) the masks made from byte shuffles and
// VPTESTMBs had done 24.2 GB/s, from general registers 26.9, an earlier
// version of the store and KMOVQ reload 25.5, and VMOVQ/VPEXTRQ of the
// qh words into general registers 23.3. With no fifth bits at all the
// loop would do 30.4.
//
// The gathered words are stored one group ahead: each iteration loads
// the next group's bytes, gathers its words and stores them to the
// frame, after it has loaded its own group's masks, which the iteration
// before stored. Loaded right after their own store, the masks waited for
// it: the loop without the store (wrong masks) took 11% less time, on
// weights streamed from DRAM at one thread with the kernel as it was as
// the other one in one pool (as rowsum_amd64.h says); the masks one group
// ahead took 3-6.5% less (six runs, the results bit for bit the same).
// A store of only the mask quadwords (two 128-bit or four 64-bit
// extracts), or moves through general registers, took 4-9.5% more.

// Q80SCR takes the scratch of a Q8_0-partner row-run dot (its last
// argument, which q80PrepAVX512 fills) in R8 and nb in R12 and leaves in
// R8 the activations of every whole group of eight blocks (aligned up to
// 64 bytes) and in R9 their scales as float32, after them.
#define Q80SCR \
	ADDQ $63, R8 \
	ANDQ $-64, R8 \
	MOVQ R12, R9 \
	SHRQ $3, R9 \
	LEAQ (R9)(R9*2), R9 \
	SHLQ $7, R9 \
	ADDQ R8, R9

// func q80PrepAVX512(x *quant.BlockQ8_0, nb int, off uint32, scr *byte)
//
// q80PrepAVX512 does the activation work of the Q8_0-partner row-run
// dots once per product instead of once per call: for every whole group
// of eight of the nb blocks at x, Q80N_X's xl, xh and offset lanes
// (offset o in every byte of off) of blocks 0-3 and then of blocks 4-7,
// 384 bytes a group, and then the group's eight scales as float32, 32
// bytes a group, into scr (Q80SCR's layout). The kernels read both as
// they are; the tail of a row (nb%8 blocks) takes its activations from x.
TEXT ·q80PrepAVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), R11
	MOVQ nb+8(FP), R12
	MOVL off+16(FP), AX
	VPBROADCASTD AX, Z13
	VPXORD Z24, Z24, Z24
	MOVQ scr+24(FP), R8
	Q80SCR
	MOVQ R11, DI
	MOVQ R8, BX
	MOVQ R12, CX
	SHRQ $3, CX
	JZ   prepdone
prep:
	Q80N_X(2, Z4, Z5, Z28)
	VMOVDQA64 Z4, 0(BX)
	VMOVDQA64 Z5, 64(BX)
	VMOVDQA64 Z28, 128(BX)
	Q80N_X(138, Z4, Z5, Z28)
	VMOVDQA64 Z4, 192(BX)
	VMOVDQA64 Z5, 256(BX)
	VMOVDQA64 Z28, 320(BX)
	VPBROADCASTW 0(DI), X2
	VPINSRW   $1, 34(DI), X2, X2
	VPINSRW   $2, 68(DI), X2, X2
	VPINSRW   $3, 102(DI), X2, X2
	VPINSRW   $4, 136(DI), X2, X2
	VPINSRW   $5, 170(DI), X2, X2
	VPINSRW   $6, 204(DI), X2, X2
	VPINSRW   $7, 238(DI), X2, X2
	VCVTPH2PS X2, Y2
	VMOVUPS   Y2, (R9)
	ADDQ $272, DI
	ADDQ $384, BX
	ADDQ $32, R9
	DECQ CX
	JNZ  prep
prepdone:
	VZEROUPPER
	RET

// Q5_FRAME is the Q5_0 row run's frame: ROWS8_FRAME, then at Q5_GATHER
// the 64 bytes of its gathered scale and qh words.
#define Q5_FRAME 328
#define Q5_GATHER 264

// Q5CODES leaves in Z2 and Z3 the codes of the four blocks whose qs words
// qidx picks out of tab1 and tab2 (overwriting tab1), 16 added under klo
// (values 0-15) and khi (16-31).
#define Q5CODES(tab1, tab2, qidx, klo, khi) \
	VPERMT2W    tab2, qidx, tab1 \
	VPSRLW      $4, tab1, Z3 \
	VPANDD      Z15, tab1, Z2 \
	VPANDD      Z15, Z3, Z3 \
	VPADDB      Z12, Z2, klo, Z2 \
	VPADDB      Z12, Z3, khi, Z3

// Q5_GROUP loads the eight blocks at off(SI) (176 bytes) into a, b and c
// (three overlapping loads, at 0, 64 and 112), gathers their scale and qh
// words into Z10 (q5GatherIdx in Z23, under K2 and K3) and stores those
// to the frame at Q5_GATHER, whence the masks are loaded.
#define Q5_GROUP(off, a, b, c) \
	VMOVDQU64 (off)(SI), a \
	VMOVDQU64 (off+64)(SI), b \
	VMOVDQU64 (off+112)(SI), c \
	VMOVDQA64 Z23, Z10 \
	VPERMI2W  b, a, K2, Z10 \
	VPERMI2W  c, b, K3, Z10 \
	VMOVDQU64 Z10, Q5_GATHER(SP)

// q5GatherIdx picks out of eight 22-byte blocks their scale words (words
// 0-7), then their qh words: the low halves (words 8-15) and the
// high halves (words 16-23), blocks 0-3 under K2 and 4-7 under K3. Four
// blocks' low (high) halves in a quadword are the byte mask of their
// values 0-15 (16-31) as Q5CODES takes it.
DATA q5GatherIdx<>+0(SB)/8, $0x00210016000b0000
DATA q5GatherIdx<>+8(SB)/8, $0x0035002a0017000c
DATA q5GatherIdx<>+16(SB)/8, $0x00220017000c0001
DATA q5GatherIdx<>+24(SB)/8, $0x0036002b0018000d
DATA q5GatherIdx<>+32(SB)/8, $0x00230018000d0002
DATA q5GatherIdx<>+40(SB)/8, $0x0037002c0019000e
DATA q5GatherIdx<>+48(SB)/8, $0x0000000000000000
DATA q5GatherIdx<>+56(SB)/8, $0x0000000000000000
GLOBL q5GatherIdx<>(SB), RODATA|NOPTR, $64

// Q80GROUPS turns the block count in CX into the count of whole groups
// of eight that the main loop takes and moves DI past their activation
// blocks to the tail's (the loop itself reads the scratch only); after
// the loop CX is set to the tail's count, nb%8 (R12). Clobbers AX.
#define Q80GROUPS \
	SHRQ   $3, CX \
	IMUL3Q $272, CX, AX \
	ADDQ   AX, DI

// Q80ROWS_SETUP loads what every Q8_0-partner row-run dot keeps in
// registers (0x0f bytes in Z15, the permutes that spread eight scales
// four lanes each in Z16 and Z17) and its scratch pointers (Q80SCR, the
// scratch in R8).
#define Q80ROWS_SETUP \
	VPBROADCASTD X15, Z15 \
	VMOVDQU64 iq4xsQuad<>+0(SB), Z16 \
	VMOVDQU64 iq4xsQuad<>+64(SB), Z17 \
	Q80SCR

// func dotQ4_0RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotQ4_0RowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWS_PROLOGUE
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Z13
	VMOVDQU64 q80W18Idx<>(SB), Z21
	VMOVDQU64 q4Qs03<>(SB), Z18
	VMOVDQU64 q4Qs47<>(SB), Z19
	MOVQ scr+40(FP), R8
	Q80ROWS_SETUP
q40row:
	TESTQ R13, R13
	JZ   q40end
	MOVQ R11, DI
	MOVQ R9, R10
	MOVQ R8, BX
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	CMPQ CX, $8
	JLT  q40tail
q40loop8:
	Q80GROUPS
q40l:
	ROWS_PREFETCH(4608, 13824)
	Q80N_LOAD18
	Q80N_SPLIT(Z4)
	Q80N_DOT(0(BX), 64(BX), 128(BX), Z25, Z0)
	Q80N_SPLIT(Z5)
	Q80N_DOT(192(BX), 256(BX), 320(BX), Z26, Z0)
	ADDQ $144, SI
	ADDQ $384, BX
	ADDQ $32, R10
	DECQ CX
	JNZ  q40l
	MOVQ R12, CX
	ANDQ $7, CX
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
q40tail:
	TESTQ CX, CX
	JZ   q40done
q40loop:
	NIB32(2)
	OFFDOT(2(DI))
	Q80FIN
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q40loop
q40done:
	ROWEND_Y0(q40row, q40kept, q40adv, q40next)
q40end:
	VZEROUPPER
	RET

// func dotQ5_0RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotQ5_0RowsAVX512(SB), NOSPLIT, $Q5_FRAME-48
	ROWS_PROLOGUE
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z13
	VPBROADCASTD AX, Z12
	VMOVDQU64 q5Qs03<>(SB), Z18
	VMOVDQU64 q5Qs47<>(SB), Z19
	VMOVDQU64 q5GatherIdx<>(SB), Z23
	MOVL $0x0f0f0f, AX
	KMOVD AX, K2
	MOVL $0xf0f0f0, AX
	KMOVD AX, K3
	MOVQ scr+40(FP), R8
	Q80ROWS_SETUP
q50row:
	// The scales' address is made again for every row (R10, as Q80SCR
	// makes R9) and DI after the loop.
	TESTQ R13, R13
	JZ   q50end
	MOVQ R11, DI
	MOVQ R12, R10
	SHRQ $3, R10
	LEAQ (R10)(R10*2), R10
	SHLQ $7, R10
	ADDQ R8, R10
	MOVQ R8, BX
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	CMPQ CX, $8
	JLT  q50tail
q50loop8:
	SHRQ $3, CX
	Q5_GROUP(0, Z4, Z5, Z6)
q50l:
	// Z4-Z6 and Z10 hold this group's bytes and gathered words, and the
	// frame its masks; the next group's are made while this one's are
	// used (none after the last group: its row may end the matrix).
	ROWS_PREFETCH(5632, 16896)
	KMOVQ     (Q5_GATHER+16)(SP), K1
	KMOVQ     (Q5_GATHER+32)(SP), K5
	KMOVQ     (Q5_GATHER+24)(SP), K6
	KMOVQ     (Q5_GATHER+40)(SP), K7
	VCVTPH2PS X10, Y1
	VMULPS    (R10), Y1, Y1
	VPERMPS   Z1, Z16, Z25
	VPERMPS   Z1, Z17, Z26
	CMPQ CX, $1
	JEQ  q50last
	Q5_GROUP(176, Z7, Z8, Z9)
q50last:
	Q5CODES(Z4, Z5, Z18, K1, K5)
	Q80N_DOT(0(BX), 64(BX), 128(BX), Z25, Z0)
	Q5CODES(Z5, Z6, Z19, K6, K7)
	Q80N_DOT(192(BX), 256(BX), 320(BX), Z26, Z0)
	// The next group's bytes into Z4-Z6; Z10 is already its gathered
	// words.
	VMOVDQA64 Z7, Z4
	VMOVDQA64 Z8, Z5
	VMOVDQA64 Z9, Z6
	ADDQ $176, SI
	ADDQ $384, BX
	ADDQ $32, R10
	DECQ CX
	JNZ  q50l
	MOVQ R12, CX
	SHRQ $3, CX
	IMUL3Q $272, CX, DI
	ADDQ R11, DI
	MOVQ R12, CX
	ANDQ $7, CX
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
q50tail:
	TESTQ CX, CX
	JZ   q50done
q50loop:
	NIB32(6)
	MOVL      2(SI), AX
	KMOVD     AX, K1
	VPADDB    Y12, Y2, K1, Y2
	OFFDOT(2(DI))
	Q80FIN
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  q50loop
q50done:
	ROWEND_Y0(q50row, q50kept, q50adv, q50next)
q50end:
	VZEROUPPER
	RET

// func dotIQ4NLRowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
TEXT ·dotIQ4NLRowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWS_PROLOGUE
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z13
	VBROADCASTI32X4 iq4Shifted<>(SB), Z11
	VMOVDQU64 q80W18Idx<>(SB), Z21
	VMOVDQU64 q4Qs03<>(SB), Z18
	VMOVDQU64 q4Qs47<>(SB), Z19
	MOVQ scr+40(FP), R8
	Q80ROWS_SETUP
iq4nlrow:
	TESTQ R13, R13
	JZ   iq4nlend
	MOVQ R11, DI
	MOVQ R9, R10
	MOVQ R8, BX
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	CMPQ CX, $8
	JLT  iq4nltail
iq4nlloop8:
	Q80GROUPS
iq4nll:
	ROWS_PREFETCH(4608, 13824)
	Q80N_LOAD18
	Q80N_SPLITNL(Z4)
	Q80N_DOT(0(BX), 64(BX), 128(BX), Z25, Z0)
	Q80N_SPLITNL(Z5)
	Q80N_DOT(192(BX), 256(BX), 320(BX), Z26, Z0)
	ADDQ $144, SI
	ADDQ $384, BX
	ADDQ $32, R10
	DECQ CX
	JNZ  iq4nll
	MOVQ R12, CX
	ANDQ $7, CX
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
iq4nltail:
	TESTQ CX, CX
	JZ   iq4nldone
iq4nlloop:
	NIB32(2)
	VPSHUFB Y2, Y11, Y2
	OFFDOT(2(DI))
	Q80FIN
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JNZ  iq4nlloop
iq4nldone:
	ROWEND_Y0(iq4nlrow, iq4nlkept, iq4nladv, iq4nlnext)
iq4nlend:
	VZEROUPPER
	RET

// iq4xsShift holds the word shifts 0, 2, ..., 14 that bring sub-block
// ib's two high scale bits of scales_h to bits 0-1.
DATA iq4xsShift<>+0(SB)/8, $0x0006000400020000
DATA iq4xsShift<>+8(SB)/8, $0x000e000c000a0008
GLOBL iq4xsShift<>(SB), RODATA|NOPTR, $16

// iq4xsIdx[p] spreads dword scales 2p and 2p+1 over lanes 0-7 and 8-15.
DATA iq4xsIdx<>+0(SB)/8, $0x0000000000000000
DATA iq4xsIdx<>+8(SB)/8, $0x0000000000000000
DATA iq4xsIdx<>+16(SB)/8, $0x0000000000000000
DATA iq4xsIdx<>+24(SB)/8, $0x0000000000000000
DATA iq4xsIdx<>+32(SB)/8, $0x0000000100000001
DATA iq4xsIdx<>+40(SB)/8, $0x0000000100000001
DATA iq4xsIdx<>+48(SB)/8, $0x0000000100000001
DATA iq4xsIdx<>+56(SB)/8, $0x0000000100000001
DATA iq4xsIdx<>+64(SB)/8, $0x0000000200000002
DATA iq4xsIdx<>+72(SB)/8, $0x0000000200000002
DATA iq4xsIdx<>+80(SB)/8, $0x0000000200000002
DATA iq4xsIdx<>+88(SB)/8, $0x0000000200000002
DATA iq4xsIdx<>+96(SB)/8, $0x0000000300000003
DATA iq4xsIdx<>+104(SB)/8, $0x0000000300000003
DATA iq4xsIdx<>+112(SB)/8, $0x0000000300000003
DATA iq4xsIdx<>+120(SB)/8, $0x0000000300000003
DATA iq4xsIdx<>+128(SB)/8, $0x0000000400000004
DATA iq4xsIdx<>+136(SB)/8, $0x0000000400000004
DATA iq4xsIdx<>+144(SB)/8, $0x0000000400000004
DATA iq4xsIdx<>+152(SB)/8, $0x0000000400000004
DATA iq4xsIdx<>+160(SB)/8, $0x0000000500000005
DATA iq4xsIdx<>+168(SB)/8, $0x0000000500000005
DATA iq4xsIdx<>+176(SB)/8, $0x0000000500000005
DATA iq4xsIdx<>+184(SB)/8, $0x0000000500000005
DATA iq4xsIdx<>+192(SB)/8, $0x0000000600000006
DATA iq4xsIdx<>+200(SB)/8, $0x0000000600000006
DATA iq4xsIdx<>+208(SB)/8, $0x0000000600000006
DATA iq4xsIdx<>+216(SB)/8, $0x0000000600000006
DATA iq4xsIdx<>+224(SB)/8, $0x0000000700000007
DATA iq4xsIdx<>+232(SB)/8, $0x0000000700000007
DATA iq4xsIdx<>+240(SB)/8, $0x0000000700000007
DATA iq4xsIdx<>+248(SB)/8, $0x0000000700000007
GLOBL iq4xsIdx<>(SB), RODATA|NOPTR, $256

// The IQ4_XS row-run dot takes a block's codes in their stored order:
// one 64-byte load holds the 16 code bytes of four sub-blocks, one per
// 128-bit lane, and the mask and a shift of four split it into the low
// nibbles (values 0-15 of each sub-block) and the high ones (16-31). The
// activations are brought into that order instead (two VSHUFI64X2 per 128
// values): then both halves of a sub-block
// sit in the same lane as its scale, so one integer accumulator takes both
// VPDPBUSDs and every 128 values need one conversion and one fused
// multiply-add, with the float scales (s-32)·d·dx spread four lanes each:
// no VPMULLD, no per-pair scale step. The offset -128·Σx of sub-block j
// (from the bsums, one VPMADDWD per block) starts lane 4j of the
// accumulator, so every lane sum stays exact (below 2^20 in magnitude).

// iq4xsQuad spreads dword j over lanes 4j..4j+3 (j = 0..3; the second
// half j = 4..7).
DATA iq4xsQuad<>+0(SB)/8, $0x0000000000000000
DATA iq4xsQuad<>+8(SB)/8, $0x0000000000000000
DATA iq4xsQuad<>+16(SB)/8, $0x0000000100000001
DATA iq4xsQuad<>+24(SB)/8, $0x0000000100000001
DATA iq4xsQuad<>+32(SB)/8, $0x0000000200000002
DATA iq4xsQuad<>+40(SB)/8, $0x0000000200000002
DATA iq4xsQuad<>+48(SB)/8, $0x0000000300000003
DATA iq4xsQuad<>+56(SB)/8, $0x0000000300000003
DATA iq4xsQuad<>+64(SB)/8, $0x0000000400000004
DATA iq4xsQuad<>+72(SB)/8, $0x0000000400000004
DATA iq4xsQuad<>+80(SB)/8, $0x0000000500000005
DATA iq4xsQuad<>+88(SB)/8, $0x0000000500000005
DATA iq4xsQuad<>+96(SB)/8, $0x0000000600000006
DATA iq4xsQuad<>+104(SB)/8, $0x0000000600000006
DATA iq4xsQuad<>+112(SB)/8, $0x0000000700000007
DATA iq4xsQuad<>+120(SB)/8, $0x0000000700000007
GLOBL iq4xsQuad<>(SB), RODATA|NOPTR, $128

// IQ4XS_X does a block's activation-only work:
// dx in the lanes of Y10; the offsets -128·(bsums 2j + 2j+1) of sub-block
// j at lane 4j of Z22 (j < 4) and Z23 (j >= 4), zeros elsewhere (K4); the
// activations of values 0-15 of sub-blocks 0-3 in Z4, 16-31 in Z5, and
// of sub-blocks 4-7 in Z6 and Z7. Y13 holds -128 in every word.
#define IQ4XS_X \
	VBROADCASTSS 0(DI), Y10 \
	VPMADDWD     260(DI), Y13, Y1 \
	VPERMD.Z     Z1, Z16, K4, Z22 \
	VPERMD.Z     Z1, Z17, K4, Z23 \
	VMOVDQU64    4(DI), Z5 \
	VSHUFI64X2   $0x88, 68(DI), Z5, Z4 \
	VSHUFI64X2   $0xdd, 68(DI), Z5, Z5 \
	VMOVDQU64    132(DI), Z7 \
	VSHUFI64X2   $0x88, 196(DI), Z7, Z6 \
	VSHUFI64X2   $0xdd, 196(DI), Z7, Z7

// IQ4XS_SCALES leaves the float scales (s-32)·(d·dx) of the block at
// row(0), sub-block j at lanes 4j..4j+3, of sub-blocks 0-3 in sLo and 4-7
// in sHi. The eight 6-bit scales are assembled in a general register by
// two PDEPs (every AVX-512 processor has BMI2; R8 and R10 hold the
// masks): the low nibbles of scales_l into bits 0-3 of bytes 0-7, the bit
// pairs of scales_h into bits 4-5. Y14 holds 32 in every dword. Clobbers
// AX, BX, Y0, Y1. The rounding is the generic twin's: d·dx, then times
// s-32.
#define IQ4XS_SCALES(row, sLo, sHi) \
	MOVL         row(4), AX \
	MOVWLZX      row(2), BX \
	PDEPQ        R8, AX, AX \
	PDEPQ        R10, BX, BX \
	ORQ          BX, AX \
	VMOVQ        AX, X0 \
	VPMOVZXBD    X0, Y0 \
	VPSUBD       Y14, Y0, Y0 \
	VCVTDQ2PS    Y0, Y0 \
	VPBROADCASTW row(0), X1 \
	VCVTPH2PS    X1, Y1 \
	VMULPS       Y10, Y1, Y1 \
	VMULPS       Y1, Y0, Y0 \
	VPERMPS      Z0, Z16, sLo \
	VPERMPS      Z0, Z17, sHi

// IQ4XS_HALF accumulates 128 values (four sub-blocks) of the row at row():
// codes at row(qoff), activations xl (low nibbles) and xh (high), offset
// lanes o, float scales s, into the float lanes acc. Y15's 0x0f bytes
// mask, Z11 holds the codebook plus 128. Clobbers Z2, Z3, Z9.
#define IQ4XS_HALF(row, qoff, xl, xh, o, s, acc) \
	VMOVDQU64   row(qoff), Z2 \
	VPSRLW      $4, Z2, Z3 \
	VPANDD      Z15, Z2, Z2 \
	VPANDD      Z15, Z3, Z3 \
	VPSHUFB     Z2, Z11, Z2 \
	VPSHUFB     Z3, Z11, Z3 \
	VMOVDQA64   o, Z9 \
	VPDPBUSD    xl, Z2, Z9 \
	VPDPBUSD    xh, Z3, Z9 \
	VCVTDQ2PS   Z9, Z9 \
	VFMADD231PS s, Z9, acc

// IQ4XS_CONSTS loads what IQ4XS_X and IQ4XS_SCALES keep in registers.
#define IQ4XS_CONSTS \
	MOVQ $0x0f0f0f0f0f0f0f0f, R8 \
	MOVQ $0x3030303030303030, R10 \
	MOVL $0xff80ff80, AX \
	VPBROADCASTD AX, Y13 \
	MOVL $32, AX \
	VPBROADCASTD AX, Y14 \
	MOVL $0x1111, AX \
	KMOVW AX, K4 \
	VMOVDQU64 iq4xsQuad<>+0(SB), Z16 \
	VMOVDQU64 iq4xsQuad<>+64(SB), Z17

// IQ4XS_FOLD leaves the sums of the float lanes of a and b folded to
// eight in Y0 for ROWEND_Y0.
#define IQ4XS_FOLD(a, b) \
	VADDPS        b, a, Z0 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0

// func dotIQ4XSRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// One row at a time (see the Q8_0-partner dots for why not two).
TEXT ·dotIQ4XSRowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-40
	ROWS_PROLOGUE
	VPBROADCASTD X15, Z15
	VBROADCASTI32X4 iq4Shifted<>(SB), Z11
	IQ4XS_CONSTS

iq4xsone:
	TESTQ R13, R13
	JZ    iq4xsend
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25

iq4xsloop1:
	ROWS_PREFETCH(2176, 13056)
	IQ4XS_X
	IQ4XS_SCALES(RA, Z20, Z21)
	IQ4XS_HALF(RA, 8, Z4, Z5, Z22, Z20, Z24)
	IQ4XS_HALF(RA, 72, Z6, Z7, Z23, Z21, Z25)
	ADDQ $136, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq4xsloop1
	IQ4XS_FOLD(Z24, Z25)
	ROWEND_Y0(iq4xsone, iq4xskept, iq4xsadv, iq4xsnext)

iq4xsend:
	VZEROUPPER
	RET

// The prepared form of the IQ4_XS row run: IQ4XS_X is the same for every
// row of a product, so iq4xsPrepAVX512 does it once per product (the
// pool's dots.prep) and stores, per block, its six registers and dx, 448
// bytes (Z4, Z5, Z6, Z7, Z22, Z23 at 0, 64, ..., 320, dx at 384), which
// the loop of dotIQ4XSRowsPrepAVX512 reads as memory operands: the same values into the same instructions,
// so the same bits as dotIQ4XSRowsAVX512, without the block's six 512-bit
// shuffles and four loads in every row.

// func iq4xsPrepAVX512(x *quant.BlockQ8K, nb int, scr *byte)
TEXT ·iq4xsPrepAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ nb+8(FP), CX
	MOVQ scr+16(FP), BX
	ADDQ $63, BX
	ANDQ $-64, BX
	IQ4XS_CONSTS
iq4xsprep:
	IQ4XS_X
	VMOVDQA64 Z4, 0(BX)
	VMOVDQA64 Z5, 64(BX)
	VMOVDQA64 Z6, 128(BX)
	VMOVDQA64 Z7, 192(BX)
	VMOVDQA64 Z22, 256(BX)
	VMOVDQA64 Z23, 320(BX)
	VMOVSS    X10, 384(BX)
	ADDQ $292, DI
	ADDQ $448, BX
	DECQ CX
	JNZ  iq4xsprep
	VZEROUPPER
	RET

// func dotIQ4XSRowsPrepAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
TEXT ·dotIQ4XSRowsPrepAVX512(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWS_PROLOGUE
	VPBROADCASTD X15, Z15
	VBROADCASTI32X4 iq4Shifted<>(SB), Z11
	IQ4XS_CONSTS
	MOVQ scr+40(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9

iq4xspone:
	TESTQ R13, R13
	JZ    iq4xspend
	MOVQ R9, DI
	MOVQ R12, CX
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25

iq4xsploop1:
	ROWS_PREFETCH(2176, 13056)
	VBROADCASTSS 384(DI), Y10
	IQ4XS_SCALES(RA, Z20, Z21)
	IQ4XS_HALF(RA, 8, 0(DI), 64(DI), 256(DI), Z20, Z24)
	IQ4XS_HALF(RA, 72, 128(DI), 192(DI), 320(DI), Z21, Z25)
	ADDQ $136, SI
	ADDQ $448, DI
	DECQ CX
	JNZ  iq4xsploop1
	IQ4XS_FOLD(Z24, Z25)
	ROWEND_Y0(iq4xspone, iq4xspkept, iq4xspadv, iq4xspnext)

iq4xspend:
	VZEROUPPER
	RET


// Eight-token dots of Q4_0, Q5_0 and IQ4_NL, for prompt processing. Each
// weight block is unpacked once into signed codes s (Q4_0: nibble - 8;
// Q5_0: nibble + 16·fifth bit - 16; IQ4_NL: the codebook value, by a
// VPSHUFB of the signed table) and multiplied with the eight tokens, two
// per 512-bit register: VPDPBUSD takes the activations offset to x+128
// (x XOR 0x80) as its unsigned operand, and the weight-only correction
// 128·Σs, computed once per block, is subtracted, which leaves the exact
// Σ x·s of each lane for every byte. The lanes are converted and fused-
// multiply-added with dw times the token's block scale (dx, the
// q80Scales layout: eight tokens' scales of a block together) into float
// lanes, half a register per token, reduced at the end.

#define T80_0(off) off(DI)
#define T80_1(off) off(DI)(R11*1)
#define T80_2(off) off(DI)(R11*2)
#define T80_3(off) off(DI)(R13*1)
#define T80_4(off) off(R12)
#define T80_5(off) off(R12)(R11*1)
#define T80_6(off) off(R12)(R11*2)
#define T80_7(off) off(R12)(R13*1)

// X8PAIR multiplies the codes in Z2 (both halves) with tokens a and b,
// accumulating into acc with the scale products permuted by idx.
#define X8PAIR(ta, tb, idx, acc) \
	VMOVDQU      ta(2), Y11 \
	VINSERTI64X4 $1, tb(2), Z11, Z11 \
	VPXORD       Z14, Z11, Z11 \
	VPXORD       Z12, Z12, Z12 \
	VPDPBUSD     Z2, Z11, Z12 \
	VPSUBD       Z9, Z12, Z12 \
	VCVTDQ2PS    Z12, Z12 \
	VPERMPS      Z10, idx, Z11 \
	VFMADD231PS  Z11, Z12, acc

// X8HALVES stores the sums of the lower and upper eight lanes of acc
// (accy, accx its low halves) to lo and hi. Clobbers Z11, Z12.
#define X8HALVES(acc, accy, accx, lo, hi) \
	VEXTRACTF64X4 $1, acc, Y11 \
	VEXTRACTF128  $1, accy, X12 \
	VADDPS        X12, accx, accx \
	VMOVHLPS      accx, X12, X12 \
	VADDPS        X12, accx, accx \
	VMOVSHDUP     accx, X12 \
	VADDSS        X12, accx, accx \
	VMOVSS        accx, lo \
	VEXTRACTF128  $1, Y11, X12 \
	VADDPS        X12, X11, X11 \
	VMOVHLPS      X11, X12, X12 \
	VADDPS        X12, X11, X11 \
	VMOVSHDUP     X11, X12 \
	VADDSS        X12, X11, X11 \
	VMOVSS        X11, hi

// iq4Signed is IQ4_NL's codebook as signed bytes.
DATA iq4Signed<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4Signed<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4Signed<>(SB), RODATA|NOPTR, $16

// func dotQ4_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
TEXT ·dotQ4_0x8AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dx+16(FP), R8
	MOVQ nb+24(FP), CX
	IMUL3Q $34, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y15
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z14
	MOVL $0x08080808, AX
	VPBROADCASTD AX, Y13
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

q40x8loop:
	NIB32(2)
	VPSUBB Y13, Y2, Y2
	VINSERTI64X4 $1, Y2, Z2, Z2
	VPXORD Z9, Z9, Z9
	VPDPBUSD Z2, Z14, Z9
	MOVWLZX 0(SI), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VBROADCASTSS X10, Y10
	VMULPS 0(R8), Y10, Y10
	X8PAIR(T80_0, T80_1, Z16, Z4)
	X8PAIR(T80_2, T80_3, Z17, Z5)
	X8PAIR(T80_4, T80_5, Z18, Z6)
	X8PAIR(T80_6, T80_7, Z19, Z7)
	ADDQ $18, SI
	ADDQ $34, DI
	ADDQ $34, R12
	ADDQ $32, R8
	DECQ CX
	JNZ q40x8loop
	MOVQ out+32(FP), AX
	X8HALVES(Z4, Y4, X4, 0(AX), 4(AX))
	X8HALVES(Z5, Y5, X5, 8(AX), 12(AX))
	X8HALVES(Z6, Y6, X6, 16(AX), 20(AX))
	X8HALVES(Z7, Y7, X7, 24(AX), 28(AX))
	VZEROUPPER
	RET

// func dotQ5_0x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
TEXT ·dotQ5_0x8AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dx+16(FP), R8
	MOVQ nb+24(FP), CX
	IMUL3Q $34, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y15
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z14
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Y13
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

q50x8loop:
	NIB32(6)
	MOVL 2(SI), AX
	KMOVD AX, K1
	VPADDB Y13, Y2, K1, Y2
	VPSUBB Y13, Y2, Y2
	VINSERTI64X4 $1, Y2, Z2, Z2
	VPXORD Z9, Z9, Z9
	VPDPBUSD Z2, Z14, Z9
	MOVWLZX 0(SI), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VBROADCASTSS X10, Y10
	VMULPS 0(R8), Y10, Y10
	X8PAIR(T80_0, T80_1, Z16, Z4)
	X8PAIR(T80_2, T80_3, Z17, Z5)
	X8PAIR(T80_4, T80_5, Z18, Z6)
	X8PAIR(T80_6, T80_7, Z19, Z7)
	ADDQ $22, SI
	ADDQ $34, DI
	ADDQ $34, R12
	ADDQ $32, R8
	DECQ CX
	JNZ q50x8loop
	MOVQ out+32(FP), AX
	X8HALVES(Z4, Y4, X4, 0(AX), 4(AX))
	X8HALVES(Z5, Y5, X5, 8(AX), 12(AX))
	X8HALVES(Z6, Y6, X6, 16(AX), 20(AX))
	X8HALVES(Z7, Y7, X7, 24(AX), 28(AX))
	VZEROUPPER
	RET

// func dotIQ4NLx8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
TEXT ·dotIQ4NLx8AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dx+16(FP), R8
	MOVQ nb+24(FP), CX
	IMUL3Q $34, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y15
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z14
	VBROADCASTI128 iq4Signed<>(SB), Y13
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

iq4nlx8loop:
	NIB32(2)
	VPSHUFB Y2, Y13, Y2
	VINSERTI64X4 $1, Y2, Z2, Z2
	VPXORD Z9, Z9, Z9
	VPDPBUSD Z2, Z14, Z9
	MOVWLZX 0(SI), AX
	VMOVD AX, X10
	VCVTPH2PS X10, X10
	VBROADCASTSS X10, Y10
	VMULPS 0(R8), Y10, Y10
	X8PAIR(T80_0, T80_1, Z16, Z4)
	X8PAIR(T80_2, T80_3, Z17, Z5)
	X8PAIR(T80_4, T80_5, Z18, Z6)
	X8PAIR(T80_6, T80_7, Z19, Z7)
	ADDQ $18, SI
	ADDQ $34, DI
	ADDQ $34, R12
	ADDQ $32, R8
	DECQ CX
	JNZ iq4nlx8loop
	MOVQ out+32(FP), AX
	X8HALVES(Z4, Y4, X4, 0(AX), 4(AX))
	X8HALVES(Z5, Y5, X5, 8(AX), 12(AX))
	X8HALVES(Z6, Y6, X6, 16(AX), 20(AX))
	X8HALVES(Z7, Y7, X7, 24(AX), 28(AX))
	VZEROUPPER
	RET


// Eight-token IQ4_XS dot: each block's codes (signed codebook values, in
// value order) and scales are unpacked once; per token and pair of
// sub-blocks one VPDPBUSD of the activations offset to x+128 with the
// codes and one VPMULLD by the scales; the weight-only correction
// 128·Σ scale·Σ codes is computed once per block and subtracted. Lanes
// are converted and accumulated with f16(d)·x.D into one float register
// per token, reduced at the end.

#define TK0(off) off(DI)
#define TK1(off) off(DI)(R11*1)
#define TK2(off) off(DI)(R11*2)
#define TK3(off) off(DI)(R13*1)
#define TK4(off) off(R12)
#define TK5(off) off(R12)(R11*1)
#define TK6(off) off(R12)(R11*2)
#define TK7(off) off(R12)(R13*1)

// IQ4XS_TOKPAIR adds token tk's pair p (codes in codes, scales in sc) to
// the integer lanes in Z9.
#define IQ4XS_TOKPAIR(xa, codes, sc) \
	VPXORD   xa, Z11, Z0 \
	VPXORD   Z1, Z1, Z1 \
	VPDPBUSD codes, Z0, Z1 \
	VPMULLD  sc, Z1, Z1 \
	VPADDD   Z1, Z9, Z9

// IQ4XS_TOK finishes token tk's block into its float accumulator facc.
#define IQ4XS_TOK(tk, facc) \
	VPXORD Z9, Z9, Z9 \
	IQ4XS_TOKPAIR(tk(4), Z4, Z20) \
	IQ4XS_TOKPAIR(tk(68), Z5, Z21) \
	IQ4XS_TOKPAIR(tk(132), Z6, Z22) \
	IQ4XS_TOKPAIR(tk(196), Z7, Z23) \
	VPSUBD       Z8, Z9, Z9 \
	VCVTDQ2PS    Z9, Z9 \
	VBROADCASTSS tk(0), Z0 \
	VMULPS       Z10, Z0, Z0 \
	VFMADD231PS  Z0, Z9, facc

// IQ4XS_CODES puts pair p's codes, in value order, as signed values in
// dst.
#define IQ4XS_CODES(qoff, dst) \
	VMOVDQU      qoff(SI), Y1 \
	VPSRLW       $4, Y1, Y0 \
	VPAND        Y15, Y1, Y1 \
	VPAND        Y15, Y0, Y0 \
	VINSERTI64X4 $1, Y0, Z1, Z1 \
	VSHUFI64X2   $0xd8, Z1, Z1, Z1 \
	VPSHUFB      Z1, Z3, dst

// IQ4XS_CORR adds 128·scale·Σcodes of one pair to Z8.
#define IQ4XS_CORR(codes, sc) \
	VPXORD   Z0, Z0, Z0 \
	VPDPBUSD codes, Z11, Z0 \
	VPMULLD  sc, Z0, Z0 \
	VPADDD   Z0, Z8, Z8

// HSUM16 stores the sum of the 16 lanes of z (y, x its low halves) to
// dst. Clobbers X0, Y1.
#define HSUM16(z, y, x, dst) \
	VEXTRACTF64X4 $1, z, Y1 \
	VADDPS        Y1, y, y \
	VEXTRACTF32X4 $1, y, X1 \
	VADDPS        X1, x, x \
	VMOVHLPS      x, X1, X1 \
	VADDPS        X1, x, x \
	VMOVSHDUP     x, X1 \
	VADDSS        X1, x, x \
	VMOVSS        x, dst

// func dotIQ4XSx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)
TEXT ·dotIQ4XSx8AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	IMUL3Q $292, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z11
	VBROADCASTI32X4 iq4Signed<>(SB), Z3
	VMOVDQU iq4xsShift<>(SB), X12
	MOVL $0x00030003, AX
	VPBROADCASTD AX, X14
	MOVL $0x00200020, AX
	VPBROADCASTD AX, X13
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

iq4xsx8loop:
	VMOVD        4(SI), X0
	VPSRLW       $4, X0, X1
	VPAND        X15, X0, X0
	VPAND        X15, X1, X1
	VPUNPCKLBW   X1, X0, X0
	VPMOVZXBW    X0, X0
	VPBROADCASTW 2(SI), X1
	VPSRLVW      X12, X1, X1
	VPAND        X14, X1, X1
	VPSLLW       $4, X1, X1
	VPOR         X1, X0, X0
	VPSUBW       X13, X0, X0
	VPMOVSXWD    X0, Y2
	VPERMD       Z2, Z16, Z20
	VPERMD       Z2, Z17, Z21
	VPERMD       Z2, Z18, Z22
	VPERMD       Z2, Z19, Z23
	IQ4XS_CODES(8, Z4)
	IQ4XS_CODES(40, Z5)
	IQ4XS_CODES(72, Z6)
	IQ4XS_CODES(104, Z7)
	VPXORD Z8, Z8, Z8
	IQ4XS_CORR(Z4, Z20)
	IQ4XS_CORR(Z5, Z21)
	IQ4XS_CORR(Z6, Z22)
	IQ4XS_CORR(Z7, Z23)
	MOVWLZX      0(SI), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Z10
	IQ4XS_TOK(TK0, Z24)
	IQ4XS_TOK(TK1, Z25)
	IQ4XS_TOK(TK2, Z26)
	IQ4XS_TOK(TK3, Z27)
	IQ4XS_TOK(TK4, Z28)
	IQ4XS_TOK(TK5, Z29)
	IQ4XS_TOK(TK6, Z30)
	IQ4XS_TOK(TK7, Z31)
	ADDQ $136, SI
	ADDQ $292, DI
	ADDQ $292, R12
	DECQ CX
	JNZ  iq4xsx8loop
	MOVQ out+24(FP), AX
	HSUM16(Z24, Y24, X24, 0(AX))
	HSUM16(Z25, Y25, X25, 4(AX))
	HSUM16(Z26, Y26, X26, 8(AX))
	HSUM16(Z27, Y27, X27, 12(AX))
	HSUM16(Z28, Y28, X28, 16(AX))
	HSUM16(Z29, Y29, X29, 20(AX))
	HSUM16(Z30, Y30, X30, 24(AX))
	HSUM16(Z31, Y31, X31, 28(AX))
	VZEROUPPER
	RET

// The Q8_1-partner row-run dots (Q4_1, Q5_1): the codes u are unsigned
// (0..15, or 0..31 with the fifth bit) and the block's value is d·u + m,
// so VPDPBUSD gives the exact Σ u·x directly (no offset) and the min part
// m·s (s = dx·Σx, the Q8_1 block's sum) is added per block: eight blocks'
// products at once into the float32 lanes of Y10 in the main loop, one
// (lane 0, the others zeroed by VINSERTPS) in the tail. Eight blocks per
// iteration as the Q8_0-partner dots, two per 512-bit VPDPBUSD.

// PAIRDOTU is PAIRDOT for unsigned codes without an offset.
#define PAIRDOTU(x0, x1, idx) \
	VMOVDQU      x0(DI), Y4 \
	VINSERTI64X4 $1, x1(DI), Z4, Z4 \
	VPXORD       Z5, Z5, Z5 \
	VPDPBUSD     Z4, Z2, Z5 \
	VCVTDQ2PS    Z5, Z5 \
	VPERMPS      Z1, idx, Z7 \
	VFMADD231PS  Z7, Z5, Z0

#define Q4_1_PAIR(q0, q1, x0, x1, idx) \
	PAIR2(q0, q1) \
	PAIRDOTU(x0, x1, idx)

// Q5_1_PAIR adds the fifth bits (qh at h0(SI) and h1(SI)) as 16 (Z12)
// under a mask.
#define Q5_1_PAIR(q0, q1, h0, h1, x0, x1, idx) \
	PAIR2(q0, q1) \
	MOVL     h0(SI), AX \
	MOVL     h1(SI), BX \
	SHLQ     $32, BX \
	ORQ      BX, AX \
	KMOVQ    AX, K1 \
	VPADDB   Z12, Z2, K1, Z2 \
	PAIRDOTU(x0, x1, idx)

// SCALES8 converts the f16 at offset o of eight blocks of bw bytes at SI
// into the float32 lanes of Y2, and those at offset o of eight Q8_1
// blocks (36 bytes) at DI into Y3.
#define SCALES8(o, bw) \
	VPBROADCASTW o(SI), X2 \
	VPINSRW $1, (o+bw)(SI), X2, X2 \
	VPINSRW $2, (o+2*bw)(SI), X2, X2 \
	VPINSRW $3, (o+3*bw)(SI), X2, X2 \
	VPINSRW $4, (o+4*bw)(SI), X2, X2 \
	VPINSRW $5, (o+5*bw)(SI), X2, X2 \
	VPINSRW $6, (o+6*bw)(SI), X2, X2 \
	VPINSRW $7, (o+7*bw)(SI), X2, X2 \
	VPBROADCASTW o(DI), X3 \
	VPINSRW $1, (o+36)(DI), X3, X3 \
	VPINSRW $2, (o+72)(DI), X3, X3 \
	VPINSRW $3, (o+108)(DI), X3, X3 \
	VPINSRW $4, (o+144)(DI), X3, X3 \
	VPINSRW $5, (o+180)(DI), X3, X3 \
	VPINSRW $6, (o+216)(DI), X3, X3 \
	VPINSRW $7, (o+252)(DI), X3, X3 \
	VCVTPH2PS X2, Y2 \
	VCVTPH2PS X3, Y3

// MINS8 adds the eight blocks' m·s (f16 at offset 2 of blocks of bw
// bytes, and of the Q8_1 blocks) to Y10, and leaves their d·dx in Y1.
#define MINS8(bw) \
	SCALES8(2, bw) \
	VFMADD231PS Y3, Y2, Y10 \
	SCALES8(0, bw) \
	VMULPS Y3, Y2, Y1

// Q81FIN is Q80FIN for a Q8_1 block (at 0(DI)) with the weight block's
// min part m·s (both f16 at offset 2) added to lane 0 of Y10.
#define Q81FIN \
	Q80FIN \
	MOVWLZX       2(SI), AX \
	MOVWLZX       2(DI), BX \
	SHLL          $16, BX \
	ORL           BX, AX \
	VMOVD         AX, X6 \
	VCVTPH2PS     X6, X6 \
	VMOVSHDUP     X6, X7 \
	VMULSS        X7, X6, X6 \
	VINSERTPS     $0x0e, X6, X6, X6 \
	VADDPS        Y6, Y10, Y10

// func dotQ4_1RowsAVX512(w *byte, x *quant.BlockQ8_1, nb, rows int, out *float32)
TEXT ·dotQ4_1RowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-40
	ROWS_PROLOGUE
	VPBROADCASTD X15, Z15
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
q41row:
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	VXORPS Y10, Y10, Y10
	CMPQ CX, $8
	JLT  q41tail
q41loop8:
	PREFETCHT0 2560(SI)
	PREFETCHT0 2624(SI)
	PREFETCHT0 2688(SI)
	MINS8(20)
	Q4_1_PAIR(4, 24, 4, 40, Z16)
	Q4_1_PAIR(44, 64, 76, 112, Z17)
	Q4_1_PAIR(84, 104, 148, 184, Z18)
	Q4_1_PAIR(124, 144, 220, 256, Z19)
	ADDQ $160, SI
	ADDQ $288, DI
	SUBQ $8, CX
	CMPQ CX, $8
	JGE  q41loop8
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
q41tail:
	TESTQ CX, CX
	JZ   q41done
q41loop:
	NIB32(4)
	VPXOR    Y5, Y5, Y5
	VPDPBUSD 4(DI), Y2, Y5
	Q81FIN
	ADDQ $20, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q41loop
q41done:
	VADDPS Y10, Y0, Y0
	ROWEND_Y0(q41row, q41kept, q41adv, q41next)
	VZEROUPPER
	RET

// func dotQ5_1RowsAVX512(w *byte, x *quant.BlockQ8_1, nb, rows int, out *float32)
TEXT ·dotQ5_1RowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-40
	ROWS_PROLOGUE
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z12
	VPBROADCASTD X15, Z15
	VMOVDQU64 iq4xsIdx<>+0(SB), Z16
	VMOVDQU64 iq4xsIdx<>+64(SB), Z17
	VMOVDQU64 iq4xsIdx<>+128(SB), Z18
	VMOVDQU64 iq4xsIdx<>+192(SB), Z19
q51row:
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	VXORPS Y10, Y10, Y10
	CMPQ CX, $8
	JLT  q51tail
q51loop8:
	PREFETCHT0 3072(SI)
	PREFETCHT0 3136(SI)
	PREFETCHT0 3200(SI)
	MINS8(24)
	Q5_1_PAIR(8, 32, 4, 28, 4, 40, Z16)
	Q5_1_PAIR(56, 80, 52, 76, 76, 112, Z17)
	Q5_1_PAIR(104, 128, 100, 124, 148, 184, Z18)
	Q5_1_PAIR(152, 176, 148, 172, 220, 256, Z19)
	ADDQ $192, SI
	ADDQ $288, DI
	SUBQ $8, CX
	CMPQ CX, $8
	JGE  q51loop8
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
q51tail:
	TESTQ CX, CX
	JZ   q51done
q51loop:
	NIB32(8)
	MOVL      4(SI), AX
	KMOVD     AX, K1
	VPADDB    Y12, Y2, K1, Y2
	VPXOR    Y5, Y5, Y5
	VPDPBUSD 4(DI), Y2, Y5
	Q81FIN
	ADDQ $24, SI
	ADDQ $36, DI
	DECQ CX
	JNZ  q51loop
q51done:
	VADDPS Y10, Y0, Y0
	ROWEND_Y0(q51row, q51kept, q51adv, q51next)
	VZEROUPPER
	RET
