package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

// iq4xsSize is the size of an IQ4_XS block: d f16 @0, scales_h @2,
// scales_l @4, qs @8.
const iq4xsSize = 136

// dotIQ4XS emits the one-token IQ4_XS×Q8_K dot in the generic twin's
// order: per 32-value sub-block the exact integer sum (codebook values
// by VPSHUFB, widened to words, VPMADDWD with the activations, a
// horizontal sum), then sum += (f16(d)*x.D*(ls-32)) * isum in scalar
// float32 steps, so it equals quant.DotIQ4XSQ8K bit for bit.
func dotIQ4XS() {
	quantHeader("dotIQ4XSAVX2", "func(w *byte, x *float32, nb int) float32", "quant.DotIQ4XSQ8K")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	mask := bcast32(0x0f0f0f0f)
	tab := YMM()
	VMOVDQU(NewDataAddr(Symbol{Name: iq4Table, Static: true}, 0), tab)
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop("iq4xs", w, x, nb, iq4xsSize, q8kSize, func() {
		prefetch(w, 2)
		d4d8, r := XMM(), GP32()
		MOVWLZX(Mem{Base: w}, r)
		VMOVD(r, d4d8)
		VCVTPH2PS(d4d8, d4d8)
		VMULSS(Mem{Base: x}, d4d8, d4d8)
		sh, sl := GP32(), GP32()
		MOVWLZX(Mem{Base: w, Disp: 2}, sh)
		MOVL(Mem{Base: w, Disp: 4}, sl)
		// The eight sub-blocks in a loop (one set of registers): q and a
		// walk the codes and the activations, sl and sh shift the next
		// sub-block's scale bits down.
		q, a8, n := GP64(), GP64(), GP64()
		LEAQ(Mem{Base: w, Disp: 8}, q)
		LEAQ(Mem{Base: x, Disp: q8kQs}, a8)
		MOVQ(U64(8), n)
		Label("iq4xs_sub")
		u, hi := YMM(), XMM()
		VMOVDQU(Mem{Base: q}, u.AsX())
		VPSRLW(Imm(4), u.AsX(), hi)
		VINSERTI128(Imm(1), hi, u, u)
		VPAND(mask, u, u)
		VPSHUFB(u, tab, u)
		w0, w1 := YMM(), YMM()
		VPMOVSXBW(u.AsX(), w0)
		VEXTRACTI128(Imm(1), u, hi)
		VPMOVSXBW(hi, w1)
		a, b := YMM(), YMM()
		VPMOVSXBW(Mem{Base: a8}, a)
		VPMOVSXBW(Mem{Base: a8, Disp: 16}, b)
		VPMADDWD(a, w0, a)
		VPMADDWD(b, w1, b)
		VPADDD(b, a, a)
		v := hsum8(a)
		VCVTDQ2PS(v, v)
		// ls = low nibble of sl | (low two bits of sh) << 4.
		l, h := GP32(), GP32()
		MOVL(sl, l)
		ANDL(U32(15), l)
		MOVL(sh, h)
		ANDL(U32(3), h)
		SHLL(U8(4), h)
		ORL(h, l)
		SUBL(U32(32), l)
		dl := XMM()
		VCVTSI2SSL(l, dl, dl)
		VMULSS(dl, d4d8, dl)
		VMULSS(dl, v, v)
		VADDSS(v, sum, sum)
		SHRL(U8(4), sl)
		SHRL(U8(2), sh)
		ADDQ(U32(16), q)
		ADDQ(U32(32), a8)
		DECQ(n)
		JNZ(LabelRef("iq4xs_sub"))
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}
