package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// quantDotEps is the error allowed per rounding step between a kernel's
// quantized dot and quant's reference, relative to the sum of the absolute
// per-block terms: the two round the same exact integer sums in different
// orders.
const quantDotEps = 1.2e-7

// blockCounts are the block counts every quantized dot is tested at.
func blockCounts() []int {
	var ns []int
	for n := 1; n <= 64; n++ {
		ns = append(ns, n)
	}
	return append(ns, 100, 255, 256)
}

// absTermsK returns the sum over the blocks of a K-quant dot of the
// absolute values of every scaled product, |d*sc*q*q8| and |m*min*q8|: a
// bound on every partial sum either summation order rounds.
func absTermsK(q6 bool, w []byte, x []quant.BlockQ8K) float64 {
	var s float64
	for i := range x {
		b := &x[i]
		if q6 {
			blk := w[q6KBytes*i:]
			var a float64
			for k := range quant.QK_K {
				c := int(quant.Q6KCode(blk[0:128], blk[128:192], k)) - 32
				a += math.Abs(float64(int8(blk[192+k/16])) * float64(c) * float64(b.Qs[k]))
			}
			s += math.Abs(float64(f16At(blk[208:])*b.D)) * a
			continue
		}
		blk := w[q4KBytes*i:]
		var a, m float64
		for j := range 8 {
			sc, mn := quant.ScaleMinK4(j, blk[4:16])
			for k := range 32 {
				q := blk[16+32*(j/2)+k] >> (4 * uint(j&1)) & 0xf
				a += float64(sc) * math.Abs(float64(q)*float64(b.Qs[32*j+k]))
				m += float64(mn) * math.Abs(float64(b.Qs[32*j+k]))
			}
		}
		s += math.Abs(float64(f16At(blk)*b.D))*a + math.Abs(float64(f16At(blk[2:])*b.D))*m
	}
	return s
}

func TestQ4KDot(t *testing.T) { testKDot(t, false) }
func TestQ6KDot(t *testing.T) { testKDot(t, true) }

// testKDot checks the Q4_K (or Q6_K) dot of every path: equal to the
// generic twin (see nearTwin), within tolerance of quant's reference.
func testKDot(t *testing.T, q6 bool) {
	size, offs, ref, typ := q4KBytes, []int{0, 2}, quant.DotQ4KQ8K, tensor.Q4_K
	if q6 {
		size, offs, ref, typ = q6KBytes, []int{208}, quant.DotQ6KQ8K, tensor.Q6_K
	}
	forEachPath(t, func(t *testing.T, tab *table) {
		dot := tab.dotQ4K
		if q6 {
			dot = tab.dotQ6K
		}
		r := rand.New(rand.NewPCG(1, uint64(size)))
		for _, nb := range blockCounts() {
			w := randBlocks(r, nb+1, size, offs, 2)
			x := randQ8K(r, nb+1)
			// Unaligned sub-slices: skip one byte of weights.
			wb := make([]byte, nb*size+1)
			copy(wb[1:], w[:nb*size])
			ws, xs := wb[1:], x[1:]
			got := dot(ws, xs)
			abs := absTermsK(q6, ws, xs)
			if twin := generic(q6)(ws, xs); !nearTwin(tab, typ, got, twin, nb, abs) {
				t.Fatalf("%d blocks: got %v, generic twin %v", nb, got, twin)
			}
			want := ref(ws, xs)
			tol := float64(nb+16) * quantDotEps * abs
			if !near(got, want, tol) {
				t.Fatalf("%d blocks: got %v, reference %v (tolerance %g)", nb, got, want, tol)
			}
		}
	})
}

// generic returns the generic twin of the K-quant dot.
func generic(q6 bool) func([]byte, []quant.BlockQ8K) float32 {
	if q6 {
		return dotQ6KGeneric
	}
	return dotQ4KGeneric
}

