package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// mxfp4Type is MXFP4 for the newq test helpers: its scale is the E8M0
// exponent byte, which they do not write (setMXFP4Exponents does).
var mxfp4Type = newqType{tensor.MXFP4, nil, -1}

// setMXFP4Exponents gives every MXFP4 block of w an exponent byte in
// 118..133 (block scales 2^-10..2^5): the dots of random bytes then stay
// finite.
func setMXFP4Exponents(r *rand.Rand, w []byte) {
	for b := 0; b < len(w); b += quant.BlockMXFP4Bytes {
		w[b] = byte(118 + r.IntN(16))
	}
}

// mxfp4Inputs returns newqInputs' random and edge-case inputs of nb MXFP4
// blocks (quantized weights, random codes, all-0xff codes with -128
// activations, 127 activations, zero exponents), the random-byte ones
// with sane exponents, and one more whose exponents run through every
// byte 0..255 from a random start: the subnormal scales of 0 and 1 and
// the 2^127 of 0xFF included (the dots may then be infinite or NaN).
func mxfp4Inputs(r *rand.Rand, nb int) []newqInput {
	ins := newqInputs(r, mxfp4Type, nb)
	for k := 1; k <= 3; k++ {
		setMXFP4Exponents(r, ins[k].w)
	}
	for i := range nb {
		ins[4].w[i*quant.BlockMXFP4Bytes] = 0
	}
	edge := newqInputs(r, mxfp4Type, nb)[1]
	start := r.IntN(256)
	for i := range nb {
		edge.w[i*quant.BlockMXFP4Bytes] = byte(start + i)
	}
	return append(ins, edge)
}

// mxfp4Near reports whether got, a path's MXFP4 dot over nb blocks, is
// close enough to want, the generic twin's: bit for bit on the paths that
// keep the generic order (generic, avx2), within the rounding a reordered
// float32 sum may make on avx512 (a non-finite want then needs a
// non-finite got: lanes can turn the twin's infinity into a NaN), unless
// the terms come near float32's range, where either order may overflow.
func mxfp4Near(tab *table, got, want float32, nb int, in newqInput) bool {
	if tab.path != AVX512 {
		return sameFloat(got, want)
	}
	abs := newqAbs(mxfp4Type, in)
	if math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/4 {
		// Near float32's range either order may overflow where the
		// other does not: nothing to compare.
		return true
	}
	finite := func(f float32) bool { return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) }
	if !finite(want) {
		return !finite(got)
	}
	return near(got, want, float64(nb+16)*quantDotEps*abs+1e-37)
}

// checkMXFP4 checks one input on one path: the one-token dot against the
// twin, every row of a run of rows copies against the one-token dot bit
// for bit, and the four-token dot (where the path has one) against the
// one-token dot of each token bit for bit.
func checkMXFP4(t *testing.T, tab *table, name string, in newqInput, nb int, r *rand.Rand) {
	t.Helper()
	got, runs, want := newqDot(tab, mxfp4Type, in, 3)
	if !mxfp4Near(tab, got, want, nb, in) {
		t.Errorf("%s: %v, generic %v", name, got, want)
	}
	for i, v := range runs {
		if !sameFloat(v, got) {
			t.Errorf("%s: row-run dot row %d = %v, one-token %v", name, i, v, got)
		}
	}
	wk := tab.weights[tensor.MXFP4].q80
	if wk.rows != nil {
		// Five different rows (other exponents, codes reversed in
		// order): each row of the run bit for bit its one-token dot.
		bb := quant.BlockMXFP4Bytes
		w := make([]byte, 0, 5*len(in.w))
		for k := range 5 {
			row := append([]byte(nil), in.w...)
			for b := 0; b < len(row); b += bb {
				row[b] += byte(k)
				if k%2 == 1 {
					for j := 1; j < bb; j++ {
						row[b+j] = in.w[len(in.w)-bb-b+j]
					}
				}
			}
			w = append(w, row...)
		}
		out := make([]float32, 5)
		wk.rows(w, in.q80, out)
		for k, v := range out {
			if one := wk.one(w[k*len(in.w):(k+1)*len(in.w)], in.q80); !sameFloat(v, one) {
				t.Errorf("%s: row-run dot of distinct rows, row %d = %v, one-token %v", name, k, v, one)
			}
		}
	}
	if wk.x8 != nil {
		checkMXFP4x8(t, tab, name, in, nb, r)
	}
	if wk.x4 == nil {
		return
	}
	x := scaledTokens(r, in, nb, 4)
	out := [4]float32{1, 1, 1, 1}
	wk.x4(in.w, x, nb, &out)
	for tok := range 4 {
		if one := wk.one(in.w, x[tok*nb:(tok+1)*nb]); !sameFloat(out[tok], one) {
			t.Errorf("%s token %d: four-token dot %v, one-token %v", name, tok, out[tok], one)
		}
	}
}

// scaledTokens returns n tokens of nb activation blocks each made from
// in's: token k's scales times k+1 and, after the first token, random
// codes (the multi-token dots then see distinct tokens).
func scaledTokens(r *rand.Rand, in newqInput, nb, n int) []quant.BlockQ8_0 {
	x := make([]quant.BlockQ8_0, 0, n*nb)
	for tok := range n {
		for i := range nb {
			b := in.q80[i]
			b.D = quant.F32ToF16(quant.F16ToF32(b.D) * float32(tok+1))
			if tok > 0 {
				for j := range b.Qs {
					b.Qs[j] = int8(r.Uint32())
				}
			}
			x = append(x, b)
		}
	}
	return x
}

