package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// q5kSize is the size of a Q5_K block: d, dmin @0, scales @4, qh @16,
// qs @48.
const q5kSize = 176

// dotQ5K emits the one-token Q5_K×Q8_K dot: dotQ4K's integer and float
// steps (so the same summation order as the AVX2 Q4_K dot, not the
// generic twin's eight lanes) with the fifth code bits added: bit 2c of
// qh[l] to the low nibbles of chunk c, bit 2c+1 to the high ones.
func dotQ5K() {
	quantHeader("dotQ5KAVX2", "func(w *byte, x *float32, nb int) float32", "quant.DotQ5KQ8K up to the rounding of its summation order")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	mask := bcast32(0x0f0f0f0f)
	one := bcast32(0x01010101)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(16)
	blockLoop("q5k", w, x, nb, q5kSize, q8kSize, func() {
		prefetch(w, 3)
		s, mn := q4kScales(w)
		VMOVDQU(s, sc)
		mins := dupWords(mn)
		acc := YMM()
		VPXOR(acc, acc, acc)
		qh := YMM()
		VMOVDQU(Mem{Base: w, Disp: 16}, qh)
		for c := range 4 {
			lo, hi, h := YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: w, Disp: 48 + 32*c}, lo)
			VPSRLW(Imm(4), lo, hi)
			VPAND(mask, lo, lo)
			VPAND(mask, hi, hi)
			// Fifth bits: shift bit 2c (2c+1) of each qh byte to bit 0,
			// keep it, and move it to bit 4 (words shift whole bytes'
			// worth of bits, but only each byte's own bit survives the
			// mask).
			VPSRLW(Imm(uint64(2*c)), qh, h)
			VPAND(one, h, h)
			VPSLLW(Imm(4), h, h)
			VPOR(h, lo, lo)
			VPSRLW(Imm(uint64(2*c+1)), qh, h)
			VPAND(one, h, h)
			VPSLLW(Imm(4), h, h)
			VPOR(h, hi, hi)
			s0, s1 := YMM(), YMM()
			VPBROADCASTW(sc.Offset(4*c), s0)
			VPBROADCASTW(sc.Offset(4*c+2), s1)
			a, b := YMM(), YMM()
			VPMADDUBSW(Mem{Base: x, Disp: q8kQs + 64*c}, lo, a)
			VPMADDUBSW(Mem{Base: x, Disp: q8kQs + 64*c + 32}, hi, b)
			VPMADDWD(s0, a, a)
			VPMADDWD(s1, b, b)
			VPADDD(a, acc, acc)
			VPADDD(b, acc, acc)
		}
		v := q4kInts(acc, mins, Mem{Base: x, Disp: q8kBsums})
		VCVTDQ2PS(v, v)
		r, d, xd := GP32(), XMM(), XMM()
		MOVL(Mem{Base: w}, r)
		VMOVD(r, d)
		VCVTPH2PS(d, d)
		VBROADCASTSS(Mem{Base: x}, xd)
		VMULPS(xd, d, d)
		VMULPS(d, v, v)
		VADDSS(v, sum, sum)
		VMOVSHDUP(v, d)
		VSUBSS(d, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}
