package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// q3kSize is the size of a Q3_K block: hmask @0, qs @32, scales @96,
// d f16 @108.
const q3kSize = 110

// q3kScales decodes the sixteen 6-bit scales of the Q3_K block at w,
// minus 32, into words stored at sc (32 bytes).
func q3kScales(w Register, sc Mem) {
	a, b, d := GP32(), GP32(), GP32()
	MOVL(Mem{Base: w, Disp: 96}, a)
	MOVL(Mem{Base: w, Disp: 100}, b)
	MOVL(Mem{Base: w, Disp: 104}, d)
	// Byte j of the result: low four bits from nibble j of bytes 0-7, top
	// two from bits 2*(j/4) of byte 8 + j%4.
	part := func(src Register, shift, hshift int) Register {
		r, t := GP32(), GP32()
		MOVL(src, r)
		if shift > 0 {
			SHRL(U8(uint8(shift)), r)
		}
		ANDL(U32(0x0f0f0f0f), r)
		MOVL(d, t)
		if hshift > 0 {
			SHRL(U8(uint8(hshift)), t)
		}
		ANDL(U32(0x03030303), t)
		SHLL(U8(4), t)
		ORL(t, r)
		return r
	}
	x, y := XMM(), XMM()
	VMOVD(part(a, 0, 0), x)
	VPINSRD(Imm(1), part(b, 0, 2), x, x)
	VPINSRD(Imm(2), part(a, 4, 4), x, x)
	VPINSRD(Imm(3), part(b, 4, 6), x, x)
	w16 := YMM()
	VPMOVZXBW(x, w16)
	VPBROADCASTW(NewDataAddr(Symbol{Name: "q3kBias", Static: true}, 0), y.AsY())
	VPSUBW(y.AsY(), w16, w16)
	VMOVDQU(w16, sc)
}

// dotQ3K emits the one-token Q3_K×Q8_K dot: per 32 values the unsigned
// codes u = two bits + 4·hmask bit (0..7) times the activations by
// VPMADDUBSW, the scale words of its two sub-blocks by VPMADDWD; the
// offset 4·Σ scale_j·bsums_j is subtracted once per block; then sum +=
// (f16(d)*x.D) * isum in scalar float32 steps. Its summation order is not
// the generic twin's eight lanes.
func dotQ3K() {
	GLOBL("q3kBias", RODATA|NOPTR)
	DATA(0, U16(32))
	quantHeader("dotQ3KAVX2", "func(w *byte, x *float32, nb int) float32", "quant.DotQ3KQ8K up to the rounding of its summation order")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	m3, m1 := bcast32(0x03030303), bcast32(0x01010101)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	blockLoop("q3k", w, x, nb, q3kSize, q8kSize, func() {
		prefetch(w, 2)
		q3kScales(w, sc)
		off, acc, hm := YMM(), YMM(), YMM()
		VMOVDQU(sc, off)
		VPMADDWD(Mem{Base: x, Disp: q8kBsums}, off, off)
		VPSLLD(Imm(2), off, off)
		VPXOR(acc, acc, acc)
		VMOVDQU(Mem{Base: w}, hm)
		for h := range 2 {
			q := YMM()
			VMOVDQU(Mem{Base: w, Disp: 32 + 32*h}, q)
			for s := range 4 {
				u, hb := YMM(), YMM()
				VPSRLW(Imm(uint64(2*s)), q, u)
				VPAND(m3, u, u)
				VPSRLW(Imm(uint64(4*h+s)), hm, hb)
				VPAND(m1, hb, hb)
				VPSLLW(Imm(2), hb, hb)
				VPOR(hb, u, u)
				a := YMM()
				VPMADDUBSW(Mem{Base: x, Disp: q8kQs + 128*h + 32*s}, u, a)
				j := 8*h + 2*s
				lo, hi := XMM(), XMM()
				VPBROADCASTW(sc.Offset(2*j), lo)
				VPBROADCASTW(sc.Offset(2*j+2), hi)
				scw := YMM()
				VINSERTI128(Imm(1), hi, lo.AsY(), scw)
				VPMADDWD(scw, a, a)
				VPADDD(a, acc, acc)
			}
		}
		VPSUBD(off, acc, acc)
		v := hsum8(acc)
		VCVTDQ2PS(v, v)
		r, d := GP32(), XMM()
		MOVWLZX(Mem{Base: w, Disp: 108}, r)
		VMOVD(r, d)
		VCVTPH2PS(d, d)
		VMULSS(Mem{Base: x}, d, d)
		VMULSS(d, v, v)
		VADDSS(v, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}
