//go:build amd64 && !purego

#include "textflag.h"
#include "q8act_amd64.h"
#include "qtile_amd64.h"

// The prompt tile on AVX2 (qtile.go's layout, qtile_avx2_amd64.go): one
// call multiplies eight rows of a group (one half of its 64-byte
// registers, the caller's w points at it) by four tokens, or one. Per
// 32-value block the rows' codes u are loaded into Y0-Y7 (register j:
// values 4j..4j+3 of the eight rows) and turned into q = u - base, which
// is Q4_0's nibble (base 120) or Q5_0's five-bit code (base 112). Per
// token: VPMADDUBSW of q (unsigned) with the token's four activation
// bytes j broadcast (signed) gives each row's two pair sums; they add up
// in 16-bit lanes (Q4_0: all eight registers, |Σ| <= 8·2·15·128 = 30720;
// Q5_0: four at a time, 4·2·31·128 = 31744), and VPMADDWD with ones
// widens them to the rows' dword lanes, exactly Σ q·x. The token's bias
// -128·Σx shifted right by 4 (Q4_0) or 3 (Q5_0) is -(128-base)·Σx, which
// makes the lane Σ v·x, the integer the other tile kernels have; then
// the float step is theirs: acc = fma(float32(Σ), dw·dx, acc).

// Q2W_CODES loads the half-block at SI as it is (the wide kernels' codes).
#define Q2W_CODES \
	VMOVDQU 0(SI), Y0 \
	VMOVDQU 64(SI), Y1 \
	VMOVDQU 128(SI), Y2 \
	VMOVDQU 192(SI), Y3 \
	VMOVDQU 256(SI), Y4 \
	VMOVDQU 320(SI), Y5 \
	VMOVDQU 384(SI), Y6 \
	VMOVDQU 448(SI), Y7

// Q2_CODES loads the half-block at SI as codes q = u - base: neg holds
// -base in every byte.
#define Q2_CODES(neg) \
	Q2W_CODES \
	VPADDB  neg, Y0, Y0 \
	VPADDB  neg, Y1, Y1 \
	VPADDB  neg, Y2, Y2 \
	VPADDB  neg, Y3, Y3 \
	VPADDB  neg, Y4, Y4 \
	VPADDB  neg, Y5, Y5 \
	VPADDB  neg, Y6, Y6 \
	VPADDB  neg, Y7, Y7

// Q2_PAIR adds register j's pair sums of the token's codes at qx into
// the 16-bit lanes of sum (Y12, Y13 temporaries).
#define Q2_PAIR(qx, j, reg, sum) \
	VPBROADCASTD qx(4*j), Y12 \
	VPMADDUBSW   Y12, reg, Y13 \
	VPADDW       Y13, sum, sum

// Q2_FLOAT adds the integer lanes in Y14 plus the token's bias shifted
// right by sh to acc, times dw·dx (the rows' scales at 512(SI), the
// token's at qs(0)).
#define Q2_FLOAT(qs, sh, acc) \
	VPBROADCASTD qs(4), Y12 \
	VPSRAD       $sh, Y12, Y12 \
	VPADDD       Y12, Y14, Y14 \
	VCVTDQ2PS    Y14, Y14 \
	VBROADCASTSS qs(0), Y15 \
	VMULPS       512(SI), Y15, Y15 \
	VFMADD231PS  Y15, Y14, acc

// Q2_TOKQ4 adds one token's Q4_0 block to acc: two chains of four
// registers in 16 bits (Y14, and Y15 until the float step), added, then
// one widening. (One chain of eight measured 65 GFLOP/s against Q5_0's
// 75 in BenchmarkQTile/avx2: the adds waited on one another.)
#define Q2_TOKQ4(qx, qs, acc) \
	Q2_HALVES(qx) \
	VPADDW       Y15, Y14, Y14 \
	VPMADDWD     q2Ones<>(SB), Y14, Y14 \
	Q2_FLOAT(qs, 4, acc)

// Q2_HALVES leaves the pair sums of registers 0-3 in the 16-bit lanes of
// Y14 and of registers 4-7 in Y15.
#define Q2_HALVES(qx) \
	VPBROADCASTD qx(0), Y12 \
	VPMADDUBSW   Y12, Y0, Y14 \
	VPBROADCASTD qx(16), Y12 \
	VPMADDUBSW   Y12, Y4, Y15 \
	Q2_PAIR(qx, 1, Y1, Y14) \
	Q2_PAIR(qx, 5, Y5, Y15) \
	Q2_PAIR(qx, 2, Y2, Y14) \
	Q2_PAIR(qx, 6, Y6, Y15) \
	Q2_PAIR(qx, 3, Y3, Y14) \
	Q2_PAIR(qx, 7, Y7, Y15)

// Q2_TOKQ5 adds one token's Q5_0 block to acc: each chain of four
// widened on its own, then added.
#define Q2_TOKQ5(qx, qs, acc) \
	Q2_HALVES(qx) \
	VPMADDWD     q2Ones<>(SB), Y14, Y14 \
	VPMADDWD     q2Ones<>(SB), Y15, Y15 \
	VPADDD       Y15, Y14, Y14 \
	Q2_FLOAT(qs, 3, acc)

// Q2_ARGS4 loads the four-token kernels' arguments: w SI, xq DI, xs R8,
// nb CX; the token strides R11 (codes, nb·32), R13 (3·R11), R9 (scales,
// nb·8) and R10 (3·R9); and zeroes the accumulators Y8-Y11.
#define Q2_ARGS4 \
	MOVQ w+0(FP), SI \
	MOVQ xq+8(FP), DI \
	MOVQ xs+16(FP), R8 \
	MOVQ nb+24(FP), CX \
	MOVQ CX, R11 \
	SHLQ $5, R11 \
	LEAQ (R11)(R11*2), R13 \
	LEAQ (CX*8), R9 \
	LEAQ (R9)(R9*2), R10 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10 \
	VPXOR Y11, Y11, Y11

