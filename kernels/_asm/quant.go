package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Layout of the activation blocks (quant.BlockQ8K, quant.BlockQ8_0) and
// the weight blocks, in bytes.
const (
	q8kSize  = 292 // Q8_K block: d f32 @0, qs @4, bsums @260
	q8kQs    = 4
	q8kBsums = 260
	q4kSize  = 144 // Q4_K block: d, dmin @0, scales @4, qs @16
	q6kSize  = 210 // Q6_K block: ql @0, qh @128, scales @192, d @208
	q80Size  = 34  // Q8_0 block: d f16 @0, qs @2
)

// quantKernels emits the AVX2 quantized dot products.
func quantKernels() {
	dotQ4K()
	dotQ6K()
	dotQ6Kx4()
	dotQ80()
	dotQ80x4()
}

// bcast32 returns a register with v in every 32-bit lane.
func bcast32(v uint32) VecVirtual {
	r, y := GP32(), YMM()
	MOVL(U32(v), r)
	VMOVD(r, y.AsX())
	VPBROADCASTD(y.AsX(), y)
	return y
}

// q4kScales unpacks the 12 packed scale bytes of the Q4_K block at w into
// eight scale words and eight min words.
func q4kScales(w Register) (sc, mn VecVirtual) {
	a, b, d, r8, r9, r10 := GP32(), GP32(), GP32(), GP32(), GP32(), GP32()
	MOVL(Mem{Base: w, Disp: 4}, a)
	MOVL(Mem{Base: w, Disp: 8}, b)
	MOVL(Mem{Base: w, Disp: 12}, d)
	MOVL(d, r8)
	SHRL(Imm(4), r8)
	ANDL(U32(0x0f0f0f0f), r8)
	MOVL(b, r9)
	SHRL(Imm(6), r9)
	ANDL(U32(0x03030303), r9)
	SHLL(Imm(4), r9)
	ORL(r9, r8)
	MOVL(b, r10)
	ANDL(U32(0x3f3f3f3f), r10)
	ANDL(U32(0x0f0f0f0f), d)
	MOVL(a, r9)
	SHRL(Imm(6), r9)
	ANDL(U32(0x03030303), r9)
	SHLL(Imm(4), r9)
	ORL(r9, d)
	ANDL(U32(0x3f3f3f3f), a)
	sc, mn = XMM(), XMM()
	VMOVD(a, sc)
	VPINSRD(Imm(1), d, sc, sc)
	VPMOVZXBW(sc, sc)
	VMOVD(r10, mn)
	VPINSRD(Imm(1), r8, mn, mn)
	VPMOVZXBW(mn, mn)
	return sc, mn
}

// dupWords returns the eight words of x, each twice, in a YMM register.
func dupWords(x VecVirtual) VecVirtual {
	y, h := YMM(), XMM()
	VPUNPCKLWD(x, x, y.AsX())
	VPUNPCKHWD(x, x, h)
	VINSERTI128(Imm(1), h, y, y)
	return y
}

// hsum8 returns lane 0 = the sum of the eight int32 lanes of y.
func hsum8(y VecVirtual) VecVirtual {
	x, t := XMM(), XMM()
	VEXTRACTI128(Imm(1), y, x)
	VPADDD(y.AsX(), x, x)
	VPSHUFD(Imm(0x4e), x, t)
	VPADDD(t, x, x)
	VPSHUFD(Imm(0xb1), x, t)
	VPADDD(t, x, x)
	return x
}

// blockLoop emits "for nb > 0 { body(); w += ws; x += xs; nb-- }".
func blockLoop(name string, w, x, nb Register, ws, xs int, body func()) {
	TESTQ(nb, nb)
	JE(LabelRef(name + "_done"))
	Label(name + "_loop")
	body()
	ADDQ(U32(uint32(ws)), w)
	ADDQ(U32(uint32(xs)), x)
	DECQ(nb)
	JNZ(LabelRef(name + "_loop"))
	Label(name + "_done")
}

// quantHeader starts a quantized dot function.
func quantHeader(name, sig, twin string) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name+" works like "+twin+".",
		"It reads exactly nb blocks of weights at w and of activations at x (the",
		"address of the first block).")
}

