package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// newqType is one of the weight types added after Q8_0, Q4_K and Q6_K,
// with what its tests need: the f16 scale offsets of a block and, for a
// type with mins, the offset of the f16 dmin.
type newqType struct {
	typ    tensor.Type
	scales []int // offsets of f16 scales (d, dmin) in a block
	dmin   int   // offset of dmin, or -1
}

func newqTypes() []newqType {
	return []newqType{
		{tensor.Q4_0, []int{0}, -1},
		{tensor.Q5_0, []int{0}, -1},
		{tensor.IQ4_NL, []int{0}, -1},
		{tensor.Q4_1, []int{0, 2}, -1},
		{tensor.Q5_1, []int{0, 2}, -1},
		{tensor.Q2_K, []int{80, 82}, 82},
		{tensor.Q3_K, []int{108}, -1},
		{tensor.Q5_K, []int{0, 2}, 2},
		{tensor.IQ4_XS, []int{0}, -1},
	}
}

// newqInput is one weight row and one token's activations in every
// partner format, built from the same activation values.
type newqInput struct {
	w   []byte
	q80 []quant.BlockQ8_0
	q81 []quant.BlockQ8_1
	q8k []quant.BlockQ8K
}

// newqInputs returns random and edge-case inputs of nb blocks of type c.
func newqInputs(r *rand.Rand, c newqType, nb int) []newqInput {
	n := nb * c.typ.BlockSize()
	bb := c.typ.BlockBytes()
	var ins []newqInput
	for kind := range 5 {
		in := newqInput{w: make([]byte, nb*bb)}
		switch kind {
		case 0: // quantized normal weights
			v := randF32(r, n, 1)
			if err := quant.Quantize(c.typ, v, in.w); err != nil {
				panic(err)
			}
		case 1, 2, 3: // random bytes (every code, scale, sign) with sane scales
			for i := range in.w {
				in.w[i] = byte(r.Uint32())
			}
			if kind == 2 {
				for i := range in.w {
					in.w[i] = 0xff // the largest codes and scales
				}
			}
			for b := range nb {
				for _, o := range c.scales {
					s := float32(r.NormFloat64() * 0.01)
					binary.LittleEndian.PutUint16(in.w[b*bb+o:], quant.F32ToF16(s))
				}
			}
		case 4: // zero scales
			for b := range nb {
				for _, o := range c.scales {
					binary.LittleEndian.PutUint16(in.w[b*bb+o:], 0)
				}
			}
		}
		// Activations: random codes over the whole int8 range (-128
		// included), all -128, or all 127.
		codes := make([]int8, n)
		for i := range codes {
			switch kind {
			case 2:
				codes[i] = -128
			case 3:
				codes[i] = 127
			default:
				codes[i] = int8(r.Uint32())
			}
		}
		in.q80 = make([]quant.BlockQ8_0, n/32)
		in.q81 = make([]quant.BlockQ8_1, n/32)
		for b := range in.q80 {
			d := quant.F32ToF16(float32(r.Float64()*0.02 + 0.001))
			in.q80[b].D, in.q81[b].D = d, d
			var sum int32
			for j := range 32 {
				q := codes[32*b+j]
				in.q80[b].Qs[j], in.q81[b].Qs[j] = q, q
				sum += int32(q)
			}
			in.q81[b].S = quant.F32ToF16(float32(sum) * quant.F16ToF32(d))
		}
		if n%256 == 0 {
			in.q8k = make([]quant.BlockQ8K, n/256)
			for b := range in.q8k {
				in.q8k[b].D = float32(r.Float64()*0.02 + 0.001)
				for j := range 256 {
					in.q8k[b].Qs[j] = codes[256*b+j]
					in.q8k[b].Bsums[j/16] += int16(codes[256*b+j])
				}
			}
		}
		ins = append(ins, in)
	}
	return ins
}