// Q2_STORE4 stores the four tokens' eight rows (Y8-Y11) to out.
#define Q2_STORE4 \
	MOVQ    out+32(FP), DX \
	VMOVUPS Y8, 0(DX) \
	VMOVUPS Y9, 32(DX) \
	VMOVUPS Y10, 64(DX) \
	VMOVUPS Y11, 96(DX) \
	VZEROUPPER \
	RET

// Q2_FOUR adds the four tokens' blocks to their accumulators with tok
// (Q2_TOKQ4, Q2_TOKQ5 or Q2W_TOK).
#define Q2_FOUR(tok) \
	tok(QX0, QS0, Y8) \
	tok(QX1, QS1, Y9) \
	tok(QX2, QS2, Y10) \
	tok(QX3, QS3, Y11)

// Q2_NEXT moves to the next block (xb activation bytes a token) and
// loops while blocks are left.
#define Q2_NEXT(xb, loop) \
	ADDQ $576, SI \
	ADDQ $xb, DI \
	ADDQ $8, R8 \
	DECQ CX \
	JNZ  loop

// func qtile4Q4_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)
TEXT ·qtile4Q4_0AVX2(SB), NOSPLIT, $0-40
	Q2_ARGS4
q2q4loop:
	Q2_CODES(q2Neg120<>(SB))
	Q2_FOUR(Q2_TOKQ4)
	Q2_NEXT(32, q2q4loop)
	Q2_STORE4

// func qtile4Q5_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)
TEXT ·qtile4Q5_0AVX2(SB), NOSPLIT, $0-40
	Q2_ARGS4
q2q5loop:
	Q2_CODES(q2Neg112<>(SB))
	Q2_FOUR(Q2_TOKQ5)
	Q2_NEXT(32, q2q5loop)
	Q2_STORE4

// The wide kernel, for codes u anywhere in 0..255 (IQ4_NL, IQ4_XS,
// Q8_0): VPMADDUBSW of u with a signed byte could overflow its 16-bit
// pair sums, so the token's codes come split (qtSplitActs) as x = 16·h +
// l with h = x>>4 in -8..7 and l = x&15 in 0..15, 32 bytes of each per
// block (the token's 64 at qx). Σ u·h adds in 16 bits over all eight
// registers (|Σ| <= 8·2·255·8 = 32640) and is widened times 16; Σ u·l in
// two chains of four (4·2·255·15 = 30600), each widened; their sum is
// Σ u·x exactly, and the token's bias -128·Σx as it is makes it Σ v·x.

// Q2W_TOK adds one token's block to acc (its split codes at qx: QX with
// R11 = nb·64, R13 = 3·R11).
#define Q2W_TOK(qx, qs, acc) \
	VPBROADCASTD qx(0), Y12 \
	VPMADDUBSW   Y12, Y0, Y14 \
	Q2_PAIR(qx, 1, Y1, Y14) \
	Q2_PAIR(qx, 2, Y2, Y14) \
	Q2_PAIR(qx, 3, Y3, Y14) \
	Q2_PAIR(qx, 4, Y4, Y14) \
	Q2_PAIR(qx, 5, Y5, Y14) \
	Q2_PAIR(qx, 6, Y6, Y14) \
	Q2_PAIR(qx, 7, Y7, Y14) \
	VPMADDWD     q2Sixteen<>(SB), Y14, Y14 \
	VPBROADCASTD qx(32), Y12 \
	VPMADDUBSW   Y12, Y0, Y15 \
	Q2_PAIR(qx, 9, Y1, Y15) \
	Q2_PAIR(qx, 10, Y2, Y15) \
	Q2_PAIR(qx, 11, Y3, Y15) \
	VPMADDWD     q2Ones<>(SB), Y15, Y15 \
	VPADDD       Y15, Y14, Y14 \
	VPBROADCASTD qx(48), Y12 \
	VPMADDUBSW   Y12, Y4, Y15 \
	Q2_PAIR(qx, 13, Y5, Y15) \
	Q2_PAIR(qx, 14, Y6, Y15) \
	Q2_PAIR(qx, 15, Y7, Y15) \
	VPMADDWD     q2Ones<>(SB), Y15, Y15 \
	VPADDD       Y15, Y14, Y14 \
	VPBROADCASTD qs(4), Y12 \
	VPADDD       Y12, Y14, Y14 \
	VCVTDQ2PS    Y14, Y14 \
	VBROADCASTSS qs(0), Y15 \
	VMULPS       512(SI), Y15, Y15 \
	VFMADD231PS  Y15, Y14, acc

// func qtile4WideAVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[32]float32)
TEXT ·qtile4WideAVX2(SB), NOSPLIT, $0-40
	Q2_ARGS4
	SHLQ $1, R11
	SHLQ $1, R13
q2wloop:
	Q2W_CODES
	Q2_FOUR(Q2W_TOK)
	Q2_NEXT(64, q2wloop)
	Q2_STORE4

// Q2_ARGS1 loads the one-token kernels' arguments and zeroes Y8.
#define Q2_ARGS1 \
	MOVQ w+0(FP), SI \
	MOVQ xq+8(FP), DI \
	MOVQ xs+16(FP), R8 \
	MOVQ nb+24(FP), CX \
	VPXOR Y8, Y8, Y8

// Q2_STORE1 stores the token's eight rows (Y8) to out.
#define Q2_STORE1 \
	MOVQ    out+32(FP), DX \
	VMOVUPS Y8, 0(DX) \
	VZEROUPPER \
	RET

