// Command _asm generates the AVX2 kernels of package kernels (float
// vector kernels in this file, quantized dot products in quant.go) with
// avo, into avx2_amd64.s and their Go declarations avx2_amd64_stubs.go.
// Run it through go generate in the kernels directory.
//
// The AVX-512 kernels are hand-written Go assembly instead: they need VNNI
// instructions (VPDPWSSD) that this avo version does not know.
package main

import (
	"math"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	ConstraintExpr("amd64,!purego")
	dotF32("dotF32AVX2", "func(a, b *float32, n int) float32", "a", "b", "dotF32Generic")
	dotF32("dotF32WAVX2", "func(w *byte, x *float32, n int) float32", "w", "x", "dotF32WGeneric")
	dotF16("dotF16AVX2", "func(a, b *uint16, n int) float32", "a", "b", "dotF16Generic")
	dotF16("dotF16WAVX2", "func(w *byte, x *uint16, n int) float32", "w", "x", "dotF16WGeneric")
	dotF16Rows()
	dotBF16()
	f16ToF32()
	f32ToF16()
	axpyF16()
	c := expConsts()
	expSubSum(c)
	siluMul(c)
	quantKernels()
	dotQ5K()
	dotQ3K()
	moreKernels()
	kx4Kernels()
	Generate()
}

// header starts a function with the usual documentation and pragma.
func header(name, sig, doc string) {
	TEXT(name, NOSPLIT, sig)
	Pragma("noescape")
	Doc(name+" works like "+doc+".", "It reads and writes exactly n elements; the tail past the last multiple of 8 is done with scalar instructions.")
}

// prefetchAhead is how far ahead of the weight pointer the one-token dots
// ask for cache lines: a decode step streams its weights from DRAM, and
// the hardware prefetcher alone does not keep these loops fed (swept with
// BenchmarkMatVecStream).
const prefetchAhead = 2304

// prefetch asks for the lines cache lines at prefetchAhead bytes past p.
// A prefetch never faults, so it may point past the end of the weights.
func prefetch(p Register, lines int) {
	for i := range lines {
		PREFETCHT0(Mem{Base: p, Disp: prefetchAhead + 64*i})
	}
}

// reduce8 sums the eight lanes of y into lane 0 of its low half.
func reduce8(y VecVirtual) {
	x, t := y.AsX(), XMM()
	VEXTRACTF128(Imm(1), y, t)
	VADDPS(t, x, x)
	VMOVHLPS(x, x, t)
	VADDPS(t, x, x)
	VMOVSHDUP(x, t)
	VADDSS(t, x, x)
}

// step is a pointer register advanced by d bytes per loop iteration.
type step struct {
	r Register
	d int
}

// adv returns the step of pointer r by d bytes.
func adv(r Register, d int) step { return step{r, d} }

// loop emits "while n >= count { body(); advance the pointers; n -= count }"
// with labels named after prefix.
func loop(prefix string, n Register, count int, body func(), steps ...step) {
	top, end := prefix+"_loop", prefix+"_end"
	Label(top)
	CMPQ(n, Imm(uint64(count)))
	JB(LabelRef(end))
	body()
	for _, s := range steps {
		ADDQ(Imm(uint64(s.d)), s.r)
	}
	SUBQ(Imm(uint64(count)), n)
	JMP(LabelRef(top))
	Label(end)
}

