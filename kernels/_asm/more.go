package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Block sizes of Q4_1, Q5_1 (with their Q8_1 activations) and Q2_K.
const (
	q41Size = 20 // Q4_1: d, m f16 @0, qs @4
	q51Size = 24 // Q5_1: d, m f16 @0, qh @4, qs @8
	q81Size = 36 // Q8_1: d, s f16 @0, qs @4
	q2kSize = 84 // Q2_K: scales @0, qs @16, d, dmin f16 @80
)

// moreKernels emits the AVX2 one- and four-token dots of Q4_1 and Q5_1
// (bit for bit their generic twins) and Q2_K (in the AVX2 Q4_K dot's order).
func moreKernels() {
	q51 := func(w Register, u VecVirtual) { fifthBits(w, 4, u) }
	legacy1Dot("dotQ4_1AVX2", "quant.DotQ4_1Q8_1", q41Size, 4, nil)
	legacy1DotX4("dotQ4_1x4AVX2", "quant.DotQ4_1Q8_1", q41Size, 4, nil)
	legacy1Dot("dotQ5_1AVX2", "quant.DotQ5_1Q8_1", q51Size, 8, q51)
	legacy1DotX4("dotQ5_1x4AVX2", "quant.DotQ5_1Q8_1", q51Size, 8, q51)
	dotQ2K()
}

// fifthBits ORs 16 into the bytes of u whose bit in the 32-bit qh at
// w+off is set (byte k takes bit k).
func fifthBits(w Register, off int, u VecVirtual) {
	h, ctl, bits, t, t2 := YMM(), YMM(), YMM(), XMM(), XMM()
	r := GP64()
	VPBROADCASTD(Mem{Base: w, Disp: off}, h)
	MOVQ(U64(0), r)
	VMOVQ(r, ctl.AsX())
	MOVQ(U64(0x0101010101010101), r)
	VMOVQ(r, t)
	VPUNPCKLQDQ(t, ctl.AsX(), ctl.AsX())
	MOVQ(U64(0x0202020202020202), r)
	VMOVQ(r, t)
	MOVQ(U64(0x0303030303030303), r)
	VMOVQ(r, t2)
	VPUNPCKLQDQ(t2, t, t)
	VINSERTI128(Imm(1), t, ctl, ctl)
	VPSHUFB(ctl, h, h)
	MOVQ(U64(0x8040201008040201), r)
	VMOVQ(r, bits.AsX())
	VPBROADCASTQ(bits.AsX(), bits)
	VPAND(bits, h, h)
	VPCMPEQB(bits, h, h)
	VPAND(bcast32(0x10101010), h, h)
	VPOR(h, u, u)
}

