package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Block sizes of the 32-value weight formats that pair with Q8_0.
const (
	q40Size  = 18 // Q4_0: d f16 @0, qs @2
	q50Size  = 22 // Q5_0: d f16 @0, qh @2, qs @6
	iq4Size  = 18 // IQ4_NL: d f16 @0, qs @2
	iq4Table = "iq4nlValues"
)

// legacyKernels emits the AVX2 one- and four-token dots of Q4_0, Q5_0
// and IQ4_NL with Q8_0 activations. Each takes the exact integer sum of a block (the
// signed codes widened to words, VPMADDWD with the activations, a
// horizontal sum) and then the float steps of its generic twin in
// package quant, so it equals the twin (and ggml's generic C kernel) bit
// for bit. The one-token dots take four blocks at a time: their integer
// sums reduced together, their float products in vector lanes (the
// twin's roundings, lane by lane), and then the four additions to the
// running sum one by one, in block order.
func legacyKernels() {
	GLOBL(iq4Table, RODATA|NOPTR)
	// The codebook twice, one copy per 128-bit lane of a VPSHUFB, in
	// increasing offsets (the assembler takes DATA in order).
	vals := []int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
	for i := range 32 {
		DATA(i, U8(uint8(vals[i%16])))
	}
	q40 := func(w Register, u VecVirtual) {
		VPSUBB(bcast32(0x08080808), u, u)
	}
	legacyDot("dotQ4_0AVX2", "quant.DotQ4_0Q8_0", q40Size, 2, func() blockCodes {
		c8 := bcast32(0x08080808)
		return func(w Register, disp int, u VecVirtual) { VPSUBB(c8, u, u) }
	}, true)
	legacyDotX4("dotQ4_0x4AVX2", "quant.DotQ4_0Q8_0", q40Size, 2, q40, true)
	q50 := func(w Register, u VecVirtual) {
		// Byte k takes bit k of qh: qh byte k/8 spread by VPSHUFB, its bit
		// k%8 tested by VPAND and VPCMPEQB, 16 where set.
		h, ctl, bits := YMM(), YMM(), YMM()
		VPBROADCASTD(Mem{Base: w, Disp: 2}, h)
		r := GP64()
		MOVQ(U64(0x0000000000000000), r)
		VMOVQ(r, ctl.AsX())
		MOVQ(U64(0x0101010101010101), r)
		t := XMM()
		VMOVQ(r, t)
		VPUNPCKLQDQ(t, ctl.AsX(), ctl.AsX())
		MOVQ(U64(0x0202020202020202), r)
		VMOVQ(r, t)
		t2 := XMM()
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
		VPSUBB(bcast32(0x10101010), u, u)
	}
	legacyDot("dotQ5_0AVX2", "quant.DotQ5_0Q8_0", q50Size, 6, func() blockCodes {
		// q50's constants, made once per call.
		ctl, bits, c16 := YMM(), YMM(), bcast32(0x10101010)
		r, t := GP64(), XMM()
		MOVQ(U64(0x0101010101010101), r)
		VMOVQ(r, t)
		VPSLLDQ(Imm(8), t, ctl.AsX())
		MOVQ(U64(0x0202020202020202), r)
		VMOVQ(r, t)
		t2 := XMM()
		MOVQ(U64(0x0303030303030303), r)
		VMOVQ(r, t2)
		VPUNPCKLQDQ(t2, t, t)
		VINSERTI128(Imm(1), t, ctl, ctl)
		MOVQ(U64(0x8040201008040201), r)
		VMOVQ(r, bits.AsX())
		VPBROADCASTQ(bits.AsX(), bits)
		return func(w Register, disp int, u VecVirtual) {
			h := YMM()
			VPBROADCASTD(Mem{Base: w, Disp: disp + 2}, h)
			VPSHUFB(ctl, h, h)
			VPAND(bits, h, h)
			VPCMPEQB(bits, h, h)
			VPAND(c16, h, h)
			VPOR(h, u, u)
			VPSUBB(c16, u, u)
		}
	}, false)
	legacyDotX4("dotQ5_0x4AVX2", "quant.DotQ5_0Q8_0", q50Size, 6, q50, false)
	iq4 := func(w Register, u VecVirtual) {
		tab := YMM()
		VMOVDQU(NewDataAddr(Symbol{Name: iq4Table, Static: true}, 0), tab)
		VPSHUFB(u, tab, u)
	}
	legacyDot("dotIQ4NLAVX2", "quant.DotIQ4NLQ8_0", iq4Size, 2, func() blockCodes {
		tab := YMM()
		VMOVDQU(NewDataAddr(Symbol{Name: iq4Table, Static: true}, 0), tab)
		return func(w Register, disp int, u VecVirtual) { VPSHUFB(u, tab, u) }
	}, false)
	legacyDotX4("dotIQ4NLx4AVX2", "quant.DotIQ4NLQ8_0", iq4Size, 2, iq4, false)
}

