//go:build amd64 && !purego

#include "textflag.h"
#include "rowsum_amd64.h"

// Quantized dot products, AVX-512 path (F, BW, VL, VNNI). Each works like
// its generic twin in dot_generic.go: exact integer sums per block
// (VPMADDUBSW, then VPDPWSSD to apply the sub-block scales and
// accumulate). The dots accumulate in float32 vector lanes and reduce
// them once, so they equal the twin up to the rounding of the summation
// order; the multi-token Q4_K and Q6_K dots take each token's float steps
// exactly as the one-token ones, so that a token's result does not depend
// on the tokens beside it. Every function reads exactly nb blocks of
// weights and of activations and nothing else.

// Permutation indices that spread scale words over the int16 lanes of a
// VPMADDUBSW result: q4kIdx[p] puts scale 2p on lanes 0-15 and 2p+1 on
// 16-31; q6kIdx[g] puts scales 4g..4g+3 on lanes 0-7, 8-15, 16-23, 24-31.
// q6kShift holds the per-half shifts that bring each pair of Q6_K high
// bits to bits 4-5; q4kShift shifts the high nibbles of a broadcast Q4_K
// chunk down in the upper half.
DATA q4kIdx<>+0(SB)/8, $0x0000000000000000
DATA q4kIdx<>+8(SB)/8, $0x0000000000000000
DATA q4kIdx<>+16(SB)/8, $0x0000000000000000
DATA q4kIdx<>+24(SB)/8, $0x0000000000000000
DATA q4kIdx<>+32(SB)/8, $0x0001000100010001
DATA q4kIdx<>+40(SB)/8, $0x0001000100010001
DATA q4kIdx<>+48(SB)/8, $0x0001000100010001
DATA q4kIdx<>+56(SB)/8, $0x0001000100010001
DATA q4kIdx<>+64(SB)/8, $0x0002000200020002
DATA q4kIdx<>+72(SB)/8, $0x0002000200020002
DATA q4kIdx<>+80(SB)/8, $0x0002000200020002
DATA q4kIdx<>+88(SB)/8, $0x0002000200020002
DATA q4kIdx<>+96(SB)/8, $0x0003000300030003
DATA q4kIdx<>+104(SB)/8, $0x0003000300030003
DATA q4kIdx<>+112(SB)/8, $0x0003000300030003
DATA q4kIdx<>+120(SB)/8, $0x0003000300030003
DATA q4kIdx<>+128(SB)/8, $0x0004000400040004
DATA q4kIdx<>+136(SB)/8, $0x0004000400040004
DATA q4kIdx<>+144(SB)/8, $0x0004000400040004
DATA q4kIdx<>+152(SB)/8, $0x0004000400040004
DATA q4kIdx<>+160(SB)/8, $0x0005000500050005
DATA q4kIdx<>+168(SB)/8, $0x0005000500050005
DATA q4kIdx<>+176(SB)/8, $0x0005000500050005
DATA q4kIdx<>+184(SB)/8, $0x0005000500050005
DATA q4kIdx<>+192(SB)/8, $0x0006000600060006
DATA q4kIdx<>+200(SB)/8, $0x0006000600060006
DATA q4kIdx<>+208(SB)/8, $0x0006000600060006
DATA q4kIdx<>+216(SB)/8, $0x0006000600060006
DATA q4kIdx<>+224(SB)/8, $0x0007000700070007
DATA q4kIdx<>+232(SB)/8, $0x0007000700070007
DATA q4kIdx<>+240(SB)/8, $0x0007000700070007
DATA q4kIdx<>+248(SB)/8, $0x0007000700070007
GLOBL q4kIdx<>(SB), RODATA|NOPTR, $256

DATA q4kShift<>+0(SB)/8, $0x0000000000000000
DATA q4kShift<>+8(SB)/8, $0x0000000000000000
DATA q4kShift<>+16(SB)/8, $0x0000000000000000
DATA q4kShift<>+24(SB)/8, $0x0000000000000000
DATA q4kShift<>+32(SB)/8, $0x0004000400040004
DATA q4kShift<>+40(SB)/8, $0x0004000400040004
DATA q4kShift<>+48(SB)/8, $0x0004000400040004
DATA q4kShift<>+56(SB)/8, $0x0004000400040004
GLOBL q4kShift<>(SB), RODATA|NOPTR, $64

DATA q6kIdx<>+0(SB)/8, $0x0000000000000000
DATA q6kIdx<>+8(SB)/8, $0x0000000000000000
DATA q6kIdx<>+16(SB)/8, $0x0001000100010001
DATA q6kIdx<>+24(SB)/8, $0x0001000100010001
DATA q6kIdx<>+32(SB)/8, $0x0002000200020002
DATA q6kIdx<>+40(SB)/8, $0x0002000200020002
DATA q6kIdx<>+48(SB)/8, $0x0003000300030003
DATA q6kIdx<>+56(SB)/8, $0x0003000300030003
DATA q6kIdx<>+64(SB)/8, $0x0004000400040004
DATA q6kIdx<>+72(SB)/8, $0x0004000400040004
DATA q6kIdx<>+80(SB)/8, $0x0005000500050005
DATA q6kIdx<>+88(SB)/8, $0x0005000500050005
DATA q6kIdx<>+96(SB)/8, $0x0006000600060006
DATA q6kIdx<>+104(SB)/8, $0x0006000600060006
DATA q6kIdx<>+112(SB)/8, $0x0007000700070007
DATA q6kIdx<>+120(SB)/8, $0x0007000700070007
DATA q6kIdx<>+128(SB)/8, $0x0008000800080008
DATA q6kIdx<>+136(SB)/8, $0x0008000800080008
DATA q6kIdx<>+144(SB)/8, $0x0009000900090009
DATA q6kIdx<>+152(SB)/8, $0x0009000900090009
DATA q6kIdx<>+160(SB)/8, $0x000a000a000a000a
DATA q6kIdx<>+168(SB)/8, $0x000a000a000a000a
DATA q6kIdx<>+176(SB)/8, $0x000b000b000b000b
DATA q6kIdx<>+184(SB)/8, $0x000b000b000b000b
DATA q6kIdx<>+192(SB)/8, $0x000c000c000c000c
DATA q6kIdx<>+200(SB)/8, $0x000c000c000c000c
DATA q6kIdx<>+208(SB)/8, $0x000d000d000d000d
DATA q6kIdx<>+216(SB)/8, $0x000d000d000d000d
DATA q6kIdx<>+224(SB)/8, $0x000e000e000e000e
DATA q6kIdx<>+232(SB)/8, $0x000e000e000e000e
DATA q6kIdx<>+240(SB)/8, $0x000f000f000f000f
DATA q6kIdx<>+248(SB)/8, $0x000f000f000f000f
GLOBL q6kIdx<>(SB), RODATA|NOPTR, $256

DATA q6kShift<>+0(SB)/8, $0x0004000400040004
DATA q6kShift<>+8(SB)/8, $0x0004000400040004
DATA q6kShift<>+16(SB)/8, $0x0004000400040004
DATA q6kShift<>+24(SB)/8, $0x0004000400040004
DATA q6kShift<>+32(SB)/8, $0x0002000200020002
DATA q6kShift<>+40(SB)/8, $0x0002000200020002
DATA q6kShift<>+48(SB)/8, $0x0002000200020002
DATA q6kShift<>+56(SB)/8, $0x0002000200020002
DATA q6kShift<>+64(SB)/8, $0x0000000000000000
DATA q6kShift<>+72(SB)/8, $0x0000000000000000
DATA q6kShift<>+80(SB)/8, $0x0000000000000000
DATA q6kShift<>+88(SB)/8, $0x0000000000000000
DATA q6kShift<>+96(SB)/8, $0x0002000200020002
DATA q6kShift<>+104(SB)/8, $0x0002000200020002
DATA q6kShift<>+112(SB)/8, $0x0002000200020002
DATA q6kShift<>+120(SB)/8, $0x0002000200020002
GLOBL q6kShift<>(SB), RODATA|NOPTR, $128

// Q4K_SCALES512 unpacks the 12 packed scale bytes at 4(SI) into 8 scales
// as words in X0 (upper bits of Z0 zero) and 8 mins as words in X1. The
// two 32-bit halves of each are joined in a general register (the 32-bit
// operations above zero its upper half) and moved with one VMOVQ, which
// keeps two VPINSRDs off the shuffle port the rest of the block needs.
// Clobbers AX, BX, DX, R8-R10.
#define Q4K_SCALES512 \
	MOVL 4(SI), AX \
	MOVL 8(SI), BX \
	MOVL 12(SI), DX \
	MOVL DX, R8 \
	SHRL $4, R8 \
	ANDL $0x0f0f0f0f, R8 \
	MOVL BX, R9 \
	SHRL $6, R9 \
	ANDL $0x03030303, R9 \
	SHLL $4, R9 \
	ORL  R9, R8 \
	MOVL BX, R10 \
	ANDL $0x3f3f3f3f, R10 \
	ANDL $0x0f0f0f0f, DX \
	MOVL AX, R9 \
	SHRL $6, R9 \
	ANDL $0x03030303, R9 \
	SHLL $4, R9 \
	ORL  R9, DX \
	ANDL $0x3f3f3f3f, AX \
	SHLQ $32, DX \
	ORQ  DX, AX \
	SHLQ $32, R8 \
	ORQ  R8, R10 \
	VMOVQ AX, X0 \
	VPMOVZXBW X0, X0 \
	VMOVQ R10, X1 \
	VPMOVZXBW X1, X1

// Q4K_CHUNK512 multiplies the 32 qs bytes at qoff(SI) (sub-blocks 2c and
// 2c+1 in their low and high nibbles) with their 64 activations at
// xoff(DI): the chunk is broadcast to both halves of Z2 and shifted by 0
// and 4 bits (Z24), so its codes line up with the activations. Scales in
// sc; accumulates into acc.
#define Q4K_CHUNK512(qoff, xoff, sc, acc) \
	VBROADCASTI64X4 qoff(SI), Z2 \
	VPSRLVW Z24, Z2, Z2 \
	VPANDD Z15, Z2, Z2 \
	VPMADDUBSW xoff(DI), Z2, Z2 \
	VPDPWSSD sc, Z2, acc

// func dotQ4KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// For each of rows consecutive weight rows of nb blocks at w, out[r] is
// its dot with the nb blocks at x (nb, rows >= 1). The exact integer sums
// of a block stay in the 16 lanes of Z9 (every lane is below 2^24, so the
// conversion to float is exact) and the mins sums in the 8 lanes of Y10;
// each is converted and accumulated with the block's d*dx or dmin*dx
// (stored at tmp and broadcast from there) into the float lanes of Z8
// and Y12. The lanes are reduced once per row: no horizontal sum and no
// scalar step per block. The constants are loaded once per call.
TEXT ·dotQ4KRowsAVX512(SB), NOSPLIT, $272-40
	ROWS8_ARGS
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kIdx<>+0(SB), Z16
	VMOVDQU64 q4kIdx<>+64(SB), Z17
	VMOVDQU64 q4kIdx<>+128(SB), Z18
	VMOVDQU64 q4kIdx<>+192(SB), Z19
	VMOVDQU64 q4kShift<>+0(SB), Z24

q4k5row:
	MOVQ R11, DI
	MOVQ R12, CX
	VXORPS X8, X8, X8
	VXORPS X12, X12, X12