// TestKDotIntegerExact checks the integer part of the K-quant dots: with
// unit scales and small activations every float in quant's reference is an
// exact integer, so every path must equal it exactly.
func TestKDotIntegerExact(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(2, 3))
		for i := range 500 {
			x := make([]quant.BlockQ8K, 1)
			x[0].D = 1
			for k := range x[0].Qs {
				x[0].Qs[k] = int8(r.IntN(17) - 8)
			}
			if i%50 == 0 { // extremes: every code at -128 or 127
				v := int8(-128)
				if i%100 == 0 {
					v = 127
				}
				for k := range x[0].Qs {
					x[0].Qs[k] = v
				}
			}
			fixBsums(&x[0])
			w4 := randBlocks(r, 1, q4KBytes, nil, 0)
			putF16(w4, 1)
			putF16(w4[2:], 1)
			w6 := randBlocks(r, 1, q6KBytes, nil, 0)
			putF16(w6[208:], 1)
			if i%50 != 0 {
				if got, want := tab.dotQ4K(w4, x), quant.DotQ4KQ8K(w4, x); got != want {
					t.Fatalf("case %d: Q4_K got %v, reference %v", i, got, want)
				}
				if got, want := tab.dotQ6K(w6, x), quant.DotQ6KQ8K(w6, x); got != want {
					t.Fatalf("case %d: Q6_K got %v, reference %v", i, got, want)
				}
			}
			is, mn := q4KInts(w4, &x[0])
			if got, want := tab.dotQ4K(w4, x), float32(float32(is)-float32(mn)); got != want {
				t.Fatalf("case %d: Q4_K got %v, integer sums %d - %d", i, got, is, mn)
			}
			if got, want := tab.dotQ6K(w6, x), float32(q6KInts(w6, &x[0])); got != want {
				t.Fatalf("case %d: Q6_K got %v, integer sum %v", i, got, want)
			}
		}
	})
}

// absTermsQ8_0 returns the sum over the blocks of a Q8_0 dot of the
// absolute scaled products |dw*dx*w*x|: a bound on every partial sum any
// summation order rounds.
func absTermsQ8_0(w []byte, x []quant.BlockQ8_0) float64 {
	var s float64
	for i := range x {
		blk := w[q8_0Bytes*i:]
		var a float64
		for k, q := range x[i].Qs {
			a += math.Abs(float64(int8(blk[2+k])) * float64(q))
		}
		s += math.Abs(float64(f16At(blk)*quant.F16ToF32(x[i].D))) * a
	}
	return s
}

// reordered reports whether tab's one-token dots of typ sum in their own
// order (in float vector lanes, see q8_0_avx512_amd64.s,
// quant_avx512_amd64.s, rows_avx2_amd64.s and iq4xs_avx2_amd64.s)
// rather than in the generic twin's block order: the avx512 path's
// quantized dots do, and the avx2 path's of Q2_K, Q3_K, Q5_K (the AVX2
// Q4_K dot's order), Q4_0, Q5_0, IQ4_NL and IQ4_XS.
func reordered(tab *table, typ tensor.Type) bool {
	switch typ {
	case tensor.Q8_0, tensor.Q4_K, tensor.Q6_K, tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.IQ4_XS, tensor.Q5_K, tensor.Q3_K, tensor.Q2_K, tensor.Q4_1, tensor.Q5_1,
		tensor.MXFP4:
		return tab.path == AVX512 || tab.path == AVX2 && (typ == tensor.Q5_K || typ == tensor.Q3_K || typ == tensor.Q2_K ||
			typ == tensor.Q4_0 || typ == tensor.Q5_0 || typ == tensor.IQ4_NL || typ == tensor.IQ4_XS)
	}
	return false
}

// nearTwin reports whether got, a dot of type typ over nb blocks of tab,
// is close enough to want, the generic twin's result with absolute terms
// abs: bit-exact on paths that keep the generic order, and otherwise within
// (nb+16)*quantDotEps*abs. A non-finite want needs a non-finite got (a
// lane sum can turn the twin's infinity into a NaN); a huge abs, whose
// partial sums may overflow in one order only, is not checked.
func nearTwin(tab *table, typ tensor.Type, got, want float32, nb int, abs float64) bool {
	if !reordered(tab, typ) {
		return sameFloat(got, want)
	}
	finite := func(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
	if !finite(want) {
		return !finite(got)
	}
	if math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/4 {
		return true
	}
	return near(got, want, float64(nb+16)*quantDotEps*abs+1e-37)
}

// withMinCodes sets every seventh weight code and every fifth activation
// code to -128, the code the VPDPBUSD offset trick must still get exact.
// x may hold several tokens' blocks for the blocks of w.
func withMinCodes(w []byte, x []quant.BlockQ8_0) {
	nw := len(w) / q8_0Bytes
	for i := range x {
		for k := range x[i].Qs {
			if (i+k)%7 == 0 {
				w[q8_0Bytes*(i%nw)+2+k] = 0x80
			}
			if (i+k)%5 == 0 {
				x[i].Qs[k] = -128
			}
		}
	}
}

func TestQ8_0Dot(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(4, 5))
		var ns []int
		for n := 1; n <= 200; n++ {
			ns = append(ns, n)
		}
		for _, nb := range append(ns, 1000, 2048) {
			w := randBlocks(r, nb, q8_0Bytes, []int{0}, 2)
			x := randQ8_0(r, nb+1)[1:]
			if nb%3 == 0 {
				withMinCodes(w, x)
			}
			wb := make([]byte, len(w)+3)
			copy(wb[3:], w)
			got, want := tab.dotQ8_0(wb[3:], x), quant.DotQ8_0Q8_0(w, x)
			if twin := dotQ8_0Generic(w, x); !sameFloat(twin, want) {
				t.Fatalf("%d blocks: generic %v, reference %v", nb, twin, want)
			}
			if abs := absTermsQ8_0(w, x); !nearTwin(tab, tensor.Q8_0, got, want, nb, abs) {
				t.Fatalf("%d blocks: got %v, reference %v (abs terms %g)", nb, got, want, abs)
			}
		}
	})
}

