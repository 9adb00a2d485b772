package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// iq4Table names IQ4_NL's codebook (ggml's kvalues_iq4nl) in the data
// section, which the IQ4_XS dots look their codes up in.
const iq4Table = "iq4nlValues"

// iq4Codebook emits iq4Table. (The AVX2 one- and four-token dots of Q4_0,
// Q5_0 and IQ4_NL that once sat here, in the generic twins' float order,
// gave way to the row-run dots of rows_avx2_amd64.s, which sum in float32
// lanes.)
func iq4Codebook() {
	GLOBL(iq4Table, RODATA|NOPTR)
	// The codebook twice, one copy per 128-bit lane of a VPSHUFB, in
	// increasing offsets (the assembler takes DATA in order).
	vals := []int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
	for i := range 32 {
		DATA(i, U8(uint8(vals[i%16])))
	}
}