// dotF32 emits a float32 dot product with four FMA accumulators.
func dotF32(name, sig, pa, pb, twin string) {
	header(name, sig, twin+" on n elements at "+pa+" and "+pb)
	a, b, n := Load(Param(pa), GP64()), Load(Param(pb), GP64()), Load(Param("n"), GP64())
	acc := [4]VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	loop("w32", n, 32, func() {
		if pa == "w" {
			prefetch(a, 2)
		}
		for i, r := range acc {
			t := YMM()
			VMOVUPS(Mem{Base: a, Disp: 32 * i}, t)
			VFMADD231PS(Mem{Base: b, Disp: 32 * i}, t, r)
		}
	}, adv(a, 128), adv(b, 128))
	loop("w8", n, 8, func() {
		t := YMM()
		VMOVUPS(Mem{Base: a}, t)
		VFMADD231PS(Mem{Base: b}, t, acc[0])
	}, adv(a, 32), adv(b, 32))
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	reduce8(acc[0])
	x := acc[0].AsX()
	loop("w1", n, 1, func() {
		t := XMM()
		VMOVSS(Mem{Base: a}, t)
		VFMADD231SS(Mem{Base: b}, t, x)
	}, adv(a, 4), adv(b, 4))
	VZEROUPPER()
	Store(x, ReturnIndex(0))
	RET()
}

// loadF16 loads the half at m into lane 0 of x as float32.
func loadF16(m Mem, x VecVirtual) {
	r := GP32()
	MOVWLZX(m, r)
	VMOVD(r, x)
	VCVTPH2PS(x, x)
}

// dotF16 emits a half-precision dot product accumulated in float32.
func dotF16(name, sig, pa, pb, twin string) {
	header(name, sig, twin+" on n elements at "+pa+" and "+pb)
	a, b, n := Load(Param(pa), GP64()), Load(Param(pb), GP64()), Load(Param("n"), GP64())
	x := dotF16Body("h", a, b, n, pa == "w")
	VZEROUPPER()
	Store(x, ReturnIndex(0))
	RET()
}

// dotF16Body emits the dot product of the n halves at a and b (advancing
// both and counting n down), with labels named after prefix, and returns
// the register whose lane 0 holds it. prefetchA asks for a's lines ahead.
func dotF16Body(prefix string, a, b, n Register, prefetchA bool) Register {
	acc := [4]VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	loop(prefix+"32", n, 32, func() {
		if prefetchA {
			prefetch(a, 1)
		}
		for i, r := range acc {
			s, t := YMM(), YMM()
			VCVTPH2PS(Mem{Base: a, Disp: 16 * i}, s)
			VCVTPH2PS(Mem{Base: b, Disp: 16 * i}, t)
			VFMADD231PS(t, s, r)
		}
	}, adv(a, 64), adv(b, 64))
	loop(prefix+"8", n, 8, func() {
		s, t := YMM(), YMM()
		VCVTPH2PS(Mem{Base: a}, s)
		VCVTPH2PS(Mem{Base: b}, t)
		VFMADD231PS(t, s, acc[0])
	}, adv(a, 16), adv(b, 16))
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	reduce8(acc[0])
	x := acc[0].AsX()
	loop(prefix+"1", n, 1, func() {
		s, t := XMM(), XMM()
		loadF16(Mem{Base: a}, s)
		loadF16(Mem{Base: b}, t)
		VFMADD231SS(t, s, x)
	}, adv(a, 2), adv(b, 2))
	return x
}

// dotF16Rows emits the dot products of q with rows rows of n halves,
// stride halves apart from m: each row runs dotF16AVX2's instructions, so
// each result equals dotF16AVX2's bit for bit, without a call per row.
func dotF16Rows() {
	TEXT("dotF16RowsAVX2", NOSPLIT, "func(out *float32, m *uint16, stride, rows int, q *uint16, n int)")
	Pragma("noescape")
	Doc("dotF16RowsAVX2 sets out[j] to dotF16AVX2 of the n halves at m+j*stride and at q, for rows rows.",
		"It reads exactly those rows' n halves and n halves of q, and writes rows floats.")
	out, m := Load(Param("out"), GP64()), Load(Param("m"), GP64())
	stride, rows := Load(Param("stride"), GP64()), Load(Param("rows"), GP64())
	SHLQ(Imm(1), stride)
	Label("rows_loop")
	CMPQ(rows, Imm(0))
	JE(LabelRef("rows_end"))
	a, b, n := GP64(), Load(Param("q"), GP64()), Load(Param("n"), GP64())
	MOVQ(m, a)
	x := dotF16Body("r", a, b, n, false)
	VMOVSS(x, Mem{Base: out})
	ADDQ(Imm(4), out)
	ADDQ(stride, m)
	DECQ(rows)
	JMP(LabelRef("rows_loop"))
	Label("rows_end")
	VZEROUPPER()
	RET()
}