// q4kChunk multiplies the 32 qs bytes at qoff of w (sub-blocks 2c, 2c+1)
// with each token's 64 activations at xm(xoff) and adds the sums scaled
// by the scale words s0, s1 (at sc) into accs.
func q4kChunk(w Register, c int, sc Mem, mask VecVirtual, xm []func(int) Mem, accs []VecVirtual) {
	lo, hi := YMM(), YMM()
	VMOVDQU(Mem{Base: w, Disp: 16 + 32*c}, lo)
	VPSRLW(Imm(4), lo, hi)
	VPAND(mask, lo, lo)
	VPAND(mask, hi, hi)
	s0, s1 := YMM(), YMM()
	VPBROADCASTW(sc.Offset(4*c), s0)
	VPBROADCASTW(sc.Offset(4*c+2), s1)
	for t, m := range xm {
		a, b := YMM(), YMM()
		VPMADDUBSW(m(q8kQs+64*c), lo, a)
		VPMADDUBSW(m(q8kQs+64*c+32), hi, b)
		VPMADDWD(s0, a, a)
		VPMADDWD(s1, b, b)
		VPADDD(a, accs[t], accs[t])
		VPADDD(b, accs[t], accs[t])
	}
}

// q4kInts returns [isum, mins, ...] of one token: its accumulator and its
// bsums (at bs) times the duplicated mins.
func q4kInts(acc, mins VecVirtual, bs Mem) VecVirtual {
	m, t, x := YMM(), YMM(), XMM()
	VPMADDWD(bs, mins, m)
	VPHADDD(m, acc, t)
	VEXTRACTI128(Imm(1), t, x)
	VPADDD(x, t.AsX(), x)
	VPHADDD(x, x, x)
	return x
}