q4k5loop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPMADDWD 260(DI), Y2, Y10
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	Q4K_CHUNK512(16, 4, Z20, Z9)
	Q4K_CHUNK512(48, 68, Z21, Z11)
	Q4K_CHUNK512(80, 132, Z22, Z9)
	Q4K_CHUNK512(112, 196, Z23, Z11)
	VPADDD Z11, Z9, Z9
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y10, Y10
	VCVTPH2PS (SI), X6
	VBROADCASTSS (DI), X7
	VMULPS X7, X6, X6
	VMOVQ X6, tmp-8(SP)
	VFMADD231PS.BCST tmp-8(SP), Z9, Z8
	VFMADD231PS.BCST tmp-4(SP), Y10, Y12
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4k5loop

	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y0
	VSUBPS Y12, Y0, Y0
	ROWEND_Y0(q4k5row, q4k5kept, q4k5adv, q4k5next)
	VZEROUPPER
	RET

// Q6K_HALF512 multiplies one half (128 values) of a Q6_K block: ql at
// qoff(SI), qh at hoff(SI), activations at xoff(DI), scale vectors sa
// (values 0-63) and sb (64-127); accumulates into Z9.
#define Q6K_HALF512(qoff, hoff, xoff, sa, sb) \
	VMOVDQU64 qoff(SI), Z2 \
	VBROADCASTI64X4 hoff(SI), Z3 \
	VPSRLW $4, Z2, Z4 \
	VPANDD Z15, Z2, Z2 \
	VPANDD Z15, Z4, Z4 \
	VPSLLVW Z24, Z3, Z5 \
	VPSRLVW Z25, Z3, Z6 \
	VPANDD Z14, Z5, Z5 \
	VPANDD Z14, Z6, Z6 \
	VPORD Z5, Z2, Z2 \
	VPORD Z6, Z4, Z4 \
	VPMADDUBSW xoff(DI), Z2, Z2 \
	VPMADDUBSW (xoff+64)(DI), Z4, Z4 \
	VPDPWSSD sa, Z2, Z9 \
	VPDPWSSD sb, Z4, Z11

// func dotQ6KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// Like dotQ4KRowsAVX512: the block's exact integer sums (every lane below
// 2^24) and its scale-times-bsums sums (the codes' offset of 32) are
// converted and accumulated with d*dx in the float lanes of Z8 and Y12,
// which are reduced once per row.
TEXT ·dotQ6KRowsAVX512(SB), NOSPLIT, $272-40
	ROWS8_ARGS
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 q6kIdx<>+0(SB), Z16
	VMOVDQU64 q6kIdx<>+64(SB), Z17
	VMOVDQU64 q6kIdx<>+128(SB), Z18
	VMOVDQU64 q6kIdx<>+192(SB), Z19
	VMOVDQU64 q6kShift<>+0(SB), Z24
	VMOVDQU64 q6kShift<>+64(SB), Z25
	MOVL $0x42000000, AX // 32.0
	VMOVD AX, X13
	VBROADCASTSS X13, Y13

q6k5row:
	MOVQ R11, DI
	MOVQ R12, CX
	VXORPS X8, X8, X8
	VXORPS X12, X12, X12

q6k5loop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	VPMADDWD 260(DI), Y0, Y1
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	Q6K_HALF512(0, 128, 4, Z20, Z21)
	Q6K_HALF512(64, 160, 132, Z22, Z23)
	VPADDD Z11, Z9, Z9
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y1, Y1
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VMULSS (DI), X6, X6
	VMOVSS X6, tmp-8(SP)
	VFMADD231PS.BCST tmp-8(SP), Z9, Z8
	VFMADD231PS.BCST tmp-8(SP), Y1, Y12
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6k5loop

	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y0
	VFNMADD231PS Y13, Y12, Y0
	ROWEND_Y0(q6k5row, q6k5kept, q6k5adv, q6k5next)
	VZEROUPPER
	RET

// Multi-token row-run dots, AVX-512 path: dotQ4KRowsNAVX512 and
// dotQ6KRowsNAVX512 multiply a run of weight rows with up to eight
// tokens at once. Each weight block is loaded, its scales and codes
// unpacked once, and then multiplied with every token's activations.
// Every token takes exactly the float32 steps of the one-token row-run
// dot above (dotQ4KRowsAVX512, dotQ6KRowsAVX512): the same integer lane
// sums, converted and accumulated with the same products into the same
// 16+8 float lanes, reduced in the same order. So a token's result does
// not depend on the other tokens of its product, bit for bit. The
// tokens' float lanes live in acc, from its first 64-byte boundary on,
// 128 bytes a token (the 16 scaled sums, the 8 mins or bsum sums, and
// Q4_K's d·dx and dmin·dx, which the multiply-adds broadcast from there),
// read and written once per token and block, which frees the registers
// for the unpacked block; the alignment keeps those loads and stores
// within cache lines.

// Q4KN_UNPACK puts the 32 qs bytes at qoff(SI) in dst as 64 codes
// (sub-blocks 2c and 2c+1) lined up with 64 activations.
#define Q4KN_UNPACK(qoff, dst) \
	VBROADCASTI64X4 qoff(SI), dst \
	VPSRLVW Z24, dst, dst \
	VPANDD Z15, dst, dst

