package kernels

import (
	"encoding/binary"
	"github.com/lisa-llm/lisa/tensor"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// eightDot is one K-quant type's eight-token dot on a path (nil where the
// path has none) with its block layout: size bytes, f16 scales at offs.
type eightDot struct {
	name string
	q6   bool
	size int
	offs []int
	dot8 func([]byte, []quant.BlockQ8K, []float32, int, *[8]float32)
}

// eightDots returns the eight-token dots of tab.
func eightDots(tab *table) []eightDot {
	return []eightDot{
		{"Q4_K", false, q4KBytes, []int{0, 2}, tab.q8k(tensor.Q4_K).x8},
		{"Q6_K", true, q6KBytes, []int{208}, tab.q8k(tensor.Q6_K).x8},
	}
}

// eightTokens returns eight tokens' activations made from x: fourTokens
// of x and fourTokens of x with its scale tripled and its codes reversed.
func eightTokens(x []quant.BlockQ8K) []quant.BlockQ8K {
	nb := len(x)
	y := make([]quant.BlockQ8K, nb)
	for i, b := range x {
		y[i] = b
		y[i].D = 3 * b.D
		for k := range b.Qs {
			y[i].Qs[k] = b.Qs[len(b.Qs)-1-k]
		}
		fixBsums(&y[i])
	}
	return append(fourTokens(x), fourTokens(y)...)
}

// exactK returns a K-quant dot in float64 from its exact integer sums:
// the value both summation orders approximate, free of the overflow a
// float32 scale product can hit.
func exactK(q6 bool, w []byte, x []quant.BlockQ8K) float64 {
	var s float64
	for i := range x {
		if q6 {
			blk := w[q6KBytes*i : q6KBytes*(i+1)]
			s += float64(f16At(blk[208:])) * float64(x[i].D) * float64(q6KInts(blk, &x[i]))
			continue
		}
		blk := w[q4KBytes*i : q4KBytes*(i+1)]
		is, mn := q4KInts(blk, &x[i])
		s += float64(f16At(blk))*float64(x[i].D)*float64(is) - float64(f16At(blk[2:]))*float64(x[i].D)*float64(mn)
	}
	return s
}

// checkX8 compares every token of an eight-token dot's out with the
// reference and the one-token generic twin: within the summation-order
// tolerance when the twin is finite. When the twin is not (its float32
// scale product overflowed), out must be non-finite too or near the
// exact value.
func checkX8(t *testing.T, name string, q6 bool, w []byte, x []quant.BlockQ8K, nb int, out *[8]float32) {
	t.Helper()
	ref := quant.DotQ4KQ8K
	if q6 {
		ref = quant.DotQ6KQ8K
	}
	for tok := range 8 {
		xt := x[tok*nb : (tok+1)*nb]
		twin := generic(q6)(w, xt)
		got := out[tok]
		abs := absTermsK(q6, w, xt)
		if math.IsNaN(float64(twin)) || math.IsInf(float64(twin), 0) {
			finite := !math.IsNaN(float64(got)) && !math.IsInf(float64(got), 0)
			if ex := exactK(q6, w, xt); finite && math.Abs(float64(got)-ex) > float64(nb+16)*quantDotEps*abs+1e-37 {
				t.Fatalf("%s %d blocks token %d: got %v, generic twin %v, exact %v", name, nb, tok, got, twin, ex)
			}
			continue
		}
		if abs > math.MaxFloat32/4 {
			continue // a finite result near overflow may round to ±Inf in another order
		}
		tol := float64(nb+16)*quantDotEps*abs + 1e-37
		if !near(got, twin, tol) {
			t.Fatalf("%s %d blocks token %d: got %v, generic twin %v (tolerance %g)", name, nb, tok, got, twin, tol)
		}
		if r := ref(w, xt); !near(got, r, tol) {
			t.Fatalf("%s %d blocks token %d: got %v, reference %v (tolerance %g)", name, nb, tok, got, r, tol)
		}
	}
}

// TestKDotX8 checks the eight-token K-quant dots of every path that has
// them, at every block count, from unaligned weights.
func TestKDotX8(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(8, 9))
		for _, d := range eightDots(tab) {
			if d.dot8 == nil {
				continue
			}
			for _, nb := range blockCounts() {
				x := randQ8K(r, 8*nb+1)[1:]
				w := randBlocks(r, nb, d.size, d.offs, 2)
				wb := make([]byte, len(w)+1)
				copy(wb[1:], w)
				var out [8]float32
				for i := range out {
					out[i] = float32(math.NaN()) // must be overwritten
				}
				d.dot8(wb[1:], x, nil, nb, &out)
				checkX8(t, d.name, d.q6, w, x, nb, &out)
			}
			var out [8]float32
			out[3] = 1
			d.dot8(nil, nil, nil, 0, &out)
			if out != [8]float32{} {
				t.Fatalf("%s 0 blocks: got %v, want zeros", d.name, out)
			}
		}
	})
}