// newqAbs returns Σ|terms| of the dot of in with type c, the scale of the
// rounding error a reordered float sum may make: for a type with mins the
// scale part and the min part separately.
func newqAbs(c newqType, in newqInput) float64 {
	n := len(in.w) / c.typ.BlockBytes() * c.typ.BlockSize()
	x := make([]float64, n)
	switch {
	case in.q8k != nil && (c.typ.BlockSize() == 256):
		for i := range x {
			b := &in.q8k[i/256]
			x[i] = float64(b.D) * float64(b.Qs[i%256])
		}
	default:
		for i := range x {
			b := &in.q80[i/32]
			x[i] = float64(quant.F16ToF32(b.D)) * float64(b.Qs[i%32])
		}
	}
	parts := [][]byte{in.w}
	if c.dmin >= 0 || c.typ == tensor.Q4_1 || c.typ == tensor.Q5_1 {
		// d and the min (dmin, or m) apart: each zeroed in one copy.
		bb := c.typ.BlockBytes()
		a, b := append([]byte(nil), in.w...), append([]byte(nil), in.w...)
		for k := 0; k < len(in.w); k += bb {
			binary.LittleEndian.PutUint16(a[k+c.scales[1]:], 0)
			binary.LittleEndian.PutUint16(b[k+c.scales[0]:], 0)
		}
		parts = [][]byte{a, b}
	}
	var abs float64
	v := make([]float32, n)
	for _, p := range parts {
		if err := quant.Dequantize(c.typ, p, v); err != nil {
			panic(err)
		}
		for i := range v {
			abs += math.Abs(float64(v[i]) * x[i])
		}
	}
	return abs
}

// newqDot returns tab's one-token dot of in for type c, its row-run dot
// of rows copies of the row (nil when the path has none), and the generic
// twin's dot.
func newqDot(tab *table, c newqType, in newqInput, rows int) (got float32, runs []float32, want float32) {
	wk := &tab.weights[c.typ]
	gen := genericWeights()[c.typ]
	run := func(f func(w []byte, out []float32)) []float32 {
		w := make([]byte, 0, rows*len(in.w))
		for range rows {
			w = append(w, in.w...)
		}
		out := make([]float32, rows)
		f(w, out)
		return out
	}
	switch wk.partner {
	case partnerQ8_0:
		got, want = wk.q80.one(in.w, in.q80), gen.q80.one(in.w, in.q80)
		if wk.q80.rows != nil {
			runs = run(func(w []byte, out []float32) { wk.q80.rows(w, in.q80, out) })
		}
	case partnerQ8_1:
		got, want = wk.q81.one(in.w, in.q81), gen.q81.one(in.w, in.q81)
		if wk.q81.rows != nil {
			runs = run(func(w []byte, out []float32) { wk.q81.rows(w, in.q81, out) })
		}
	case partnerQ8K:
		got, want = wk.q8k.one(in.w, in.q8k), gen.q8k.one(in.w, in.q8k)
		if wk.q8k.rows != nil {
			runs = run(func(w []byte, out []float32) { wk.q8k.rows(w, in.q8k, out) })
		}
	}
	return got, runs, want
}

// TestNewTypeDots checks every path's dots of the types added after Q4_K
// against their generic twins (package quant's, which equal ggml's
// generic C kernels) on random and edge-case inputs: within the rounding a
// reordered float32 sum may make (bit for bit on a path that keeps the
// generic order, reordered false), and every row of a row-run dot bit for
// bit equal to the path's one-token dot.
func TestNewTypeDots(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 1))
		for _, c := range newqTypes() {
			for _, nb := range []int{1, 2, 3, 7, 8, 9, 16, 17, 23, 67} {
				for k, in := range newqInputs(r, c, nb) {
					name := fmt.Sprintf("%s nb=%d input %d", c.typ, nb, k)
					got, runs, want := newqDot(tab, c, in, 3)
					abs := newqAbs(c, in)
					if !near(got, want, float64(nb+16)*quantDotEps*abs+1e-37) {
						t.Errorf("%s: %v, generic %v (abs terms %g)", name, got, want, abs)
					}
					if !reordered(tab, c.typ) && !sameFloat(got, want) {
						t.Errorf("%s: %v, generic %v: not bit for bit", name, got, want)
					}
					for i, v := range runs {
						if !sameFloat(v, got) {
							t.Errorf("%s: row-run dot row %d = %v, one-token %v", name, i, v, got)
						}
					}
				}
			}
		}
	})
}