// func dotQ4KRowsNAVX512(w *byte, x *quant.BlockQ8K, nb, rows, tokens int, out *float32, stride int, acc *[knAccFloats]float32)
//
// For each of rows consecutive weight rows r of nb blocks at w and each
// of tokens tokens t (nb blocks each, one after another at x),
// out[t*stride+r] is dotQ4KRowsAVX512's dot of row r with token t, bit
// for bit (nb, rows >= 1, 1 <= tokens <= 8; acc holds 32*tokens+16
// floats).
TEXT ·dotQ4KRowsNAVX512(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ rows+24(FP), R13
	MOVQ out+40(FP), R14
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kIdx<>+0(SB), Z16
	VMOVDQU64 q4kIdx<>+64(SB), Z17
	VMOVDQU64 q4kIdx<>+128(SB), Z18
	VMOVDQU64 q4kIdx<>+192(SB), Z19
	VMOVDQU64 q4kShift<>+0(SB), Z24
	VPXORD Z31, Z31, Z31
	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX

q4knzero:
	VMOVUPS Z31, (R9)
	VMOVUPS Y31, 64(R9)
	ADDQ $128, R9
	DECQ BX
	JNZ q4knzero

q4knrow:
	MOVQ R11, DI
	MOVQ R12, CX

q4knloop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X7
	VINSERTI128 $1, X7, Y2, Y2
	Q4KN_UNPACK(16, Z3)
	Q4KN_UNPACK(48, Z4)
	Q4KN_UNPACK(80, Z5)
	Q4KN_UNPACK(112, Z8)
	VCVTPH2PS (SI), X6
	MOVQ DI, R8
	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX
	IMUL3Q $292, R12, R10

q4kntok:
	VPMADDUBSW 4(R8), Z3, Z9
	VPMADDUBSW 68(R8), Z4, Z10
	VPMADDUBSW 132(R8), Z5, Z11
	VPMADDUBSW 196(R8), Z8, Z13
	VPMADDWD Z20, Z9, Z9
	VPMADDWD Z21, Z10, Z10
	VPDPWSSD Z22, Z11, Z9
	VPDPWSSD Z23, Z13, Z10
	VPADDD Z10, Z9, Z9
	VPMADDWD 260(R8), Y2, Y12
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y12, Y12
	VBROADCASTSS (R8), X7
	VMULPS X7, X6, X7
	VMOVQ X7, 96(R9)
	VMOVUPS (R9), Z10
	VFMADD231PS.BCST 96(R9), Z9, Z10
	VMOVUPS Z10, (R9)
	VMOVUPS 64(R9), Y14
	VFMADD231PS.BCST 100(R9), Y12, Y14
	VMOVUPS Y14, 64(R9)
	ADDQ R10, R8
	ADDQ $128, R9
	DECQ BX
	JNZ q4kntok

	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4knloop

	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX
	MOVQ stride+48(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX

q4knred:
	VMOVUPS (R9), Z8
	VMOVUPS 64(R9), Y12
	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y8
	VSUBPS Y12, Y8, Y8
	VEXTRACTF128 $1, Y8, X0
	VADDPS X0, X8, X8
	VMOVHLPS X8, X0, X0
	VADDPS X0, X8, X8
	VMOVSHDUP X8, X0
	VADDSS X0, X8, X8
	VMOVSS X8, (AX)
	VMOVUPS Z31, (R9)
	VMOVUPS Y31, 64(R9)
	ADDQ DX, AX
	ADDQ $128, R9
	DECQ BX
	JNZ q4knred

	ADDQ $4, R14
	DECQ R13
	JNZ q4knrow
	VZEROUPPER
	RET

// Q6KN_UNPACK unpacks one half (128 values) of a Q6_K block, ql at
// qoff(SI) and qh at hoff(SI), into lo (values 0-63) and hi (64-127).
// Clobbers Z9-Z11.
#define Q6KN_UNPACK(qoff, hoff, lo, hi) \
	VMOVDQU64 qoff(SI), lo \
	VBROADCASTI64X4 hoff(SI), Z9 \
	VPSRLW $4, lo, hi \
	VPANDD Z15, lo, lo \
	VPANDD Z15, hi, hi \
	VPSLLVW Z24, Z9, Z10 \
	VPSRLVW Z25, Z9, Z11 \
	VPANDD Z14, Z10, Z10 \
	VPANDD Z14, Z11, Z11 \
	VPORD Z10, lo, lo \
	VPORD Z11, hi, hi

// func dotQ6KRowsNAVX512(w *byte, x *quant.BlockQ8K, nb, rows, tokens int, out *float32, stride int, acc *[knAccFloats]float32)
//
// Like dotQ4KRowsNAVX512, each token bit for bit dotQ6KRowsAVX512's.
TEXT ·dotQ6KRowsNAVX512(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), R11
	MOVQ nb+16(FP), R12
	MOVQ rows+24(FP), R13
	MOVQ out+40(FP), R14
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 q6kIdx<>+0(SB), Z16
	VMOVDQU64 q6kIdx<>+64(SB), Z17
	VMOVDQU64 q6kIdx<>+128(SB), Z18
	VMOVDQU64 q6kIdx<>+192(SB), Z19
	VMOVDQU64 q6kShift<>+0(SB), Z24
	VMOVDQU64 q6kShift<>+64(SB), Z25
	MOVL $0x42000000, AX // 32.0
	VPBROADCASTD AX, Y30
	VPXORD Z31, Z31, Z31
	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX

q6knzero:
	VMOVUPS Z31, (R9)
	VMOVUPS Y31, 64(R9)
	ADDQ $128, R9
	DECQ BX
	JNZ q6knzero

q6knrow:
	MOVQ R11, DI
	MOVQ R12, CX

q6knloop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	Q6KN_UNPACK(0, 128, Z3, Z4)
	Q6KN_UNPACK(64, 160, Z5, Z8)
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	MOVQ DI, R8
	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX
	IMUL3Q $292, R12, R10

q6kntok:
	VPMADDUBSW 4(R8), Z3, Z9
	VPMADDUBSW 68(R8), Z4, Z10
	VPMADDUBSW 132(R8), Z5, Z11
	VPMADDUBSW 196(R8), Z8, Z13
	VPMADDWD Z20, Z9, Z9
	VPMADDWD Z21, Z10, Z10
	VPDPWSSD Z22, Z11, Z9
	VPDPWSSD Z23, Z13, Z10
	VPADDD Z10, Z9, Z9
	VPMADDWD 260(R8), Y0, Y12
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y12, Y12
	VMULSS (R8), X6, X7
	VBROADCASTSS X7, Z11
	VMOVUPS (R9), Z10
	VFMADD231PS Z11, Z9, Z10
	VMOVUPS Z10, (R9)
	VMOVUPS 64(R9), Y13
	VFMADD231PS Y11, Y12, Y13
	VMOVUPS Y13, 64(R9)
	ADDQ R10, R8
	ADDQ $128, R9
	DECQ BX
	JNZ q6kntok

	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6knloop

	MOVQ acc+56(FP), R9
	ADDQ $63, R9
	ANDQ $-64, R9
	MOVQ tokens+32(FP), BX
	MOVQ stride+48(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX

q6knred:
	VMOVUPS (R9), Z8
	VMOVUPS 64(R9), Y12
	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y8
	VFNMADD231PS Y30, Y12, Y8
	VEXTRACTF128 $1, Y8, X0
	VADDPS X0, X8, X8
	VMOVHLPS X8, X0, X0
	VADDPS X0, X8, X8
	VMOVSHDUP X8, X0
	VADDSS X0, X8, X8
	VMOVSS X8, (AX)
	VMOVUPS Z31, (R9)
	VMOVUPS Y31, 64(R9)
	ADDQ DX, AX
	ADDQ $128, R9
	DECQ BX
	JNZ q6knred

	ADDQ $4, R14
	DECQ R13
	JNZ q6knrow
	VZEROUPPER
	RET

// The eight-token dots of the K-quants other than Q4_K and Q6_K (whose
// multi-token dots are dotQ4KRowsNAVX512 and dotQ6KRowsNAVX512 above),
// for prompt processing. Each weight block is unpacked once and
// multiplied with eight tokens' activations. The integer sums are exact
// as in the one-token dot, but they stay in vector lanes: per block each
// token's int32 lanes (sub-block sums times their scales, and the bsums
// times the mins) are converted to float32, scaled by d and dmin,
// multiplied by the token's d and added to a float32 vector accumulator,
// which is reduced once at the end. No lane value reaches 2^24, so the
// conversions are exact; only the float32 steps round, in another order
// than the generic twin's. The codes of a chunk are in Z13.

#define X8T0(off) off(DI)
#define X8T1(off) off(DI)(R11*1)
#define X8T2(off) off(DI)(R11*2)
#define X8T3(off) off(DI)(R13*1)
#define X8T4(off) off(R12)
#define X8T5(off) off(R12)(R11*1)
#define X8T6(off) off(R12)(R11*2)
#define X8T7(off) off(R12)(R13*1)

// Q4KX8_FIRST multiplies the codes in Z13 with the activations at xa and
// sets acc to the scaled pair sums (scales sc); Q4KX8_NEXT adds them.
#define Q4KX8_FIRST(xa, sc, acc) \
	VPMADDUBSW xa, Z13, Z14 \
	VPMADDWD sc, Z14, acc

#define Q4KX8_NEXT(xa, sc, acc) \
	VPMADDUBSW xa, Z13, Z14 \
	VPDPWSSD sc, Z14, acc

// Q4KX8_FIN adds one token's block to its float accumulator facc: acc
// (the scaled sums) times d (Z0), minus the bsums at bs times the mins
// (word pairs in Y2) times dmin (Z1), all times the token's d at xd.
#define Q4KX8_FIN(xd, bs, acc, facc) \
	VCVTDQ2PS acc, acc \
	VPMADDWD bs, Y2, Y12 \
	VCVTDQ2PS Y12, Y12 \
	VMULPS Z0, acc, acc \
	VFNMADD231PS Z1, Z12, acc \
	VBROADCASTSS xd, Z12 \
	VFMADD231PS Z12, acc, facc

// HSUM8 reduces the 16 lanes of z (y and x its low halves) to lane 0 of
// x and stores it at dst. Clobbers Z12.
#define HSUM8(z, y, x, dst) \
	VEXTRACTF64X4 $1, z, Y12 \
	VADDPS Y12, y, y \
	VEXTRACTF32X4 $1, y, X12 \
	VADDPS X12, x, x \
	VMOVHLPS x, x, X12 \
	VADDPS X12, x, x \
	VMOVSHDUP x, X12 \
	VADDSS X12, x, x \
	VMOVSS x, dst

// Q5_K row-run dot: the Q4_K one with the fifth bits added to the codes
// under a mask (VPTESTMB, then a masked VPADDB of 16).

// q5kBit selects the fifth bits of Q5_K chunk c (sub-blocks 2c and 2c+1):
// bit 2c of every qh byte in the lower 32 bytes, bit 2c+1 in the upper.
DATA q5kBit<>+0(SB)/8, $0x0101010101010101
DATA q5kBit<>+8(SB)/8, $0x0101010101010101
DATA q5kBit<>+16(SB)/8, $0x0101010101010101
DATA q5kBit<>+24(SB)/8, $0x0101010101010101
DATA q5kBit<>+32(SB)/8, $0x0202020202020202
DATA q5kBit<>+40(SB)/8, $0x0202020202020202
DATA q5kBit<>+48(SB)/8, $0x0202020202020202
DATA q5kBit<>+56(SB)/8, $0x0202020202020202
DATA q5kBit<>+64(SB)/8, $0x0404040404040404
DATA q5kBit<>+72(SB)/8, $0x0404040404040404
DATA q5kBit<>+80(SB)/8, $0x0404040404040404
DATA q5kBit<>+88(SB)/8, $0x0404040404040404
DATA q5kBit<>+96(SB)/8, $0x0808080808080808
DATA q5kBit<>+104(SB)/8, $0x0808080808080808
DATA q5kBit<>+112(SB)/8, $0x0808080808080808
DATA q5kBit<>+120(SB)/8, $0x0808080808080808
DATA q5kBit<>+128(SB)/8, $0x1010101010101010
DATA q5kBit<>+136(SB)/8, $0x1010101010101010
DATA q5kBit<>+144(SB)/8, $0x1010101010101010
DATA q5kBit<>+152(SB)/8, $0x1010101010101010
DATA q5kBit<>+160(SB)/8, $0x2020202020202020
DATA q5kBit<>+168(SB)/8, $0x2020202020202020
DATA q5kBit<>+176(SB)/8, $0x2020202020202020
DATA q5kBit<>+184(SB)/8, $0x2020202020202020
DATA q5kBit<>+192(SB)/8, $0x4040404040404040
DATA q5kBit<>+200(SB)/8, $0x4040404040404040
DATA q5kBit<>+208(SB)/8, $0x4040404040404040
DATA q5kBit<>+216(SB)/8, $0x4040404040404040
DATA q5kBit<>+224(SB)/8, $0x8080808080808080
DATA q5kBit<>+232(SB)/8, $0x8080808080808080
DATA q5kBit<>+240(SB)/8, $0x8080808080808080
DATA q5kBit<>+248(SB)/8, $0x8080808080808080
GLOBL q5kBit<>(SB), RODATA|NOPTR, $256

// Q5K_CHUNK works like Q4K_CHUNK512 for the qs bytes of Q5_K chunk c (at
// 48+32c(SI)), adding 16 to the codes whose fifth bit (qh, broadcast in
// Z4; the chunk's bit selector in bit) is set. Z14 holds 16 in every byte.
#define Q5K_CHUNK(qoff, xoff, bit, sc, acc) \
	VBROADCASTI64X4 qoff(SI), Z2 \
	VPSRLVW         Z24, Z2, Z2 \
	VPANDD          Z15, Z2, Z2 \
	VPTESTMB        bit, Z4, K1 \
	VPADDB          Z14, Z2, K1, Z2 \
	VPMADDUBSW      xoff(DI), Z2, Z2 \
	VPDPWSSD        sc, Z2, acc

// func dotQ5KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// As dotQ4KRowsAVX512 (same scale layout, lanes and float steps), with
// the codes at 48(SI) and their fifth bits at 16(SI).
TEXT ·dotQ5KRowsAVX512(SB), NOSPLIT, $272-40
	ROWS8_ARGS
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z14
	VMOVDQU64 q4kIdx<>+0(SB), Z16
	VMOVDQU64 q4kIdx<>+64(SB), Z17
	VMOVDQU64 q4kIdx<>+128(SB), Z18
	VMOVDQU64 q4kIdx<>+192(SB), Z19
	VMOVDQU64 q4kShift<>+0(SB), Z24
	VMOVDQU64 q5kBit<>+0(SB), Z25
	VMOVDQU64 q5kBit<>+64(SB), Z26
	VMOVDQU64 q5kBit<>+128(SB), Z27
	VMOVDQU64 q5kBit<>+192(SB), Z28

q5krow:
	MOVQ R11, DI
	MOVQ R12, CX
	VXORPS X8, X8, X8
	VXORPS X12, X12, X12

q5kloop:
	PREFETCHT0 2816(SI)
	PREFETCHT0 2880(SI)
	PREFETCHT0 2944(SI)
	Q4K_SCALES512
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPMADDWD 260(DI), Y2, Y10
	VBROADCASTI64X4 16(SI), Z4
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	Q5K_CHUNK(48, 4, Z25, Z20, Z9)
	Q5K_CHUNK(80, 68, Z26, Z21, Z11)
	Q5K_CHUNK(112, 132, Z27, Z22, Z9)
	Q5K_CHUNK(144, 196, Z28, Z23, Z11)
	VPADDD Z11, Z9, Z9
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y10, Y10
	VCVTPH2PS (SI), X6
	VBROADCASTSS (DI), X7
	VMULPS X7, X6, X6
	VMOVQ X6, tmp-8(SP)
	VFMADD231PS.BCST tmp-8(SP), Z9, Z8
	VFMADD231PS.BCST tmp-4(SP), Y10, Y12
	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q5kloop

	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y0
	VSUBPS Y12, Y0, Y0
	ROWEND_Y0(q5krow, q5kkept, q5kadv, q5knext)
	VZEROUPPER
	RET

// Q3_K dots. A value's code is c = u - 4 with u = its two low bits plus 4
// when its hmask bit is set (0..7). The eight-token dot (dotQ3Kx8AVX512)
// unpacks u like Q5_K's codes (a broadcast qs chunk shifted by 2s and
// 2s+2 bits in its two halves, masked to two bits, 4 added under a
// VPTESTMB mask of hmask) and multiplies it with the activations by
// VPMADDUBSW; the scales (6 bits minus 32, spread over the words by q6kIdx
// as in Q6_K) are applied by VPDPWSSD; the offset term
// -4·Σ_j scale_j·bsums_j, one VPMADDWD of the scales with the
// activations' bsums, starts the block's integer accumulator. The
// integer lanes are exact; they are converted and accumulated with
// f16(d)·x.D into float lanes. The row-run dot (dotQ3KRowsAVX512, below)
// leaves the codes of half the sub-blocks scaled by 4 to save the shifts.

// q3kShift holds the word shifts that bring the two-bit codes of values
// 32s.. (lower 32 bytes) and 32(s+1).. (upper) to bits 0-1: s = 0, then
// s = 2.
DATA q3kShift<>+0(SB)/8, $0x0000000000000000
DATA q3kShift<>+8(SB)/8, $0x0000000000000000
DATA q3kShift<>+16(SB)/8, $0x0000000000000000
DATA q3kShift<>+24(SB)/8, $0x0000000000000000
DATA q3kShift<>+32(SB)/8, $0x0002000200020002
DATA q3kShift<>+40(SB)/8, $0x0002000200020002
DATA q3kShift<>+48(SB)/8, $0x0002000200020002
DATA q3kShift<>+56(SB)/8, $0x0002000200020002
DATA q3kShift<>+64(SB)/8, $0x0004000400040004
DATA q3kShift<>+72(SB)/8, $0x0004000400040004
DATA q3kShift<>+80(SB)/8, $0x0004000400040004
DATA q3kShift<>+88(SB)/8, $0x0004000400040004
DATA q3kShift<>+96(SB)/8, $0x0006000600060006
DATA q3kShift<>+104(SB)/8, $0x0006000600060006
DATA q3kShift<>+112(SB)/8, $0x0006000600060006
DATA q3kShift<>+120(SB)/8, $0x0006000600060006
GLOBL q3kShift<>(SB), RODATA|NOPTR, $128

// Q3K_SCALESGP leaves the 16 scales of the block at SI, minus 32, as
// words in Y0 (upper half of Z0 zero), decoded in general registers: the
// low four bits of scales 0-7 are the low nibbles of scale bytes 0-7 (R8
// holds 0x0f bytes), of scales 8-15 their high nibbles; the top two bits
// of scale j are bits 2·(j/4) of byte 8 + j%4, gathered per byte by masks
// and a shift of 30 and moved to bits 4-5. The row-run dot is bound by
// its vector instructions, so this beat a decode in vector registers
// (nine instructions). Y13 holds 32 in every word. Clobbers AX, BX, DX,
// R9, R10, X5.
#define Q3K_SCALESGP \
	MOVQ  96(SI), AX \
	MOVL  104(SI), BX \
	MOVQ  AX, DX \
	ANDQ  R8, AX \
	SHRQ  $4, DX \
	ANDQ  R8, DX \
	MOVL  BX, R9 \
	ANDL  $0x03030303, R9 \
	MOVL  BX, R10 \
	ANDL  $0x0c0c0c0c, R10 \
	SHLQ  $30, R10 \
	ORQ   R10, R9 \
	SHLQ  $4, R9 \
	ORQ   R9, AX \
	SHRL  $4, BX \
	MOVL  BX, R9 \
	ANDL  $0x03030303, R9 \
	ANDL  $0x0c0c0c0c, BX \
	SHLQ  $30, BX \
	ORQ   BX, R9 \
	SHLQ  $4, R9 \
	ORQ   R9, DX \
	VMOVQ AX, X0 \
	VMOVQ DX, X5 \
	VPUNPCKLQDQ X5, X0, X0 \
	VPMOVZXBW X0, Y0 \
	VPSUBW Y13, Y0, Y0

// Q3K_PAIR multiplies 64 codes of the block with their activations (xa,
// a register or memory): the lower 32 bytes of q hold in their bits
// selected by mask (3 or 12) the codes of 32 values of the first half of
// the block, its upper 32 bytes those of the same 32 values of the second
// half (qs is loaded whole, 64 bytes, so its two chunks sit side by
// side); high (4 or 16, the value of the hmask bit at those bits) is
// added under the hmask bits (hmask broadcast in Z4; bit selects them). sc
// holds the four sub-blocks' scales, those of the codes in bits 0-1 times
// 4, so every product carries the factor 4.
#define Q3K_PAIR(q, mask, high, xa, bit, sc, acc) \
	VPANDD     mask, q, Z2 \
	VPTESTMB   bit, Z4, K1 \
	VPADDB     high, Z2, K1, Z2 \
	VPMADDUBSW xa, Z2, Z2 \
	VPDPWSSD   sc, Z2, acc

// Constants of the Q3_K row runs: the word permutes that spread the
// four scales of each 64-code product over its four 128-bit lanes
// (q3kIdx: sub-blocks 2p, 2p+1, 8+2p, 9+2p for product p), the hmask bits
// of each product (q3kBit: bit p in the lower 32 bytes, bit 4+p in the
// upper), and the word shifts that multiply by 4 the scales of the
// sub-blocks whose codes sit in bits 0-1 (q3kScX4: 0, 1, 4, 5, 8, 9, 12,
// 13).
DATA q3kIdx<>+0(SB)/8, $0x0000000000000000
DATA q3kIdx<>+8(SB)/8, $0x0000000000000000
DATA q3kIdx<>+16(SB)/8, $0x0001000100010001
DATA q3kIdx<>+24(SB)/8, $0x0001000100010001
DATA q3kIdx<>+32(SB)/8, $0x0008000800080008
DATA q3kIdx<>+40(SB)/8, $0x0008000800080008
DATA q3kIdx<>+48(SB)/8, $0x0009000900090009
DATA q3kIdx<>+56(SB)/8, $0x0009000900090009
DATA q3kIdx<>+64(SB)/8, $0x0002000200020002
DATA q3kIdx<>+72(SB)/8, $0x0002000200020002
DATA q3kIdx<>+80(SB)/8, $0x0003000300030003
DATA q3kIdx<>+88(SB)/8, $0x0003000300030003
DATA q3kIdx<>+96(SB)/8, $0x000a000a000a000a
DATA q3kIdx<>+104(SB)/8, $0x000a000a000a000a
DATA q3kIdx<>+112(SB)/8, $0x000b000b000b000b
DATA q3kIdx<>+120(SB)/8, $0x000b000b000b000b
DATA q3kIdx<>+128(SB)/8, $0x0004000400040004
DATA q3kIdx<>+136(SB)/8, $0x0004000400040004
DATA q3kIdx<>+144(SB)/8, $0x0005000500050005
DATA q3kIdx<>+152(SB)/8, $0x0005000500050005
DATA q3kIdx<>+160(SB)/8, $0x000c000c000c000c
DATA q3kIdx<>+168(SB)/8, $0x000c000c000c000c
DATA q3kIdx<>+176(SB)/8, $0x000d000d000d000d
DATA q3kIdx<>+184(SB)/8, $0x000d000d000d000d
DATA q3kIdx<>+192(SB)/8, $0x0006000600060006
DATA q3kIdx<>+200(SB)/8, $0x0006000600060006
DATA q3kIdx<>+208(SB)/8, $0x0007000700070007
DATA q3kIdx<>+216(SB)/8, $0x0007000700070007
DATA q3kIdx<>+224(SB)/8, $0x000e000e000e000e
DATA q3kIdx<>+232(SB)/8, $0x000e000e000e000e
DATA q3kIdx<>+240(SB)/8, $0x000f000f000f000f
DATA q3kIdx<>+248(SB)/8, $0x000f000f000f000f
GLOBL q3kIdx<>(SB), RODATA|NOPTR, $256
DATA q3kBit<>+0(SB)/8, $0x0101010101010101
DATA q3kBit<>+8(SB)/8, $0x0101010101010101
DATA q3kBit<>+16(SB)/8, $0x0101010101010101
DATA q3kBit<>+24(SB)/8, $0x0101010101010101
DATA q3kBit<>+32(SB)/8, $0x1010101010101010
DATA q3kBit<>+40(SB)/8, $0x1010101010101010
DATA q3kBit<>+48(SB)/8, $0x1010101010101010
DATA q3kBit<>+56(SB)/8, $0x1010101010101010
DATA q3kBit<>+64(SB)/8, $0x0202020202020202
DATA q3kBit<>+72(SB)/8, $0x0202020202020202
DATA q3kBit<>+80(SB)/8, $0x0202020202020202
DATA q3kBit<>+88(SB)/8, $0x0202020202020202
DATA q3kBit<>+96(SB)/8, $0x2020202020202020
DATA q3kBit<>+104(SB)/8, $0x2020202020202020
DATA q3kBit<>+112(SB)/8, $0x2020202020202020
DATA q3kBit<>+120(SB)/8, $0x2020202020202020
DATA q3kBit<>+128(SB)/8, $0x0404040404040404
DATA q3kBit<>+136(SB)/8, $0x0404040404040404
DATA q3kBit<>+144(SB)/8, $0x0404040404040404
DATA q3kBit<>+152(SB)/8, $0x0404040404040404
DATA q3kBit<>+160(SB)/8, $0x4040404040404040
DATA q3kBit<>+168(SB)/8, $0x4040404040404040
DATA q3kBit<>+176(SB)/8, $0x4040404040404040
DATA q3kBit<>+184(SB)/8, $0x4040404040404040
DATA q3kBit<>+192(SB)/8, $0x0808080808080808
DATA q3kBit<>+200(SB)/8, $0x0808080808080808
DATA q3kBit<>+208(SB)/8, $0x0808080808080808
DATA q3kBit<>+216(SB)/8, $0x0808080808080808
DATA q3kBit<>+224(SB)/8, $0x8080808080808080
DATA q3kBit<>+232(SB)/8, $0x8080808080808080
DATA q3kBit<>+240(SB)/8, $0x8080808080808080
DATA q3kBit<>+248(SB)/8, $0x8080808080808080
GLOBL q3kBit<>(SB), RODATA|NOPTR, $256
DATA q3kScX4<>+0(SB)/8, $0x0000000000020002
DATA q3kScX4<>+8(SB)/8, $0x0000000000020002
DATA q3kScX4<>+16(SB)/8, $0x0000000000020002
DATA q3kScX4<>+24(SB)/8, $0x0000000000020002
GLOBL q3kScX4<>(SB), RODATA|NOPTR, $32

// Q3K_SETUP loads the constants of the Q3_K row runs (after
// ROWS8_ARGS).
#define Q3K_SETUP \
	MOVL $0x03030303, AX \
	VPBROADCASTD AX, Z15 \
	MOVL $0x04040404, AX \
	VPBROADCASTD AX, Z14 \
	MOVL $0x0c0c0c0c, AX \
	VPBROADCASTD AX, Z30 \
	MOVL $0x10101010, AX \
	VPBROADCASTD AX, Z31 \
	MOVL $0x00200020, AX \
	VPBROADCASTD AX, Y13 \
	MOVL $0xfff0fff0, AX \
	VPBROADCASTD AX, Y12 \
	VMOVDQU q3kScX4<>+0(SB), Y11 \
	MOVQ $0x0f0f0f0f0f0f0f0f, R8 \
	VMOVDQU64 q3kIdx<>+0(SB), Z16 \
	VMOVDQU64 q3kIdx<>+64(SB), Z17 \
	VMOVDQU64 q3kIdx<>+128(SB), Z18 \
	VMOVDQU64 q3kIdx<>+192(SB), Z19 \
	VMOVDQU64 q3kBit<>+0(SB), Z25 \
	VMOVDQU64 q3kBit<>+64(SB), Z26 \
	VMOVDQU64 q3kBit<>+128(SB), Z27 \
	VMOVDQU64 q3kBit<>+192(SB), Z28 \
	MOVL $0x3e800000, AX \
	VPBROADCASTD AX, Y29

// Q3K_HEAD starts the block at SI (activations' bsums at 260(DI)): its
// scales, spread and times 4 where they must be, in Z20-Z23, the offset
// term in Z9, hmask broadcast in Z4, qs in Z3 and shifted right by 4 in
// Z5.
#define Q3K_HEAD \
	PREFETCHT0 1760(SI) \
	PREFETCHT0 1824(SI) \
	Q3K_SCALESGP \
	VPMULLW Y12, Y0, Y10 \
	VPMADDWD 260(DI), Y10, Y9 \
	VPSLLVW Y11, Y0, Y0 \
	VPERMW Z0, Z16, Z20 \
	VPERMW Z0, Z17, Z21 \
	VPERMW Z0, Z18, Z22 \
	VPERMW Z0, Z19, Z23 \
	VBROADCASTI64X4 0(SI), Z4 \
	VMOVDQU64 32(SI), Z3 \
	VPSRLW $4, Z3, Z5

// Q3K_TAIL adds the block's integer lanes (Z9) times f16(d)·x.D into the
// row's float lanes (Z8) and moves SI and DI to the next block.
#define Q3K_TAIL \
	VCVTDQ2PS Z9, Z9 \
	VCVTPH2PS 102(SI), X1 \
	VMULPS.BCST (DI), X1, X1 \
	VMOVUPS X1, tmp-16(SP) \
	VFMADD231PS.BCST tmp-4(SP), Z9, Z8 \
	ADDQ $110, SI \
	ADDQ $292, DI

// Q3K_ROWEND sums the row's float lanes times 1/4 into Y0 for ROWEND_Y0.
#define Q3K_ROWEND \
	VEXTRACTF64X4 $1, Z8, Y0 \
	VADDPS Y0, Y8, Y0 \
	VMULPS Y29, Y0, Y0

// Q3K_PREPRUN is the row loop of the prepared Q3_K runs (after
// ROWS8_ARGS and Q3K_SETUP), with pair (Q3K_PAIR or Q3K_PAIRGF, the
// arguments the same) for each product: every row starts with the
// activations' blocks in DI, the block count in CX, the prepared
// activations (scr, aligned up to 64 bytes) in R15 and the float lanes
// in Z8 zeroed. row, loop, kept, adv and next name labels of the
// expansion.
#define Q3K_PREPRUN(pair, row, loop, kept, adv, next) \
row: \
	MOVQ   R11, DI \
	MOVQ   R12, CX \
	MOVQ   scr+40(FP), R15 \
	ADDQ   $63, R15 \
	ANDQ   $-64, R15 \
	VPXORD Z8, Z8, Z8 \
loop: \
	Q3K_HEAD \
	pair(Z3, Z15, Z14, 0(R15), Z25, Z20, Z9) \
	pair(Z3, Z30, Z31, 64(R15), Z26, Z21, Z9) \
	pair(Z5, Z15, Z14, 128(R15), Z27, Z22, Z9) \
	pair(Z5, Z30, Z31, 192(R15), Z28, Z23, Z9) \
	Q3K_TAIL \
	ADDQ $256, R15 \
	DECQ CX \
	JNZ  loop \
	Q3K_ROWEND \
	ROWEND_Y0(row, kept, adv, next) \
	VZEROUPPER \
	RET

// Q3K_ACTS loads into Z24 the activations of product p in the order of
// the whole-qs load: values 32p.. and 128+32p.. of the block at DI.
#define Q3K_ACTS(lo, hi) \
	VMOVDQU64    lo(DI), Y24 \
	VINSERTI64X4 $1, hi(DI), Z24, Z24

// func dotQ3KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
//
// For each of rows consecutive weight rows of nb blocks at w, out[r] is
// its dot with the nb blocks at x (nb, rows >= 1). Per block: the 16
// scales are decoded in general registers (Q3K_SCALESGP), those of the
// codes in bits 0-1 scaled by 4 (VPSLLVW) and spread by four VPERMW; the
// offset term -16·Σ_j scale_j·bsums_j (the scales times -16 by VPMULLW:
// bsums times 16 could leave int16) starts the integer accumulator Z9;
// qs is loaded whole (64 bytes: both 32-byte chunks, the block's two
// halves side by side) and used unshifted and shifted right by 4, each
// masked to bits 0-1 and to bits 2-3 (Q3K_PAIR four times), so a block has
// one shift. The activations of a product are values 32p.. and
// 128+32p..: joined by VINSERTI64X4 here (Q3K_ACTS), prepared once per
// product in that order by q3kPrepAVX512 for dotQ3KRowsPrepAVX512, which
// is otherwise this kernel, so the two agree bit for bit. Every integer
// lane is 4 times the exact sum (below 2^26 and a multiple of 4, so still
// converted exactly); f16(d) is converted from memory with the three f16
// before it (the load ends at the block's end) and d·x.D broadcast from
// the stack into the FMA, as in Q4_K; the row's float lanes are
// multiplied by 1/4 before they are summed (ROWEND_Y0), which is exact
// short of subnormal lanes, so the result is bit for bit that of unscaled
// lanes.
//
// Measured on the 2-vCPU Zen 4 EPYC (shared; medians of interleaved
// runs, GB/cpu-s): BenchmarkQuantRows/Q3_K/avx512 15.8 -> 17.9 (Q4_K 22);
// BenchmarkMatVecStream/Q3_K/2048x5632/t1 15.4 -> 17.1 with Q4_K at 20.9
// (0.74x -> 0.82x), before the f16 step, which added 2% in QuantRows.
// Each part of the block costs about what its instructions say (leaving
// out the VPERMWs gained 13%, the hmask VPTESTMB+VPADDB 16%, the float
// steps 11%). What did not pay: a second integer accumulator (-5%),
// folding the 16 lanes to 8 before the conversion (-5%), the hmask bits
// joined by VPTERNLOGD after two variable shifts of hmask instead of the
// masks (-1%), VPSHUFB or VPERMD in place of VPERMW (at most +4%, before
// the extra shuffle that would gather the scales for them), f16(d)
// broadcast by VPBROADCASTW and converted in all lanes instead of through
// the stack (-3%), and L2 prefetches (nothing, or -2.5% 48 blocks ahead).
// What did pay, on processors with GFNI: the hmask bits placed by an
// affine byte transform (dotQ3KRowsPrepGFNI, 5% less time).
TEXT ·dotQ3KRowsAVX512(SB), NOSPLIT, $280-40
	ROWS8_ARGS
	Q3K_SETUP

q3krow:
	MOVQ R11, DI
	MOVQ R12, CX
	VPXORD Z8, Z8, Z8

q3kloop:
	Q3K_HEAD
	Q3K_ACTS(4, 132)
	Q3K_PAIR(Z3, Z15, Z14, Z24, Z25, Z20, Z9)
	Q3K_ACTS(36, 164)
	Q3K_PAIR(Z3, Z30, Z31, Z24, Z26, Z21, Z9)
	Q3K_ACTS(68, 196)
	Q3K_PAIR(Z5, Z15, Z14, Z24, Z27, Z22, Z9)
	Q3K_ACTS(100, 228)
	Q3K_PAIR(Z5, Z30, Z31, Z24, Z28, Z23, Z9)
	Q3K_TAIL
	DECQ CX
	JNZ q3kloop

	Q3K_ROWEND
	ROWEND_Y0(q3krow, q3kkept, q3kadv, q3knext)
	VZEROUPPER
	RET

// Q3K_PREP writes product p's activations of the block at SI to
// 64p(DI), through y and z (its 512-bit register).
#define Q3K_PREP(p, y, z) \
	VMOVDQU      (4+32*p)(SI), y \
	VINSERTI64X4 $1, (132+32*p)(SI), z, z \
	VMOVDQU64    z, (64*p)(DI)

// func q3kPrepAVX512(x *quant.BlockQ8K, nb int, scr *byte)
//
// q3kPrepAVX512 writes the activations of the nb blocks at x (nb >= 1) to
// scr, from its first 64-byte boundary on, in the order of
// dotQ3KRowsAVX512's products: per block four 64-byte groups, group p
// values 32p..32p+31 then 128+32p..128+32p+31.
TEXT ·q3kPrepAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ nb+8(FP), CX
	MOVQ scr+16(FP), DI
	ADDQ $63, DI
	ANDQ $-64, DI

q3kprep:
	Q3K_PREP(0, Y0, Z0)
	Q3K_PREP(1, Y1, Z1)
	Q3K_PREP(2, Y2, Z2)
	Q3K_PREP(3, Y3, Z3)
	ADDQ $292, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  q3kprep
	VZEROUPPER
	RET

// func dotQ3KRowsPrepAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
//
// dotQ3KRowsPrepAVX512 is dotQ3KRowsAVX512 with each product's activations
// read from the ones q3kPrepAVX512 wrote to scr (R15, 256 bytes a block)
// instead of joined per row: one activation load fewer per product, and
// no VINSERTI64X4. x is still read for its scales and bsums.
TEXT ·dotQ3KRowsPrepAVX512(SB), NOSPLIT, $280-48
	ROWS8_ARGS
	Q3K_SETUP
	Q3K_PREPRUN(Q3K_PAIR, q3kprow, q3kploop, q3kpkept, q3kpadv, q3kpnext)

// Q3K_PAIRGF is Q3K_PAIR on a processor with GFNI: one affine byte
// transform (VGF2P8AFFINEQB, its bit matrix mat one per quadword: q3kGF)
// moves the product's hmask bit of every byte of Z4 (bit p in the lower
// 32 bytes, 4+p in the upper) to the bit that high would set and clears
// the others, and one VPTERNLOGD takes the code bits from q where mask
// has them and that bit elsewhere: two instructions where Q3K_PAIR has
// three (VPANDD, VPTESTMB, a masked VPADDB), the same codes. Its
// arguments are Q3K_PAIR's (high is not used), so that Q3K_PREPRUN takes
// either.
#define Q3K_PAIRGF(q, mask, high, xa, mat, sc, acc) \
	VGF2P8AFFINEQB $0, mat, Z4, Z2 \
	VPTERNLOGD     $0xd8, mask, q, Z2 \
	VPMADDUBSW     xa, Z2, Z2 \
	VPDPWSSD       sc, Z2, acc

// q3kGF holds Q3K_PAIRGF's bit matrices of products 0-3, 64 bytes each:
// the lower four quadwords take bit p of a byte, the upper four bit 4+p,
// to bit 2 (products 0 and 2, whose codes are in bits 0-1) or bit 4
// (products 1 and 3, codes in bits 2-3). Row 7-i of a matrix (its byte
// 7-i) selects the input bits of output bit i.
DATA q3kGF<>+0(SB)/8, $0x0000010000000000
DATA q3kGF<>+8(SB)/8, $0x0000010000000000
DATA q3kGF<>+16(SB)/8, $0x0000010000000000
DATA q3kGF<>+24(SB)/8, $0x0000010000000000
DATA q3kGF<>+32(SB)/8, $0x0000100000000000
DATA q3kGF<>+40(SB)/8, $0x0000100000000000
DATA q3kGF<>+48(SB)/8, $0x0000100000000000
DATA q3kGF<>+56(SB)/8, $0x0000100000000000
DATA q3kGF<>+64(SB)/8, $0x0000000002000000
DATA q3kGF<>+72(SB)/8, $0x0000000002000000
DATA q3kGF<>+80(SB)/8, $0x0000000002000000
DATA q3kGF<>+88(SB)/8, $0x0000000002000000
DATA q3kGF<>+96(SB)/8, $0x0000000020000000
DATA q3kGF<>+104(SB)/8, $0x0000000020000000
DATA q3kGF<>+112(SB)/8, $0x0000000020000000
DATA q3kGF<>+120(SB)/8, $0x0000000020000000
DATA q3kGF<>+128(SB)/8, $0x0000040000000000
DATA q3kGF<>+136(SB)/8, $0x0000040000000000
DATA q3kGF<>+144(SB)/8, $0x0000040000000000
DATA q3kGF<>+152(SB)/8, $0x0000040000000000
DATA q3kGF<>+160(SB)/8, $0x0000400000000000
DATA q3kGF<>+168(SB)/8, $0x0000400000000000
DATA q3kGF<>+176(SB)/8, $0x0000400000000000
DATA q3kGF<>+184(SB)/8, $0x0000400000000000
DATA q3kGF<>+192(SB)/8, $0x0000000008000000
DATA q3kGF<>+200(SB)/8, $0x0000000008000000
DATA q3kGF<>+208(SB)/8, $0x0000000008000000
DATA q3kGF<>+216(SB)/8, $0x0000000008000000
DATA q3kGF<>+224(SB)/8, $0x0000000080000000
DATA q3kGF<>+232(SB)/8, $0x0000000080000000
DATA q3kGF<>+240(SB)/8, $0x0000000080000000
DATA q3kGF<>+248(SB)/8, $0x0000000080000000
GLOBL q3kGF<>(SB), RODATA|NOPTR, $256

// func dotQ3KRowsPrepGFNI(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, scr *byte)
//
// dotQ3KRowsPrepGFNI is dotQ3KRowsPrepAVX512 with Q3K_PAIRGF for
// Q3K_PAIR (the bit matrices in Z25-Z28 where the hmask bits were): the
// same codes into the same instructions after, so the same results bit
// for bit. Streamed from DRAM at one thread, with dotQ3KRowsPrepAVX512 as
// the other kernel in one pool (as rowsum_amd64.h says), it took
// 0.943-0.955 of the time (Zen 4 VM, three runs).
TEXT ·dotQ3KRowsPrepGFNI(SB), NOSPLIT, $280-48
	ROWS8_ARGS
	Q3K_SETUP
	VMOVDQU64 q3kGF<>+0(SB), Z25
	VMOVDQU64 q3kGF<>+64(SB), Z26
	VMOVDQU64 q3kGF<>+128(SB), Z27
	VMOVDQU64 q3kGF<>+192(SB), Z28
	Q3K_PREPRUN(Q3K_PAIRGF, q3kgrow, q3kgloop, q3kgkept, q3kgadv, q3kgnext)

// Eight-token Q5_K dot: the scheme above with the fifth bits. The
// four chunks' bit masks are computed once per block (qh broadcast in
// Z12, which is free until the float steps) into K1-K4, and 16 is added
// to the codes under them.

DATA q5k16<>+0(SB)/8, $0x1010101010101010
DATA q5k16<>+8(SB)/8, $0x1010101010101010
DATA q5k16<>+16(SB)/8, $0x1010101010101010
DATA q5k16<>+24(SB)/8, $0x1010101010101010
DATA q5k16<>+32(SB)/8, $0x1010101010101010
DATA q5k16<>+40(SB)/8, $0x1010101010101010
DATA q5k16<>+48(SB)/8, $0x1010101010101010
DATA q5k16<>+56(SB)/8, $0x1010101010101010
GLOBL q5k16<>(SB), RODATA|NOPTR, $64

#define Q5KX8_UNPACK(qoff, k) \
	VBROADCASTI64X4 qoff(SI), Z13 \
	VPSRLVW Z24, Z13, Z13 \
	VPANDD Z15, Z13, Z13 \
	VPADDB q5k16<>(SB), Z13, k, Z13

#define Q5KX8_CHUNK0(qoff, k, xoff, sc) \
	Q5KX8_UNPACK(qoff, k) \
	Q4KX8_FIRST(X8T0(xoff), sc, Z8) \
	Q4KX8_FIRST(X8T1(xoff), sc, Z9) \
	Q4KX8_FIRST(X8T2(xoff), sc, Z10) \
	Q4KX8_FIRST(X8T3(xoff), sc, Z11) \
	Q4KX8_FIRST(X8T4(xoff), sc, Z25) \
	Q4KX8_FIRST(X8T5(xoff), sc, Z26) \
	Q4KX8_FIRST(X8T6(xoff), sc, Z27) \
	Q4KX8_FIRST(X8T7(xoff), sc, Z28)

#define Q5KX8_CHUNK(qoff, k, xoff, sc) \
	Q5KX8_UNPACK(qoff, k) \
	Q4KX8_NEXT(X8T0(xoff), sc, Z8) \
	Q4KX8_NEXT(X8T1(xoff), sc, Z9) \
	Q4KX8_NEXT(X8T2(xoff), sc, Z10) \
	Q4KX8_NEXT(X8T3(xoff), sc, Z11) \
	Q4KX8_NEXT(X8T4(xoff), sc, Z25) \
	Q4KX8_NEXT(X8T5(xoff), sc, Z26) \
	Q4KX8_NEXT(X8T6(xoff), sc, Z27) \
	Q4KX8_NEXT(X8T7(xoff), sc, Z28)

// func dotQ5Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)
TEXT ·dotQ5Kx8AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	IMUL3Q $292, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kIdx<>+0(SB), Z16
	VMOVDQU64 q4kIdx<>+64(SB), Z17
	VMOVDQU64 q4kIdx<>+128(SB), Z18
	VMOVDQU64 q4kIdx<>+192(SB), Z19
	VMOVDQU64 q4kShift<>+0(SB), Z24
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	TESTQ CX, CX
	JEQ q5k58done

q5k58loop:
	PREFETCHT0 2816(SI)
	PREFETCHT0 2880(SI)
	PREFETCHT0 2944(SI)
	Q4K_SCALES512
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X12
	VINSERTI128 $1, X12, Y2, Y2
	VBROADCASTI64X4 16(SI), Z12
	VPTESTMB q5kBit<>+0(SB), Z12, K1
	VPTESTMB q5kBit<>+64(SB), Z12, K2
	VPTESTMB q5kBit<>+128(SB), Z12, K3
	VPTESTMB q5kBit<>+192(SB), Z12, K4
	MOVL (SI), AX
	VMOVD AX, X0
	VCVTPH2PS X0, X0
	VMOVSHDUP X0, X1
	VBROADCASTSS X0, Z0
	VBROADCASTSS X1, Z1
	Q5KX8_CHUNK0(48, K1, 4, Z20)
	Q5KX8_CHUNK(80, K2, 68, Z21)
	Q5KX8_CHUNK(112, K3, 132, Z22)
	Q5KX8_CHUNK(144, K4, 196, Z23)
	Q4KX8_FIN(X8T0(0), X8T0(260), Z8, Z3)
	Q4KX8_FIN(X8T1(0), X8T1(260), Z9, Z4)
	Q4KX8_FIN(X8T2(0), X8T2(260), Z10, Z5)
	Q4KX8_FIN(X8T3(0), X8T3(260), Z11, Z6)
	Q4KX8_FIN(X8T4(0), X8T4(260), Z25, Z7)
	Q4KX8_FIN(X8T5(0), X8T5(260), Z26, Z29)
	Q4KX8_FIN(X8T6(0), X8T6(260), Z27, Z30)
	Q4KX8_FIN(X8T7(0), X8T7(260), Z28, Z31)
	ADDQ $176, SI
	ADDQ $292, DI
	ADDQ $292, R12
	DECQ CX
	JNZ q5k58loop

q5k58done:
	MOVQ out+24(FP), AX
	HSUM8(Z3, Y3, X3, 0(AX))
	HSUM8(Z4, Y4, X4, 4(AX))
	HSUM8(Z5, Y5, X5, 8(AX))
	HSUM8(Z6, Y6, X6, 12(AX))
	HSUM8(Z7, Y7, X7, 16(AX))
	HSUM8(Z29, Y29, X29, 20(AX))
	HSUM8(Z30, Y30, X30, 24(AX))
	HSUM8(Z31, Y31, X31, 28(AX))
	VZEROUPPER
	RET

// Eight-token Q3_K dot: the scheme above with the
// Q3_K one-token dot's unpacking (codes 0..7 by shift, mask and a masked
// add of 4 under the chunk's hmask bits, computed once per block into
// K1-K4). Its offset term 4·Σ scale_j·bsums_j goes through the Q4_K
// dot's mins step: the scale words stand in for the mins and 4·d for
// dmin.

DATA q3k04<>+0(SB)/8, $0x0404040404040404
DATA q3k04<>+8(SB)/8, $0x0404040404040404
DATA q3k04<>+16(SB)/8, $0x0404040404040404
DATA q3k04<>+24(SB)/8, $0x0404040404040404
DATA q3k04<>+32(SB)/8, $0x0404040404040404
DATA q3k04<>+40(SB)/8, $0x0404040404040404
DATA q3k04<>+48(SB)/8, $0x0404040404040404
DATA q3k04<>+56(SB)/8, $0x0404040404040404
GLOBL q3k04<>(SB), RODATA|NOPTR, $64
DATA q3kBias<>+0(SB)/8, $0x0020002000200020
DATA q3kBias<>+8(SB)/8, $0x0020002000200020
DATA q3kBias<>+16(SB)/8, $0x0020002000200020
DATA q3kBias<>+24(SB)/8, $0x0020002000200020
GLOBL q3kBias<>(SB), RODATA|NOPTR, $32

#define Q3KX8_UNPACK(qoff, shift, k) \
	VBROADCASTI64X4 qoff(SI), Z13 \
	VPSRLVW shift, Z13, Z13 \
	VPANDD Z15, Z13, Z13 \
	VPADDB q3k04<>(SB), Z13, k, Z13

#define Q3KX8_CHUNK0(qoff, shift, k, xoff, sc) \
	Q3KX8_UNPACK(qoff, shift, k) \
	Q4KX8_FIRST(X8T0(xoff), sc, Z8) \
	Q4KX8_FIRST(X8T1(xoff), sc, Z9) \
	Q4KX8_FIRST(X8T2(xoff), sc, Z10) \
	Q4KX8_FIRST(X8T3(xoff), sc, Z11) \
	Q4KX8_FIRST(X8T4(xoff), sc, Z25) \
	Q4KX8_FIRST(X8T5(xoff), sc, Z26) \
	Q4KX8_FIRST(X8T6(xoff), sc, Z27) \
	Q4KX8_FIRST(X8T7(xoff), sc, Z28)

#define Q3KX8_CHUNK(qoff, shift, k, xoff, sc) \
	Q3KX8_UNPACK(qoff, shift, k) \
	Q4KX8_NEXT(X8T0(xoff), sc, Z8) \
	Q4KX8_NEXT(X8T1(xoff), sc, Z9) \
	Q4KX8_NEXT(X8T2(xoff), sc, Z10) \
	Q4KX8_NEXT(X8T3(xoff), sc, Z11) \
	Q4KX8_NEXT(X8T4(xoff), sc, Z25) \
	Q4KX8_NEXT(X8T5(xoff), sc, Z26) \
	Q4KX8_NEXT(X8T6(xoff), sc, Z27) \
	Q4KX8_NEXT(X8T7(xoff), sc, Z28)

// func dotQ3Kx8AVX512(w *byte, x *quant.BlockQ8K, nb int, out *[8]float32)
TEXT ·dotQ3Kx8AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	IMUL3Q $292, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q6kIdx<>+0(SB), Z16
	VMOVDQU64 q6kIdx<>+64(SB), Z17
	VMOVDQU64 q6kIdx<>+128(SB), Z18
	VMOVDQU64 q6kIdx<>+192(SB), Z19
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31
	TESTQ CX, CX
	JEQ q3k8done

q3k8loop:
	PREFETCHT0 1760(SI)
	PREFETCHT0 1824(SI)
	MOVL 96(SI), AX
	MOVL 100(SI), BX
	MOVL 104(SI), DX
	MOVL AX, R8
	ANDL $0x0f0f0f0f, R8
	MOVL DX, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8
	MOVL BX, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R9
	SHRL $2, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R10
	SHLQ $32, R10
	ORQ  R10, R8
	VMOVQ R8, X0
	MOVL AX, R8
	SHRL $4, R8
	ANDL $0x0f0f0f0f, R8
	MOVL DX, R9
	SHRL $4, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R8
	MOVL BX, R10
	SHRL $4, R10
	ANDL $0x0f0f0f0f, R10
	MOVL DX, R9
	SHRL $6, R9
	ANDL $0x03030303, R9
	SHLL $4, R9
	ORL  R9, R10
	SHLQ $32, R10
	ORQ  R10, R8
	VMOVQ R8, X1
	VPUNPCKLQDQ X1, X0, X0
	VPMOVZXBW X0, Y0
	VPSUBW q3kBias<>(SB), Y0, Y0
	VMOVDQU Y0, Y2
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VBROADCASTI64X4 0(SI), Z12
	VPTESTMB q5kBit<>+0(SB), Z12, K1
	VPTESTMB q5kBit<>+64(SB), Z12, K2
	VPTESTMB q5kBit<>+128(SB), Z12, K3
	VPTESTMB q5kBit<>+192(SB), Z12, K4
	MOVWLZX 108(SI), AX
	VMOVD AX, X0
	VCVTPH2PS X0, X0
	VBROADCASTSS X0, Z0
	VADDPS Z0, Z0, Z1
	VADDPS Z1, Z1, Z1
	Q3KX8_CHUNK0(32, q3kShift<>+0(SB), K1, 4, Z20)
	Q3KX8_CHUNK(32, q3kShift<>+64(SB), K2, 68, Z21)
	Q3KX8_CHUNK(64, q3kShift<>+0(SB), K3, 132, Z22)
	Q3KX8_CHUNK(64, q3kShift<>+64(SB), K4, 196, Z23)
	Q4KX8_FIN(X8T0(0), X8T0(260), Z8, Z3)
	Q4KX8_FIN(X8T1(0), X8T1(260), Z9, Z4)
	Q4KX8_FIN(X8T2(0), X8T2(260), Z10, Z5)
	Q4KX8_FIN(X8T3(0), X8T3(260), Z11, Z6)
	Q4KX8_FIN(X8T4(0), X8T4(260), Z25, Z7)
	Q4KX8_FIN(X8T5(0), X8T5(260), Z26, Z29)
	Q4KX8_FIN(X8T6(0), X8T6(260), Z27, Z30)
	Q4KX8_FIN(X8T7(0), X8T7(260), Z28, Z31)
	ADDQ $110, SI
	ADDQ $292, DI
	ADDQ $292, R12
	DECQ CX
	JNZ q3k8loop

q3k8done:
	MOVQ out+24(FP), AX
	HSUM8(Z3, Y3, X3, 0(AX))
	HSUM8(Z4, Y4, X4, 4(AX))
	HSUM8(Z5, Y5, X5, 8(AX))
	HSUM8(Z6, Y6, X6, 12(AX))
	HSUM8(Z7, Y7, X7, 16(AX))
	HSUM8(Z29, Y29, X29, 20(AX))
	HSUM8(Z30, Y30, X30, 24(AX))
	HSUM8(Z31, Y31, X31, 28(AX))
	VZEROUPPER
	RET

// Q2_K row-run dot: Q3_K's code unpacking without the hmask bits (codes
// 0..3 at 16(SI)) and Q4_K's float steps: the 4-bit scales (low nibbles
// of the 16 scale bytes) spread over the words by q6kIdx and applied by
// VPDPWSSD, the 4-bit mins (high nibbles) times the bsums by one
// VPMADDWD, each accumulated with f16(d)·x.D or f16(dmin)·x.D into float
// lanes and reduced once per row.

#define Q2K_CHUNK(qoff, xoff, shift, sc, acc) \
	VBROADCASTI64X4 qoff(SI), Z2 \
	VPSRLVW         shift, Z2, Z2 \
	VPANDD          Z15, Z2, Z2 \
	VPMADDUBSW      xoff(DI), Z2, Z2 \
	VPDPWSSD        sc, Z2, acc

// func dotQ2KRowsAVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32)
TEXT ·dotQ2KRowsAVX512(SB), NOSPLIT, $272-40
	ROWS8_ARGS
	MOVL $0x03030303, AX
	VPBROADCASTD AX, Z15
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, X14
	VMOVDQU64 q6kIdx<>+0(SB), Z16
	VMOVDQU64 q6kIdx<>+64(SB), Z17
	VMOVDQU64 q6kIdx<>+128(SB), Z18
	VMOVDQU64 q6kIdx<>+192(SB), Z19
	VMOVDQU64 q3kShift<>+0(SB), Z29
	VMOVDQU64 q3kShift<>+64(SB), Z30

q2krow:
	MOVQ R11, DI
	MOVQ R12, CX
	VXORPS X8, X8, X8
	VXORPS X12, X12, X12

q2kloop:
	PREFETCHT0 1344(SI)
	PREFETCHT0 1408(SI)
	VMOVDQU   0(SI), X0
	VPSRLW    $4, X0, X1
	VPAND     X14, X0, X0
	VPAND     X14, X1, X1
	VPMOVZXBW X0, Y0
	VPMOVZXBW X1, Y1
	VPERMW Z0, Z16, Z20
	VPERMW Z0, Z17, Z21
	VPERMW Z0, Z18, Z22
	VPERMW Z0, Z19, Z23
	VPMADDWD 260(DI), Y1, Y10
	VPXORD Z9, Z9, Z9
	VPXORD Z11, Z11, Z11
	Q2K_CHUNK(16, 4, Z29, Z20, Z9)
	Q2K_CHUNK(16, 68, Z30, Z21, Z11)
	Q2K_CHUNK(48, 132, Z29, Z22, Z9)
	Q2K_CHUNK(48, 196, Z30, Z23, Z11)
	VPADDD Z11, Z9, Z9
	VCVTDQ2PS Z9, Z9
	VCVTDQ2PS Y10, Y10
	MOVL 80(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS (DI), X7
	VMULPS X7, X6, X6
	VMOVQ X6, tmp-8(SP)
	VFMADD231PS.BCST tmp-8(SP), Z9, Z8
	VFMADD231PS.BCST tmp-4(SP), Y10, Y12
	ADDQ $84, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q2kloop

	VEXTRACTF64X4 $1, Z8, Y0
	VADDPS Y0, Y8, Y0
	VSUBPS Y12, Y0, Y0
	ROWEND_Y0(q2krow, q2kkept, q2kadv, q2knext)
	VZEROUPPER
	RET

// Eight-token row-run dots of Q4_K and Q6_K: dotQ4KRowsNAVX512's and
// dotQ6KRowsNAVX512's work for exactly eight tokens, with every token's
// float lanes in registers instead of memory (Z16-Z19 and Z25-Z28 or
// Z24-Z27 the 16 scaled-sum lanes of tokens 0-7; the 8 mins or bsum lanes
// of tokens 2p and 2p+1 share one register, the low and high half). The
// float steps are those of the one-token row-run dots, lane for lane:
// each token's result equals theirs bit for bit. The scale permutations'
// indices and Q6_K's shift counts come from memory to free registers.

// K8_MINS adds the mins (Q6_K: bsum) sums of tokens a and b, their bsums
// at bsa and bsb times the words in wd, times mult·dx (mult broadcast,
// dx at xa and xb) to macc: token a in its low eight lanes, b in its high.
#define K8_MINS(wd, mult, bsa, bsb, xa, xb, macc) \
	VPMADDWD bsa, wd, Y11 \
	VPMADDWD bsb, wd, Y12 \
	VINSERTI64X4 $1, Y12, Z11, Z11 \
	VCVTDQ2PS Z11, Z11 \
	VBROADCASTSS xa, Y12 \
	VBROADCASTSS xb, Y13 \
	VINSERTF64X4 $1, Y13, Z12, Z12 \
	VMULPS mult, Z12, Z12 \
	VFMADD231PS Z12, Z11, macc

// K8_TOK adds one token's block to its float lanes facc: the four chunks'
// integer sums (codes in Z3, Z4, Z5, Z8 times the activations at x4..x196,
// scales Z20-Z23) converted, times d·dx (d broadcast in dreg, dx at xd).
#define K8_TOK(x4, x68, x132, x196, xd, dreg, facc) \
	VPMADDUBSW x4, Z3, Z10 \
	VPMADDWD Z20, Z10, Z9 \
	VPMADDUBSW x68, Z4, Z10 \
	VPDPWSSD Z21, Z10, Z9 \
	VPMADDUBSW x132, Z5, Z10 \
	VPDPWSSD Z22, Z10, Z9 \
	VPMADDUBSW x196, Z8, Z10 \
	VPDPWSSD Z23, Z10, Z9 \
	VCVTDQ2PS Z9, Z9 \
	VMULPS.BCST xd, dreg, Z7 \
	VFMADD231PS Z7, Z9, facc

#define K8_TOKT(xt, dreg, facc) K8_TOK(xt(4), xt(68), xt(132), xt(196), xt(0), dreg, facc)

// K8_PERMS spreads the scale words in Z0 over Z20-Z23 with the index
// vectors at idx.
#define K8_PERMS(idx) \
	VMOVDQU64 idx+0(SB), Z13 \
	VPERMW Z0, Z13, Z20 \
	VMOVDQU64 idx+64(SB), Z13 \
	VPERMW Z0, Z13, Z21 \
	VMOVDQU64 idx+128(SB), Z13 \
	VPERMW Z0, Z13, Z22 \
	VMOVDQU64 idx+192(SB), Z13 \
	VPERMW Z0, Z13, Z23

// K8_RED folds one token's lanes, facc and the mins (bsum) lanes already
// in Y12, as the one-token row-run dots do, and stores the result at
// (AX), then moves AX to the next token's output. q6fold is the mins
// step: VSUBPS Y12, Y8, Y8 for Q4_K, VFNMADD231PS Y13, Y12, Y8 (32.0 in
// Y13) for Q6_K.
#define K8_RED(facc, q6fold) \
	VMOVAPS facc, Z8 \
	VEXTRACTF64X4 $1, Z8, Y0 \
	VADDPS Y0, Y8, Y8 \
	q6fold \
	VEXTRACTF128 $1, Y8, X0 \
	VADDPS X0, X8, X8 \
	VMOVHLPS X8, X0, X0 \
	VADDPS X0, X8, X8 \
	VMOVSHDUP X8, X0 \
	VADDSS X0, X8, X8 \
	VMOVSS X8, (AX) \
	ADDQ DX, AX

#define Q4K8_FOLD VSUBPS Y12, Y8, Y8
#define Q6K8_FOLD VFNMADD231PS Y13, Y12, Y8

// K8_REDPAIR folds tokens 2p (mins in the low half of macc) and 2p+1
// (the high half).
#define K8_REDPAIR(fa, fb, macc, fold) \
	VMOVAPS macc, Z12 \
	K8_RED(fa, fold) \
	VEXTRACTF64X4 $1, macc, Y12 \
	K8_RED(fb, fold)

// func dotQ4KRows8AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ4KRowsNAVX512 for eight tokens (nb, rows >= 1).
TEXT ·dotQ4KRows8AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kShift<>+0(SB), Z24

q4k8row:
	MOVQ x+8(FP), DI
	LEAQ (DI)(R11*4), R12
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z14, Z14, Z14
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

q4k8loop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	K8_PERMS(q4kIdx<>)
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X7
	VINSERTI128 $1, X7, Y2, Y2
	Q4KN_UNPACK(16, Z3)
	Q4KN_UNPACK(48, Z4)
	Q4KN_UNPACK(80, Z5)
	Q4KN_UNPACK(112, Z8)
	VCVTPH2PS (SI), X6
	VBROADCASTSS X6, Z0
	VMOVSHDUP X6, X7
	VBROADCASTSS X7, Z1
	K8_TOKT(X8T0, Z0, Z16)
	K8_TOKT(X8T1, Z0, Z17)
	K8_TOKT(X8T2, Z0, Z18)
	K8_TOKT(X8T3, Z0, Z19)
	K8_TOKT(X8T4, Z0, Z25)
	K8_TOKT(X8T5, Z0, Z26)
	K8_TOKT(X8T6, Z0, Z27)
	K8_TOKT(X8T7, Z0, Z28)
	K8_MINS(Y2, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z14)
	K8_MINS(Y2, Z1, X8T2(260), X8T3(260), X8T2(0), X8T3(0), Z29)
	K8_MINS(Y2, Z1, X8T4(260), X8T5(260), X8T4(0), X8T5(0), Z30)
	K8_MINS(Y2, Z1, X8T6(260), X8T7(260), X8T6(0), X8T7(0), Z31)
	ADDQ $144, SI
	ADDQ $292, DI
	ADDQ $292, R12
	DECQ CX
	JNZ q4k8loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	K8_REDPAIR(Z16, Z17, Z14, Q4K8_FOLD)
	K8_REDPAIR(Z18, Z19, Z29, Q4K8_FOLD)
	K8_REDPAIR(Z25, Z26, Z30, Q4K8_FOLD)
	K8_REDPAIR(Z27, Z28, Z31, Q4K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q4k8row
	VZEROUPPER
	RET

// Q6K8_UNPACK works like Q6KN_UNPACK with the shift counts from memory
// and 0x30 in every byte of Z14. Clobbers Z9-Z11.
#define Q6K8_UNPACK(qoff, hoff, lo, hi) \
	VMOVDQU64 qoff(SI), lo \
	VBROADCASTI64X4 hoff(SI), Z9 \
	VPSRLW $4, lo, hi \
	VPANDD Z15, lo, lo \
	VPANDD Z15, hi, hi \
	VPSLLVW q6kShift<>+0(SB), Z9, Z10 \
	VPSRLVW q6kShift<>+64(SB), Z9, Z11 \
	VPANDD Z14, Z10, Z10 \
	VPANDD Z14, Z11, Z11 \
	VPORD Z10, lo, lo \
	VPORD Z11, hi, hi

// func dotQ6KRows8AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ6KRowsNAVX512 for eight tokens (nb, rows >= 1).
TEXT ·dotQ6KRows8AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14

q6k8row:
	MOVQ x+8(FP), DI
	LEAQ (DI)(R11*4), R12
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

q6k8loop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	K8_PERMS(q6kIdx<>)
	Q6K8_UNPACK(0, 128, Z3, Z4)
	Q6K8_UNPACK(64, 160, Z5, Z8)
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Z1
	K8_TOKT(X8T0, Z1, Z16)
	K8_TOKT(X8T1, Z1, Z17)
	K8_TOKT(X8T2, Z1, Z18)
	K8_TOKT(X8T3, Z1, Z19)
	K8_TOKT(X8T4, Z1, Z24)
	K8_TOKT(X8T5, Z1, Z25)
	K8_TOKT(X8T6, Z1, Z26)
	K8_TOKT(X8T7, Z1, Z27)
	K8_MINS(Y0, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z28)
	K8_MINS(Y0, Z1, X8T2(260), X8T3(260), X8T2(0), X8T3(0), Z29)
	K8_MINS(Y0, Z1, X8T4(260), X8T5(260), X8T4(0), X8T5(0), Z30)
	K8_MINS(Y0, Z1, X8T6(260), X8T7(260), X8T6(0), X8T7(0), Z31)
	ADDQ $210, SI
	ADDQ $292, DI
	ADDQ $292, R12
	DECQ CX
	JNZ q6k8loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	MOVL $0x42000000, BX // 32.0
	VMOVD BX, X13
	VBROADCASTSS X13, Y13
	K8_REDPAIR(Z16, Z17, Z28, Q6K8_FOLD)
	K8_REDPAIR(Z18, Z19, Z29, Q6K8_FOLD)
	K8_REDPAIR(Z24, Z25, Z30, Q6K8_FOLD)
	K8_REDPAIR(Z26, Z27, Z31, Q6K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q6k8row
	VZEROUPPER
	RET

// func dotQ4KRows4AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ4KRows8AVX512 for four tokens (a serving step's batch of four).
TEXT ·dotQ4KRows4AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kShift<>+0(SB), Z24

q4k4row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z14, Z14, Z14
	VPXORD Z29, Z29, Z29

q4k4loop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	K8_PERMS(q4kIdx<>)
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X7
	VINSERTI128 $1, X7, Y2, Y2
	Q4KN_UNPACK(16, Z3)
	Q4KN_UNPACK(48, Z4)
	Q4KN_UNPACK(80, Z5)
	Q4KN_UNPACK(112, Z8)
	VCVTPH2PS (SI), X6
	VBROADCASTSS X6, Z0
	VMOVSHDUP X6, X7
	VBROADCASTSS X7, Z1
	K8_TOKT(X8T0, Z0, Z16)
	K8_TOKT(X8T1, Z0, Z17)
	K8_TOKT(X8T2, Z0, Z18)
	K8_TOKT(X8T3, Z0, Z19)
	K8_MINS(Y2, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z14)
	K8_MINS(Y2, Z1, X8T2(260), X8T3(260), X8T2(0), X8T3(0), Z29)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4k4loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	K8_REDPAIR(Z16, Z17, Z14, Q4K8_FOLD)
	K8_REDPAIR(Z18, Z19, Z29, Q4K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q4k4row
	VZEROUPPER
	RET

// func dotQ6KRows4AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ6KRows8AVX512 for four tokens.
TEXT ·dotQ6KRows4AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14

q6k4row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29

q6k4loop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	K8_PERMS(q6kIdx<>)
	Q6K8_UNPACK(0, 128, Z3, Z4)
	Q6K8_UNPACK(64, 160, Z5, Z8)
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Z1
	K8_TOKT(X8T0, Z1, Z16)
	K8_TOKT(X8T1, Z1, Z17)
	K8_TOKT(X8T2, Z1, Z18)
	K8_TOKT(X8T3, Z1, Z19)
	K8_MINS(Y0, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z28)
	K8_MINS(Y0, Z1, X8T2(260), X8T3(260), X8T2(0), X8T3(0), Z29)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6k4loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	MOVL $0x42000000, BX // 32.0
	VMOVD BX, X13
	VBROADCASTSS X13, Y13
	K8_REDPAIR(Z16, Z17, Z28, Q6K8_FOLD)
	K8_REDPAIR(Z18, Z19, Z29, Q6K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q6k4row
	VZEROUPPER
	RET

// func dotQ4KRows3AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ4KRows8AVX512 for three tokens.
TEXT ·dotQ4KRows3AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kShift<>+0(SB), Z24

q4k3row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z14, Z14, Z14
	VPXORD Z29, Z29, Z29

q4k3loop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	K8_PERMS(q4kIdx<>)
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X7
	VINSERTI128 $1, X7, Y2, Y2
	Q4KN_UNPACK(16, Z3)
	Q4KN_UNPACK(48, Z4)
	Q4KN_UNPACK(80, Z5)
	Q4KN_UNPACK(112, Z8)
	VCVTPH2PS (SI), X6
	VBROADCASTSS X6, Z0
	VMOVSHDUP X6, X7
	VBROADCASTSS X7, Z1
	K8_TOKT(X8T0, Z0, Z16)
	K8_TOKT(X8T1, Z0, Z17)
	K8_TOKT(X8T2, Z0, Z18)
	K8_MINS(Y2, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z14)
	K8_MINS(Y2, Z1, X8T2(260), X8T2(260), X8T2(0), X8T2(0), Z29)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4k3loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	K8_REDPAIR(Z16, Z17, Z14, Q4K8_FOLD)
	VMOVAPS Z29, Z12
	K8_RED(Z18, Q4K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q4k3row
	VZEROUPPER
	RET

// func dotQ4KRows2AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ4KRows8AVX512 for two tokens.
TEXT ·dotQ4KRows2AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	VMOVDQU64 q4kShift<>+0(SB), Z24

q4k2row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z14, Z14, Z14
	VPXORD Z29, Z29, Z29

q4k2loop:
	PREFETCHT0 2304(SI)
	PREFETCHT0 2368(SI)
	PREFETCHT0 2432(SI)
	Q4K_SCALES512
	K8_PERMS(q4kIdx<>)
	VPUNPCKLWD X1, X1, X2
	VPUNPCKHWD X1, X1, X7
	VINSERTI128 $1, X7, Y2, Y2
	Q4KN_UNPACK(16, Z3)
	Q4KN_UNPACK(48, Z4)
	Q4KN_UNPACK(80, Z5)
	Q4KN_UNPACK(112, Z8)
	VCVTPH2PS (SI), X6
	VBROADCASTSS X6, Z0
	VMOVSHDUP X6, X7
	VBROADCASTSS X7, Z1
	K8_TOKT(X8T0, Z0, Z16)
	K8_TOKT(X8T1, Z0, Z17)
	K8_MINS(Y2, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z14)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q4k2loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	K8_REDPAIR(Z16, Z17, Z14, Q4K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q4k2row
	VZEROUPPER
	RET

// func dotQ6KRows3AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ6KRows8AVX512 for three tokens.
TEXT ·dotQ6KRows3AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14

q6k3row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29

q6k3loop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	K8_PERMS(q6kIdx<>)
	Q6K8_UNPACK(0, 128, Z3, Z4)
	Q6K8_UNPACK(64, 160, Z5, Z8)
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Z1
	K8_TOKT(X8T0, Z1, Z16)
	K8_TOKT(X8T1, Z1, Z17)
	K8_TOKT(X8T2, Z1, Z18)
	K8_MINS(Y0, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z28)
	K8_MINS(Y0, Z1, X8T2(260), X8T2(260), X8T2(0), X8T2(0), Z29)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6k3loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	MOVL $0x42000000, BX // 32.0
	VMOVD BX, X13
	VBROADCASTSS X13, Y13
	K8_REDPAIR(Z16, Z17, Z28, Q6K8_FOLD)
	VMOVAPS Z29, Z12
	K8_RED(Z18, Q6K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q6k3row
	VZEROUPPER
	RET

// func dotQ6KRows2AVX512(w *byte, x *quant.BlockQ8K, nb, rows int, out *float32, stride int)
//
// dotQ6KRows8AVX512 for two tokens.
TEXT ·dotQ6KRows2AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ out+32(FP), R14
	MOVQ nb+16(FP), R11
	IMUL3Q $292, R11, R11
	LEAQ (R11)(R11*2), R13
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x30303030, AX
	VPBROADCASTD AX, Z14

q6k2row:
	MOVQ x+8(FP), DI
	MOVQ nb+16(FP), CX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29

q6k2loop:
	PREFETCHT0 2520(SI)
	PREFETCHT0 2584(SI)
	PREFETCHT0 2648(SI)
	PREFETCHT0 2712(SI)
	VPMOVSXBW 192(SI), Y0
	K8_PERMS(q6kIdx<>)
	Q6K8_UNPACK(0, 128, Z3, Z4)
	Q6K8_UNPACK(64, 160, Z5, Z8)
	MOVWLZX 208(SI), AX
	VMOVD AX, X6
	VCVTPH2PS X6, X6
	VBROADCASTSS X6, Z1
	K8_TOKT(X8T0, Z1, Z16)
	K8_TOKT(X8T1, Z1, Z17)
	K8_MINS(Y0, Z1, X8T0(260), X8T1(260), X8T0(0), X8T1(0), Z28)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JNZ q6k2loop

	MOVQ stride+40(FP), DX
	SHLQ $2, DX
	MOVQ R14, AX
	MOVL $0x42000000, BX // 32.0
	VMOVD BX, X13
	VBROADCASTSS X13, Y13
	K8_REDPAIR(Z16, Z17, Z28, Q6K8_FOLD)
	ADDQ $4, R14
	DECQ rows+24(FP)
	JNZ q6k2row
	VZEROUPPER
	RET