// TestQ8_0DotIntegerExact checks the integer part of the Q8_0 dots: with
// unit scales every partial sum is an exact integer in float32, so every
// path, in any order, must give the exact integer sum, -128 codes included.
func TestQ8_0DotIntegerExact(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(12, 13))
		for i := range 400 {
			nb := 1 + i%16
			w := randBlocks(r, 8*nb, q8_0Bytes, nil, 0)
			x := make([]quant.BlockQ8_0, 8*nb)
			for b := range x {
				putF16(w[q8_0Bytes*b:], 1)
				x[b].D = quant.F32ToF16(1)
				for k := range x[b].Qs {
					x[b].Qs[k] = int8(r.Uint32())
					switch i % 20 {
					case 0: // extremes: every product 128*128
						x[b].Qs[k], w[q8_0Bytes*b+2+k] = -128, 0x80
					case 1:
						x[b].Qs[k], w[q8_0Bytes*b+2+k] = 127, 0x80
					}
				}
			}
			// One token is nb blocks; the extremes stay below 2^24 per token.
			var want [8]int64
			for tok := range 8 {
				for b := tok * nb; b < (tok+1)*nb; b++ {
					for k, q := range x[b].Qs {
						want[tok] += int64(int8(w[q8_0Bytes*(b-tok*nb)+2+k])) * int64(q)
					}
				}
			}
			var o8 [8]float32
			tab.dotQ80x8(w[:nb*q8_0Bytes], x, scalesQ8_0x8(x, nb), nb, &o8)
			for tok := range 8 {
				xt := x[tok*nb : (tok+1)*nb]
				if got := tab.dotQ8_0(w[:nb*q8_0Bytes], xt); got != float32(want[tok]) {
					t.Fatalf("case %d token %d: got %v, integer sum %d", i, tok, got, want[tok])
				}
				if o8[tok] != float32(want[tok]) {
					t.Fatalf("case %d: eight-token dot token %d: got %v, integer sum %d", i, tok, o8[tok], want[tok])
				}
			}
		}
	})
}

// TestQ8_0DotMultiToken checks the four- and eight-token Q8_0 dots of
// every path: each token's result is bit-identical with the same path's
// one-token dot (every path keeps one summation order for all three) and
// within tolerance of the generic twin. Unaligned weights, every block
// count 1..64 and larger, all-zero blocks, maximum-magnitude scales and
// -128 codes.
func TestQ8_0DotMultiToken(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(14, 15))
		for _, nb := range blockCounts() {
			for variant := range 4 {
				w := randBlocks(r, nb, q8_0Bytes, []int{0}, 2)
				x := randQ8_0(r, 8*nb+1)[1:]
				switch variant {
				case 1:
					withMinCodes(w, x)
				case 2: // maximum-magnitude scales, and a zero block
					for b := range nb {
						putF16(w[q8_0Bytes*b:], 65504)
					}
					for b := range x {
						x[b].D = quant.F32ToF16(-65504)
					}
					clear(w[2 : 2+32])
				case 3: // all-zero weights and activations in alternate blocks
					for b := 0; b < nb; b += 2 {
						clear(w[q8_0Bytes*b : q8_0Bytes*(b+1)])
					}
					for b := 1; b < len(x); b += 2 {
						x[b] = quant.BlockQ8_0{}
					}
				}
				wb := make([]byte, len(w)+1)
				copy(wb[1:], w)
				ws := wb[1:]
				var o4 [4]float32
				var o8 [8]float32
				tab.dotQ80x4(ws, x[:4*nb], nb, &o4)
				tab.dotQ80x8(ws, x, scalesQ8_0x8(x, nb), nb, &o8)
				for tok := range 8 {
					xt := x[tok*nb : (tok+1)*nb]
					one := tab.dotQ8_0(ws, xt)
					if !sameFloat(o8[tok], one) {
						t.Fatalf("variant %d, %d blocks, token %d: eight-token %v, one-token %v", variant, nb, tok, o8[tok], one)
					}
					if tok < 4 && !sameFloat(o4[tok], one) {
						t.Fatalf("variant %d, %d blocks, token %d: four-token %v, one-token %v", variant, nb, tok, o4[tok], one)
					}
					want := dotQ8_0Generic(w, xt)
					if abs := absTermsQ8_0(w, xt); !nearTwin(tab, tensor.Q8_0, one, want, nb, abs) {
						t.Fatalf("variant %d, %d blocks, token %d: got %v, generic %v (abs terms %g)", variant, nb, tok, one, want, abs)
					}
				}
			}
		}
	})
}