// func qtile1Q4_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)
TEXT ·qtile1Q4_0AVX2(SB), NOSPLIT, $0-40
	Q2_ARGS1
q1q4loop:
	Q2_CODES(q2Neg120<>(SB))
	Q2_TOKQ4(QX0, QS0, Y8)
	Q2_NEXT(32, q1q4loop)
	Q2_STORE1

// func qtile1Q5_0AVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)
TEXT ·qtile1Q5_0AVX2(SB), NOSPLIT, $0-40
	Q2_ARGS1
q1q5loop:
	Q2_CODES(q2Neg112<>(SB))
	Q2_TOKQ5(QX0, QS0, Y8)
	Q2_NEXT(32, q1q5loop)
	Q2_STORE1

// func qtile1WideAVX2(w *byte, xq *int8, xs *qtScale, nb int, out *[8]float32)
TEXT ·qtile1WideAVX2(SB), NOSPLIT, $0-40
	Q2_ARGS1
q1wloop:
	Q2W_CODES
	Q2W_TOK(QX0, QS0, Y8)
	Q2_NEXT(64, q1wloop)
	Q2_STORE1

DATA q2Sixteen<>+0(SB)/8, $0x0010001000100010
DATA q2Sixteen<>+8(SB)/8, $0x0010001000100010
DATA q2Sixteen<>+16(SB)/8, $0x0010001000100010
DATA q2Sixteen<>+24(SB)/8, $0x0010001000100010
GLOBL q2Sixteen<>(SB), RODATA|NOPTR, $32

DATA q2Neg120<>+0(SB)/8, $0x8888888888888888
DATA q2Neg120<>+8(SB)/8, $0x8888888888888888
DATA q2Neg120<>+16(SB)/8, $0x8888888888888888
DATA q2Neg120<>+24(SB)/8, $0x8888888888888888
GLOBL q2Neg120<>(SB), RODATA|NOPTR, $32

DATA q2Neg112<>+0(SB)/8, $0x9090909090909090
DATA q2Neg112<>+8(SB)/8, $0x9090909090909090
DATA q2Neg112<>+16(SB)/8, $0x9090909090909090
DATA q2Neg112<>+24(SB)/8, $0x9090909090909090
GLOBL q2Neg112<>(SB), RODATA|NOPTR, $32

DATA q2Ones<>+0(SB)/8, $0x0001000100010001
DATA q2Ones<>+8(SB)/8, $0x0001000100010001
DATA q2Ones<>+16(SB)/8, $0x0001000100010001
DATA q2Ones<>+24(SB)/8, $0x0001000100010001
GLOBL q2Ones<>(SB), RODATA|NOPTR, $32

// The repacks of whole groups (sixteen rows rb bytes apart) into the
// tile layout, eight rows at a time: each row's sixteen qs bytes are
// loaded (rows r and r+4 into the two lanes of one register), the four
// registers are transposed as 4×4 dwords within their lanes, which
// leaves register k holding qs dword k of the eight rows in row order,
// and its low and high nibbles become layout registers k and k+4 (codes
// by a VPSHUFB of a 16-byte table); the rows' f16 scales are inserted
// word by word and converted.

// Q2R_ROWS loads qs bytes at off of the eight rows at base (rows rb =
// R8 apart; R9 = 3rb, R10 = 5rb, R11 = 7rb) and leaves qs dword k of
// row r in dword r of Y4+k (Y0-Y3 temporaries).
#define Q2R_ROWS(base, off) \
	VMOVDQU     off(base), X0 \
	VINSERTI128 $1, off(base)(R8*4), Y0, Y0 \
	VMOVDQU     off(base)(R8*1), X1 \
	VINSERTI128 $1, off(base)(R10*1), Y1, Y1 \
	VMOVDQU     off(base)(R8*2), X2 \
	VINSERTI128 $1, off(base)(R9*2), Y2, Y2 \
	VMOVDQU     off(base)(R9*1), X3 \
	VINSERTI128 $1, off(base)(R11*1), Y3, Y3 \
	VPUNPCKLDQ  Y1, Y0, Y4 \
	VPUNPCKHDQ  Y1, Y0, Y5 \
	VPUNPCKLDQ  Y3, Y2, Y6 \
	VPUNPCKHDQ  Y3, Y2, Y7 \
	VPUNPCKLQDQ Y6, Y4, Y0 \
	VPUNPCKHQDQ Y6, Y4, Y1 \
	VPUNPCKLQDQ Y7, Y5, Y2 \
	VPUNPCKHQDQ Y7, Y5, Y3 \
	VMOVDQA     Y0, Y4 \
	VMOVDQA     Y1, Y5 \
	VMOVDQA     Y2, Y6 \
	VMOVDQA     Y3, Y7

// Q2R_WORDS inserts the eight rows' words at off into x.
#define Q2R_WORDS(base, off, x) \
	VPINSRW $0, off(base), x, x \
	VPINSRW $1, off(base)(R8*1), x, x \
	VPINSRW $2, off(base)(R8*2), x, x \
	VPINSRW $3, off(base)(R9*1), x, x \
	VPINSRW $4, off(base)(R8*4), x, x \
	VPINSRW $5, off(base)(R10*1), x, x \
	VPINSRW $6, off(base)(R9*2), x, x \
	VPINSRW $7, off(base)(R11*1), x, x

// Q2R_SCALES stores the eight rows' f16 scales (at offset 0 of base's
// rows) as float32 at off(DI).
#define Q2R_SCALES(base, off) \
	Q2R_WORDS(base, 0, X8) \
	VCVTPH2PS X8, Y8 \
	VMOVUPS   Y8, off(DI)

