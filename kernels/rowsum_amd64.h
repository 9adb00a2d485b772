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
