//go:build amd64 && !purego

#include "textflag.h"
#include "rowsum_amd64.h"

// The IQ4_XS row-run dots against Q8_K activations, AVX2 path (AVX2, FMA,
// F16C; no BMI2: Zen 2's PDEP is microcoded). For each of rows
// consecutive weight rows of nb blocks at w, out[r] is the row's dot with
// the nb activation blocks at x (nb, rows >= 1); they read exactly those
// blocks. dotIQ4XSRowsAVX2 reads the activation blocks themselves;
// dotIQ4XSRowsPrepAVX2 reads them as iq4xsPrepAVX2 wrote them into a
// scratch once per product, and gives the same bits.
//
// Integer part, per block (exact): a code's codebook value v (-127..113)
// is taken as u = v + 128 (1..241), and VPMADDUBSW multiplies u, its
// unsigned operand, with activation bytes as the signed one. u·x can
// exceed a word, so one of the two is split in two parts that cannot:
// dotIQ4XSRowsAVX2 splits u = 16·hi + lo (hi, lo 0..15, each looked up
// by VPSHUFB from the nibble), dotIQ4XSRowsPrepAVX2 the activations
// x = 4·q + r (q -32..31, r 0..3, prepared once). Either way every pair
// sum fits a word for any activation byte, -128 included (the VPSIGNB
// trick on the activations would get -128 wrong). One 32-byte load holds
// the codes of two sub-blocks, 2p in the lower 128-bit lane and 2p+1 in
// the upper, and the activations come in that order (two 16-byte halves
// each): so the words of both nibble halves of a lane belong to one
// sub-block, and their products of a part add up in words (below 2^15).
// One VPMADDWD each by the sub-block scales s-32 (a word pair per dword,
// VPSHUFD picks sub-blocks 2p and 2p+1 out of the block's scale vector)
// widens them into a dword accumulator per part. The offset,
// -128·Σ(s-32)·Σx, comes from the activation block's bsums (one
// VPMADDWD). The block's sum is then 16·hi + lo (4·q + r), below 2^26 in
// every lane. Both kernels give every lane the same values (the same
// sub-blocks and positions), so the same exact integer.
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

// IQ4XS_ADD adds the sums of a pair into the accumulators Y1 (hi, or q)
// and Y2 (lo, or r).
#define IQ4XS_ADD \
	VPADDD Y9, Y1, Y1 \
	VPADDD Y4, Y2, Y2

// IQ4XS_FLOAT converts the block's lanes, Y1 shifted left by sh plus Y2,
// and fused-multiply-adds them with d·dx (the f16 d at 0(SI), the float32
// dx at dx(DI)) into the float lanes Y0. Clobbers Y4, Y5.
#define IQ4XS_FLOAT(sh, dx) \
	VPSLLD       $sh, Y1, Y1 \
	VPADDD       Y2, Y1, Y1 \
	VCVTDQ2PS    Y1, Y1 \
	VPBROADCASTW 0(SI), X4 \
	VCVTPH2PS    X4, Y4 \
	VBROADCASTSS dx(DI), Y5 \
	VMULPS       Y5, Y4, Y4 \
	VFMADD231PS  Y4, Y1, Y0

// The row-run dots take one row at a time, as the AVX-512 ones (see
// there), and prefetch 16 blocks ahead as they do.

// func dotIQ4XSRowsAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
TEXT ·dotIQ4XSRowsAVX2(SB), NOSPLIT, $ROWS8_FRAME-40
	ROWS8_ARGS
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
	IQ4XS_FLOAT(4, 0)
	ADDQ $136, SI
	ADDQ $292, DI
	DECQ CX
	JNZ  iq4xsblock
	ROWEND_Y0(iq4xsrow, iq4xskept, iq4xsadv, iq4xsnext)
	VZEROUPPER
	RET

// The prepared activations: per block 576 bytes (a multiple of 64, from a
// 64-byte boundary, so that no load splits a cache line): for sub-block
// pair p, at 64p the parts q of values 0-15 of sub-blocks 2p and 2p+1
// (one per 128-bit lane), at 64p+32 those of values 16-31; the parts r
// likewise at 256+64p; at 512 the bsums in the scale vector's order; at
// 544 dx. The activations, split once per product, are read by every
// row: the kernel then takes 17 instructions per pair instead of 22 (one
// VPSHUFB per nibble half instead of two, the activations as memory
// operands instead of 16-byte halves joined, no VPERMD per block), and
// BenchmarkQuantRows measured 19.3 GB/cpu-s (IQ4_XS/avx2/prep, the split
// done once per product of 48 rows) against 16.0 (IQ4_XS/avx2).

// IQ4XS_SPLIT writes the parts q = x>>2 (arithmetic: the logical shift
// masked to six bits, sign-extended by xor and subtract of 32) and
// r = x&3 of the 32 activation bytes in src to q(DI) and r(DI). Y15,
// Y14 and Y13 hold 0x3f, 0x20 and 0x03 bytes. Clobbers Y4, Y5.
#define IQ4XS_SPLIT(src, q, r) \
	VPSRLW  $2, src, Y4 \
	VPAND   Y15, Y4, Y4 \
	VPXOR   Y14, Y4, Y4 \
	VPSUBB  Y14, Y4, Y4 \
	VMOVDQU Y4, q(DI) \
	VPAND   Y13, src, Y5 \
	VMOVDQU Y5, r(DI)