// Q2R_NIB stores the codes of the low and high nibbles of Y4+k (reg) as
// layout registers k and k+4 of half h of the layout block at off(DI)
// (0x0f bytes in Y15, the table in Y14).
#define Q2R_NIB(reg, k, h, off) \
	VPSRLW  $4, reg, Y9 \
	VPAND   Y15, reg, Y10 \
	VPAND   Y15, Y9, Y9 \
	VPSHUFB Y10, Y14, Y10 \
	VPSHUFB Y9, Y14, Y9 \
	VMOVDQU Y10, (off+64*k+32*h)(DI) \
	VMOVDQU Y9, (off+64*k+256+32*h)(DI)

// Q2R_NIBS stores the codes of the four registers Y4-Y7 (Q2R_ROWS) into
// half h of the layout block at off(DI).
#define Q2R_NIBS(h, off) \
	Q2R_NIB(Y4, 0, h, off) \
	Q2R_NIB(Y5, 1, h, off) \
	Q2R_NIB(Y6, 2, h, off) \
	Q2R_NIB(Y7, 3, h, off)

// Q2R_ARGS loads a repack's arguments (dst DI, w SI, rb R8, nb CX), the
// row strides R9-R11, the second half's rows in BX (SI + 8rb), and 0x0f
// bytes in Y15.
#define Q2R_ARGS \
	MOVQ dst+0(FP), DI \
	MOVQ w+8(FP), SI \
	MOVQ rb+16(FP), R8 \
	MOVQ nb+24(FP), CX \
	LEAQ (R8)(R8*2), R9 \
	LEAQ (R8)(R8*4), R10 \
	LEAQ (R9)(R8*4), R11 \
	LEAQ (SI)(R8*8), BX \
	MOVL $0x0f0f0f0f, AX \
	VMOVD AX, X15 \
	VPBROADCASTD X15, Y15

// func qtRepackNib18AVX2(dst, w *byte, rb, nb int, lut *[16]byte)
// Q4_0 and IQ4_NL: 18-byte blocks, f16 scale then 16 bytes of nibbles.
TEXT ·qtRepackNib18AVX2(SB), NOSPLIT, $0-40
	Q2R_ARGS
	MOVQ lut+32(FP), AX
	VBROADCASTI128 (AX), Y14

q2rn18loop:
	Q2R_SCALES(SI, 512)
	Q2R_ROWS(SI, 2)
	Q2R_NIBS(0, 0)
	Q2R_SCALES(BX, 544)
	Q2R_ROWS(BX, 2)
	Q2R_NIBS(1, 0)
	ADDQ $18, SI
	ADDQ $18, BX
	ADDQ $576, DI
	DECQ CX
	JNZ  q2rn18loop
	VZEROUPPER
	RET

// Q2R_QH leaves the eight rows' qh words (at 2(base)) in the dwords of
// Y13, row by row.
#define Q2R_QH(base) \
	VMOVD   2(base), X13 \
	VPINSRD $1, 2(base)(R8*1), X13, X13 \
	VPINSRD $2, 2(base)(R8*2), X13, X13 \
	VPINSRD $3, 2(base)(R9*1), X13, X13 \
	VMOVD   2(base)(R8*4), X12 \
	VPINSRD $1, 2(base)(R10*1), X12, X12 \
	VPINSRD $2, 2(base)(R9*2), X12, X12 \
	VPINSRD $3, 2(base)(R11*1), X12, X12 \
	VINSERTI128 $1, X12, Y13, Y13

// Q2R_BIT5 leaves in dst the fifth bits at bit sh of qh (Y13) in bit 4 of
// each of the four bytes, as qtile_avx512_amd64.s's QT_BIT5 does
// (multiplier 0x00204081 at q2Bit5Mul, 0x01010101 at q2Bit5Ones; Y11
// holds 15 in every dword).
#define Q2R_BIT5(sh, dst) \
	VPSRLD  $(sh), Y13, dst \
	VPAND   Y11, dst, dst \
	VPMULLD q2Bit5Mul<>(SB), dst, dst \
	VPAND   q2Bit5Ones<>(SB), dst, dst \
	VPSLLD  $4, dst, dst

// Q2R_NIB5 stores the Q5_0 codes of Y4+k (reg), their fifth bits at bit
// 4k and 16+4k of qh, as layout registers k and k+4 of half h (0x70 in
// every byte of Y14).
#define Q2R_NIB5(reg, k, h) \
	VPSRLW  $4, reg, Y9 \
	VPAND   Y15, reg, Y10 \
	VPAND   Y15, Y9, Y9 \
	Q2R_BIT5(4*k, Y12) \
	VPOR    Y12, Y10, Y10 \
	Q2R_BIT5(16+4*k, Y12) \
	VPOR    Y12, Y9, Y9 \
	VPADDB  Y14, Y10, Y10 \
	VPADDB  Y14, Y9, Y9 \
	VMOVDQU Y10, (64*k+32*h)(DI) \
	VMOVDQU Y9, (64*k+256+32*h)(DI)

// func qtRepackQ5_0AVX2(dst, w *byte, rb, nb int)
// Q5_0: 22-byte blocks, f16 scale, 32 fifth bits (qh), 16 qs bytes; the
// code is (nibble | fifth bit << 4) + 112 (q5 - 16 + 128).
TEXT ·qtRepackQ5_0AVX2(SB), NOSPLIT, $0-32
	Q2R_ARGS
	MOVL $0x70707070, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $15, AX
	VMOVD AX, X11
	VPBROADCASTD X11, Y11