// FuzzNewTypeDots feeds random weight bytes (scales kept finite) and
// activations to every path's dots of the types added after Q4_K.
func FuzzNewTypeDots(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(0), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, sel, nbs uint8) {
		cs := newqTypes()
		c := cs[int(sel)%len(cs)]
		nb := int(nbs)%5 + 1
		if c.typ.BlockSize() == 32 {
			nb = int(nbs)%40 + 1
		}
		r := rand.New(rand.NewPCG(uint64(len(data)), 0))
		in := newqInputs(r, c, nb)[1]
		for i := range in.w {
			if len(data) > 0 {
				in.w[i] ^= data[i%len(data)]
			}
		}
		bb := c.typ.BlockBytes()
		for b := range nb {
			for _, o := range c.scales {
				h := binary.LittleEndian.Uint16(in.w[b*bb+o:])
				binary.LittleEndian.PutUint16(in.w[b*bb+o:], h&0xbfff) // |scale| < 2
			}
		}
		abs := newqAbs(c, in)
		for _, p := range Available() {
			got, runs, want := newqDot(tableFor(p), c, in, 2)
			if !near(got, want, float64(nb+16)*quantDotEps*abs+1e-37) {
				t.Fatalf("%s %s nb=%d: %v, generic %v", p, c.typ, nb, got, want)
			}
			for _, v := range runs {
				if !sameFloat(v, got) {
					t.Fatalf("%s %s: row-run %v, one-token %v", p, c.typ, v, got)
				}
			}
		}
	})
}

// TestNewTypeDotsX8 checks the eight-token dots of the types added after
// Q4_K, where a path has them, against the generic one-token twin for
// every token, within the summation-order tolerance.
func TestNewTypeDotsX8(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 8))
		for _, c := range newqTypes() {
			if tab.weights[c.typ].q80.x8 != nil {
				checkX8Q80(t, r, tab, c)
			}
			x8 := tab.weights[c.typ].q8k.x8
			if x8 == nil {
				continue
			}
			gen := genericWeights()[c.typ].q8k.one
			for _, nb := range []int{1, 2, 3, 5, 8} {
				for k, in := range newqInputs(r, c, nb) {
					// Eight tokens: the input's and seven others made from
					// it with other codes and scales.
					xs := make([]quant.BlockQ8K, 0, 8*nb)
					toks := make([][]quant.BlockQ8K, 8)
					for tok := range 8 {
						b := append([]quant.BlockQ8K(nil), in.q8k...)
						for i := range b {
							b[i].D *= float32(tok + 1)
							b[i].Bsums = [16]int16{}
							for j := range b[i].Qs {
								if tok > 0 {
									b[i].Qs[j] = int8(r.Uint32())
								}
								b[i].Bsums[j/16] += int16(b[i].Qs[j])
							}
						}
						toks[tok] = b
						xs = append(xs, b...)
					}
					var out [8]float32
					x8(in.w, xs, nil, nb, &out)
					for tok, b := range toks {
						one := newqInput{w: in.w, q8k: b}
						want := gen(in.w, b)
						if tol := float64(nb+16)*quantDotEps*newqAbs(c, one) + 1e-37; !near(out[tok], want, tol) {
							t.Errorf("%s nb=%d input %d token %d: %v, generic %v", c.typ, nb, k, tok, out[tok], want)
						}
					}
				}
			}
		}
	})
}

