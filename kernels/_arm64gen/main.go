// Command _arm64gen writes the arm64 assembly of the quantized dot
// products, once per instruction set: quant_neon_arm64.s (ASIMD only) and
// quant_dotprod_arm64.s (ASIMD with the dot-product extension). The two
// differ only in how a 16-byte signed dot into four int32 lanes is done:
// SMULL/SMULL2 and two SADALPs, or one SDOT. Go's assembler has no
// mnemonic for most of the integer and conversion instructions used, so
// they are emitted as WORD with the instruction in a comment; the
// encodings were checked against GNU as and are exercised by the twin
// tests under qemu-aarch64.
//
// Usage: go run ./_arm64gen -dir .
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

// variant is one instruction set the kernels are written for.
type variant struct {
	suffix string // function-name suffix
	file   string
	doc    string
	sdot   bool // SDOT available (ARMv8.2 dotprod)
}

var variants = []variant{
	{suffix: "NEON", file: "quant_neon_arm64.s", doc: "ASIMD (ARMv8.0) only: each 16-byte dot is SMULL, SMULL2 and two SADALPs", sdot: false},
	{suffix: "DotProd", file: "quant_dotprod_arm64.s", doc: "ASIMD with the dot-product extension: each 16-byte dot is one SDOT", sdot: true},
}

