// Macros shared by the Q8_0-partner row-run dots of the avx512 path
// (newq_avx512_amd64.s: Q4_0, Q5_0, IQ4_NL; mxfp4_amd64.s: MXFP4), which
// keep four activation blocks per 512-bit register in the codes' order.

// Q80X4 loads the qs bytes of four activation blocks (at a, b, c and d
// off DI, one per 128-bit lane) in the codes' order: values 0-15 of each
// block in xl, 16-31 in xh, and leaves -o·Σx of each lane's eight values
// in on (o in the bytes of Z13, Z24 zero). Clobbers Z1, Z10.
#define Q80X4(a, b, c, d, xl, xh, on) \
	VMOVDQU64    a(DI), Y1 \
	VINSERTI64X4 $1, b(DI), Z1, Z1 \
	VMOVDQU64    c(DI), Y10 \
	VINSERTI64X4 $1, d(DI), Z10, Z10 \
	VSHUFI64X2   $0x88, Z10, Z1, xl \
	VSHUFI64X2   $0xdd, Z10, Z1, xh \
	VPXORD       on, on, on \
	VPDPBUSD     xl, Z13, on \
	VPDPBUSD     xh, Z13, on \
	VPSUBD       on, Z24, on

// Q80N_DOT accumulates the codes in Z2 and Z3 times the activations xl
// and xh, from the offset lanes on, exactly into Z14, and then into the
// float lanes acc with the scales s.
#define Q80N_DOT(xl, xh, on, s, acc) \
	VMOVDQA64   on, Z14 \
	VPDPBUSD    xl, Z2, Z14 \
	VPDPBUSD    xh, Z3, Z14 \
	VCVTDQ2PS   Z14, Z14 \
	VFMADD231PS s, Z14, acc