// loadBF16x8 widens the eight bfloat16 values at m to float32 in y.
func loadBF16x8(m Mem, y VecVirtual) {
	VPMOVZXWD(m, y)
	VPSLLD(Imm(16), y, y)
}

// loadBF16 loads the bfloat16 value at m into lane 0 of x as float32.
func loadBF16(m Mem, x VecVirtual) {
	r := GP32()
	MOVWLZX(m, r)
	SHLL(Imm(16), r)
	VMOVD(r, x)
}

// dotBF16 emits the bfloat16 dot product accumulated in float32.
func dotBF16() {
	header("dotBF16AVX2", "func(w *byte, x *uint16, n int) float32", "dotBF16Generic on n elements at w and x")
	a, b, n := Load(Param("w"), GP64()), Load(Param("x"), GP64()), Load(Param("n"), GP64())
	acc := [4]VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, r := range acc {
		VXORPS(r, r, r)
	}
	loop("b32", n, 32, func() {
		prefetch(a, 1)
		for i, r := range acc {
			s, t := YMM(), YMM()
			loadBF16x8(Mem{Base: a, Disp: 16 * i}, s)
			loadBF16x8(Mem{Base: b, Disp: 16 * i}, t)
			VFMADD231PS(t, s, r)
		}
	}, adv(a, 64), adv(b, 64))
	loop("b8", n, 8, func() {
		s, t := YMM(), YMM()
		loadBF16x8(Mem{Base: a}, s)
		loadBF16x8(Mem{Base: b}, t)
		VFMADD231PS(t, s, acc[0])
	}, adv(a, 16), adv(b, 16))
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	reduce8(acc[0])
	x := acc[0].AsX()
	loop("b1", n, 1, func() {
		s, t := XMM(), XMM()
		loadBF16(Mem{Base: a}, s)
		loadBF16(Mem{Base: b}, t)
		VFMADD231SS(t, s, x)
	}, adv(a, 2), adv(b, 2))
	VZEROUPPER()
	Store(x, ReturnIndex(0))
	RET()
}

// f16ToF32 emits the half to float32 row conversion.
func f16ToF32() {
	header("f16ToF32AVX2", "func(dst *float32, src *uint16, n int)", "f16ToF32Generic on n elements")
	dst, src, n := Load(Param("dst"), GP64()), Load(Param("src"), GP64()), Load(Param("n"), GP64())
	loop("c8", n, 8, func() {
		t := YMM()
		VCVTPH2PS(Mem{Base: src}, t)
		VMOVUPS(t, Mem{Base: dst})
	}, adv(src, 16), adv(dst, 32))
	loop("c1", n, 1, func() {
		t := XMM()
		loadF16(Mem{Base: src}, t)
		VMOVSS(t, Mem{Base: dst})
	}, adv(src, 2), adv(dst, 4))
	VZEROUPPER()
	RET()
}

// f32ToF16 emits the float32 to half row conversion, rounding to nearest
// even (immediate 0).
func f32ToF16() {
	header("f32ToF16AVX2", "func(dst *uint16, src *float32, n int)", "f32ToF16Generic on n elements (NaN payloads aside)")
	dst, src, n := Load(Param("dst"), GP64()), Load(Param("src"), GP64()), Load(Param("n"), GP64())
	loop("c8", n, 8, func() {
		t := YMM()
		VMOVUPS(Mem{Base: src}, t)
		VCVTPS2PH(Imm(0), t, Mem{Base: dst})
	}, adv(src, 32), adv(dst, 16))
	loop("c1", n, 1, func() {
		t, h, r := XMM(), XMM(), GP32()
		VMOVSS(Mem{Base: src}, t)
		VCVTPS2PH(Imm(0), t, h)
		VPEXTRW(Imm(0), h, r)
		MOVW(r.As16(), Mem{Base: dst})
	}, adv(src, 4), adv(dst, 2))
	VZEROUPPER()
	RET()
}