func main() {
	dir := flag.String("dir", ".", "output directory")
	flag.Parse()
	for _, v := range variants {
		g := &gen{v: v}
		g.file()
		if err := os.WriteFile(filepath.Join(*dir, v.file), []byte(g.b.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	g := &gen{v: variant{suffix: "I8MM", sdot: true}}
	g.i8mmFile()
	if err := os.WriteFile(filepath.Join(*dir, "quant_i8mm_arm64.s"), []byte(g.b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	g = &gen{v: variant{suffix: "NEON"}}
	g.vecFile()
	if err := os.WriteFile(filepath.Join(*dir, "vec_arm64.s"), []byte(g.b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
}

type gen struct {
	v variant
	b strings.Builder
}

func (g *gen) p(format string, args ...any) { fmt.Fprintf(&g.b, format+"\n", args...) }

// ins emits one instruction.
func (g *gen) ins(s string) { g.p("\t%s", s) }

// word emits an instruction Go's assembler cannot spell.
func (g *gen) word(enc uint32, text string) { g.p("\tWORD $0x%08x // %s", enc, text) }

// Three-register vector encodings: op | Rm<<16 | Rn<<5 | Rd.
func (g *gen) v3(op uint32, name string, d, n, m int, td, tn, tm string) {
	g.word(op|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("%s v%d.%s, v%d.%s, v%d.%s", name, d, td, n, tn, m, tm))
}

// Two-register encodings: op | Rn<<5 | Rd.
func (g *gen) v2(op uint32, text string, d, n int) {
	g.word(op|uint32(n)<<5|uint32(d), fmt.Sprintf(text, d, n))
}

// dot16 adds the dot products of the signed bytes of va and vb, four at
// a time, into the four int32 lanes of acc. The NEON form needs V30 and
// V31 as scratch: the kernels never keep anything there.
func (g *gen) dot16(acc, va, vb int) {
	if g.v.sdot {
		g.v3(0x4e809400, "sdot", acc, va, vb, "4s", "16b", "16b")
		return
	}
	// Products of two int8 fit int16 (at most 128*128 = 16384).
	g.v3(0x0e20c000, "smull", 30, va, vb, "8h", "8b", "8b")
	g.v3(0x4e20c000, "smull2", 31, va, vb, "8h", "16b", "16b")
	g.v2(0x4e606800, "sadalp v%d.4s, v%d.8h", acc, 30)
	g.v2(0x4e606800, "sadalp v%d.4s, v%d.8h", acc, 31)
}

func (g *gen) zero(v int) { g.ins(fmt.Sprintf("VEOR V%d.B16, V%d.B16, V%d.B16", v, v, v)) }

func (g *gen) addp4s(d, n, m int) { g.v3(0x4ea0bc00, "addp", d, n, m, "4s", "4s", "4s") }
func (g *gen) addv4s(d, n int)    { g.v2(0x4eb1b800, "addv s%d, v%d.4s", d, n) }
func (g *gen) scvtf(d, n int)     { g.v2(0x5e21d800, "scvtf s%d, s%d", d, n) }
func (g *gen) fcvtSH(d, n int)    { g.v2(0x1ee24000, "fcvt s%d, h%d", d, n) }
func (g *gen) sxtl8h(d, n int)    { g.v2(0x0f08a400, "sxtl v%d.8h, v%d.8b", d, n) }
func (g *gen) sxtl28h(d, n int)   { g.v2(0x4f08a400, "sxtl2 v%d.8h, v%d.16b", d, n) }
func (g *gen) sxtl4s(d, n int)    { g.v2(0x0f10a400, "sxtl v%d.4s, v%d.4h", d, n) }
func (g *gen) sxtl24s(d, n int)   { g.v2(0x4f10a400, "sxtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) mul4s(d, n, m int)  { g.v3(0x4ea09c00, "mul", d, n, m, "4s", "4s", "4s") }
func (g *gen) mla4s(d, n, m int)  { g.v3(0x4ea09400, "mla", d, n, m, "4s", "4s", "4s") }
func (g *gen) sub4s(d, n, m int)  { g.v3(0x6ea08400, "sub", d, n, m, "4s", "4s", "4s") }
func (g *gen) shl4s5(d, n int)    { g.v2(0x4f255400, "shl v%d.4s, v%d.4s, #5", d, n) }

func (g *gen) add8h(d, n, m int)  { g.v3(0x4e608400, "add", d, n, m, "8h", "8h", "8h") }
func (g *gen) scvtf4s(d, n int)   { g.v2(0x4e21d800, "scvtf v%d.4s, v%d.4s", d, n) }
func (g *gen) fmul4s(d, n, m int) { g.v3(0x6e20dc00, "fmul", d, n, m, "4s", "4s", "4s") }
func (g *gen) fadd4s(d, n, m int) { g.v3(0x4e20d400, "fadd", d, n, m, "4s", "4s", "4s") }

// tbl sets each byte of v<d> to the byte of v<n> its v<m> byte indexes.
func (g *gen) tbl(d, n, m int) {
	g.word(0x4e000000|uint32(m)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("tbl v%d.16b, {v%d.16b}, v%d.16b", d, n, m))
}

// dupS sets scalar s<d> to lane i of v<n>.4s (DUP, scalar from element).
func (g *gen) dupS(d, n, i int) {
	g.word(0x5e000400|uint32(i<<3|4)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("mov s%d, v%d.s[%d]", d, n, i))
}

// dup4s broadcasts lane i of v<n>.4s to every lane of v<d>.4s.
func (g *gen) dup4s(d, n, i int) {
	g.word(0x4e000400|uint32(i<<3|4)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("dup v%d.4s, v%d.s[%d]", d, n, i))
}

// smlalH adds the products of the four low (hi: high) halfword lanes of
// v<n> with halfword lane i of v<m> (m < 16) into the int32 lanes of v<d>
// (SMLAL/SMLAL2 by element).
func (g *gen) smlalH(d, n, m, i int, hi bool) {
	op, name, tn := uint32(0x0f402000), "smlal", "4h"
	if hi {
		op, name, tn = 0x4f402000, "smlal2", "8h"
	}
	h, l, mm := uint32(i>>2), uint32(i>>1&1), uint32(i&1)
	g.word(op|l<<21|mm<<20|uint32(m)<<16|h<<11|uint32(n)<<5|uint32(d),
		fmt.Sprintf("%s v%d.4s, v%d.%s, v%d.h[%d]", name, d, n, tn, m, i))
}

// reduce4 sets v[d] to the four lane sums of a, b, c and e, in that order.
// It overwrites a and c.
func (g *gen) reduce4(d, a, b, c, e int) {
	g.addp4s(a, a, b)
	g.addp4s(c, c, e)
	g.addp4s(d, a, c)
}

func (g *gen) file() {
	g.p("// Code generated by _arm64gen; DO NOT EDIT.")
	g.p("")
	g.p("//go:build !purego")
	g.p("")
	g.p("// Quantized dot products for arm64, %s.", g.v.doc)
	g.p("// Every kernel sums each block's integer products exactly and then does")
	g.p("// the generic twin's float32 arithmetic in the same order, each step a")
	g.p("// separately rounded FMUL, FADD or FSUB (no fused multiply-add), so the")
	g.p("// results equal the pure-Go ones bit for bit.")
	g.p("")
	g.p("#include \"textflag.h\"")
	g.p("")
	g.constants()
	g.q8_0()
	g.q4_0()
	g.q4K()
	g.q6K()
	g.q5K()
	g.iq4XS()
}

// iq4Values are IQ4_NL's and IQ4_XS's sixteen code values (ggml's
// kvalues_iq4nl).
var iq4Values = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// constants writes the read-only vectors the kernels load: the IQ4 code
// values (a TBL table) and the USHL shifts 0, -2, ..., -14 that bring
// IQ4_XS's scales_h bit pairs to the bottom of eight halfword lanes.
func (g *gen) constants() {
	var tab, sh [16]byte
	for i, v := range iq4Values {
		tab[i] = byte(v)
	}
	for i := range 8 {
		s := uint16(-2 * int16(i))
		sh[2*i], sh[2*i+1] = byte(s), byte(s>>8)
	}
	for _, c := range []struct {
		name string
		b    [16]byte
	}{{"iq4values", tab}, {"iq4shifts", sh}} {
		for o := 0; o < 16; o += 8 {
			var v uint64
			for k := 7; k >= 0; k-- {
				v = v<<8 | uint64(c.b[o+k])
			}
			g.p("DATA %s<>+%d(SB)/8, $0x%016x", c.name, o, v)
		}
		g.p("GLOBL %s<>(SB), RODATA|NOPTR, $16", c.name)
		g.p("")
	}
}

// halfToS converts the IEEE half in the low 16 bits of general register
// r to float32 in F<f>.
func (g *gen) halfToS(f int, r string) {
	g.ins(fmt.Sprintf("FMOVS %s, F%d", r, f))
	g.fcvtSH(f, f)
}

// q8_0 writes the Q8_0 x Q8_0 dot: per block isum = Σ w*x exactly, then
// sum += float32(isum) * (f16(dw) * f16(dx)).
func (g *gen) q8_0() {
	s := g.v.suffix
	g.p("// func dotQ8_0%s(w *byte, x *quant.BlockQ8_0, nb int) float32", s)
	g.p("TEXT ·dotQ8_0%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20)
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("MOVHU.P 2(R0), R3")
	g.ins("VLD1.P 32(R0), [V0.B16, V1.B16]")
	g.ins("MOVHU.P 2(R1), R4")
	g.ins("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.zero(4)
	g.dot16(4, 0, 2)
	g.dot16(4, 1, 3)
	g.addv4s(4, 4)
	g.scvtf(4, 4)
	g.halfToS(5, "R3")
	g.halfToS(6, "R4")
	g.ins("FMULS F6, F5, F5") // dd = dw * dx
	g.ins("FMULS F5, F4, F4") // float32(isum) * dd
	g.ins("FADDS F4, F20, F20")
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// q4_0 writes the Q4_0 x Q8_0 dot (18-byte weight blocks: the f16 scale
// and 16 bytes of codes, low nibbles for values 0-15 and high ones for
// 16-31, each minus 8): per block isum exactly, then, as quant.DotQ4_0Q8_0,
// sum += (float32(isum) * f16(dw)) * f16(dx).
func (g *gen) q4_0() {
	s := g.v.suffix
	g.p("// func dotQ4_0%s(w *byte, x *quant.BlockQ8_0, nb int) float32", s)
	g.p("TEXT ·dotQ4_0%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20)
	g.ins("VMOVI $15, V21.B16")
	g.ins("VMOVI $8, V22.B16")
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("MOVHU.P 2(R0), R3")
	g.ins("VLD1.P 16(R0), [V0.B16]")
	g.ins("MOVHU.P 2(R1), R4")
	g.ins("VLD1.P 32(R1), [V2.B16, V3.B16]")
	g.ins("VAND V21.B16, V0.B16, V4.B16")
	g.ins("VUSHR $4, V0.B16, V5.B16")
	g.v3(0x6e208400, "sub", 4, 4, 22, "16b", "16b", "16b")
	g.v3(0x6e208400, "sub", 5, 5, 22, "16b", "16b", "16b")
	g.zero(6)
	g.dot16(6, 4, 2)
	g.dot16(6, 5, 3)
	g.addv4s(6, 6)
	g.scvtf(6, 6)
	g.halfToS(7, "R3")
	g.halfToS(8, "R4")
	g.ins("FMULS F7, F6, F6") // float32(isum) * dw
	g.ins("FMULS F8, F6, F6") // ... * dx
	g.ins("FADDS F6, F20, F20")
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// q4K writes the Q4_K x Q8_K dot. Per block: the eight 6-bit scales and
// mins are unpacked with scalar shifts and masks (words A, B, C = bytes
// 0-3, 4-7, 8-11 of the packed scales: sc0-3 = A&63, m0-3 = B&63,
// sc4-7 = C&15 | (A>>6)<<4, m4-7 = C>>4 | (B>>6)<<4, four lanes at a
// time); sub-block j (32 codes, low nibbles for even j, high for odd) is
// dotted with x.Qs[32j:], the eight sums are scaled and added in int32
// lanes; mins = Σ m_j*(bsums[2j]+bsums[2j+1]). Then, as dotQ4KGeneric:
// sum = (sum + d*isum) - m*mins with d = f16(d)*x.D, m = f16(dmin)*x.D.
func (g *gen) q4K() {
	s := g.v.suffix
	g.p("// func dotQ4K%s(w *byte, x *quant.BlockQ8K, nb int) float32", s)
	g.p("TEXT ·dotQ4K%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20)
	g.ins("VMOVI $15, V21.B16")
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("MOVHU (R0), R3")   // d
	g.ins("MOVHU 2(R0), R4")  // dmin
	g.ins("MOVWU 4(R0), R5")  // A
	g.ins("MOVWU 8(R0), R6")  // B
	g.ins("MOVWU 12(R0), R7") // C
	g.ins("ADD $16, R0, R0")
	g.ins("FMOVS.P 4(R1), F27")        // x.D (V0-V25 are all in use below)
	g.ins("ANDW $0x3f3f3f3f, R5, R8")  // sc0-3
	g.ins("ANDW $0x3f3f3f3f, R6, R9")  // m0-3
	g.ins("ANDW $0x0f0f0f0f, R7, R10") // C&15
	g.ins("LSRW $2, R5, R11")
	g.ins("ANDW $0x30303030, R11, R11") // (A>>6)<<4
	g.ins("ORRW R11, R10, R10")         // sc4-7
	g.ins("LSRW $4, R7, R12")
	g.ins("ANDW $0x0f0f0f0f, R12, R12") // C>>4
	g.ins("LSRW $2, R6, R13")
	g.ins("ANDW $0x30303030, R13, R13") // (B>>6)<<4
	g.ins("ORRW R13, R12, R12")         // m4-7
	// The W forms (32-bit, bitmask immediates) zero the upper halves.
	g.ins("ORR R10<<32, R8, R8") // eight scales
	g.ins("ORR R12<<32, R9, R9") // eight mins
	g.ins("FMOVD R8, F22")
	g.ins("FMOVD R9, F23")
	for c := range 4 {
		lo, hi := 10+2*c, 11+2*c
		g.ins("VLD1.P 32(R0), [V0.B16, V1.B16]")
		g.ins("VLD1.P 64(R1), [V6.B16, V7.B16, V8.B16, V9.B16]")
		g.ins("VAND V21.B16, V0.B16, V2.B16")
		g.ins("VAND V21.B16, V1.B16, V3.B16")
		g.ins("VUSHR $4, V0.B16, V4.B16")
		g.ins("VUSHR $4, V1.B16, V5.B16")
		g.zero(lo)
		g.zero(hi)
		g.dot16(lo, 2, 6)
		g.dot16(lo, 3, 7)
		g.dot16(hi, 4, 8)
		g.dot16(hi, 5, 9)
	}
	g.ins("VLD1.P 32(R1), [V24.H8, V25.H8]") // bsums; R1 is at the next block
	g.reduce4(18, 10, 11, 12, 13)            // sub-blocks 0-3
	g.reduce4(19, 14, 15, 16, 17)            // sub-blocks 4-7
	g.sxtl8h(28, 22)
	g.sxtl4s(29, 28)
	g.sxtl24s(28, 28)
	g.mul4s(18, 18, 29)
	g.mla4s(18, 19, 28)
	g.addv4s(18, 18)                                       // isum
	g.v3(0x4e60bc00, "addp", 24, 24, 25, "8h", "8h", "8h") // bsums[2j]+bsums[2j+1]
	g.sxtl8h(23, 23)
	g.v3(0x0e60c000, "smull", 25, 24, 23, "4s", "4h", "4h")
	g.v3(0x4e608000, "smlal2", 25, 24, 23, "4s", "8h", "8h")
	g.addv4s(25, 25) // mins
	g.scvtf(18, 18)
	g.scvtf(25, 25)
	g.halfToS(2, "R3")
	g.halfToS(3, "R4")
	g.ins("FMULS F27, F2, F2")  // d = f16(d) * x.D
	g.ins("FMULS F27, F3, F3")  // m = f16(dmin) * x.D
	g.ins("FMULS F2, F18, F18") // d * isum
	g.ins("FADDS F18, F20, F20")
	g.ins("FMULS F3, F25, F25") // m * mins
	g.ins("FSUBS F25, F20, F20")
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// q6K writes the Q6_K x Q8_K dot. Each half of a block (128 codes) reads
// 64 bytes of low nibbles L0-L3 and 32 bytes of high bit pairs H0-H1;
// its eight 16-code sub-blocks are, in order, L0&15|(H0<<4)&48,
// L1&15|(H1<<4)&48, L2&15|(H0<<2)&48, L3&15|(H1<<2)&48, L0>>4|H0&48,
// L1>>4|H1&48, L2>>4|(H0>>2)&48 and L3>>4|(H1>>2)&48 (codes 0-63), and
// sub-block k pairs with x.Qs[16k:]. Each sub-block sum has 32*bsums[k]
// taken off (the codes' offset of 32) and is multiplied by its int8 scale
// in int32 lanes. Then sum += (f16(d)*x.D) * isum.
func (g *gen) q6K() {
	s := g.v.suffix
	g.p("// func dotQ6K%s(w *byte, x *quant.BlockQ8K, nb int) float32", s)
	g.p("TEXT ·dotQ6K%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20)
	g.ins("VMOVI $15, V24.B16")
	g.ins("VMOVI $48, V25.B16")
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("ADD $128, R0, R4")     // qh
	g.ins("ADD $192, R0, R5")     // scales
	g.ins("VLD1 (R5), [V29.B16]") // sixteen int8 scales
	g.ins("MOVHU 208(R0), R3")    // d
	g.ins("FMOVS.P 4(R1), F21")   // x.D (the one vector left free below)
	g.ins("ADD $256, R1, R6")     // bsums
	g.ins("VLD1 (R6), [V26.H8, V27.H8]")
	g.zero(28) // isum lanes
	accs := []int{14, 15, 16, 17, 18, 19, 22, 23}
	for h := range 2 {
		g.ins("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
		g.ins("VLD1.P 32(R4), [V4.B16, V5.B16]")
		for _, a := range accs {
			g.zero(a)
		}
		g.ins("VLD1.P 64(R1), [V6.B16, V7.B16, V8.B16, V9.B16]")
		// Sub-blocks 0-3: low nibbles with bit pairs 0-1 and 2-3.
		type code struct {
			l, h    int
			lowNib  bool
			hiShift string // how H reaches bits 4-5: "<<4", "<<2", "", ">>2"
		}
		codes := []code{
			{0, 4, true, "<<4"}, {1, 5, true, "<<4"}, {2, 4, true, "<<2"}, {3, 5, true, "<<2"},
			{0, 4, false, ""}, {1, 5, false, ""}, {2, 4, false, ">>2"}, {3, 5, false, ">>2"},
		}
		for k, c := range codes {
			if k == 4 {
				g.ins("VLD1.P 64(R1), [V6.B16, V7.B16, V8.B16, V9.B16]")
			}
			if c.lowNib {
				g.ins(fmt.Sprintf("VAND V24.B16, V%d.B16, V10.B16", c.l))
			} else {
				g.ins(fmt.Sprintf("VUSHR $4, V%d.B16, V10.B16", c.l))
			}
			switch c.hiShift {
			case "<<4":
				g.ins(fmt.Sprintf("VSHL $4, V%d.B16, V11.B16", c.h))
				g.ins("VAND V25.B16, V11.B16, V11.B16")
			case "<<2":
				g.ins(fmt.Sprintf("VSHL $2, V%d.B16, V11.B16", c.h))
				g.ins("VAND V25.B16, V11.B16, V11.B16")
			case "":
				g.ins(fmt.Sprintf("VAND V25.B16, V%d.B16, V11.B16", c.h))
			case ">>2":
				g.ins(fmt.Sprintf("VUSHR $2, V%d.B16, V11.B16", c.h))
				g.ins("VAND V25.B16, V11.B16, V11.B16")
			}
			g.ins("VORR V11.B16, V10.B16, V10.B16")
			g.dot16(accs[k], 10, 6+k%4)
		}
		g.reduce4(12, 14, 15, 16, 17) // sub-blocks 8h+0..3
		g.reduce4(13, 18, 19, 22, 23) // sub-blocks 8h+4..7
		// Take off 32*bsums: bsums of this half are V26 (h=0) or V27.
		bs := 26 + h
		g.sxtl4s(0, bs)
		g.sxtl24s(1, bs)
		g.shl4s5(0, 0)
		g.shl4s5(1, 1)
		g.sub4s(12, 12, 0)
		g.sub4s(13, 13, 1)
		// Scales of this half: bytes 8h..8h+7 of V29.
		if h == 0 {
			g.sxtl8h(2, 29)
		} else {
			g.sxtl28h(2, 29)
		}
		g.sxtl4s(3, 2)
		g.sxtl24s(2, 2)
		g.mla4s(28, 12, 3)
		g.mla4s(28, 13, 2)
	}
	g.ins("ADD $82, R0, R0") // past qh, scales and d: the next block
	g.ins("ADD $32, R1, R1") // past bsums: the next block
	g.addv4s(28, 28)
	g.scvtf(28, 28)
	g.halfToS(2, "R3")
	g.ins("FMULS F21, F2, F2")  // d = f16(d) * x.D
	g.ins("FMULS F2, F28, F28") // d * isum
	g.ins("FADDS F28, F20, F20")
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// q5K writes the Q5_K x Q8_K dot, bit for bit as quant.DotQ5KQ8K (ggml's
// generic order): per block, acc[l] = Σ_j sc_j * Σ_{k%8 = l} code_k*q8_k
// for eight lanes l, where sub-block j (32 codes) takes its low four bits
// from the low (even j) or high (odd j) nibbles of qs[32(j/2):] and bit 4
// from bit j of the 32 qh bytes; then lanes[l] += d*acc[l] (d =
// f16(d)*x.D) and sum -= dmin*mins as in Q4_K, and at the end sum +=
// lanes[0], ..., lanes[7]. SMULL puts the product of byte k in halfword
// lane k%8, which is exactly the lane split this order needs: the four
// 8-lane product vectors of a sub-block are added in int16 (at most
// 4*31*128 = 15872) and widened into the int32 lanes by SMLAL with the
// scale. SDOT sums four neighbouring bytes into one lane and so cannot
// keep this split; both variants use the same code.
func (g *gen) q5K() {
	s := g.v.suffix
	g.p("// func dotQ5K%s(w *byte, x *quant.BlockQ8K, nb int) float32", s)
	g.p("TEXT ·dotQ5K%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20) // sum
	g.zero(28) // float lanes 0-3
	g.zero(29) // float lanes 4-7
	g.ins("VMOVI $15, V14.B16")
	g.ins("VMOVI $16, V16.B16")
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("MOVHU (R0), R3")  // d
	g.ins("MOVHU 2(R0), R4") // dmin
	g.ins("MOVWU 4(R0), R5")
	g.ins("MOVWU 8(R0), R6")
	g.ins("MOVWU 12(R0), R7")
	g.ins("ADD $16, R0, R0")
	g.ins("FMOVS.P 4(R1), F27") // x.D
	g.ins("ANDW $0x3f3f3f3f, R5, R8")
	g.ins("ANDW $0x3f3f3f3f, R6, R9")
	g.ins("ANDW $0x0f0f0f0f, R7, R10")
	g.ins("LSRW $2, R5, R11")
	g.ins("ANDW $0x30303030, R11, R11")
	g.ins("ORRW R11, R10, R10")
	g.ins("LSRW $4, R7, R12")
	g.ins("ANDW $0x0f0f0f0f, R12, R12")
	g.ins("LSRW $2, R6, R13")
	g.ins("ANDW $0x30303030, R13, R13")
	g.ins("ORRW R13, R12, R12")
	g.ins("ORR R10<<32, R8, R8") // eight scales
	g.ins("ORR R12<<32, R9, R9") // eight mins
	g.ins("FMOVD R8, F22")
	g.ins("FMOVD R9, F23")
	g.sxtl8h(15, 22)                           // scales as halfwords, for SMLAL by element
	g.ins("VLD1.P 32(R0), [V24.B16, V25.B16]") // qh
	g.zero(12)
	g.zero(13)
	for j := range 8 {
		if j%2 == 0 {
			g.ins("VLD1.P 32(R0), [V0.B16, V1.B16]")
			g.ins("VAND V14.B16, V0.B16, V4.B16")
			g.ins("VAND V14.B16, V1.B16, V5.B16")
		} else {
			g.ins("VUSHR $4, V0.B16, V4.B16")
			g.ins("VUSHR $4, V1.B16, V5.B16")
		}
		// Bit j of qh to bit 4.
		for k, q := range []int{24, 25} {
			t := 6 + k
			switch {
			case j < 4:
				g.ins(fmt.Sprintf("VSHL $%d, V%d.B16, V%d.B16", 4-j, q, t))
				g.ins(fmt.Sprintf("VAND V16.B16, V%d.B16, V%d.B16", t, t))
			case j == 4:
				g.ins(fmt.Sprintf("VAND V16.B16, V%d.B16, V%d.B16", q, t))
			default:
				g.ins(fmt.Sprintf("VUSHR $%d, V%d.B16, V%d.B16", j-4, q, t))
				g.ins(fmt.Sprintf("VAND V16.B16, V%d.B16, V%d.B16", t, t))
			}
			g.ins(fmt.Sprintf("VORR V%d.B16, V%d.B16, V%d.B16", t, 4+k, 4+k))
		}
		g.ins("VLD1.P 32(R1), [V2.B16, V3.B16]")
		g.v3(0x0e20c000, "smull", 8, 4, 2, "8h", "8b", "8b")
		g.v3(0x4e20c000, "smull2", 9, 4, 2, "8h", "16b", "16b")
		g.v3(0x0e20c000, "smull", 10, 5, 3, "8h", "8b", "8b")
		g.v3(0x4e20c000, "smull2", 11, 5, 3, "8h", "16b", "16b")
		g.add8h(8, 8, 9)
		g.add8h(10, 10, 11)
		g.add8h(8, 8, 10)
		g.smlalH(12, 8, 15, j, false)
		g.smlalH(13, 8, 15, j, true)
	}
	g.ins("VLD1.P 32(R1), [V18.H8, V19.H8]")               // bsums; R1 is at the next block
	g.v3(0x4e60bc00, "addp", 18, 18, 19, "8h", "8h", "8h") // bsums[2j]+bsums[2j+1]
	g.sxtl8h(23, 23)
	g.v3(0x0e60c000, "smull", 17, 18, 23, "4s", "4h", "4h")
	g.v3(0x4e608000, "smlal2", 17, 18, 23, "4s", "8h", "8h")
	g.addv4s(17, 17) // mins
	g.scvtf(17, 17)
	g.scvtf4s(12, 12)
	g.scvtf4s(13, 13)
	g.halfToS(26, "R3")
	g.ins("FMULS F27, F26, F26") // d = f16(d) * x.D
	g.dup4s(26, 26, 0)
	g.fmul4s(12, 12, 26) // d * acc[l]
	g.fmul4s(13, 13, 26)
	g.fadd4s(28, 28, 12)
	g.fadd4s(29, 29, 13)
	g.halfToS(26, "R4")
	g.ins("FMULS F27, F26, F26") // dmin = f16(dmin) * x.D
	g.ins("FMULS F26, F17, F17") // dmin * mins
	g.ins("FSUBS F17, F20, F20")
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	for l := range 8 {
		g.dupS(26, 28+l/4, l%4)
		g.ins("FADDS F26, F20, F20")
	}
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// iq4XS writes the IQ4_XS x Q8_K dot, bit for bit as quant.DotIQ4XSQ8K:
// per 32-value sub-block ib, the 16 code bytes give values through a
// 16-entry TBL lookup (low nibbles pair with x.Qs[32ib:], high ones with
// x.Qs[32ib+16:]) and isum is exact; the eight 6-bit scales (low four bits
// from the nibbles of scales_l, high two from scales_h>>2ib) become
// float32(ls-32) in two vectors, and per sub-block, in order,
// sum += (d4d8*float32(ls-32)) * float32(isum) with d4d8 = f16(d)*x.D:
// the products in vector lanes (each rounded as the scalar one), the
// additions one by one.
func (g *gen) iq4XS() {
	s := g.v.suffix
	g.p("// func dotIQ4XS%s(w *byte, x *quant.BlockQ8K, nb int) float32", s)
	g.p("TEXT ·dotIQ4XS%s(SB), NOSPLIT, $0-28", s)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD x+8(FP), R1")
	g.ins("MOVD nb+16(FP), R2")
	g.zero(20)
	g.ins("MOVD $iq4values<>(SB), R9")
	g.ins("VLD1 (R9), [V18.B16]")
	g.ins("MOVD $iq4shifts<>(SB), R9")
	g.ins("VLD1 (R9), [V21.B16]")
	g.ins("VMOVI $15, V19.B16")
	g.ins("VMOVI $3, V28.B16")
	g.ins("VMOVI $32, V29.B16")
	g.ins("CBZ R2, done")
	g.p("loop:")
	g.ins("MOVHU (R0), R3")     // d
	g.ins("MOVHU 2(R0), R4")    // scales_h
	g.ins("MOVWU 4(R0), R5")    // scales_l
	g.ins("ADD $8, R0, R0")     // qs
	g.ins("FMOVS.P 4(R1), F27") // x.D
	g.ins("FMOVS R5, F26")      // scales_l in bytes 0-3
	g.ins("VAND V19.B16, V26.B16, V24.B16")
	g.ins("VUSHR $4, V26.B16, V26.B16")
	g.v3(0x0e003800, "zip1", 24, 24, 26, "8b", "8b", "8b") // low four bits of ls, in sub-block order
	g.v2(0x4e020c00, "dup v%d.8h, w%d", 26, 4)
	g.v3(0x6e604400, "ushl", 26, 26, 21, "8h", "8h", "8h") // scales_h >> 2ib
	g.v2(0x0e212800, "xtn v%d.8b, v%d.8h", 26, 26)
	g.ins("VAND V28.B16, V26.B16, V26.B16")
	g.ins("VSHL $4, V26.B16, V26.B16")
	g.ins("VORR V26.B16, V24.B16, V24.B16")                  // ls
	g.v3(0x6e208400, "sub", 24, 24, 29, "16b", "16b", "16b") // ls - 32
	g.sxtl8h(24, 24)
	g.sxtl24s(25, 24)
	g.sxtl4s(24, 24)
	g.scvtf4s(24, 24)
	g.scvtf4s(25, 25)
	accs := []int{10, 11, 12, 13, 14, 15, 16, 17}
	for ib := range 8 {
		if ib%4 == 0 {
			g.ins("VLD1.P 64(R0), [V0.B16, V1.B16, V2.B16, V3.B16]")
		}
		if ib%2 == 0 {
			g.ins("VLD1.P 64(R1), [V4.B16, V5.B16, V6.B16, V7.B16]")
		}
		q, a := ib%4, 4+2*(ib%2)
		g.ins(fmt.Sprintf("VAND V19.B16, V%d.B16, V8.B16", q))
		g.ins(fmt.Sprintf("VUSHR $4, V%d.B16, V9.B16", q))
		g.tbl(8, 18, 8)
		g.tbl(9, 18, 9)
		g.zero(accs[ib])
		g.dot16(accs[ib], 8, a)
		g.dot16(accs[ib], 9, a+1)
	}
	g.ins("ADD $32, R1, R1") // past bsums: the next block
	g.reduce4(22, 10, 11, 12, 13)
	g.reduce4(23, 14, 15, 16, 17)
	g.scvtf4s(22, 22)
	g.scvtf4s(23, 23)
	g.halfToS(26, "R3")
	g.ins("FMULS F27, F26, F26") // d4d8
	g.dup4s(26, 26, 0)
	g.fmul4s(24, 24, 26) // dl = d4d8 * float32(ls-32)
	g.fmul4s(25, 25, 26)
	g.fmul4s(22, 22, 24) // dl * float32(isum)
	g.fmul4s(23, 23, 25)
	for ib := range 8 {
		g.dupS(26, 22+ib/4, ib%4)
		g.ins("FADDS F26, F20, F20")
	}
	g.ins("SUBS $1, R2, R2")
	g.ins("BNE loop")
	g.p("done:")
	g.ins("FMOVS F20, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// Float vector encodings.
func (g *gen) fmla4s(d, n, m int) { g.v3(0x4e20cc00, "fmla", d, n, m, "4s", "4s", "4s") }
func (g *gen) fcvtl(d, n int)     { g.v2(0x0e217800, "fcvtl v%d.4s, v%d.4h", d, n) }
func (g *gen) fcvtl2(d, n int)    { g.v2(0x4e217800, "fcvtl2 v%d.4s, v%d.8h", d, n) }
func (g *gen) shll(d, n int)      { g.v2(0x2e613800, "shll v%d.4s, v%d.4h, #16", d, n) }
func (g *gen) shll2(d, n int)     { g.v2(0x6e613800, "shll2 v%d.4s, v%d.8h, #16", d, n) }
func (g *gen) fcvtHS(d, n int)    { g.v2(0x1e23c000, "fcvt h%d, s%d", d, n) }

// vecFile writes vec_arm64.s: the float32, half and bfloat16 vector
// kernels, ASIMD (ARMv8.0) only but for the FHM half dots, shared by the
// arm64 paths.
// Halves are widened with FCVTL (exact) and bfloat16 values with SHLL #16
// (exact); products are summed in float32 lanes.
func (g *gen) vecFile() {
	g.p("// Code generated by _arm64gen; DO NOT EDIT.")
	g.p("")
	g.p("//go:build !purego")
	g.p("")
	g.p("// Float vector kernels for arm64, ASIMD (ARMv8.0) only but for the *FHM")
	g.p("// dots, which need FMLAL (FEAT_FHM, HWCAP asimdfhm). The dots keep")
	g.p("// four float32x4 accumulators (16 products a step, fused FMLA) and so")
	g.p("// sum in another order than the generic twins (within a float32 dot's")
	g.p("// rounding of them); the conversions and axpyF16 (FMUL then FADD, no")
	g.p("// fusing) equal the twins bit for bit.")
	g.p("")
	g.p("#include \"textflag.h\"")
	g.p("")
	g.dotVec("dotF32NEON", "a *float32, b *float32", "a", "b", 4, "")
	g.dotVec("dotF32WNEON", "w *byte, x *float32", "w", "x", 4, "")
	g.dotVec("dotF16NEON", "a *uint16, b *uint16", "a", "b", 2, "f16")
	g.dotVec("dotF16WNEON", "w *byte, x *uint16", "w", "x", 2, "f16")
	g.dotVec("dotBF16NEON", "w *byte, x *uint16", "w", "x", 2, "bf16")
	g.dotVec("dotF16FHM", "a *uint16, b *uint16", "a", "b", 2, "fhm")
	g.dotVec("dotF16WFHM", "w *byte, x *uint16", "w", "x", 2, "fhm")
	g.axpyF16()
	g.f16ToF32()
	g.f32ToF16()
}

// fmlal adds the products of the four low (hi: high) halves of v<n> and
// v<m> to the float32 lanes of v<d>, the products exact and each sum
// rounded once (FMLAL/FMLAL2, the FHM extension): what FCVTL of both and
// FMLA do, in one instruction.
func (g *gen) fmlal(d, n, m int, hi bool) {
	if hi {
		g.v3(0x6e20cc00, "fmlal2", d, n, m, "4s", "4h", "4h")
		return
	}
	g.v3(0x4e20ec00, "fmlal", d, n, m, "4s", "4h", "4h")
}

// widen converts the four (hi: next four) halves or bfloat16 values of
// v<n> to float32 in v<d>.
func (g *gen) widen(kind string, d, n int, hi bool) {
	switch {
	case kind == "f16" && !hi:
		g.fcvtl(d, n)
	case kind == "f16":
		g.fcvtl2(d, n)
	case !hi:
		g.shll(d, n)
	default:
		g.shll2(d, n)
	}
}

// scalarIn loads the next element at R<r> into F<f> as float32.
func (g *gen) scalarIn(kind string, f int, r, tmp string) {
	switch kind {
	case "":
		g.ins(fmt.Sprintf("FMOVS.P 4(%s), F%d", r, f))
	case "f16", "fhm":
		g.ins(fmt.Sprintf("MOVHU.P 2(%s), %s", r, tmp))
		g.halfToS(f, tmp)
	case "bf16":
		g.ins(fmt.Sprintf("MOVHU.P 2(%s), %s", r, tmp))
		g.ins(fmt.Sprintf("LSLW $16, %s, %s", tmp, tmp))
		g.ins(fmt.Sprintf("FMOVS %s, F%d", tmp, f))
	}
}

// dotVec writes a dot of n elements of size bytes each (kind "" float32,
// "f16" or "bf16"; "fhm" is f16 with FMLAL instead of FCVTL and FMLA): 16 a step into V0-V3, then 4 a step into V0, then one
// by one into F16, and V0+V1+V2+V3 reduced pairwise plus F16.
func (g *gen) dotVec(name, params, pa, pb string, size int, kind string) {
	g.p("// func %s(%s, n int) float32", name, params)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-28", name)
	g.ins(fmt.Sprintf("MOVD %s+0(FP), R0", pa))
	g.ins(fmt.Sprintf("MOVD %s+8(FP), R1", pb))
	g.ins("MOVD n+16(FP), R2")
	for v := range 4 {
		g.zero(v)
	}
	g.zero(16)
	g.p("loop16:")
	g.ins("CMP $16, R2")
	g.ins("BLT loop4")
	if kind == "" {
		g.ins("VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]")
		g.ins("VLD1.P 64(R1), [V8.S4, V9.S4, V10.S4, V11.S4]")
		for v := range 4 {
			g.fmla4s(v, 4+v, 8+v)
		}
	} else {
		g.ins("VLD1.P 32(R0), [V4.H8, V5.H8]")
		g.ins("VLD1.P 32(R1), [V6.H8, V7.H8]")
		if kind == "fhm" {
			// The same lanes into the same accumulators as the widening
			// form, so the same sums bit for bit.
			for v := range 4 {
				g.fmlal(v, 4+v/2, 6+v/2, v%2 == 1)
			}
		} else {
			for v := range 4 {
				g.widen(kind, 8+v, 4+v/2, v%2 == 1)
				g.widen(kind, 12+v, 6+v/2, v%2 == 1)
			}
			for v := range 4 {
				g.fmla4s(v, 8+v, 12+v)
			}
		}
	}
	g.ins("SUB $16, R2, R2")
	g.ins("B loop16")
	g.p("loop4:")
	g.ins("CMP $4, R2")
	g.ins("BLT tail")
	if kind == "" {
		g.ins("VLD1.P 16(R0), [V4.S4]")
		g.ins("VLD1.P 16(R1), [V8.S4]")
		g.fmla4s(0, 4, 8)
	} else {
		g.ins("VLD1.P 8(R0), [V4.H4]")
		g.ins("VLD1.P 8(R1), [V6.H4]")
		if kind == "fhm" {
			g.fmlal(0, 4, 6, false)
		} else {
			g.widen(kind, 8, 4, false)
			g.widen(kind, 12, 6, false)
			g.fmla4s(0, 8, 12)
		}
	}
	g.ins("SUB $4, R2, R2")
	g.ins("B loop4")
	g.p("tail:")
	g.ins("CBZ R2, reduce")
	g.scalarIn(kind, 4, "R0", "R3")
	g.scalarIn(kind, 5, "R1", "R4")
	g.ins("FMULS F4, F5, F5")
	g.ins("FADDS F5, F16, F16")
	g.ins("SUB $1, R2, R2")
	g.ins("B tail")
	g.p("reduce:")
	g.fadd4s(0, 0, 1)
	g.fadd4s(2, 2, 3)
	g.fadd4s(0, 0, 2)
	g.v3(0x6e20d400, "faddp", 0, 0, 0, "4s", "4s", "4s")
	g.v2(0x7e30d800, "faddp s%d, v%d.2s", 0, 0)
	g.ins("FADDS F16, F0, F0")
	g.ins("FMOVS F0, ret+24(FP)")
	g.ins("RET")
	g.p("")
}

// axpyF16 writes dst[i] += a*f16(v[i]): FMUL then FADD, each rounded, as
// axpyF16Generic.
func (g *gen) axpyF16() {
	g.p("// func axpyF16NEON(dst *float32, a float32, v *uint16, n int)")
	g.p("TEXT ·axpyF16NEON(SB), NOSPLIT, $0-32")
	g.ins("MOVD dst+0(FP), R0")
	g.ins("FMOVS a+8(FP), F31")
	g.ins("MOVD v+16(FP), R1")
	g.ins("MOVD n+24(FP), R2")
	g.dup4s(30, 31, 0)
	g.p("loop8:")
	g.ins("CMP $8, R2")
	g.ins("BLT tail")
	g.ins("VLD1 (R0), [V0.S4, V1.S4]")
	g.ins("VLD1.P 16(R1), [V4.H8]")
	g.fcvtl(5, 4)
	g.fcvtl2(6, 4)
	g.fmul4s(5, 5, 30)
	g.fmul4s(6, 6, 30)
	g.fadd4s(0, 0, 5)
	g.fadd4s(1, 1, 6)
	g.ins("VST1.P [V0.S4, V1.S4], 32(R0)")
	g.ins("SUB $8, R2, R2")
	g.ins("B loop8")
	g.p("tail:")
	g.ins("CBZ R2, done")
	g.ins("MOVHU.P 2(R1), R3")
	g.halfToS(4, "R3")
	g.ins("FMULS F31, F4, F4")
	g.ins("FMOVS (R0), F5")
	g.ins("FADDS F4, F5, F5")
	g.ins("FMOVS.P F5, 4(R0)")
	g.ins("SUB $1, R2, R2")
	g.ins("B tail")
	g.p("done:")
	g.ins("RET")
	g.p("")
}

// f16ToF32 writes the exact half to float32 conversion (FCVTL: NaNs
// quieted with their payload, as quant.F16ToF32).
func (g *gen) f16ToF32() {
	g.p("// func f16ToF32NEON(dst *float32, src *uint16, n int)")
	g.p("TEXT ·f16ToF32NEON(SB), NOSPLIT, $0-24")
	g.ins("MOVD dst+0(FP), R0")
	g.ins("MOVD src+8(FP), R1")
	g.ins("MOVD n+16(FP), R2")
	g.p("loop8:")
	g.ins("CMP $8, R2")
	g.ins("BLT tail")
	g.ins("VLD1.P 16(R1), [V4.H8]")
	g.fcvtl(0, 4)
	g.fcvtl2(1, 4)
	g.ins("VST1.P [V0.S4, V1.S4], 32(R0)")
	g.ins("SUB $8, R2, R2")
	g.ins("B loop8")
	g.p("tail:")
	g.ins("CBZ R2, done")
	g.ins("MOVHU.P 2(R1), R3")
	g.halfToS(0, "R3")
	g.ins("FMOVS.P F0, 4(R0)")
	g.ins("SUB $1, R2, R2")
	g.ins("B tail")
	g.p("done:")
	g.ins("RET")
	g.p("")
}

// f32ToF16 writes the float32 to half conversion (FCVTN and FCVT, rounding
// to nearest even under Go's default FPCR, overflow to infinity).
func (g *gen) f32ToF16() {
	g.p("// func f32ToF16NEON(dst *uint16, src *float32, n int)")
	g.p("TEXT ·f32ToF16NEON(SB), NOSPLIT, $0-24")
	g.ins("MOVD dst+0(FP), R0")
	g.ins("MOVD src+8(FP), R1")
	g.ins("MOVD n+16(FP), R2")
	g.p("loop8:")
	g.ins("CMP $8, R2")
	g.ins("BLT tail")
	g.ins("VLD1.P 32(R1), [V0.S4, V1.S4]")
	g.v2(0x0e216800, "fcvtn v%d.4h, v%d.4s", 2, 0)
	g.v2(0x4e216800, "fcvtn2 v%d.8h, v%d.4s", 2, 1)
	g.ins("VST1.P [V2.H8], 16(R0)")
	g.ins("SUB $8, R2, R2")
	g.ins("B loop8")
	g.p("tail:")
	g.ins("CBZ R2, done")
	g.ins("FMOVS.P 4(R1), F0")
	g.fcvtHS(0, 0)
	g.ins("FMOVS F0, R3")
	g.ins("MOVH.P R3, 2(R0)")
	g.ins("SUB $1, R2, R2")
	g.ins("B tail")
	g.p("done:")
	g.ins("RET")
	g.p("")
}

func (g *gen) zip1d(d, n, m int) { g.v3(0x4ec03800, "zip1", d, n, m, "2d", "2d", "2d") }
func (g *gen) zip2d(d, n, m int) { g.v3(0x4ec07800, "zip2", d, n, m, "2d", "2d", "2d") }

// smmla adds the 2x2 int32 matrix product of v<n> (two rows of eight
// int8, bytes 0-7 and 8-15) with the transpose of v<m> (likewise) to
// v<d>: lanes r0·c0, r0·c1, r1·c0, r1·c1 (ARMv8.6 I8MM).
func (g *gen) smmla(d, n, m int) { g.v3(0x4e80a400, "smmla", d, n, m, "4s", "16b", "16b") }

// dup2d broadcasts doubleword lane i of v<n> to both lanes of v<d>.
func (g *gen) dup2d(d, n, i int) {
	g.word(0x4e000400|uint32(i<<4|8)<<16|uint32(n)<<5|uint32(d), fmt.Sprintf("dup v%d.2d, v%d.d[%d]", d, n, i))
}

// i8mmFile writes quant_i8mm_arm64.s: the prompt-processing tiles of the
// i8mm path, two weight rows by eight tokens, with SMMLA.
func (g *gen) i8mmFile() {
	g.p("// Code generated by _arm64gen; DO NOT EDIT.")
	g.p("")
	g.p("//go:build !purego")
	g.p("")
	g.p("// Two-row by eight-token tiles of the quantized dots for arm64 with the")
	g.p("// int8 matrix-multiply extension (I8MM, ARMv8.6): each SMMLA multiplies")
	g.p("// eight bytes of two weight rows by eight bytes of two tokens into a 2x2")
	g.p("// int32 tile. The integer sums are exact and the float32 steps are the")
	g.p("// one-token twin's, lane by lane, so every output equals it bit for bit.")
	g.p("")
	g.p("#include \"textflag.h\"")
	g.p("")
	g.constantsI8MM()
	g.q8_0x8r2()
	g.q4_0x8r2()
	g.q4Kx8r2()
}

// q8_0x8r2 writes the Q8_0 tile: per block, the two rows' 32 codes are
// interleaved by eight-byte halves with ZIP1/ZIP2.2D (four vectors of
// [row 0 bytes, row 1 bytes]) and so are each token pair's; four SMMLAs
// give the block's four integer sums r0t, r0t', r1t, r1t'; then, lane by
// lane as dotQ8_0Generic, sum += float32(isum) * (dw*dx). The token
// scales come from dx (q80Scales's layout: dx[8b+t]).
func (g *gen) q8_0x8r2() { g.x8r2Q80("dotQ8_0x8r2I8MM", false) }

// q4_0x8r2 writes the Q4_0 tile: as the Q8_0 one with the rows' codes
// decoded from 16 bytes of nibbles (low for values 0-15, high for 16-31,
// each minus 8), and the float steps of quant.DotQ4_0Q8_0, lane by lane:
// sum += (float32(isum) * dw) * dx.
func (g *gen) q4_0x8r2() { g.x8r2Q80("dotQ4_0x8r2I8MM", true) }

// x8r2Q80 writes a two-row by eight-token tile of Q8_0 weights or, with
// q4, Q4_0 weights against Q8_0 activations.
func (g *gen) x8r2Q80(name string, q4 bool) {
	g.p("// func %s(w *byte, rb int, x *quant.BlockQ8_0, dx *float32, nb int, out *[16]float32)", name)
	g.p("TEXT ·%s(SB), NOSPLIT, $0-48", name)
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD rb+8(FP), R1")
	g.ins("ADD R0, R1, R1") // row 1
	g.ins("MOVD x+16(FP), R2")
	g.ins("ADD $2, R2, R2") // the codes of token 0's block 0
	g.ins("MOVD dx+24(FP), R4")
	g.ins("MOVD nb+32(FP), R5")
	g.ins("MOVD out+40(FP), R9")
	g.ins("MOVD $34, R3")
	g.ins("MUL R5, R3, R3") // one token's blocks, in bytes
	for a := range 4 {
		g.zero(24 + a)
	}
	if q4 {
		g.ins("VMOVI $15, V22.B16")
		g.ins("VMOVI $8, V23.B16")
	}
	g.ins("CBZ R5, done")
	g.p("loop:")
	if q4 {
		g.ins("MOVHU.P 2(R0), R6")
		g.ins("VLD1.P 16(R0), [V0.B16]")
		g.ins("MOVHU.P 2(R1), R7")
		g.ins("VLD1.P 16(R1), [V2.B16]")
		g.ins("VUSHR $4, V0.B16, V1.B16")
		g.ins("VAND V22.B16, V0.B16, V0.B16")
		g.ins("VUSHR $4, V2.B16, V3.B16")
		g.ins("VAND V22.B16, V2.B16, V2.B16")
		for k := range 4 {
			g.v3(0x6e208400, "sub", k, k, 23, "16b", "16b", "16b")
		}
	} else {
		g.ins("MOVHU.P 2(R0), R6")
		g.ins("VLD1.P 32(R0), [V0.B16, V1.B16]")
		g.ins("MOVHU.P 2(R1), R7")
		g.ins("VLD1.P 32(R1), [V2.B16, V3.B16]")
	}
	g.zip1d(4, 0, 2)
	g.zip2d(5, 0, 2)
	g.zip1d(6, 1, 3)
	g.zip2d(7, 1, 3)
	g.halfToS(8, "R6")
	g.halfToS(9, "R7")
	g.dup4s(8, 8, 0)
	g.dup4s(9, 9, 0)
	g.zip1d(8, 8, 9)                         // dw0, dw0, dw1, dw1
	g.ins("VLD1.P 32(R4), [V10.S4, V11.S4]") // dx of tokens 0-7
	g.ins("MOVD R2, R8")
	for p := range 4 {
		g.ins("VLD1 (R8), [V12.B16, V13.B16]")
		g.ins("ADD R3, R8, R8")
		g.ins("VLD1 (R8), [V14.B16, V15.B16]")
		g.ins("ADD R3, R8, R8")
		g.zip1d(16, 12, 14)
		g.zip2d(17, 12, 14)
		g.zip1d(18, 13, 15)
		g.zip2d(19, 13, 15)
		g.zero(20)
		g.smmla(20, 4, 16)
		g.smmla(20, 5, 17)
		g.smmla(20, 6, 18)
		g.smmla(20, 7, 19)
		g.scvtf4s(20, 20)
		g.dup2d(21, 10+p/2, p%2) // dx of tokens 2p, 2p+1, twice
		if q4 {
			g.fmul4s(20, 20, 8)  // float32(isum) * dw
			g.fmul4s(20, 20, 21) // ... * dx
		} else {
			g.fmul4s(21, 8, 21)  // dd = dw * dx
			g.fmul4s(20, 20, 21) // float32(isum) * dd
		}
		g.fadd4s(24+p, 24+p, 20)
	}
	g.ins("ADD $34, R2, R2")
	g.ins("SUBS $1, R5, R5")
	g.ins("BNE loop")
	g.p("done:")
	g.zip1d(0, 24, 25) // row 0, tokens 0-3
	g.zip1d(1, 26, 27) // row 0, tokens 4-7
	g.zip2d(2, 24, 25) // row 1, tokens 0-3
	g.zip2d(3, 26, 27) // row 1, tokens 4-7
	g.ins("VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R9)")
	g.ins("RET")
	g.p("")
}

func (g *gen) fsub4s(d, n, m int) { g.v3(0x4ea0d400, "fsub", d, n, m, "4s", "4s", "4s") }
func (g *gen) zip1s(d, n, m int)  { g.v3(0x4e803800, "zip1", d, n, m, "4s", "4s", "4s") }
func (g *gen) movi4s1(d int)      { g.word(0x4f000420|uint32(d), fmt.Sprintf("movi v%d.4s, #1", d)) }

// insD sets doubleword lane 1 of v<d> to general register x<n>.
func (g *gen) insD1(d, n int) {
	g.word(0x4e181c00|uint32(n)<<5|uint32(d), fmt.Sprintf("mov v%d.d[1], x%d", d, n))
}

// constantsI8MM writes the TBL indices that spread scale 0 of each of two
// rows (bytes 0 and 8 of a vector) into the low bytes of int32 lanes 0-1
// and 2-3; 0xff indices give zero bytes. Adding 1 to the non-0xff bytes
// selects the next scale.
func (g *gen) constantsI8MM() {
	g.p("DATA q4kscidx<>+0(SB)/8, $0xffffff00ffffff00")
	g.p("DATA q4kscidx<>+8(SB)/8, $0xffffff08ffffff08")
	g.p("GLOBL q4kscidx<>(SB), RODATA|NOPTR, $16")
	g.p("")
}

// unpackK4 loads the packed 6-bit scales and mins of the Q4_K block at
// general register rw (bytes 4-15) and sets rs to its eight scales and rm
// to its eight mins, one a byte (as q4K does).
func (g *gen) unpackK4(rw, rs, rm string) {
	g.ins(fmt.Sprintf("MOVWU 4(%s), R14", rw))
	g.ins(fmt.Sprintf("MOVWU 8(%s), R15", rw))
	g.ins(fmt.Sprintf("MOVWU 12(%s), R16", rw))
	g.ins(fmt.Sprintf("ANDW $0x3f3f3f3f, R14, %s", rs))
	g.ins(fmt.Sprintf("ANDW $0x3f3f3f3f, R15, %s", rm))
	g.ins("ANDW $0x0f0f0f0f, R16, R17")
	g.ins("LSRW $2, R14, R19")
	g.ins("ANDW $0x30303030, R19, R19")
	g.ins("ORRW R19, R17, R17")
	g.ins("LSRW $4, R16, R20")
	g.ins("ANDW $0x0f0f0f0f, R20, R20")
	g.ins("LSRW $2, R15, R21")
	g.ins("ANDW $0x30303030, R21, R21")
	g.ins("ORRW R21, R20, R20")
	g.ins(fmt.Sprintf("ORR R17<<32, %s, %s", rs, rs))
	g.ins(fmt.Sprintf("ORR R20<<32, %s, %s", rm, rm))
}

// q4Kx8r2 writes the Q4_K tile: two weight rows by eight tokens. Per
// block and 32-value sub-block j, the rows' codes (zipped by eight-byte
// halves once per 32 bytes, then masked or shifted: per-byte operations
// commute with the zip) and each token pair's codes go through four
// SMMLAs into [r0t, r0t', r1t, r1t'], which MLA adds to the pair's isum
// times [sc0_j, sc0_j, sc1_j, sc1_j] (one TBL of the rows' scales). The
// mins sums are SMULL/SMLAL2 products of the rows' mins with each token's
// pair-added bsums, reduced by ADDP into the same lane order. Then, lane
// by lane as dotQ4KGeneric: sum = (sum + d*isum) - m*mins, d =
// f16(d_r)*D_t, m = f16(dmin_r)*D_t.
func (g *gen) q4Kx8r2() {
	g.p("// func dotQ4Kx8r2I8MM(w *byte, rb int, x *quant.BlockQ8K, nb int, out *[16]float32)")
	g.p("TEXT ·dotQ4Kx8r2I8MM(SB), NOSPLIT, $0-40")
	g.ins("MOVD w+0(FP), R0")
	g.ins("MOVD rb+8(FP), R1")
	g.ins("ADD R0, R1, R1") // row 1
	g.ins("MOVD x+16(FP), R2")
	g.ins("MOVD nb+24(FP), R4")
	g.ins("MOVD out+32(FP), R5")
	g.ins("MOVD $292, R3")
	g.ins("MUL R4, R3, R3") // one token's blocks, in bytes
	sums := []int{25, 26, 27, 28}
	isums := []int{21, 22, 23, 24}
	mins := []int{29, 30, 31, 17}
	for _, v := range sums {
		g.zero(v)
	}
	g.ins("CBZ R4, done")
	g.p("loop:")
	g.ins("MOVHU (R0), R6")  // row 0 d
	g.ins("MOVHU 2(R0), R7") // row 0 dmin
	g.ins("MOVHU (R1), R10") // row 1 d
	g.ins("MOVHU 2(R1), R11")
	g.unpackK4("R0", "R8", "R9")
	g.unpackK4("R1", "R12", "R13")
	g.ins("ADD $16, R0, R0")
	g.ins("ADD $16, R1, R1")
	g.ins("FMOVD R8, F18")
	g.insD1(18, 12) // both rows' scales, a byte each
	for _, v := range isums {
		g.zero(v)
	}
	for j := range 8 {
		if j%2 == 0 {
			g.ins("VLD1.P 32(R0), [V4.B16, V5.B16]")
			g.ins("VLD1.P 32(R1), [V6.B16, V7.B16]")
			g.zip1d(0, 4, 6)
			g.zip2d(1, 4, 6)
			g.zip1d(2, 5, 7)
			g.zip2d(3, 5, 7)
			g.ins("VMOVI $15, V20.B16")
			for k := range 4 {
				g.ins(fmt.Sprintf("VAND V20.B16, V%d.B16, V%d.B16", k, 8+k))
			}
		} else {
			for k := range 4 {
				g.ins(fmt.Sprintf("VUSHR $4, V%d.B16, V%d.B16", k, 8+k))
			}
		}
		if j == 0 {
			g.ins("MOVD $q4kscidx<>(SB), R14")
			g.ins("VLD1 (R14), [V19.B16]")
		} else {
			g.movi4s1(20)
			g.v3(0x4e208400, "add", 19, 19, 20, "16b", "16b", "16b")
		}
		g.tbl(17, 18, 19) // sc0_j, sc0_j, sc1_j, sc1_j
		g.ins(fmt.Sprintf("ADD $%d, R2, R14", 4+32*j))
		for p := range 4 {
			g.ins("VLD1 (R14), [V4.B16, V5.B16]")
			g.ins("ADD R3, R14, R14")
			g.ins("VLD1 (R14), [V6.B16, V7.B16]")
			g.ins("ADD R3, R14, R14")
			g.zip1d(12, 4, 6)
			g.zip2d(13, 4, 6)
			g.zip1d(14, 5, 7)
			g.zip2d(15, 5, 7)
			g.zero(16)
			for k := range 4 {
				g.smmla(16, 8+k, 12+k)
			}
			g.mla4s(isums[p], 16, 17)
		}
	}
	// The mins: M0, M1 as halfwords, each token's bsums pair-added.
	g.ins("FMOVD R9, F2")
	g.insD1(2, 13)
	g.sxtl8h(0, 2)
	g.sxtl28h(1, 2)
	g.ins("ADD $260, R2, R14")
	for p := range 4 {
		g.ins("VLD1 (R14), [V4.H8, V5.H8]")
		g.ins("ADD R3, R14, R14")
		g.ins("VLD1 (R14), [V6.H8, V7.H8]")
		g.ins("ADD R3, R14, R14")
		g.v3(0x4e60bc00, "addp", 4, 4, 5, "8h", "8h", "8h")
		g.v3(0x4e60bc00, "addp", 6, 6, 7, "8h", "8h", "8h")
		for k, c := range [][2]int{{0, 4}, {0, 6}, {1, 4}, {1, 6}} {
			g.v3(0x0e60c000, "smull", 8+k, c[0], c[1], "4s", "4h", "4h")
			g.v3(0x4e608000, "smlal2", 8+k, c[0], c[1], "4s", "8h", "8h")
		}
		g.reduce4(mins[p], 8, 9, 10, 11)
	}
	// d and dmin of both rows, [r0, r0, r1, r1].
	g.halfToS(13, "R6")
	g.halfToS(2, "R10")
	g.dup4s(13, 13, 0)
	g.dup4s(2, 2, 0)
	g.zip1d(13, 13, 2)
	g.halfToS(14, "R7")
	g.halfToS(2, "R11")
	g.dup4s(14, 14, 0)
	g.dup4s(2, 2, 0)
	g.zip1d(14, 14, 2)
	g.ins("MOVD R2, R14")
	for p := range 4 {
		g.ins("FMOVS (R14), F12")
		g.ins("ADD R3, R14, R14")
		g.ins("FMOVS (R14), F2")
		g.ins("ADD R3, R14, R14")
		g.zip1s(12, 12, 2)
		g.dup2d(12, 12, 0)   // D_t, D_t', D_t, D_t'
		g.fmul4s(15, 13, 12) // d = f16(d) * D
		g.fmul4s(16, 14, 12) // m = f16(dmin) * D
		g.scvtf4s(4, isums[p])
		g.scvtf4s(5, mins[p])
		g.fmul4s(4, 15, 4)
		g.fadd4s(sums[p], sums[p], 4)
		g.fmul4s(5, 16, 5)
		g.fsub4s(sums[p], sums[p], 5)
	}
	g.ins("ADD $292, R2, R2")
	g.ins("SUBS $1, R4, R4")
	g.ins("BNE loop")
	g.p("done:")
	g.zip1d(0, 25, 26)
	g.zip1d(1, 27, 28)
	g.zip2d(2, 25, 26)
	g.zip2d(3, 27, 28)
	g.ins("VST1 [V0.S4, V1.S4, V2.S4, V3.S4], (R5)")
	g.ins("RET")
	g.p("")
}