// extremeCase is one block filling of the extreme-value tests: every
// weight byte fill, every weight scale the f16 bits d, activation scale
// xd.
type extremeCase struct {
	name string
	fill byte
	d    uint16
	xd   float32
}

// extremeCases are all-zero blocks, maximum-magnitude, non-finite and
// subnormal scales.
var extremeCases = []extremeCase{
	{"zero", 0, 0, 0},
	{"zero-codes", 0, 0x3c00, 1},
	{"max-codes", 0xff, 0x7bff, 1e30},
	{"max-scale", 0x5a, 0x7bff, 3.4e38},
	{"neg-max", 0xa5, 0xfbff, 1},
	{"inf-scale", 0x33, 0x7c00, 1},
	{"nan-scale", 0x33, 0x7e01, 1},
	{"subnormal", 0x77, 0x0001, 1e-30},
}

// q8KFromBytes returns nb Q8_K blocks of scale xd whose codes are the
// bytes of codes (zero past its end), with their sums: fuzz input made
// into activations.
func q8KFromBytes(nb int, xd float32, codes []byte) []quant.BlockQ8K {
	x := make([]quant.BlockQ8K, nb)
	for i := range x {
		x[i].D = xd
		for k := range x[i].Qs {
			if n := quant.QK_K*i + k; n < len(codes) {
				x[i].Qs[k] = int8(codes[n])
			}
		}
		fixBsums(&x[i])
	}
	return x
}

// TestQuantDotExtremes feeds all-zero blocks, maximum-magnitude scales and
// non-finite scales to every path, which must agree with the generic twin
// (see nearTwin).
func TestQuantDotExtremes(t *testing.T) {
	for _, c := range extremeCases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range nativePaths() {
				tab := tableFor(p)
				for _, nb := range []int{1, 3, 8} {
					xk := make([]quant.BlockQ8K, nb)
					x0 := make([]quant.BlockQ8_0, nb*8)
					for i := range xk {
						xk[i].D = c.xd
						for k := range xk[i].Qs {
							xk[i].Qs[k] = int8(c.fill) ^ int8(k)
						}
						fixBsums(&xk[i])
					}
					for i := range x0 {
						x0[i].D = quant.F32ToF16(c.xd)
						for k := range x0[i].Qs {
							x0[i].Qs[k] = int8(c.fill) + int8(k)
						}
					}
					check := func(typ tensor.Type, got, want float32, abs float64) {
						if !nearTwin(tab, typ, got, want, nb, abs) {
							t.Errorf("%s %s %d blocks: got %v, generic %v", p, typ, nb, got, want)
						}
					}
					w4 := filled(nb, q4KBytes, c.fill, c.d, 0, 2)
					check(tensor.Q4_K, tab.dotQ4K(w4, xk), dotQ4KGeneric(w4, xk), absTermsK(false, w4, xk))
					w6 := filled(nb, q6KBytes, c.fill, c.d, 208)
					check(tensor.Q6_K, tab.dotQ6K(w6, xk), dotQ6KGeneric(w6, xk), absTermsK(true, w6, xk))
					w8 := filled(nb*8, q8_0Bytes, c.fill, c.d, 0)
					got, want := tab.dotQ8_0(w8, x0), dotQ8_0Generic(w8, x0)
					if !nearTwin(tab, tensor.Q8_0, got, want, nb*8, absTermsQ8_0(w8, x0)) {
						t.Errorf("%s Q8_0 %d blocks: got %v, generic %v", p, 8*nb, got, want)
					}
				}
			}
		})
	}
}