// axpyF16 emits dst += a*v with v in half precision, with fused
// multiply-adds.
func axpyF16() {
	header("axpyF16AVX2", "func(dst *float32, a float32, v *uint16, n int)", "axpyF16Generic on n elements, with fused multiply-adds")
	dst, v, n := Load(Param("dst"), GP64()), Load(Param("v"), GP64()), Load(Param("n"), GP64())
	ax := Load(Param("a"), XMM())
	ay := YMM()
	VBROADCASTSS(ax, ay)
	loop("a8", n, 8, func() {
		t := YMM()
		VCVTPH2PS(Mem{Base: v}, t)
		VFMADD213PS(Mem{Base: dst}, ay, t)
		VMOVUPS(t, Mem{Base: dst})
	}, adv(v, 16), adv(dst, 32))
	loop("a1", n, 1, func() {
		t := XMM()
		loadF16(Mem{Base: v}, t)
		VFMADD213SS(Mem{Base: dst}, ax, t)
		VMOVSS(t, Mem{Base: dst})
	}, adv(v, 2), adv(dst, 4))
	VZEROUPPER()
	RET()
}

// The float32 constants of expf in package kernels (exp.go), at these
// byte offsets of the expc table; the values must stay identical.
const (
	cLog2 = 4 * iota
	cC1
	cC2
	cP0
	cP1
	cP2
	cP3
	cP4
	cP5
	cOne
	cHi
	cLo
	cTwo
	cInf
	cBias // int32 126: the exponent bias of 2^(n-1)
	cSign // the float32 sign bit
)

// expConsts emits the constant table of expf8.
func expConsts() Mem {
	c := GLOBL("expc", RODATA|NOPTR)
	vals := []float32{1.44269504088896341, 0.693359375, -2.12194440e-4,
		1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
		1.6666665459e-1, 5.0000001201e-1, 1, 88.72283905206835, -86.9, 2,
		float32(math.Inf(1))}
	for i, v := range vals {
		DATA(4*i, U32(math.Float32bits(v)))
	}
	DATA(cBias, U32(126))
	DATA(cSign, U32(0x80000000))
	return c
}

// bc broadcasts the constant at offset off of c into a new register.
func bc(c Mem, off int) VecVirtual {
	t := YMM()
	VBROADCASTSS(c.Offset(off), t)
	return t
}

// expf8 returns the register holding expf of the eight lanes of x, with
// the same float32 operations, in the same order, as expf in exp.go, so
// that the results are bit-identical.
func expf8(c Mem, x VecVirtual) VecVirtual {
	hi, lo := bc(c, cHi), bc(c, cLo)
	xc := YMM()
	VMINPS(hi, x, xc)
	VMAXPS(lo, xc, xc)
	n := YMM()
	VMULPS(bc(c, cLog2), xc, n)
	VROUNDPS(Imm(0), n, n)
	r, t := YMM(), YMM()
	VMULPS(bc(c, cC1), n, t)
	VSUBPS(t, xc, r)
	VMULPS(bc(c, cC2), n, t)
	VSUBPS(t, r, r)
	p := YMM()
	VMULPS(bc(c, cP0), r, p)
	for _, k := range []int{cP1, cP2, cP3, cP4} {
		VADDPS(bc(c, k), p, p)
		VMULPS(r, p, p)
	}
	VADDPS(bc(c, cP5), p, p)
	rr := YMM()
	VMULPS(r, r, rr)
	VMULPS(rr, p, p)
	VADDPS(r, p, p)
	VADDPS(bc(c, cOne), p, p)
	ni := YMM()
	VCVTPS2DQ(n, ni)
	VPADDD(bc(c, cBias), ni, ni)
	VPSLLD(Imm(23), ni, ni)
	VMULPS(ni, p, p)
	VMULPS(bc(c, cTwo), p, p)
	m := YMM()
	VCMPPS(Imm(0x1e), hi, x, m) // x > hi: +Inf
	VBLENDVPS(m, bc(c, cInf), p, p)
	VCMPPS(Imm(0x11), lo, x, m) // x < lo: 0
	z := YMM()
	VXORPS(z, z, z)
	VBLENDVPS(m, z, p, p)
	VCMPPS(Imm(3), x, x, m) // NaN: x itself
	VBLENDVPS(m, x, p, p)
	return p
}