q2r50loop:
	Q2R_SCALES(SI, 512)
	Q2R_QH(SI)
	Q2R_ROWS(SI, 6)
	Q2R_NIB5(Y4, 0, 0)
	Q2R_NIB5(Y5, 1, 0)
	Q2R_NIB5(Y6, 2, 0)
	Q2R_NIB5(Y7, 3, 0)
	Q2R_SCALES(BX, 544)
	Q2R_QH(BX)
	Q2R_ROWS(BX, 6)
	Q2R_NIB5(Y4, 0, 1)
	Q2R_NIB5(Y5, 1, 1)
	Q2R_NIB5(Y6, 2, 1)
	Q2R_NIB5(Y7, 3, 1)
	ADDQ $22, SI
	ADDQ $22, BX
	ADDQ $576, DI
	DECQ CX
	JNZ  q2r50loop
	VZEROUPPER
	RET

// Q2R_BYTES stores Y4-Y7 (Q2R_ROWS) with their top bits flipped (0x80
// bytes in Y14) as layout registers j0..j0+3 of half h.
#define Q2R_BYTES(j0, h) \
	VPXOR   Y14, Y4, Y4 \
	VPXOR   Y14, Y5, Y5 \
	VPXOR   Y14, Y6, Y6 \
	VPXOR   Y14, Y7, Y7 \
	VMOVDQU Y4, (64*j0+32*h)(DI) \
	VMOVDQU Y5, (64*j0+64+32*h)(DI) \
	VMOVDQU Y6, (64*j0+128+32*h)(DI) \
	VMOVDQU Y7, (64*j0+192+32*h)(DI)

// func qtRepackQ8_0AVX2(dst, w *byte, rb, nb int)
// Q8_0: 34-byte blocks, f16 scale then 32 code bytes, flipped to u.
TEXT ·qtRepackQ8_0AVX2(SB), NOSPLIT, $0-32
	Q2R_ARGS
	MOVL $0x80808080, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

q2r80loop:
	Q2R_SCALES(SI, 512)
	Q2R_ROWS(SI, 2)
	Q2R_BYTES(0, 0)
	Q2R_ROWS(SI, 18)
	Q2R_BYTES(4, 0)
	Q2R_SCALES(BX, 544)
	Q2R_ROWS(BX, 2)
	Q2R_BYTES(0, 1)
	Q2R_ROWS(BX, 18)
	Q2R_BYTES(4, 1)
	ADDQ $34, SI
	ADDQ $34, BX
	ADDQ $576, DI
	DECQ CX
	JNZ  q2r80loop
	VZEROUPPER
	RET

// Q2R_XSHDR leaves, for the eight IQ4_XS rows at base, d as float32 in
// Y11, scales_h (zero-extended) in Y12 and scales_l in Y13, row by row.
#define Q2R_XSHDR(base) \
	Q2R_WORDS(base, 0, X11) \
	VCVTPH2PS X11, Y11 \
	Q2R_WORDS(base, 2, X12) \
	VPMOVZXWD X12, Y12 \
	VMOVD   4(base), X13 \
	VPINSRD $1, 4(base)(R8*1), X13, X13 \
	VPINSRD $2, 4(base)(R8*2), X13, X13 \
	VPINSRD $3, 4(base)(R9*1), X13, X13 \
	VMOVD   4(base)(R8*4), X10 \
	VPINSRD $1, 4(base)(R10*1), X10, X10 \
	VPINSRD $2, 4(base)(R9*2), X10, X10 \
	VPINSRD $3, 4(base)(R11*1), X10, X10 \
	VINSERTI128 $1, X10, Y13, Y13

// Q2R_XSSUB writes sub-block k of half h of the IQ4_XS rows at base:
// its scale d·(ls-32), ls = (scales_l nibble k) | (scales_h bits 2k,
// 2k+1) << 4, and its codes (qs at 8+16k).
#define Q2R_XSSUB(base, k, h) \
	VPSRLD    $(4*k), Y13, Y8 \
	VPAND     q2Fifteen<>(SB), Y8, Y8 \
	VPSRLD    $(2*k), Y12, Y9 \
	VPAND     q2Three<>(SB), Y9, Y9 \
	VPSLLD    $4, Y9, Y9 \
	VPOR      Y9, Y8, Y8 \
	VPSUBD    q2ThirtyTwo<>(SB), Y8, Y8 \
	VCVTDQ2PS Y8, Y8 \
	VMULPS    Y11, Y8, Y8 \
	VMOVUPS   Y8, (576*k+512+32*h)(DI) \
	Q2R_ROWS(base, 8+16*k) \
	Q2R_NIBS(h, 576*k)

// Q2R_XSHALF writes half h of the eight layout blocks of one IQ4_XS
// block of the rows at base.
#define Q2R_XSHALF(base, h) \
	Q2R_XSHDR(base) \
	Q2R_XSSUB(base, 0, h) \
	Q2R_XSSUB(base, 1, h) \
	Q2R_XSSUB(base, 2, h) \
	Q2R_XSSUB(base, 3, h) \
	Q2R_XSSUB(base, 4, h) \
	Q2R_XSSUB(base, 5, h) \
	Q2R_XSSUB(base, 6, h) \
	Q2R_XSSUB(base, 7, h)

// func qtRepackIQ4XSAVX2(dst, w *byte, rb, nb int, lut *[16]byte)
// nb counts 256-value blocks (eight layout blocks each): f16 d,
// scales_h, scales_l, then eight sub-blocks of 16 qs bytes.
TEXT ·qtRepackIQ4XSAVX2(SB), NOSPLIT, $0-40
	Q2R_ARGS
	MOVQ lut+32(FP), AX
	VBROADCASTI128 (AX), Y14

q2rxsloop:
	Q2R_XSHALF(SI, 0)
	Q2R_XSHALF(BX, 1)
	ADDQ $136, SI
	ADDQ $136, BX
	ADDQ $4608, DI
	DECQ CX
	JNZ  q2rxsloop
	VZEROUPPER
	RET