// filled returns nb blocks of size bytes set to fill, with the f16 bits d
// at each of offs.
func filled(nb, size int, fill byte, d uint16, offs ...int) []byte {
	w := make([]byte, nb*size)
	for i := range w {
		w[i] = fill
	}
	for b := range nb {
		for _, o := range offs {
			w[b*size+o], w[b*size+o+1] = byte(d), byte(d>>8)
		}
	}
	return w
}

// TestAvailablePathsDistinct checks that every available path is listed
// once, has its own table and that generic is among them.
func TestAvailablePathsDistinct(t *testing.T) {
	seen := map[Path]bool{}
	for _, p := range Available() {
		if seen[p] {
			t.Fatalf("path %s listed twice", p)
		}
		seen[p] = true
		if got := tableFor(p).path; got != p {
			t.Fatalf("tableFor(%s).path = %s", p, got)
		}
	}
	if !seen[Generic] {
		t.Fatal(fmt.Sprint("generic missing from ", Available()))
	}
}

// TestKDotX4 checks the four-token quantized dots of every path against
// four of the path's own one-token dots, bit for bit (for Q4_K and Q6_K
// those equal the generic twin's on the paths that keep its order).
func TestKDotX4(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(6, 7))
		for _, nb := range blockCounts() {
			x := randQ8K(r, 4*nb+1)[1:]
			for _, q6 := range []bool{false, true} {
				size, offs, x4, one := q4KBytes, []int{0, 2}, tab.dotQ4Kx4, tab.dotQ4K
				if q6 {
					size, offs, x4, one = q6KBytes, []int{208}, tab.dotQ6Kx4, tab.dotQ6K
				}
				w := randBlocks(r, nb, size, offs, 2)
				var out [4]float32
				kt := tensor.Q4_K
				if q6 {
					kt = tensor.Q6_K
				}
				// None where the prompt tile takes every multi-token
				// product (Q4_K on avx2).
				hasX4 := tab.q8k(kt).x4 != nil
				if hasX4 {
					x4(w, x, nb, &out)
				}
				if !q6 { // Q8_0 rows of 8*nb blocks
					w8 := randBlocks(r, 8*nb, q8_0Bytes, []int{0}, 2)
					x8 := randQ8_0(r, 32*nb)
					var o8 [4]float32
					tab.dotQ80x4(w8, x8, 8*nb, &o8)
					for tok := range 4 {
						if want := tab.dotQ8_0(w8, x8[tok*8*nb:(tok+1)*8*nb]); !sameFloat(o8[tok], want) {
							t.Fatalf("Q8_0 %d blocks token %d: got %v, one-token %v", 8*nb, tok, o8[tok], want)
						}
					}
				}
				for tok := range 4 {
					if !hasX4 {
						break
					}
					want := one(w, x[tok*nb:(tok+1)*nb])
					if !sameFloat(out[tok], want) {
						t.Fatalf("q6=%v %d blocks token %d: got %v, one-token %v", q6, nb, tok, out[tok], want)
					}
				}
			}
		}
	})
}

// TestKDotRows checks the row-run K-quant dots of every path that has
// them: out[r] must equal the path's one-token dot of row r bit for bit,
// for runs of 1..9 rows at several block counts, from unaligned weights,
// and every out element must be written.
func TestKDotRows(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(20, 21))
		for _, q6 := range []bool{false, true} {
			size, offs, dot, rowsDot := q4KBytes, []int{0, 2}, tab.dotQ4K, tab.q8k(tensor.Q4_K).rows
			if q6 {
				size, offs, dot, rowsDot = q6KBytes, []int{208}, tab.dotQ6K, tab.q8k(tensor.Q6_K).rows
			}
			if rowsDot == nil {
				continue
			}
			for _, nb := range []int{0, 1, 2, 3, 8, 22} {
				for rows := 1; rows <= 9; rows++ {
					x := randQ8K(r, nb)
					w := randBlocks(r, rows*nb, size, offs, 2)
					wb := make([]byte, len(w)+1)
					copy(wb[1:], w)
					out := make([]float32, rows)
					for i := range out {
						out[i] = float32(math.NaN()) // must be overwritten
					}
					rowsDot(wb[1:], x, out)
					for i, got := range out {
						if want := dot(w[i*nb*size:(i+1)*nb*size], x); !sameFloat(got, want) {
							t.Fatalf("q6=%v %d blocks, %d rows: out[%d] = %v, one-row dot %v", q6, nb, rows, i, got, want)
						}
					}
				}
			}
		}
	})
}
