package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// kx4Kernels emits the four-token dots of Q5_K, Q3_K and Q2_K beside
// their one-token AVX2 dots (q5k.go, q3k.go, more.go):
// each weight block is decoded once and multiplied with the four tokens'
// blocks (at x + t*nb*292). A token's integer sums are exact whatever the
// order they are added in, and its float steps are the one-token dot's
// (the same products of the same operands, added in the same order),
// taken lane by lane in a vector of the four tokens; so out[t] equals the
// one-token AVX2 dot of token t bit for bit.
func kx4Kernels() {
	dotQ5Kx4()
	dotQ3Kx4()
	dotQ2Kx4()
}

// kx4Header starts a four-token dot whose one-token twin is one.
func kx4Header(name, one string) {
	quantHeader(name, "func(w *byte, x *float32, nb int, out *[4]float32)", one+" for each of the four tokens at x, bit for bit")
}

// dMinTail takes the float steps of the AVX2 Q4_K dot (and of the Q5_K
// and Q2_K ones) for four tokens: ints[t] holds token t's [isum, msum],
// the f16 pair d, dmin is at off(w), and sum[t] += isum·(d·xd) then
// sum[t] -= msum·(dmin·xd), xd the token's block scale.
func dMinTail(w Register, off int, ints []VecVirtual, xm []func(int) Mem, sum VecVirtual) {
	is, mi := gather4(ints)
	VCVTDQ2PS(is, is)
	VCVTDQ2PS(mi, mi)
	xd := tokenScales(xm)
	r, d, dm := GP32(), XMM(), XMM()
	MOVL(Mem{Base: w, Disp: off}, r)
	VMOVD(r, d)
	VCVTPH2PS(d, d)
	VMOVSHDUP(d, dm)
	VBROADCASTSS(d, d)
	VBROADCASTSS(dm, dm)
	VMULPS(xd, d, d)
	VMULPS(xd, dm, dm)
	VMULPS(is, d, d)
	VMULPS(mi, dm, dm)
	VADDPS(d, sum, sum)
	VSUBPS(dm, sum, sum)
}

// sum4 returns [Σ p[0], Σ p[1], Σ p[2], Σ p[3]], each the sum of the eight
// int32 lanes of a token's register.
func sum4(p []VecVirtual) VecVirtual {
	VPHADDD(p[1], p[0], p[0])
	VPHADDD(p[3], p[2], p[2])
	VPHADDD(p[2], p[0], p[0])
	v := XMM()
	VEXTRACTI128(Imm(1), p[0], v)
	VPADDD(v, p[0].AsX(), v)
	return v
}

// zeroAccs returns four zeroed accumulators.
func zeroAccs() []VecVirtual {
	accs := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, a := range accs {
		VPXOR(a, a, a)
	}
	return accs
}