// TestNewTypeDotsX4 checks the four-token dots of the types added after
// Q4_K, where a path has them, against the path's one-token dot for each
// token, bit for bit (the x4 contract for these types).
func TestNewTypeDotsX4(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 4))
		for _, c := range newqTypes() {
			wk := tab.weights[c.typ]
			if wk.q8k.x4 != nil {
				checkX4Q8K(t, r, tab, c)
			}
			if wk.q80.x4 == nil && wk.q81.x4 == nil {
				continue
			}
			for _, nb := range []int{0, 1, 2, 3, 7, 9, 33} {
				for k, in := range newqInputs(r, c, max(nb, 1)) {
					in.w, in.q80, in.q81 = in.w[:nb*c.typ.BlockBytes()], in.q80[:nb], in.q81[:nb]
					// Four tokens: the input's and three others with other
					// codes and scales.
					x80 := make([]quant.BlockQ8_0, 0, 4*nb)
					x81 := make([]quant.BlockQ8_1, 0, 4*nb)
					for tok := range 4 {
						for i := range nb {
							b0, b1 := in.q80[i], in.q81[i]
							b0.D = quant.F32ToF16(quant.F16ToF32(b0.D) * float32(tok+1))
							b1.D = b0.D
							b1.S = quant.F32ToF16(quant.F16ToF32(b1.S) * float32(2*tok+1))
							if tok > 0 {
								for j := range b0.Qs {
									b0.Qs[j] = int8(r.Uint32())
									b1.Qs[j] = b0.Qs[j]
								}
							}
							x80, x81 = append(x80, b0), append(x81, b1)
						}
					}
					out := [4]float32{1, 1, 1, 1}
					var want [4]float32
					if wk.q80.x4 != nil {
						wk.q80.x4(in.w, x80, nb, &out)
						for tok := range 4 {
							want[tok] = wk.q80.one(in.w, x80[tok*nb:(tok+1)*nb])
						}
					} else {
						wk.q81.x4(in.w, x81, nb, &out)
						for tok := range 4 {
							want[tok] = wk.q81.one(in.w, x81[tok*nb:(tok+1)*nb])
						}
					}
					for tok := range 4 {
						if !sameFloat(out[tok], want[tok]) {
							t.Errorf("%s nb=%d input %d token %d: %v, one-token %v", c.typ, nb, k, tok, out[tok], want[tok])
						}
					}
				}
			}
		}
	})
}

// checkX8Q80 is TestNewTypeDotsX8 for a type with Q8_0 activations.
func checkX8Q80(t *testing.T, r *rand.Rand, tab *table, c newqType) {
	t.Helper()
	x8 := tab.weights[c.typ].q80.x8
	gen := genericWeights()[c.typ].q80.one
	for _, nb := range []int{1, 2, 3, 7, 9, 33} {
		for k, in := range newqInputs(r, c, nb) {
			xs := make([]quant.BlockQ8_0, 0, 8*nb)
			for tok := range 8 {
				b := append([]quant.BlockQ8_0(nil), in.q80...)
				for i := range b {
					b[i].D = quant.F32ToF16(quant.F16ToF32(b[i].D) * float32(tok+1))
					if tok > 0 {
						for j := range b[i].Qs {
							b[i].Qs[j] = int8(r.Uint32())
						}
					}
				}
				xs = append(xs, b...)
			}
			dx := make([]float32, 8*nb)
			for tok := range 8 {
				q80Scales(dx, xs[tok*nb:(tok+1)*nb], tok)
			}
			var out [8]float32
			x8(in.w, xs, dx, nb, &out)
			for tok := range 8 {
				b := xs[tok*nb : (tok+1)*nb]
				want := gen(in.w, b)
				one := newqInput{w: in.w, q80: b}
				if tol := float64(nb+16)*quantDotEps*newqAbs(c, one) + 1e-37; !near(out[tok], want, tol) {
					t.Errorf("%s nb=%d input %d token %d: %v, generic %v", c.typ, nb, k, tok, out[tok], want)
				}
			}
		}
	}
}