// expSubSum emits x[i] = expf(x[i]-m) over n (a multiple of 8) values,
// returning their sum accumulated in float64 lanes.
func expSubSum(c Mem) {
	TEXT("expSubSumAVX2", NOSPLIT, "func(x *float32, n int, m float32) float64")
	Pragma("noescape")
	Doc("expSubSumAVX2 sets x[i] = expf(x[i]-m) for the n values at x, n a",
		"multiple of 8, and returns their sum accumulated in float64 (in",
		"eight lanes, then added pairwise).")
	x, n := Load(Param("x"), GP64()), Load(Param("n"), GP64())
	mx := Load(Param("m"), XMM())
	my := YMM()
	VBROADCASTSS(mx, my)
	a0, a1 := YMM(), YMM()
	VXORPD(a0, a0, a0)
	VXORPD(a1, a1, a1)
	loop("e8", n, 8, func() {
		v := YMM()
		VMOVUPS(Mem{Base: x}, v)
		VSUBPS(my, v, v)
		e := expf8(c, v)
		VMOVUPS(e, Mem{Base: x})
		d, h := YMM(), XMM()
		VCVTPS2PD(e.AsX(), d)
		VADDPD(d, a0, a0)
		VEXTRACTF128(Imm(1), e, h)
		VCVTPS2PD(h, d)
		VADDPD(d, a1, a1)
	}, adv(x, 32))
	VADDPD(a1, a0, a0)
	lo, t := a0.AsX(), XMM()
	VEXTRACTF128(Imm(1), a0, t)
	VADDPD(t, lo, lo)
	VUNPCKHPD(lo, lo, t)
	VADDSD(t, lo, lo)
	VZEROUPPER()
	Store(lo, ReturnIndex(0))
	RET()
}

// siluMul emits dst[i] = gate[i]/(1+expf(-gate[i])) * up[i] over n (a
// multiple of 8) values.
func siluMul(c Mem) {
	TEXT("siluMulAVX2", NOSPLIT, "func(dst, gate, up *float32, n int)")
	Pragma("noescape")
	Doc("siluMulAVX2 works like the loop of SiLUMul on the n values at dst,",
		"gate and up, n a multiple of 8, with bit-identical results.")
	dst, g, u, n := Load(Param("dst"), GP64()), Load(Param("gate"), GP64()), Load(Param("up"), GP64()), Load(Param("n"), GP64())
	sign := bc(c, cSign)
	loop("s8", n, 8, func() {
		v, ng := YMM(), YMM()
		VMOVUPS(Mem{Base: g}, v)
		VXORPS(sign, v, ng)
		e := expf8(c, ng)
		VADDPS(bc(c, cOne), e, e)
		VDIVPS(e, v, v)
		VMULPS(Mem{Base: u}, v, v)
		VMOVUPS(v, Mem{Base: dst})
	}, adv(g, 32), adv(u, 32), adv(dst, 32))
	VZEROUPPER()
	RET()
}
