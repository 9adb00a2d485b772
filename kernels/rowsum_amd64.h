// Macros shared by the row-run dots that keep a row's sum in the eight
// float lanes of Y0 (newq_avx512_amd64.s, mxfp4_amd64.s,
// rows_avx2_amd64.s, iq4xs_avx2_amd64.s).

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