// TestKDotX8IntegerExact gives the eight-token dots unit scales and small
// activations, so every step is an exact integer: each token must equal
// the integer sums exactly.
func TestKDotX8IntegerExact(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(10, 11))
		for _, d := range eightDots(tab) {
			if d.dot8 == nil {
				continue
			}
			for i := range 200 {
				nb := 1 + i%3
				x := make([]quant.BlockQ8K, 8*nb)
				for b := range x {
					x[b].D = 1
					for k := range x[b].Qs {
						x[b].Qs[k] = int8(r.IntN(17) - 8)
					}
					fixBsums(&x[b])
				}
				w := randBlocks(r, nb, d.size, nil, 0)
				for b := range nb {
					for _, o := range d.offs {
						putF16(w[b*d.size+o:], 1)
					}
				}
				var out [8]float32
				d.dot8(w, x, nil, nb, &out)
				for tok := range 8 {
					var want int64
					for b := range nb {
						blk, xb := w[b*d.size:(b+1)*d.size], &x[tok*nb+b]
						if d.q6 {
							want += int64(q6KInts(blk, xb))
						} else {
							is, mn := q4KInts(blk, xb)
							want += int64(is) - int64(mn)
						}
					}
					if out[tok] != float32(want) {
						t.Fatalf("%s case %d token %d: got %v, integer sums %d", d.name, i, tok, out[tok], want)
					}
				}
			}
		}
	})
}

// TestKDotX8Extremes feeds all-zero blocks, maximum-magnitude and
// non-finite scales to the eight-token dots.
func TestKDotX8Extremes(t *testing.T) {
	for _, p := range nativePaths() {
		tab := tableFor(p)
		for _, d := range eightDots(tab) {
			if d.dot8 == nil {
				continue
			}
			for _, c := range extremeCases {
				for _, nb := range []int{1, 3, 8} {
					x := make([]quant.BlockQ8K, 8*nb)
					for i := range x {
						x[i].D = c.xd
						for k := range x[i].Qs {
							x[i].Qs[k] = int8(c.fill) ^ int8(k+i)
						}
						fixBsums(&x[i])
					}
					w := filled(nb, d.size, c.fill, c.d, d.offs...)
					var out [8]float32
					d.dot8(w, x, nil, nb, &out)
					checkX8(t, string(p)+" "+d.name+" "+c.name, d.q6, w, x, nb, &out)
				}
			}
		}
	}
}

// FuzzQuantDotX8 feeds random K-quant blocks and activations to every
// eight-token dot and compares each token with the one-token generic twin.
func FuzzQuantDotX8(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0x80, 0x3f, 0x00, 0x3c, 1, 2, 3})
	f.Add([]byte{0, 3, 0, 0, 0x80, 0x3f, 0xff, 0x7b, 0xff, 0x7b, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 16, 0x00, 0x00, 0x80, 0x7f, 0x80, 0x80, 0x80})
	f.Add([]byte{0, 2, 0x01, 0x00, 0x00, 0x00, 0x00, 0x7c, 0x00, 0xfe})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 6 {
			return
		}
		kind, nb := int(data[0]), 1+int(data[1]%16)
		xd := math.Float32frombits(binary.LittleEndian.Uint32(data[2:]))
		rest := data[6:]
		for _, p := range nativePaths() {
			dots := eightDots(tableFor(p))
			d := dots[kind%len(dots)]
			if d.dot8 == nil {
				continue
			}
			w := make([]byte, nb*d.size)
			qs := rest[copy(w, rest):]
			x8 := eightTokens(q8KFromBytes(nb, xd, qs))
			var out [8]float32
			d.dot8(w, x8, nil, nb, &out)
			checkX8(t, string(p)+" "+d.name, d.q6, w, x8, nb, &out)
		}
	})
}