DATA q2Fifteen<>+0(SB)/8, $0x0000000f0000000f
DATA q2Fifteen<>+8(SB)/8, $0x0000000f0000000f
DATA q2Fifteen<>+16(SB)/8, $0x0000000f0000000f
DATA q2Fifteen<>+24(SB)/8, $0x0000000f0000000f
GLOBL q2Fifteen<>(SB), RODATA|NOPTR, $32

DATA q2Three<>+0(SB)/8, $0x0000000300000003
DATA q2Three<>+8(SB)/8, $0x0000000300000003
DATA q2Three<>+16(SB)/8, $0x0000000300000003
DATA q2Three<>+24(SB)/8, $0x0000000300000003
GLOBL q2Three<>(SB), RODATA|NOPTR, $32

DATA q2ThirtyTwo<>+0(SB)/8, $0x0000002000000020
DATA q2ThirtyTwo<>+8(SB)/8, $0x0000002000000020
DATA q2ThirtyTwo<>+16(SB)/8, $0x0000002000000020
DATA q2ThirtyTwo<>+24(SB)/8, $0x0000002000000020
GLOBL q2ThirtyTwo<>(SB), RODATA|NOPTR, $32

DATA q2Bit5Mul<>+0(SB)/8, $0x0020408100204081
DATA q2Bit5Mul<>+8(SB)/8, $0x0020408100204081
DATA q2Bit5Mul<>+16(SB)/8, $0x0020408100204081
DATA q2Bit5Mul<>+24(SB)/8, $0x0020408100204081
GLOBL q2Bit5Mul<>(SB), RODATA|NOPTR, $32

DATA q2Bit5Ones<>+0(SB)/8, $0x0101010101010101
DATA q2Bit5Ones<>+8(SB)/8, $0x0101010101010101
DATA q2Bit5Ones<>+16(SB)/8, $0x0101010101010101
DATA q2Bit5Ones<>+24(SB)/8, $0x0101010101010101
GLOBL q2Bit5Ones<>(SB), RODATA|NOPTR, $32

// func qtQuantQ8_0AVX2(src *float32, xq *int8, xs *qtScale, nb int)
// The tile's activations straight from float32, as qtQuantQ8_0AVX512
// (qtile_avx512_amd64.s) with 256-bit instructions: amax, d = f16(amax/127)
// as float32, id = 127/amax (0 for a zero block), the codes, and bias =
// -128·Σ codes (the codes plus 128 summed by VPSADBW, less 32·128).
TEXT ·qtQuantQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ xq+8(FP), DI
	MOVQ xs+16(FP), R8
	MOVQ nb+24(FP), CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15
	MOVL $0x42fe0000, AX
	VMOVD AX, X14
	VMOVDQU q8actPerm<>(SB), Y13
	MOVL $0x80808080, AX
	VMOVD AX, X12
	VPBROADCASTD X12, Y12
	VPXOR Y11, Y11, Y11

q2qloop:
	Q8ACT_AMAX256
	VDIVSS    X14, X2, X4
	VCVTPS2PH $4, X4, X4
	VCVTPH2PS X4, X4
	VMOVSS    X4, 0(R8)
	VXORPS X5, X5, X5
	VMOVD  X2, AX
	TESTL  AX, AX
	JZ     q2qzero
	VDIVSS X2, X14, X5

q2qzero:
	Q8ACT_CODES256
	VMOVDQU      Y0, 0(DI)
	VPXOR        Y12, Y0, Y1
	VPSADBW      Y11, Y1, Y1
	VEXTRACTI128 $1, Y1, X6
	VPADDQ       X6, X1, X1
	VPSHUFD      $0x4e, X1, X6
	VPADDQ       X6, X1, X1
	VMOVD        X1, AX
	SUBL         $4096, AX
	SHLL         $7, AX
	NEGL         AX
	MOVL         AX, 4(R8)
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $8, R8
	DECQ CX
	JNZ  q2qloop
	VZEROUPPER
	RET

// The Q4_K tile (qtile_q4k.go's layout): eight rows (w at their half)
// times four tokens (their codes and scales through pointers, so that a
// last group of fewer tokens can repeat one). Per sub-block k the rows'
// codes q (0..15) are loaded and, per token, the pair sums of its eight
// registers add up in 16 bits (Q2_HALVES, then one add: at most 30720, as
// Q4_0's); VPMADDWD with the sub-block's scales (doubled words) widens
// them times the scale, and they add to the token's isum (Y8-Y11). After
// the eight sub-blocks, per token, the mins: its sub-block sums X_k are
// its biases (-128·X_k) shifted right by 7, whose low words VPMADDWD
// multiplies by the mins' (the high word of the min dwords is 0), summing
// -mins; then the float steps of qkTileGeneric (adding the product with
// -mins is subtracting the one with mins) on the token's accumulator, which
// lives in out (zero at the call) so that the sixteen registers hold the
// codes, the four isums and the temporaries.

// Token t's codes at QKXt and scales at QKSt.
#define QKX0(off) off(DI)
#define QKX1(off) off(R11)
#define QKX2(off) off(R12)
#define QKX3(off) off(R13)
#define QKS0(off) off(R8)
#define QKS1(off) off(R9)
#define QKS2(off) off(R10)
#define QKS3(off) off(R14)

// QK_TOKSUB adds one token's sub-block (activations at qx) times the
// rows' scales of sub-block k to isum.
#define QK_TOKSUB(qx, k, isum) \
	Q2_HALVES(qx) \
	VPADDW   Y15, Y14, Y14 \
	VPMADDWD (576*k+512)(SI), Y14, Y14 \
	VPADDD   Y14, isum, isum