// legacy1Dot emits a Q4_1 or Q5_1 dot with Q8_1 activations: per block
// the exact Σ code·x, then sum += ((dw·dx)·isum + m·s) in the generic
// twin's float32 steps.
func legacy1Dot(name, twin string, size, qoff int, codes func(w Register, u VecVirtual)) {
	quantHeader(name, "func(w *byte, x *uint16, nb int) float32", twin)
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	mask := bcast32(0x0f0f0f0f)
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop(name, w, x, nb, size, q81Size, func() {
		u, hi := YMM(), XMM()
		VMOVDQU(Mem{Base: w, Disp: qoff}, u.AsX())
		VPSRLW(Imm(4), u.AsX(), hi)
		VINSERTI128(Imm(1), hi, u, u)
		VPAND(mask, u, u)
		if codes != nil {
			codes(w, u)
		}
		w0, w1 := YMM(), YMM()
		VPMOVZXBW(u.AsX(), w0)
		VEXTRACTI128(Imm(1), u, hi)
		VPMOVZXBW(hi, w1)
		a, b := YMM(), YMM()
		VPMOVSXBW(Mem{Base: x, Disp: 4}, a)
		VPMOVSXBW(Mem{Base: x, Disp: 20}, b)
		VPMADDWD(a, w0, a)
		VPMADDWD(b, w1, b)
		VPADDD(b, a, a)
		v := hsum8(a)
		VCVTDQ2PS(v, v)
		// [dw, m, dx, s] as float32; p = [dw·dx, m·s].
		r, f, e := GP32(), XMM(), XMM()
		MOVL(Mem{Base: w}, r)
		VMOVD(r, f)
		VPINSRD(Imm(1), Mem{Base: x}, f, f)
		VCVTPH2PS(f, f)
		VMOVHLPS(f, e, e)
		VMULPS(e, f, f)
		VMULSS(f, v, v)
		VMOVSHDUP(f, e)
		VADDSS(e, v, v)
		VADDSS(v, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}

// legacy1DotX4 emits the four-token dot beside legacy1Dot's: a block's
// codes decoded once for the four tokens' blocks (at x + t*nb*36), each
// lane taking the one-token dot's float32 steps ((dw·dx)·isum, + m·s, then
// the running sum), so out[t] equals it bit for bit.
func legacy1DotX4(name, twin string, size, qoff int, codes func(w Register, u VecVirtual)) {
	quantHeader(name, "func(w *byte, x *uint16, nb int, out *[4]float32)", twin+" for each of the four tokens at x")
	w, x, nb, stride, s3 := x4Setup(q81Size)
	xm := tokenMems(x, stride, s3)
	mask, lo16 := bcast32(0x0f0f0f0f), bcast32(0x0000ffff)
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop(name, w, x, nb, size, q81Size, func() {
		prefetch(w, 1)
		u, hi := YMM(), XMM()
		VMOVDQU(Mem{Base: w, Disp: qoff}, u.AsX())
		VPSRLW(Imm(4), u.AsX(), hi)
		VINSERTI128(Imm(1), hi, u, u)
		VPAND(mask, u, u)
		if codes != nil {
			codes(w, u)
		}
		w0, w1 := YMM(), YMM()
		VPMOVZXBW(u.AsX(), w0)
		VEXTRACTI128(Imm(1), u, hi)
		VPMOVZXBW(hi, w1)
		p := make([]VecVirtual, 4)
		for t := range 4 {
			a, b := YMM(), YMM()
			VPMOVSXBW(xm[t](4), a)
			VPMOVSXBW(xm[t](20), b)
			VPMADDWD(a, w0, a)
			VPMADDWD(b, w1, b)
			VPADDD(b, a, a)
			p[t] = a
		}
		VPHADDD(p[1], p[0], p[0])
		VPHADDD(p[3], p[2], p[2])
		VPHADDD(p[2], p[0], p[0])
		v := XMM()
		VEXTRACTI128(Imm(1), p[0], v)
		VPADDD(v, p[0].AsX(), v)
		VCVTDQ2PS(v, v)
		// The tokens' [dx | s<<16] dwords split into dx and s as float32.
		ds, dx, sx := tokenScales(xm), XMM(), XMM()
		VPSRLD(Imm(16), ds, sx)
		VPAND(lo16.AsX(), ds, dx)
		pk := XMM()
		VPACKUSDW(sx, dx, pk) // [dx0..dx3, s0..s3] as f16 words
		VCVTPH2PS(pk, dx)
		VPSHUFD(Imm(0x4e), pk, pk)
		VCVTPH2PS(pk, sx)
		// [dw, m] of the weight block, broadcast.
		r, dw, m := GP32(), XMM(), XMM()
		MOVL(Mem{Base: w}, r)
		VMOVD(r, dw)
		VCVTPH2PS(dw, dw)
		VMOVSHDUP(dw, m)
		VBROADCASTSS(dw, dw)
		VBROADCASTSS(m, m)
		VMULPS(dx, dw, dw)
		VMULPS(dw, v, v)
		VMULPS(sx, m, m)
		VADDPS(m, v, v)
		VADDPS(v, sum, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}

// dotQ2K emits the one-token Q2_K×Q8_K dot: codes 0..3 times the
// activations by VPMADDUBSW, the 4-bit scale words of each chunk's two
// sub-blocks by VPMADDWD, the 4-bit mins times the bsums by one VPMADDWD;
// then the float steps of the AVX2 Q4_K dot.
func dotQ2K() {
	quantHeader("dotQ2KAVX2", "func(w *byte, x *float32, nb int) float32", "quant.DotQ2KQ8K up to the rounding of its summation order")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	m3, m0f := bcast32(0x03030303), bcast32(0x0f0f0f0f)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	blockLoop("q2k", w, x, nb, q2kSize, q8kSize, func() {
		prefetch(w, 2)
		raw, lo, mn := XMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: w}, raw)
		VPAND(m0f.AsX(), raw, lo.AsX())
		VPMOVZXBW(lo.AsX(), lo)
		VMOVDQU(lo, sc)
		VPSRLW(Imm(4), raw, mn.AsX())
		VPAND(m0f.AsX(), mn.AsX(), mn.AsX())
		VPMOVZXBW(mn.AsX(), mn)
		acc := YMM()
		VPXOR(acc, acc, acc)
		for h := range 2 {
			q := YMM()
			VMOVDQU(Mem{Base: w, Disp: 16 + 32*h}, q)
			for s := range 4 {
				u := YMM()
				VPSRLW(Imm(uint64(2*s)), q, u)
				VPAND(m3, u, u)
				a := YMM()
				VPMADDUBSW(Mem{Base: x, Disp: q8kQs + 128*h + 32*s}, u, a)
				j := 8*h + 2*s
				l, hi := XMM(), XMM()
				VPBROADCASTW(sc.Offset(2*j), l)
				VPBROADCASTW(sc.Offset(2*j+2), hi)
				scw := YMM()
				VINSERTI128(Imm(1), hi, l.AsY(), scw)
				VPMADDWD(scw, a, a)
				VPADDD(a, acc, acc)
			}
		}
		v := q4kInts(acc, mn, Mem{Base: x, Disp: q8kBsums})
		VCVTDQ2PS(v, v)
		r, d, xd := GP32(), XMM(), XMM()
		MOVL(Mem{Base: w, Disp: 80}, r)
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