// dotQ4K emits the one-token Q4_K×Q8_K dot.
func dotQ4K() {
	quantHeader("dotQ4KAVX2", "func(w *byte, x *float32, nb int) float32", "dotQ4KGeneric")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	mask := bcast32(0x0f0f0f0f)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(16)
	blockLoop("q4k", w, x, nb, q4kSize, q8kSize, func() {
		prefetch(w, 3)
		s, mn := q4kScales(w)
		VMOVDQU(s, sc)
		mins := dupWords(mn)
		acc := YMM()
		VPXOR(acc, acc, acc)
		xm := []func(int) Mem{func(o int) Mem { return Mem{Base: x, Disp: o} }}
		for c := range 4 {
			q4kChunk(w, c, sc, mask, xm, []VecVirtual{acc})
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

// tokenMems returns the addressing of the four tokens' current blocks:
// x, x+stride, x+2*stride and x+s3 (s3 = 3*stride).
func tokenMems(x, stride, s3 Register) []func(int) Mem {
	return []func(int) Mem{
		func(o int) Mem { return Mem{Base: x, Disp: o} },
		func(o int) Mem { return Mem{Base: x, Index: stride, Scale: 1, Disp: o} },
		func(o int) Mem { return Mem{Base: x, Index: stride, Scale: 2, Disp: o} },
		func(o int) Mem { return Mem{Base: x, Index: s3, Scale: 1, Disp: o} },
	}
}

// x4Setup loads the arguments of a four-token kernel and computes the
// token stride nb*size and three times it.
func x4Setup(size int) (w, x, nb, stride, s3 Register) {
	w, x, nb = Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	stride, s3 = GP64(), GP64()
	IMUL3Q(U32(uint32(size)), nb, stride)
	LEAQ(Mem{Base: stride, Index: stride, Scale: 2}, s3)
	return w, x, nb, stride, s3
}

// gather4 returns [v0[0], v1[0], v2[0], v3[0]] and [v0[1], ..., v3[1]].
func gather4(v []VecVirtual) (lo, hi VecVirtual) {
	a, b := XMM(), XMM()
	VPUNPCKLDQ(v[1], v[0], a)
	VPUNPCKLDQ(v[3], v[2], b)
	lo, hi = XMM(), XMM()
	VPUNPCKLQDQ(b, a, lo)
	VPUNPCKHQDQ(b, a, hi)
	return lo, hi
}

// tokenScales returns the four tokens' 32-bit values at offset 0 of their
// current blocks.
func tokenScales(xm []func(int) Mem) VecVirtual {
	v := XMM()
	VMOVSS(xm[0](0), v)
	for t := 1; t < 4; t++ {
		VPINSRD(Imm(uint64(t)), xm[t](0), v, v)
	}
	return v
}

// storeOut stores the four sums to the out argument.
func storeOut(sum VecVirtual) {
	p := Load(Param("out"), GP64())
	VMOVUPS(sum, Mem{Base: p})
}

// q6kConsts returns the masks 0x0F and 0x30 and the VPSHUFB control that
// spreads scale word 0 over the low 128 bits and word 1 over the high.
func q6kConsts() (m0f, m30, ctl VecVirtual) {
	m0f, m30 = bcast32(0x0f0f0f0f), bcast32(0x30303030)
	r, lo, hi := GP64(), XMM(), XMM()
	ctl = YMM()
	MOVQ(U64(0x0100010001000100), r)
	VMOVQ(r, lo)
	VPBROADCASTQ(lo, lo)
	MOVQ(U64(0x0302030203020302), r)
	VMOVQ(r, hi)
	VPBROADCASTQ(hi, hi)
	VINSERTI128(Imm(1), hi, lo.AsY(), ctl)
	return m0f, m30, ctl
}

// q6kHalf unpacks half h (128 values) of the Q6_K block at w and
// multiplies it with each token's activations, scale words at sc, into
// accs.
func q6kHalf(w Register, h int, sc Mem, m0f, m30, ctl VecVirtual, xm []func(int) Mem, accs []VecVirtual) {
	qh, l0, l1 := YMM(), YMM(), YMM()
	VMOVDQU(Mem{Base: w, Disp: 128 + 32*h}, qh)
	VMOVDQU(Mem{Base: w, Disp: 64 * h}, l0)
	VMOVDQU(Mem{Base: w, Disp: 64*h + 32}, l1)
	codes := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	t := YMM()
	// values 0-31: low nibbles of l0, qh bits 0-1
	VPAND(m0f, l0, codes[0])
	VPSLLW(Imm(4), qh, t)
	VPAND(m30, t, t)
	VPOR(t, codes[0], codes[0])
	// values 32-63: low nibbles of l1, qh bits 2-3
	VPAND(m0f, l1, codes[1])
	VPSLLW(Imm(2), qh, t)
	VPAND(m30, t, t)
	VPOR(t, codes[1], codes[1])
	// values 64-95: high nibbles of l0, qh bits 4-5
	VPSRLW(Imm(4), l0, codes[2])
	VPAND(m0f, codes[2], codes[2])
	VPAND(m30, qh, t)
	VPOR(t, codes[2], codes[2])
	// values 96-127: high nibbles of l1, qh bits 6-7
	VPSRLW(Imm(4), l1, codes[3])
	VPAND(m0f, codes[3], codes[3])
	VPSRLW(Imm(2), qh, t)
	VPAND(m30, t, t)
	VPOR(t, codes[3], codes[3])
	for g, code := range codes {
		s := YMM()
		VPBROADCASTD(sc.Offset(16*h+4*g), s)
		VPSHUFB(ctl, s, s)
		for tk, m := range xm {
			p := YMM()
			VPMADDUBSW(m(q8kQs+128*h+32*g), code, p)
			VPMADDWD(s, p, p)
			VPADDD(p, accs[tk], accs[tk])
		}
	}
}

// q6kInt returns lane 0 = one token's integer sum: its accumulator minus
// 32 times its bsums (at bs) times the scale words sw.
func q6kInt(acc, sw VecVirtual, bs Mem) VecVirtual {
	b := YMM()
	VPMADDWD(bs, sw, b)
	VPSLLD(Imm(5), b, b)
	VPSUBD(b, acc, acc)
	return hsum8(acc)
}

// q6kBlockStart loads the scale words of the Q6_K block at w to sc and
// returns them, with four zeroed accumulators.
func q6kBlockStart(w Register, sc Mem, n int) (VecVirtual, []VecVirtual) {
	sw := YMM()
	VPMOVSXBW(Mem{Base: w, Disp: 192}, sw)
	VMOVDQU(sw, sc)
	accs := make([]VecVirtual, n)
	for i := range accs {
		accs[i] = YMM()
		VPXOR(accs[i], accs[i], accs[i])
	}
	return sw, accs
}

// q6kScale returns f16(d) of the Q6_K block at w broadcast to all lanes.
func q6kScale(w Register) VecVirtual {
	r, d := GP32(), XMM()
	MOVWLZX(Mem{Base: w, Disp: 208}, r)
	VMOVD(r, d)
	VCVTPH2PS(d, d)
	VBROADCASTSS(d, d)
	return d
}

// dotQ6K emits the one-token Q6_K×Q8_K dot.
func dotQ6K() {
	quantHeader("dotQ6KAVX2", "func(w *byte, x *float32, nb int) float32", "dotQ6KGeneric")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	m0f, m30, ctl := q6kConsts()
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	xm := []func(int) Mem{func(o int) Mem { return Mem{Base: x, Disp: o} }}
	blockLoop("q6k", w, x, nb, q6kSize, q8kSize, func() {
		prefetch(w, 4)
		sw, accs := q6kBlockStart(w, sc, 1)
		q6kHalf(w, 0, sc, m0f, m30, ctl, xm, accs)
		q6kHalf(w, 1, sc, m0f, m30, ctl, xm, accs)
		v := q6kInt(accs[0], sw, Mem{Base: x, Disp: q8kBsums})
		VCVTDQ2PS(v, v)
		d := q6kScale(w)
		VMULSS(Mem{Base: x}, d, d)
		VMULSS(v, d, d)
		VADDSS(d, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}

// dotQ6Kx4 emits the four-token Q6_K×Q8_K dot.
func dotQ6Kx4() {
	quantHeader("dotQ6Kx4AVX2", "func(w *byte, x *float32, nb int, out *[4]float32)", "dotQ6Kx4Generic")
	w, x, nb, stride, s3 := x4Setup(q8kSize)
	xm := tokenMems(x, stride, s3)
	m0f, m30, ctl := q6kConsts()
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	blockLoop("q6k4", w, x, nb, q6kSize, q8kSize, func() {
		_, accs := q6kBlockStart(w, sc, 4)
		q6kHalf(w, 0, sc, m0f, m30, ctl, xm, accs)
		q6kHalf(w, 1, sc, m0f, m30, ctl, xm, accs)
		sw := YMM()
		VMOVDQU(sc, sw)
		ints := make([]VecVirtual, 4)
		for t := range 4 {
			ints[t] = q6kInt(accs[t], sw, xm[t](q8kBsums))
		}
		is, _ := gather4(ints)
		VCVTDQ2PS(is, is)
		xd := tokenScales(xm)
		d := q6kScale(w)
		VMULPS(xd, d, d)
		VMULPS(is, d, d)
		VADDPS(d, sum, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}

// q80Prod returns the eight int32 partial sums of one Q8_0 weight block
// (widened to words in w0, w1) with the activation codes at m(2), m(18).
func q80Prod(w0, w1 VecVirtual, m func(int) Mem) VecVirtual {
	a, b := YMM(), YMM()
	VPMOVSXBW(m(2), a)
	VPMOVSXBW(m(18), b)
	VPMADDWD(a, w0, a)
	VPMADDWD(b, w1, b)
	VPADDD(b, a, a)
	return a
}

// q80Weights widens the 32 codes of the Q8_0 block at w to words.
func q80Weights(w Register) (w0, w1 VecVirtual) {
	w0, w1 = YMM(), YMM()
	VPMOVSXBW(Mem{Base: w, Disp: 2}, w0)
	VPMOVSXBW(Mem{Base: w, Disp: 18}, w1)
	return w0, w1
}

// dotQ80 emits the one-token Q8_0×Q8_0 dot.
func dotQ80() {
	quantHeader("dotQ8_0AVX2", "func(w *byte, x *uint16, nb int) float32", "dotQ8_0Generic")
	w, x, nb := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("nb"), GP64())
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop("q80", w, x, nb, q80Size, q80Size, func() {
		prefetch(w, 1)
		w0, w1 := q80Weights(w)
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
		VMULSS(e, d, d)
		VMULSS(d, v, v)
		VADDSS(v, sum, sum)
	})
	VZEROUPPER()
	Store(sum, ReturnIndex(0))
	RET()
}

// dotQ80x4 emits the four-token Q8_0×Q8_0 dot.
func dotQ80x4() {
	quantHeader("dotQ8_0x4AVX2", "func(w *byte, x *uint16, nb int, out *[4]float32)", "dotQ8_0x4Generic")
	w, x, nb, stride, s3 := x4Setup(q80Size)
	xm := tokenMems(x, stride, s3)
	sum := XMM()
	VXORPS(sum, sum, sum)
	blockLoop("q804", w, x, nb, q80Size, q80Size, func() {
		w0, w1 := q80Weights(w)
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
		VMULPS(dx, dw, dw)
		VMULPS(dw, v, v)
		VADDPS(v, sum, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}
