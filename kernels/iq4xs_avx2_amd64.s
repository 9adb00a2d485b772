//go:build amd64 && !purego

#include "textflag.h"

// The IQ4_XS row-run dot against Q8_K activations, AVX2 path (AVX2, FMA,
// F16C; no BMI2: Zen 2's PDEP is microcoded). For each of rows
// consecutive weight rows of nb blocks at w, out[r] is the row's dot with
// the nb activation blocks at x (nb, rows >= 1); it reads exactly those
// blocks.
//
// Integer part, per block (exact): a code's codebook value v (-127..113)
// is taken as u = v + 128 (1..241), split into u = 16·hi + lo with hi and
// lo 0..15, each by a VPSHUFB table lookup of the nibble. VPMADDUBSW then
// takes hi and lo as its unsigned operand and the activations as the
// signed one: every pair sum is at most 2·15·128 in magnitude, so nothing
// saturates for any activation byte, -128 included (the VPSIGNB trick
// on the activations would get -128 wrong). One 32-byte load holds the
// codes of two sub-blocks, 2p in the lower 128-bit lane and 2p+1 in the
// upper, and the activations are loaded in that order (two 16-byte
// halves each): so the words of both nibble halves of a lane belong to
// one sub-block, and hi·x of the low and the high nibbles add up in words
// (at most 4·15·128), as do lo·x. One VPMADDWD each by the sub-block
// scales s-32 (a word pair per dword, VPSHUFD picks sub-blocks 2p and
// 2p+1 out of the block's scale vector) widens them into a dword
// accumulator for hi and one for lo. The offset, -128·Σ(s-32)·Σx, comes
// from the activation block's bsums (one VPMADDWD). The block's sum is
// then 16·hi-accumulator + lo-accumulator, below 2^26 in every lane.
//
// Float part: the block's eight exact dword lanes are converted and
// fused-multiply-added with d·dx (float32, the generic twin's rounding)
// into eight float32 lanes, reduced once per row. So the result equals
// the generic twin (quant.DotIQ4XSQ8K, ggml's generic C order) up to the
// rounding of the summation order, as the AVX-512 row-run dot does; a row
// of a run equals the one-token dot (a run of one) bit for bit.

// iq4xsHiNib and iq4xsLoNib are IQ4_NL's codebook plus 128, split into
// its high and low nibbles (for VPBROADCASTI128: one copy per lane of a
// VPSHUFB).
DATA iq4xsHiNib<>+0(SB)/8, $0x0706050403020100
DATA iq4xsHiNib<>+8(SB)/8, $0x0f0d0c0b0a090808
GLOBL iq4xsHiNib<>(SB), RODATA|NOPTR, $16

DATA iq4xsLoNib<>+0(SB)/8, $0x060a0d0f0f0d0801
DATA iq4xsLoNib<>+8(SB)/8, $0x0109050506090d01
GLOBL iq4xsLoNib<>(SB), RODATA|NOPTR, $16

// The block's scale vector takes sub-blocks 0, 2, 4, 6 in dwords 0-3
// (lower lane) and 1, 3, 5, 7 in dwords 4-7 (upper lane), s-32 in both
// words of each dword. iq4xsSpread copies scales_l byte j (sub-blocks 2j
// and 2j+1) into both words of dword j of each lane; iq4xsSlShift moves
// the upper lane's to the high nibbles; iq4xsShShift brings the two bits
// of scales_h of the dword's sub-block k (bits 2k, 2k+1) down.
DATA iq4xsSpread<>+0(SB)/8, $0x8001800180008000
DATA iq4xsSpread<>+8(SB)/8, $0x8003800380028002
DATA iq4xsSpread<>+16(SB)/8, $0x8001800180008000
DATA iq4xsSpread<>+24(SB)/8, $0x8003800380028002
GLOBL iq4xsSpread<>(SB), RODATA|NOPTR, $32

DATA iq4xsSlShift<>+0(SB)/8, $0
DATA iq4xsSlShift<>+8(SB)/8, $0
DATA iq4xsSlShift<>+16(SB)/8, $0x0000000400000004
DATA iq4xsSlShift<>+24(SB)/8, $0x0000000400000004
GLOBL iq4xsSlShift<>(SB), RODATA|NOPTR, $32

DATA iq4xsShShift<>+0(SB)/8, $0x0000000400000000
DATA iq4xsShShift<>+8(SB)/8, $0x0000000c00000008
DATA iq4xsShShift<>+16(SB)/8, $0x0000000600000002
DATA iq4xsShShift<>+24(SB)/8, $0x0000000e0000000a
GLOBL iq4xsShShift<>(SB), RODATA|NOPTR, $32

// iq4xsThree masks the two scales_h bits of each word, iq4xsBias is 32
// in every word.
DATA iq4xsThree<>+0(SB)/8, $0x0003000300030003
DATA iq4xsThree<>+8(SB)/8, $0x0003000300030003
DATA iq4xsThree<>+16(SB)/8, $0x0003000300030003
DATA iq4xsThree<>+24(SB)/8, $0x0003000300030003
GLOBL iq4xsThree<>(SB), RODATA|NOPTR, $32

DATA iq4xsBias<>+0(SB)/8, $0x0020002000200020
DATA iq4xsBias<>+8(SB)/8, $0x0020002000200020
DATA iq4xsBias<>+16(SB)/8, $0x0020002000200020
DATA iq4xsBias<>+24(SB)/8, $0x0020002000200020
GLOBL iq4xsBias<>(SB), RODATA|NOPTR, $32