// QK_SUB adds sub-block k of the four tokens to their isums and moves
// their codes on by 32 bytes.
#define QK_SUB(k) \
	VMOVDQU (576*k)(SI), Y0 \
	VMOVDQU (576*k+64)(SI), Y1 \
	VMOVDQU (576*k+128)(SI), Y2 \
	VMOVDQU (576*k+192)(SI), Y3 \
	VMOVDQU (576*k+256)(SI), Y4 \
	VMOVDQU (576*k+320)(SI), Y5 \
	VMOVDQU (576*k+384)(SI), Y6 \
	VMOVDQU (576*k+448)(SI), Y7 \
	QK_TOKSUB(QKX0, k, Y8) \
	QK_TOKSUB(QKX1, k, Y9) \
	QK_TOKSUB(QKX2, k, Y10) \
	QK_TOKSUB(QKX3, k, Y11) \
	ADDQ $32, DI \
	ADDQ $32, R11 \
	ADDQ $32, R12 \
	ADDQ $32, R13

// QK_MIN adds sub-block k's -m·X_k of the token (scales at qs; the
// rows' mins in mk) to Y14.
#define QK_MIN(qs, k, mk) \
	VPBROADCASTD qs(8*k+4), Y12 \
	VPSRAD       $7, Y12, Y12 \
	VPMADDWD     mk, Y12, Y13 \
	VPADDD       Y13, Y14, Y14

// QK_FLOAT takes the token's two float steps into its accumulator at
// acc(DX) and zeroes isum for the next block (Y12-Y15 temporaries).
#define QK_FLOAT(qs, isum, acc) \
	VPXOR        Y14, Y14, Y14 \
	QK_MIN(qs, 0, Y0) \
	QK_MIN(qs, 1, Y1) \
	QK_MIN(qs, 2, Y2) \
	QK_MIN(qs, 3, Y3) \
	QK_MIN(qs, 4, Y4) \
	QK_MIN(qs, 5, Y5) \
	QK_MIN(qs, 6, Y6) \
	QK_MIN(qs, 7, Y7) \
	VCVTDQ2PS    Y14, Y14 \
	VCVTDQ2PS    isum, isum \
	VMOVUPS      acc(DX), Y15 \
	VBROADCASTSS qs(0), Y12 \
	VMULPS       5120(SI), Y12, Y13 \
	VMULPS       isum, Y13, Y13 \
	VADDPS       Y13, Y15, Y15 \
	VMULPS       5184(SI), Y12, Y13 \
	VMULPS       Y14, Y13, Y13 \
	VADDPS       Y13, Y15, Y15 \
	VMOVUPS      Y15, acc(DX) \
	VPXOR        isum, isum, isum