// checkMXFP4x8 checks the eight-token dot on eight tokens made from in
// (other codes, scales times 1-8) against the generic twin of each token,
// as mxfp4Near does.
func checkMXFP4x8(t *testing.T, tab *table, name string, in newqInput, nb int, r *rand.Rand) {
	t.Helper()
	xs := scaledTokens(r, in, nb, 8)
	dx := make([]float32, 8*nb)
	for tok := range 8 {
		q80Scales(dx, xs[tok*nb:(tok+1)*nb], tok)
	}
	out := [8]float32{1, 1, 1, 1, 1, 1, 1, 1}
	tab.weights[tensor.MXFP4].q80.x8(in.w, xs, dx, nb, &out)
	for tok := range 8 {
		b := xs[tok*nb : (tok+1)*nb]
		want := quant.DotMXFP4Q8_0(in.w, b)
		if !mxfp4Near(tab, out[tok], want, nb, newqInput{w: in.w, q80: b}) {
			t.Errorf("%s token %d: eight-token dot %v, generic %v", name, tok, out[tok], want)
		}
	}
}

// TestMXFP4Dots checks every path's MXFP4 dots against the generic twin
// (quant.DotMXFP4Q8_0, bit-exact with ggml's generic C) on random and
// edge-case inputs at block counts around the kernels' eight-block steps.
func TestMXFP4Dots(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		if tab.weights[tensor.MXFP4].partner != partnerQ8_0 {
			t.Fatalf("MXFP4's partner is %d, want Q8_0", tab.weights[tensor.MXFP4].partner)
		}
		r := rand.New(rand.NewPCG(39, 1))
		for _, nb := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 23, 64, 67, 90} {
			for k, in := range mxfp4Inputs(r, nb) {
				checkMXFP4(t, tab, fmt.Sprintf("nb=%d input %d", nb, k), in, nb, r)
			}
		}
		// A zero-block x4 writes zeros.
		if x4 := tab.weights[tensor.MXFP4].q80.x4; x4 != nil {
			out := [4]float32{1, 2, 3, 4}
			x4(nil, nil, 0, &out)
			if out != [4]float32{} {
				t.Errorf("x4 of no blocks: %v", out)
			}
		}
	})
}

// TestMXFP4Matrix runs MXFP4 matrices through the pool (MatMul of one and
// of several tokens, several threads) against the dequantized matrix
// times the activations as the generic row quantizes them.
func TestMXFP4Matrix(t *testing.T) {
	r := rand.New(rand.NewPCG(39, 7))
	const cols, rows = 256, 37
	vals := randF32(r, cols*rows, 1)
	data := make([]byte, rows*cols/32*quant.BlockMXFP4Bytes)
	if err := quant.Quantize(tensor.MXFP4, vals, data); err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(tensor.MXFP4, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, cols*rows)
	if err := quant.Dequantize(tensor.MXFP4, data, deq); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 8, 13} {
		x := randF32(r, cols*n, 1)
		for _, threads := range []int{1, 2} {
			p := NewPool(threads)
			out := make([]float32, rows*n)
			if err := p.MatMul(out, m, x, n); err != nil {
				t.Fatal(err)
			}
			p.Close()
			for tok := range n {
				for row := range rows {
					var want, abs float64
					for c := range cols {
						v := float64(deq[row*cols+c]) * float64(x[tok*cols+c])
						want += v
						abs += math.Abs(v)
					}
					// Q8_0 activations: about 1/254 of each value.
					if got := float64(out[tok*rows+row]); math.Abs(got-want) > abs/100+1e-6 {
						t.Errorf("n=%d threads=%d token %d row %d: %v, float %v", n, threads, tok, row, got, want)
					}
				}
			}
		}
	}
}

// TestMXFP4DotAllocs checks that the MXFP4 dots of every path allocate
// nothing.
func TestMXFP4DotAllocs(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(39, 3))
		in := mxfp4Inputs(r, 64)[0]
		wk := tab.weights[tensor.MXFP4].q80
		rowsW := append(append([]byte(nil), in.w...), in.w...)
		out := make([]float32, 2)
		x4 := make([]quant.BlockQ8_0, 0, 4*64)
		for range 4 {
			x4 = append(x4, in.q80...)
		}
		var o4 [4]float32
		var o8 [8]float32
		x8 := make([]quant.BlockQ8_0, 0, 8*64)
		for range 8 {
			x8 = append(x8, in.q80...)
		}
		dx := make([]float32, 8*64)
		if a := testing.AllocsPerRun(20, func() {
			if wk.x8 != nil {
				wk.x8(in.w, x8, dx, 64, &o8)
			}
			wk.one(in.w, in.q80)
			if wk.rows != nil {
				wk.rows(rowsW, in.q80, out)
			}
			if wk.x4 != nil {
				wk.x4(in.w, x4, 64, &o4)
			}
		}); a != 0 {
			t.Errorf("%v allocations per product", a)
		}
	})
}

// FuzzMXFP4Dots feeds random weight bytes (any exponent) and activations
// to every path's MXFP4 dots.
func FuzzMXFP4Dots(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(1), false)
	f.Add([]byte{0xff, 0, 0x80}, uint8(9), true)
	f.Fuzz(func(t *testing.T, data []byte, nbs uint8, keepExp bool) {
		nb := int(nbs)%40 + 1
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(nbs)))
		in := mxfp4Inputs(r, nb)[1]
		for i := range in.w {
			if len(data) > 0 && (!keepExp || i%quant.BlockMXFP4Bytes != 0) {
				in.w[i] ^= data[i%len(data)]
			}
		}
		for _, p := range Available() {
			checkMXFP4(t, tableFor(p), fmt.Sprintf("%s nb=%d", p, nb), in, nb, r)
		}
	})
}