// iq4xsPerm puts the bsums pairs (one dword per sub-block) in the scale
// vector's order.
DATA iq4xsPerm<>+0(SB)/8, $0x0000000200000000
DATA iq4xsPerm<>+8(SB)/8, $0x0000000600000004
DATA iq4xsPerm<>+16(SB)/8, $0x0000000300000001
DATA iq4xsPerm<>+24(SB)/8, $0x0000000700000005
GLOBL iq4xsPerm<>(SB), RODATA|NOPTR, $32

// IQ4XS_SCALES leaves the scale vector of the block at SI in Y3 (see
// above). Y15 holds 0x0f bytes. Clobbers Y4, Y5.
#define IQ4XS_SCALES \
	VPBROADCASTD 4(SI), Y4 \
	VPSHUFB      iq4xsSpread<>(SB), Y4, Y4 \
	VPSRLVD      iq4xsSlShift<>(SB), Y4, Y4 \
	VPAND        Y15, Y4, Y4 \
	VPBROADCASTW 2(SI), Y5 \
	VPSRLVD      iq4xsShShift<>(SB), Y5, Y5 \
	VPAND        iq4xsThree<>(SB), Y5, Y5 \
	VPSLLW       $4, Y5, Y5 \
	VPOR         Y5, Y4, Y4 \
	VPSUBW       iq4xsBias<>(SB), Y4, Y3

// IQ4XS_OFFSET leaves 128·(s-32)·Σx of each sub-block in Y6 (scale
// vector order), from the bsums of the activation block at DI. Y12 holds
// iq4xsPerm.
#define IQ4XS_OFFSET \
	VPERMD   260(DI), Y12, Y6 \
	VPMADDWD Y3, Y6, Y6 \
	VPSLLD   $7, Y6, Y6

// IQ4XS_PAIR leaves in Y9 and Y4 the hi and lo sums of sub-blocks 2p and
// 2p+1, scaled: the codes at q(SI), the activations of values 0-15 at
// l0(DI) (sub-block 2p) and l1(DI) (2p+1), of 16-31 at h0(DI) and h1(DI),
// the scales picked by imm. Y13 and Y14 hold the lo and hi tables.
// Clobbers Y5, Y7, Y8.
#define IQ4XS_PAIR(q, l0, l1, h0, h1, imm) \
	VMOVDQU     q(SI), Y4 \
	VPSRLW      $4, Y4, Y5 \
	VPAND       Y15, Y4, Y4 \
	VPAND       Y15, Y5, Y5 \
	VMOVDQU     l0(DI), X7 \
	VINSERTI128 $1, l1(DI), Y7, Y7 \
	VMOVDQU     h0(DI), X8 \
	VINSERTI128 $1, h1(DI), Y8, Y8 \
	VPSHUFB     Y4, Y14, Y9 \
	VPSHUFB     Y4, Y13, Y4 \
	VPMADDUBSW  Y7, Y9, Y9 \
	VPMADDUBSW  Y7, Y4, Y4 \
	VPSHUFB     Y5, Y14, Y7 \
	VPSHUFB     Y5, Y13, Y5 \
	VPMADDUBSW  Y8, Y7, Y7 \
	VPMADDUBSW  Y8, Y5, Y5 \
	VPADDW      Y7, Y9, Y9 \
	VPADDW      Y5, Y4, Y4 \
	VPSHUFD     $imm, Y3, Y5 \
	VPMADDWD    Y5, Y9, Y9 \
	VPMADDWD    Y5, Y4, Y4

// IQ4XS_ADD adds the sums of a pair into the accumulators Y1 (hi) and Y2
// (lo).
#define IQ4XS_ADD \
	VPADDD Y9, Y1, Y1 \
	VPADDD Y4, Y2, Y2

// func dotIQ4XSRowsAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// One row at a time, as the AVX-512 row-run dots (see there).
TEXT ·dotIQ4XSRowsAVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ rows+24(FP), R13
	MOVQ out+32(FP), R14
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 iq4xsHiNib<>(SB), Y14
	VBROADCASTI128 iq4xsLoNib<>(SB), Y13
	VMOVDQU iq4xsPerm<>(SB), Y12

iq4xsrow:
	MOVQ   R11, DI
	MOVQ   R12, CX
	VXORPS Y0, Y0, Y0

iq4xsblock:
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	IQ4XS_SCALES
	IQ4XS_OFFSET
	IQ4XS_PAIR(8, 4, 36, 20, 52, 0x00)
	VMOVDQA Y9, Y1
	VPSUBD  Y6, Y4, Y2
	IQ4XS_PAIR(40, 68, 100, 84, 116, 0x55)
	IQ4XS_ADD
	IQ4XS_PAIR(72, 132, 164, 148, 180, 0xaa)
	IQ4XS_ADD
	IQ4XS_PAIR(104, 196, 228, 212, 244, 0xff)
	IQ4XS_ADD
	// The block: 16·hi + lo, times d·dx into the float lanes.
	VPSLLD       $4, Y1, Y1
	VPADDD       Y2, Y1, Y1
	VCVTDQ2PS    Y1, Y1
	VPBROADCASTW 0(SI), X4
	VCVTPH2PS    X4, Y4
	VBROADCASTSS 0(DI), Y5
	VMULPS       Y5, Y4, Y4
	VFMADD231PS  Y4, Y1, Y0
	ADDQ         $136, SI
	ADDQ         $292, DI
	DECQ         CX
	JNZ          iq4xsblock

	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X1, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VMOVSS       X0, (R14)
	ADDQ         $4, R14
	DECQ         R13
	JNZ          iq4xsrow
	VZEROUPPER
	RET
