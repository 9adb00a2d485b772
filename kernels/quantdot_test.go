package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
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

// testKDot checks the Q4_K (or Q6_K) dot of every path: bit-exact against
// the generic twin, within tolerance of quant's reference.
func testKDot(t *testing.T, q6 bool) {
	size, offs, ref := q4KBytes, []int{0, 2}, quant.DotQ4KQ8K
	if q6 {
		size, offs, ref = q6KBytes, []int{208}, quant.DotQ6KQ8K
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
			if twin := generic(q6)(ws, xs); !sameFloat(got, twin) {
				t.Fatalf("%d blocks: got %v, generic twin %v", nb, got, twin)
			}
			want := ref(ws, xs)
			tol := float64(nb+16) * quantDotEps * absTermsK(q6, ws, xs)
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
			wb := make([]byte, len(w)+3)
			copy(wb[3:], w)
			got, want := tab.dotQ8_0(wb[3:], x), quant.DotQ8_0Q8_0(w, x)
			if !sameFloat(got, want) {
				t.Fatalf("%d blocks: got %v, reference %v", nb, got, want)
			}
		}
	})
}

// TestQuantDotExtremes feeds all-zero blocks, maximum-magnitude scales and
// non-finite scales to every path, which must agree with the generic twin.
func TestQuantDotExtremes(t *testing.T) {
	cases := []struct {
		name string
		fill byte
		d    uint16 // f16 bits of every weight scale
		xd   float32
	}{
		{"zero", 0, 0, 0},
		{"zero-codes", 0, 0x3c00, 1},
		{"max-codes", 0xff, 0x7bff, 1e30},
		{"max-scale", 0x5a, 0x7bff, 3.4e38},
		{"neg-max", 0xa5, 0xfbff, 1},
		{"inf-scale", 0x33, 0x7c00, 1},
		{"nan-scale", 0x33, 0x7e01, 1},
		{"subnormal", 0x77, 0x0001, 1e-30},
	}
	for _, c := range cases {
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
					check := func(name string, got, want float32) {
						if !sameFloat(got, want) {
							t.Errorf("%s %s %d blocks: got %v, generic %v", p, name, nb, got, want)
						}
					}
					w4 := filled(nb, q4KBytes, c.fill, c.d, 0, 2)
					check("Q4_K", tab.dotQ4K(w4, xk), dotQ4KGeneric(w4, xk))
					w6 := filled(nb, q6KBytes, c.fill, c.d, 208)
					check("Q6_K", tab.dotQ6K(w6, xk), dotQ6KGeneric(w6, xk))
					w8 := filled(nb*8, q8_0Bytes, c.fill, c.d, 0)
					check("Q8_0", tab.dotQ8_0(w8, x0), dotQ8_0Generic(w8, x0))
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
// four one-token generic dots, bit for bit.
func TestKDotX4(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(6, 7))
		for _, nb := range blockCounts() {
			x := randQ8K(r, 4*nb+1)[1:]
			for _, q6 := range []bool{false, true} {
				size, offs, x4 := q4KBytes, []int{0, 2}, tab.dotQ4Kx4
				if q6 {
					size, offs, x4 = q6KBytes, []int{208}, tab.dotQ6Kx4
				}
				w := randBlocks(r, nb, size, offs, 2)
				var out [4]float32
				x4(w, x, nb, &out)
				if !q6 { // Q8_0 rows of 8*nb blocks
					w8 := randBlocks(r, 8*nb, q8_0Bytes, []int{0}, 2)
					x8 := randQ8_0(r, 32*nb)
					var o8 [4]float32
					tab.dotQ80x4(w8, x8, 8*nb, &o8)
					for tok := range 4 {
						if want := dotQ8_0Generic(w8, x8[tok*8*nb:(tok+1)*8*nb]); !sameFloat(o8[tok], want) {
							t.Fatalf("Q8_0 %d blocks token %d: got %v, one-token generic %v", 8*nb, tok, o8[tok], want)
						}
					}
				}
				for tok := range 4 {
					want := generic(q6)(w, x[tok*nb:(tok+1)*nb])
					if !sameFloat(out[tok], want) {
						t.Fatalf("q6=%v %d blocks token %d: got %v, one-token generic %v", q6, nb, tok, out[tok], want)
					}
				}
			}
		}
	})
}