// checkX4Q8K is TestNewTypeDotsX4 for a type with Q8_K activations: four
// tokens made from each random and edge-case input (other codes, scales
// times 1-4, the bsums to match), every token's result bit for bit the
// path's one-token dot and within the summation-order tolerance of the
// generic twin.
func checkX4Q8K(t *testing.T, r *rand.Rand, tab *table, c newqType) {
	t.Helper()
	wk := tab.weights[c.typ]
	gen := genericWeights()[c.typ].q8k.one
	for _, nb := range []int{0, 1, 2, 3, 5, 8} {
		for k, in := range newqInputs(r, c, max(nb, 1)) {
			in.w, in.q8k = in.w[:nb*c.typ.BlockBytes()], in.q8k[:nb]
			xs := make([]quant.BlockQ8K, 0, 4*nb)
			for tok := range 4 {
				for i := range nb {
					b := in.q8k[i]
					b.D *= float32(tok + 1)
					if tok > 0 {
						b.Bsums = [16]int16{}
						for j := range b.Qs {
							b.Qs[j] = int8(r.Uint32())
							b.Bsums[j/16] += int16(b.Qs[j])
						}
					}
					xs = append(xs, b)
				}
			}
			out := [4]float32{1, 1, 1, 1}
			wk.q8k.x4(in.w, xs, nb, &out)
			for tok := range 4 {
				b := xs[tok*nb : (tok+1)*nb]
				if one := wk.q8k.one(in.w, b); !sameFloat(out[tok], one) {
					t.Errorf("%s nb=%d input %d token %d: %v, one-token %v", c.typ, nb, k, tok, out[tok], one)
				}
				want := gen(in.w, b)
				tol := float64(nb+16)*quantDotEps*newqAbs(c, newqInput{w: in.w, q8k: b}) + 1e-37
				if !near(out[tok], want, tol) {
					t.Errorf("%s nb=%d input %d token %d: %v, generic %v", c.typ, nb, k, tok, out[tok], want)
				}
			}
		}
	}
}

// TestNewTypeRowsDistinct checks every path's row-run dots of the types
// added after Q4_K (and MXFP4) on runs of different rows (the row-run
// kernels sum a row's lanes eight rows at a time, ROWEND_Y0, and some
// once took two rows per step): each row of every run length, up to two
// groups of eight and a row, bit for bit equal to the path's one-token
// dot of that row alone, and no output written past the run.
// TestNewTypeDots runs copies of one row, which cannot tell one row's
// scales or codes from another's.
func TestNewTypeRowsDistinct(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 7))
		for _, c := range append(newqTypes(), mxfp4Type) {
			wk := &tab.weights[c.typ]
			inputs := func(nb int) []newqInput { return newqInputs(r, c, nb) }
			if c.typ == tensor.MXFP4 {
				inputs = func(nb int) []newqInput { return mxfp4Inputs(r, nb) }
			}
			for _, nb := range []int{1, 7, 8, 9, 17} {
				// Rows from every input kind, so that neighbours differ in
				// scales, codes and edge cases.
				var rows []newqInput
				for len(rows) < 17 {
					rows = append(rows, inputs(nb)...)
				}
				x := rows[0]
				for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17} {
					var w []byte
					for _, in := range rows[:n] {
						w = append(w, in.w...)
					}
					out := make([]float32, n+1)
					out[n] = 42
					one := make([]float32, n)
					switch wk.partner {
					case partnerQ8_0:
						rowsOf(wk.q80, w, x.q80, out[:n])
						for i, in := range rows[:n] {
							one[i] = wk.q80.one(in.w, x.q80)
						}
					case partnerQ8_1:
						rowsOf(wk.q81, w, x.q81, out[:n])
						for i, in := range rows[:n] {
							one[i] = wk.q81.one(in.w, x.q81)
						}
					case partnerQ8K:
						rowsOf(wk.q8k, w, x.q8k, out[:n])
						for i, in := range rows[:n] {
							one[i] = wk.q8k.one(in.w, x.q8k)
						}
					}
					for i := range n {
						if !sameFloat(out[i], one[i]) {
							t.Errorf("%s nb=%d rows=%d: row %d = %v, one-token dot %v", c.typ, nb, n, i, out[i], one[i])
						}
					}
					if out[n] != 42 {
						t.Errorf("%s nb=%d rows=%d: wrote past the run", c.typ, nb, n)
					}
				}
			}
		}
	})
}