// IQ4XS_SPLIT_PAIR splits the activations of sub-blocks 2p (at a(SI)) and
// 2p+1 (at b(SI)) into the pair's parts at q(DI) and r(DI).
#define IQ4XS_SPLIT_PAIR(a, b, q, r) \
	VMOVDQU    a(SI), Y0 \
	VMOVDQU    b(SI), Y1 \
	VPERM2I128 $0x20, Y1, Y0, Y2 \
	VPERM2I128 $0x31, Y1, Y0, Y3 \
	IQ4XS_SPLIT(Y2, q, r) \
	IQ4XS_SPLIT(Y3, q+32, r+32)

// func iq4xsPrepAVX2(x *quant.BlockQ8K, nb int, scr *byte)
//
// It writes the prepared activations of the nb blocks at x (nb >= 1) to
// scr aligned up to 64 bytes: 63 + 576·nb bytes.
TEXT ·iq4xsPrepAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ scr+16(FP), DI
	ADDQ $63, DI
	ANDQ $-64, DI
	MOVL $0x3f3f3f3f, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x20202020, AX
	MOVQ AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x03030303, AX
	MOVQ AX, X13
	VPBROADCASTD X13, Y13
	VMOVDQU iq4xsPerm<>(SB), Y12

iq4xsprep:
	IQ4XS_SPLIT_PAIR(4, 36, 0, 256)
	IQ4XS_SPLIT_PAIR(68, 100, 64, 320)
	IQ4XS_SPLIT_PAIR(132, 164, 128, 384)
	IQ4XS_SPLIT_PAIR(196, 228, 192, 448)
	VPERMD  260(SI), Y12, Y6
	VMOVDQU Y6, 512(DI)
	MOVL    0(SI), AX
	MOVL    AX, 544(DI)
	ADDQ    $292, SI
	ADDQ    $576, DI
	DECQ    CX
	JNZ     iq4xsprep
	VZEROUPPER
	RET

// iq4xsU is IQ4_NL's codebook plus 128 (for VPBROADCASTI128).
DATA iq4xsU<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4xsU<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4xsU<>(SB), RODATA|NOPTR, $16

// IQ4XS_PPAIR is IQ4XS_PAIR on prepared activations: it leaves in Y9 and
// Y4 the q and r sums of sub-blocks 2p and 2p+1, scaled, the codes at
// q(SI), the pair's parts at xq(DI) and xr(DI), the scales picked by imm.
// Y14 holds iq4xsU. Clobbers Y5, Y7, Y8.
#define IQ4XS_PPAIR(q, xq, xr, imm) \
	VMOVDQU    q(SI), Y4 \
	VPSRLW     $4, Y4, Y5 \
	VPAND      Y15, Y4, Y4 \
	VPAND      Y15, Y5, Y5 \
	VPSHUFB    Y4, Y14, Y4 \
	VPSHUFB    Y5, Y14, Y5 \
	VPMADDUBSW xq(DI), Y4, Y7 \
	VPMADDUBSW xq+32(DI), Y5, Y8 \
	VPADDW     Y8, Y7, Y9 \
	VPMADDUBSW xr(DI), Y4, Y4 \
	VPMADDUBSW xr+32(DI), Y5, Y5 \
	VPADDW     Y5, Y4, Y4 \
	VPSHUFD    $imm, Y3, Y5 \
	VPMADDWD   Y5, Y9, Y9 \
	VPMADDWD   Y5, Y4, Y4

// func dotIQ4XSRowsPrepAVX2(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
//
// scr is the scratch iq4xsPrepAVX2 wrote (the same pointer); x is not
// read.
TEXT ·dotIQ4XSRowsPrepAVX2(SB), NOSPLIT, $ROWS8_FRAME-48
	MOVQ $0, ROWS8_KEPT
	MOVQ w+0(FP), SI
	MOVQ scr+40(FP), R11
	ADDQ $63, R11
	ANDQ $-64, R11
	MOVQ nb+16(FP), R12
	MOVQ rows+24(FP), R13
	MOVQ out+32(FP), R14
	MOVL $0x0f0f0f0f, AX
	MOVQ AX, X15
	VPBROADCASTD X15, Y15
	VBROADCASTI128 iq4xsU<>(SB), Y14

iq4xsprow:
	MOVQ   R11, DI
	MOVQ   R12, CX
	VXORPS Y0, Y0, Y0

iq4xspblock:
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	IQ4XS_SCALES
	VPMADDWD 512(DI), Y3, Y6
	VPSLLD   $7, Y6, Y6
	IQ4XS_PPAIR(8, 0, 256, 0x00)
	VMOVDQA Y9, Y1
	VPSUBD  Y6, Y4, Y2
	IQ4XS_PPAIR(40, 64, 320, 0x55)
	IQ4XS_ADD
	IQ4XS_PPAIR(72, 128, 384, 0xaa)
	IQ4XS_ADD
	IQ4XS_PPAIR(104, 192, 448, 0xff)
	IQ4XS_ADD
	IQ4XS_FLOAT(2, 544)
	ADDQ $136, SI
	ADDQ $576, DI
	DECQ CX
	JNZ  iq4xspblock
	ROWEND_Y0(iq4xsprow, iq4xspkept, iq4xspadv, iq4xspnext)
	VZEROUPPER
	RET
