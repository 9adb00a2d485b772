// Macros of the Q8_0 activation quantizers (q8act_amd64.s, and the prompt
// tile's in qtile_avx512_amd64.s): one block of 32 float32 values at SI,
// 0x7fffffff in every dword of Z15 (Y15) and 127.0 in X14; and the pack
// order table the AVX2 quantizers (Q8_0, Q8_1, Q8_K) share.

// q8actPerm brings the dwords of two signed or unsigned packs of four
// vectors (four bytes each) back into value order, for the AVX2
// quantizers (each file that includes this holds its own copy).
DATA q8actPerm<>+0(SB)/4, $0
DATA q8actPerm<>+4(SB)/4, $4
DATA q8actPerm<>+8(SB)/4, $1
DATA q8actPerm<>+12(SB)/4, $5
DATA q8actPerm<>+16(SB)/4, $2
DATA q8actPerm<>+20(SB)/4, $6
DATA q8actPerm<>+24(SB)/4, $3
DATA q8actPerm<>+28(SB)/4, $7
GLOBL q8actPerm<>(SB), RODATA|NOPTR, $32


// Q8ACT_AMAX512 loads the block into Z0 and Z1 and leaves max|x| in every
// dword of X2: the largest of the values' bits with the sign cleared (a
// non-negative float's order is its bits' order; a NaN is above every
// number). Clobbers X3.
#define Q8ACT_AMAX512 \
	VMOVUPS       0(SI), Z0 \
	VMOVUPS       64(SI), Z1 \
	VPANDD        Z15, Z0, Z2 \
	VPANDD        Z15, Z1, Z3 \
	VPMAXUD       Z3, Z2, Z2 \
	VEXTRACTI64X4 $1, Z2, Y3 \
	VPMAXUD       Y3, Y2, Y2 \
	Q8ACT_FOLD

// Q8ACT_AMAX256 does so into Y0, Y1, Y6 and Y7 with 256-bit instructions.
#define Q8ACT_AMAX256 \
	VMOVUPS 0(SI), Y0 \
	VMOVUPS 32(SI), Y1 \
	VMOVUPS 64(SI), Y6 \
	VMOVUPS 96(SI), Y7 \
	VPAND   Y15, Y0, Y2 \
	VPAND   Y15, Y1, Y3 \
	VPMAXUD Y3, Y2, Y2 \
	VPAND   Y15, Y6, Y3 \
	VPMAXUD Y3, Y2, Y2 \
	VPAND   Y15, Y7, Y3 \
	VPMAXUD Y3, Y2, Y2 \
	Q8ACT_FOLD

// Q8ACT_FOLD folds the eight dwords of Y2 to their largest in every dword
// of X2 (unsigned compares). Clobbers X3.
#define Q8ACT_FOLD \
	VEXTRACTI128 $1, Y2, X3 \
	VPMAXUD      X3, X2, X2 \
	VPSHUFD      $0x4e, X2, X3 \
	VPMAXUD      X3, X2, X2 \
	VPSHUFD      $0xb1, X2, X3 \
	VPMAXUD      X3, X2, X2

// Q8ACT_CODES512 leaves the block's 32 codes in X0 (values 0-15) and X1
// (16-31): x·id for id in X5, converted to int32 with the default
// rounding (to nearest, ties to even) and saturated to int8. Out of
// int32's range (a NaN, or ±Inf where id overflowed) the conversion gives
// 0x80000000, which saturates to -128, as on llama.cpp's x86 path.
#define Q8ACT_CODES512 \
	VBROADCASTSS X5, Z5 \
	VMULPS       Z5, Z0, Z0 \
	VMULPS       Z5, Z1, Z1 \
	VCVTPS2DQ    Z0, Z0 \
	VCVTPS2DQ    Z1, Z1 \
	VPMOVSDB     Z0, X0 \
	VPMOVSDB     Z1, X1

// Q8ACT_CODES256 leaves the block's 32 codes in Y0 as Q8ACT_CODES512
// does, from Y0, Y1, Y6 and Y7: the two signed packs interleave the
// values four at a time, and q8actPerm (q8act_amd64.h, in Y13) puts them
// back in order.
#define Q8ACT_CODES256 \
	VBROADCASTSS X5, Y5 \
	VMULPS       Y5, Y0, Y0 \
	VMULPS       Y5, Y1, Y1 \
	VMULPS       Y5, Y6, Y6 \
	VMULPS       Y5, Y7, Y7 \
	VCVTPS2DQ    Y0, Y0 \
	VCVTPS2DQ    Y1, Y1 \
	VCVTPS2DQ    Y6, Y6 \
	VCVTPS2DQ    Y7, Y7 \
	VPACKSSDW    Y1, Y0, Y0 \
	VPACKSSDW    Y7, Y6, Y6 \
	VPACKSSWB    Y6, Y0, Y0 \
	VPERMD       Y0, Y13, Y0