// func qkTile4AVX2(w *byte, xq *[4]*int8, xs *[4]*qtScale, nk int, out *[32]float32)
// nk 256-value blocks; out holds zeros.
TEXT ·qkTile4AVX2(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ xq+8(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), R11
	MOVQ 16(AX), R12
	MOVQ 24(AX), R13
	MOVQ xs+16(FP), AX
	MOVQ 0(AX), R8
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R14
	MOVQ nk+24(FP), CX
	MOVQ out+32(FP), DX
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11

qkloop:
	QK_SUB(0)
	QK_SUB(1)
	QK_SUB(2)
	QK_SUB(3)
	QK_SUB(4)
	QK_SUB(5)
	QK_SUB(6)
	QK_SUB(7)
	VMOVDQU 4608(SI), Y0
	VMOVDQU 4672(SI), Y1
	VMOVDQU 4736(SI), Y2
	VMOVDQU 4800(SI), Y3
	VMOVDQU 4864(SI), Y4
	VMOVDQU 4928(SI), Y5
	VMOVDQU 4992(SI), Y6
	VMOVDQU 5056(SI), Y7
	QK_FLOAT(QKS0, Y8, 0)
	QK_FLOAT(QKS1, Y9, 32)
	QK_FLOAT(QKS2, Y10, 64)
	QK_FLOAT(QKS3, Y11, 96)
	ADDQ $5248, SI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R14
	DECQ CX
	JNZ  qkloop
	VZEROUPPER
	RET

// The Q4_K repack of whole groups, eight rows at a time: the rows' first
// sixteen bytes (d, dmin and the twelve scale bytes) transposed as
// Q2R_ROWS does leave d|dmin, scales 0-3, 4-7 and 8-11 of the eight rows
// in the dword lanes of Y4-Y7; the six-bit scales and mins are unpacked
// there (scale k < 4: byte k & 63; k >= 4: byte k+4's low nibble | byte
// k-4's top two bits << 4; mins likewise from bytes k+4 and k+4's high
// nibble), and the codes come from two transposes of each 32-byte group
// of qs, low nibbles for the even sub-block and high for the odd.

// QK_SCW stores byte sh/8 of every dword lane of src as sub-block k's
// doubled scale words of half h.
#define QK_SCW(src, sh, k, h) \
	VPSRLD  $(sh), src, Y13 \
	VPAND   qkByte<>(SB), Y13, Y13 \
	VPSLLD  $16, Y13, Y14 \
	VPOR    Y14, Y13, Y13 \
	VMOVDQU Y13, (576*k+512+32*h)(DI)

// QK_MW stores byte sh/8 of every dword lane of src as sub-block k's
// mins of half h.
#define QK_MW(src, sh, k, h) \
	VPSRLD  $(sh), src, Y13 \
	VPAND   qkByte<>(SB), Y13, Y13 \
	VMOVDQU Y13, (4608+64*k+32*h)(DI)

// QK_CODES stores the codes of Y4-Y7 (dwords j0..j0+3 of a 32-byte qs
// group) as registers j0.. of sub-blocks k (low nibbles) and k+1 (high).
#define QK_CODE(reg, j, k, h) \
	VPSRLW  $4, reg, Y9 \
	VPAND   Y15, reg, Y10 \
	VPAND   Y15, Y9, Y9 \
	VMOVDQU Y10, (576*(k)+64*(j)+32*(h))(DI) \
	VMOVDQU Y9, (576*(k)+576+64*(j)+32*(h))(DI)

#define QK_CODES(j0, k, h) \
	QK_CODE(Y4, j0, k, h) \
	QK_CODE(Y5, j0+1, k, h) \
	QK_CODE(Y6, j0+2, k, h) \
	QK_CODE(Y7, j0+3, k, h)

// QK_HALF writes half h of one Q4_K layout block from the rows at base.
#define QK_HALF(base, h) \
	Q2R_ROWS(base, 0) \
	VPSHUFB   qkLoWords<>(SB), Y4, Y8 \
	VPERMQ    $0x08, Y8, Y8 \
	VCVTPH2PS X8, Y8 \
	VMOVUPS   Y8, (5120+32*h)(DI) \
	VPSHUFB   qkHiWords<>(SB), Y4, Y8 \
	VPERMQ    $0x08, Y8, Y8 \
	VCVTPH2PS X8, Y8 \
	VMOVUPS   Y8, (5184+32*h)(DI) \
	VPAND     qk3f<>(SB), Y5, Y9 \
	VPAND     qk3f<>(SB), Y6, Y10 \
	VPSRLD    $2, Y5, Y11 \
	VPAND     qk30<>(SB), Y11, Y11 \
	VPAND     Y15, Y7, Y13 \
	VPOR      Y13, Y11, Y11 \
	VPSRLD    $2, Y6, Y12 \
	VPAND     qk30<>(SB), Y12, Y12 \
	VPSRLD    $4, Y7, Y13 \
	VPAND     Y15, Y13, Y13 \
	VPOR      Y13, Y12, Y12 \
	QK_SCW(Y9, 0, 0, h) \
	QK_SCW(Y9, 8, 1, h) \
	QK_SCW(Y9, 16, 2, h) \
	QK_SCW(Y9, 24, 3, h) \
	QK_SCW(Y11, 0, 4, h) \
	QK_SCW(Y11, 8, 5, h) \
	QK_SCW(Y11, 16, 6, h) \
	QK_SCW(Y11, 24, 7, h) \
	QK_MW(Y10, 0, 0, h) \
	QK_MW(Y10, 8, 1, h) \
	QK_MW(Y10, 16, 2, h) \
	QK_MW(Y10, 24, 3, h) \
	QK_MW(Y12, 0, 4, h) \
	QK_MW(Y12, 8, 5, h) \
	QK_MW(Y12, 16, 6, h) \
	QK_MW(Y12, 24, 7, h) \
	Q2R_ROWS(base, 16) \
	QK_CODES(0, 0, h) \
	Q2R_ROWS(base, 32) \
	QK_CODES(4, 0, h) \
	Q2R_ROWS(base, 48) \
	QK_CODES(0, 2, h) \
	Q2R_ROWS(base, 64) \
	QK_CODES(4, 2, h) \
	Q2R_ROWS(base, 80) \
	QK_CODES(0, 4, h) \
	Q2R_ROWS(base, 96) \
	QK_CODES(4, 4, h) \
	Q2R_ROWS(base, 112) \
	QK_CODES(0, 6, h) \
	Q2R_ROWS(base, 128) \
	QK_CODES(4, 6, h)

// func qkRepackAVX2(dst, w *byte, rb, nk int)
TEXT ·qkRepackAVX2(SB), NOSPLIT, $0-32
	Q2R_ARGS

qkrloop:
	QK_HALF(SI, 0)
	QK_HALF(BX, 1)
	ADDQ $144, SI
	ADDQ $144, BX
	ADDQ $5248, DI
	DECQ CX
	JNZ  qkrloop
	VZEROUPPER
	RET

DATA qkByte<>+0(SB)/8, $0x000000ff000000ff
DATA qkByte<>+8(SB)/8, $0x000000ff000000ff
DATA qkByte<>+16(SB)/8, $0x000000ff000000ff
DATA qkByte<>+24(SB)/8, $0x000000ff000000ff
GLOBL qkByte<>(SB), RODATA|NOPTR, $32

DATA qk3f<>+0(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA qk3f<>+8(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA qk3f<>+16(SB)/8, $0x3f3f3f3f3f3f3f3f
DATA qk3f<>+24(SB)/8, $0x3f3f3f3f3f3f3f3f
GLOBL qk3f<>(SB), RODATA|NOPTR, $32

DATA qk30<>+0(SB)/8, $0x3030303030303030
DATA qk30<>+8(SB)/8, $0x3030303030303030
DATA qk30<>+16(SB)/8, $0x3030303030303030
DATA qk30<>+24(SB)/8, $0x3030303030303030
GLOBL qk30<>(SB), RODATA|NOPTR, $32

// qkLoWords and qkHiWords pick the low (d) and high (dmin) words of each
// dword of a 128-bit lane into its low eight bytes.
DATA qkLoWords<>+0(SB)/8, $0x0d0c090805040100
DATA qkLoWords<>+8(SB)/8, $0x8080808080808080
DATA qkLoWords<>+16(SB)/8, $0x0d0c090805040100
DATA qkLoWords<>+24(SB)/8, $0x8080808080808080
GLOBL qkLoWords<>(SB), RODATA|NOPTR, $32

DATA qkHiWords<>+0(SB)/8, $0x0f0e0b0a07060302
DATA qkHiWords<>+8(SB)/8, $0x8080808080808080
DATA qkHiWords<>+16(SB)/8, $0x0f0e0b0a07060302
DATA qkHiWords<>+24(SB)/8, $0x8080808080808080
GLOBL qkHiWords<>(SB), RODATA|NOPTR, $32