// legacyDotX4 emits the four-token dot beside legacyDot's one-token
// dot: each block's codes are decoded once and multiplied with the four
// tokens' blocks (at x + t*nb*34); each token's lane takes exactly the
// one-token dot's steps (exact integer sum, the same float products in the
// same order, lane by lane), so out[t] equals the one-token dot, and so
// the generic twin, bit for bit.
func legacyDotX4(name, twin string, size, qoff int, codes func(w Register, u VecVirtual), scaleFirst bool) {
	quantHeader(name, "func(w *byte, x *uint16, nb int, out *[4]float32)", twin+" for each of the four tokens at x")
	w, x, nb, stride, s3 := x4Setup(q80Size)
	xm := tokenMems(x, stride, s3)
	mask := bcast32(0x0f0f0f0f)
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop(name, w, x, nb, size, q80Size, func() {
		prefetch(w, 1)
		u, hi := YMM(), XMM()
		VMOVDQU(Mem{Base: w, Disp: qoff}, u.AsX())
		VPSRLW(Imm(4), u.AsX(), hi)
		VINSERTI128(Imm(1), hi, u, u)
		VPAND(mask, u, u)
		codes(w, u)
		w0, w1 := YMM(), YMM()
		VPMOVSXBW(u.AsX(), w0)
		VEXTRACTI128(Imm(1), u, hi)
		VPMOVSXBW(hi, w1)
		p := make([]VecVirtual, 4)
		for t := range 4 {
			p[t] = q80Prod(w0, w1, xm[t])
		}
		VPHADDD(p[1], p[0], p[0])
		VPHADDD(p[3], p[2], p[2])
		VPHADDD(p[2], p[0], p[0])
		v := XMM()
		VEXTRACTI128(Imm(1), p[0], v)
		VPADDD(v, p[0].AsX(), v)
		VCVTDQ2PS(v, v)
		dx, r := XMM(), GP32()
		MOVWLZX(xm[0](0), r)
		VMOVD(r, dx)
		for t := 1; t < 4; t++ {
			MOVWLZX(xm[t](0), r)
			VPINSRW(Imm(uint64(t)), r, dx, dx)
		}
		VCVTPH2PS(dx, dx)
		dw := XMM()
		MOVWLZX(Mem{Base: w}, r)
		VMOVD(r, dw)
		VCVTPH2PS(dw, dw)
		VBROADCASTSS(dw, dw)
		if scaleFirst {
			VMULPS(dw, v, v)
			VMULPS(dx, v, v)
		} else {
			VMULPS(dx, dw, dw)
			VMULPS(dw, v, v)
		}
		VADDPS(v, sum, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}

// blockCodes turns the 32 unsigned nibble codes in u (value order) of
// the block at w+disp into signed weights.
type blockCodes func(w Register, disp int, u VecVirtual)

// legacyDot emits one dot: mk makes the codes function's constants (once
// per call) and returns it; scaleFirst selects Q4_0's float order
// ((isum*dw)*dx) over the others' (dw*dx)*isum. Four blocks at a time,
// then one at a time.
func legacyDot(name, twin string, size, qoff int, mk func() blockCodes, scaleFirst bool) {
	quantHeader(name, "func(w *byte, x *uint16, nb int) float32", twin)
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	mask := bcast32(0x0f0f0f0f)
	codes := mk()
	sum := XMM()
	VXORPS(sum, sum, sum)
	// words leaves the signed weights of the block at w+disp as words in
	// w0 (values 0-15) and w1 (16-31).
	words := func(disp int) (w0, w1 VecVirtual) {
		u, hi := YMM(), XMM()
		VMOVDQU(Mem{Base: w, Disp: disp + qoff}, u.AsX())
		VPSRLW(Imm(4), u.AsX(), hi)
		VINSERTI128(Imm(1), hi, u, u)
		VPAND(mask, u, u)
		codes(w, disp, u)
		w0, w1 = YMM(), YMM()
		VPMOVSXBW(u.AsX(), w0)
		VEXTRACTI128(Imm(1), u, hi)
		VPMOVSXBW(hi, w1)
		return w0, w1
	}
	CMPQ(nb, Imm(4))
	JL(LabelRef(name + "_four_done"))
	Label(name + "_four")
	prefetch(w, 2)
	p := make([]VecVirtual, 4)
	for b := range 4 {
		w0, w1 := words(b * size)
		p[b] = q80Prod(w0, w1, func(o int) Mem { return Mem{Base: x, Disp: b*q80Size + o} })
		if b%2 == 1 {
			VPHADDD(p[b], p[b-1], p[b-1])
		}
	}
	// Lane b of v: block b's exact integer sum.
	VPHADDD(p[2], p[0], p[0])
	v := XMM()
	VEXTRACTI128(Imm(1), p[0], v)
	VPADDD(v, p[0].AsX(), v)
	VCVTDQ2PS(v, v)
	dw, dx, r := XMM(), XMM(), GP32()
	MOVWLZX(Mem{Base: w}, r)
	VMOVD(r, dw)
	MOVWLZX(Mem{Base: x}, r)
	VMOVD(r, dx)
	for b := 1; b < 4; b++ {
		VPINSRW(Imm(uint64(b)), Mem{Base: w, Disp: b * size}, dw, dw)
		VPINSRW(Imm(uint64(b)), Mem{Base: x, Disp: b * q80Size}, dx, dx)
	}
	VCVTPH2PS(dw, dw)
	VCVTPH2PS(dx, dx)
	if scaleFirst {
		VMULPS(dw, v, v)
		VMULPS(dx, v, v)
	} else {
		VMULPS(dx, dw, dw)
		VMULPS(dw, v, v)
	}
	t := XMM()
	VADDSS(v, sum, sum)
	VMOVSHDUP(v, t)
	VADDSS(t, sum, sum)
	VMOVHLPS(v, t, t)
	VADDSS(t, sum, sum)
	VMOVSHDUP(t, t)
	VADDSS(t, sum, sum)
	ADDQ(U32(uint32(4*size)), w)
	ADDQ(U32(uint32(4*q80Size)), x)
	SUBQ(Imm(4), nb)
	CMPQ(nb, Imm(4))
	JGE(LabelRef(name + "_four"))
	Label(name + "_four_done")
	blockLoop(name, w, x, nb, size, q80Size, func() {
		prefetch(w, 1)
		w0, w1 := words(0)
		v := hsum8(q80Prod(w0, w1, func(o int) Mem { return Mem{Base: x, Disp: o} }))
		VCVTDQ2PS(v, v)
		a, b, d, e := GP32(), GP32(), XMM(), XMM()
		MOVWLZX(Mem{Base: w}, a)
		MOVWLZX(Mem{Base: x}, b)
		SHLL(Imm(16), b)
		ORL(b, a)
		VMOVD(a, d)
		VCVTPH2PS(d, d)
		VMOVSHDUP(d, e)
		if scaleFirst {
			VMULSS(d, v, v)
			VMULSS(e, v, v)
		} else {
			VMULSS(e, d, d)
			VMULSS(d, v, v)
		}
		VADDSS(v, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}