// dotQ5Kx4 emits the four-token Q5_K×Q8_K dot of dotQ5K.
func dotQ5Kx4() {
	kx4Header("dotQ5Kx4AVX2", "dotQ5KAVX2")
	w, x, nb, stride, s3 := x4Setup(q8kSize)
	xm := tokenMems(x, stride, s3)
	mask := bcast32(0x0f0f0f0f)
	one := bcast32(0x01010101)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(16)
	blockLoop("q5k4", w, x, nb, q5kSize, q8kSize, func() {
		s, mn := q4kScales(w)
		VMOVDQU(s, sc)
		mins := dupWords(mn)
		accs := zeroAccs()
		qh := YMM()
		VMOVDQU(Mem{Base: w, Disp: 16}, qh)
		for c := range 4 {
			lo, hi, h := YMM(), YMM(), YMM()
			VMOVDQU(Mem{Base: w, Disp: 48 + 32*c}, lo)
			VPSRLW(Imm(4), lo, hi)
			VPAND(mask, lo, lo)
			VPAND(mask, hi, hi)
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
		ints := make([]VecVirtual, 4)
		for t := range 4 {
			ints[t] = q4kInts(accs[t], mins, xm[t](q8kBsums))
		}
		dMinTail(w, 0, ints, xm, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}

// dotQ2Kx4 emits the four-token Q2_K×Q8_K dot of dotQ2K.
func dotQ2Kx4() {
	kx4Header("dotQ2Kx4AVX2", "dotQ2KAVX2")
	w, x, nb, stride, s3 := x4Setup(q8kSize)
	xm := tokenMems(x, stride, s3)
	m3, m0f := bcast32(0x03030303), bcast32(0x0f0f0f0f)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	blockLoop("q2k4", w, x, nb, q2kSize, q8kSize, func() {
		raw, lo, mn := XMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: w}, raw)
		VPAND(m0f.AsX(), raw, lo.AsX())
		VPMOVZXBW(lo.AsX(), lo)
		VMOVDQU(lo, sc)
		VPSRLW(Imm(4), raw, mn.AsX())
		VPAND(m0f.AsX(), mn.AsX(), mn.AsX())
		VPMOVZXBW(mn.AsX(), mn)
		accs := zeroAccs()
		for h := range 2 {
			q := YMM()
			VMOVDQU(Mem{Base: w, Disp: 16 + 32*h}, q)
			for s := range 4 {
				u := YMM()
				VPSRLW(Imm(uint64(2*s)), q, u)
				VPAND(m3, u, u)
				j := 8*h + 2*s
				l, hi := XMM(), XMM()
				VPBROADCASTW(sc.Offset(2*j), l)
				VPBROADCASTW(sc.Offset(2*j+2), hi)
				scw := YMM()
				VINSERTI128(Imm(1), hi, l.AsY(), scw)
				for t, m := range xm {
					a := YMM()
					VPMADDUBSW(m(q8kQs+128*h+32*s), u, a)
					VPMADDWD(scw, a, a)
					VPADDD(a, accs[t], accs[t])
				}
			}
		}
		ints := make([]VecVirtual, 4)
		for t := range 4 {
			ints[t] = q4kInts(accs[t], mn, xm[t](q8kBsums))
		}
		dMinTail(w, 80, ints, xm, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}

// dotQ3Kx4 emits the four-token Q3_K×Q8_K dot of dotQ3K.
func dotQ3Kx4() {
	kx4Header("dotQ3Kx4AVX2", "dotQ3KAVX2")
	w, x, nb, stride, s3 := x4Setup(q8kSize)
	xm := tokenMems(x, stride, s3)
	m3, m1 := bcast32(0x03030303), bcast32(0x01010101)
	sum := XMM()
	VXORPS(sum, sum, sum)
	sc := AllocLocal(32)
	blockLoop("q3k4", w, x, nb, q3kSize, q8kSize, func() {
		q3kScales(w, sc)
		accs := zeroAccs()
		hm := YMM()
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
				j := 8*h + 2*s
				lo, hi := XMM(), XMM()
				VPBROADCASTW(sc.Offset(2*j), lo)
				VPBROADCASTW(sc.Offset(2*j+2), hi)
				scw := YMM()
				VINSERTI128(Imm(1), hi, lo.AsY(), scw)
				for t, m := range xm {
					a := YMM()
					VPMADDUBSW(m(q8kQs+128*h+32*s), u, a)
					VPMADDWD(scw, a, a)
					VPADDD(a, accs[t], accs[t])
				}
			}
		}
		// The offset 4·Σ scale·bsums of each token, subtracted before
		// the lanes are summed (exact integers, as in dotQ3K).
		for t, m := range xm {
			off := YMM()
			VMOVDQU(sc, off)
			VPMADDWD(m(q8kBsums), off, off)
			VPSLLD(Imm(2), off, off)
			VPSUBD(off, accs[t], accs[t])
		}
		v := sum4(accs)
		VCVTDQ2PS(v, v)
		xd := tokenScales(xm)
		r, d := GP32(), XMM()
		MOVWLZX(Mem{Base: w, Disp: 108}, r)
		VMOVD(r, d)
		VCVTPH2PS(d, d)
		VBROADCASTSS(d, d)
		VMULPS(xd, d, d)
		VMULPS(d, v, v)
		VADDPS(v, sum, sum)
	})
	storeOut(sum)
	VZEROUPPER()
	RET()
}
