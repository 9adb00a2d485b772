//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestNewTypeDotsWide checks the Q8_0-partner dots at the widths where
// the avx512 and avx2 row-run kernels' callers change stack arrays (the
// tiny one full, the small one full, the large one, and the widest rows
// the kernels take, beyond which the generic twin runs row by row): every row
// of a run equal to the one-token dot, and within the summation-order
// tolerance of the generic twin.
func TestNewTypeDotsWide(t *testing.T) {
	if testing.Short() {
		t.Skip("rows of 65536 values")
	}
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(19, 65))
		for _, c := range newqTypes()[:3] { // Q4_0, Q5_0, IQ4_NL
			for _, nb := range []int{q80RowsTinyBlocks, q80RowsTinyBlocks + 1, q80RowsSmallBlocks, q80RowsSmallBlocks + 1, q80RowsMaxBlocks, q80RowsMaxBlocks + 1} {
				in := newqInputs(r, c, nb)[1]
				got, runs, want := newqDot(tab, c, in, 3)
				if abs := newqAbs(c, in); !near(got, want, float64(nb+16)*quantDotEps*abs+1e-37) {
					t.Errorf("%s nb=%d: %v, generic %v (abs terms %g)", c.typ, nb, got, want, abs)
				}
				for i, v := range runs {
					if !sameFloat(v, got) {
						t.Errorf("%s nb=%d: row-run dot row %d = %v, one-token %v", c.typ, nb, i, v, got)
					}
				}
			}
		}
	})
}

// preparedTypes lists, per path, the weight types whose row-run dot
// prepares a token's activations once per product (dots.prep). A dropped
// prep changes no result, only the time every piece of a product spends
// on the activations again, so TestNewTypeRowsPrepared holds each path to
// its list; a type added here must be among the ones that test takes.
var preparedTypes = map[Path][]tensor.Type{
	AVX2:   {tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.IQ4_XS},
	AVX512: {tensor.Q4_0, tensor.Q5_0, tensor.Q3_K, tensor.IQ4_NL, tensor.IQ4_XS, tensor.MXFP4},
}

// TestNewTypeRowsPrepared checks that each path prepares the activations
// of exactly its preparedTypes, and checks those row-run dots (the avx512
// Q8_0-partner ones, MXFP4's included, Q3_K's and IQ4_XS's; the avx2
// Q4_0, Q5_0, IQ4_NL and IQ4_XS ones) at widths with and without
// a tail of blocks, for the Q8_0-partner ones the widest they prepare and
// one past it: every run of distinct rows from the prepared scratch bit
// for bit the path's rows (which prepares per call, or not at all), a run
// that starts mid-product too, and nothing written past the run or the
// scratch.
func TestNewTypeRowsPrepared(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		var got []tensor.Type
		for typ := range tab.weights {
			if wk := &tab.weights[typ]; wk.q80.prep != nil || wk.q8k.prep != nil {
				got = append(got, tensor.Type(typ))
			}
		}
		if want := preparedTypes[tab.path]; !slices.Equal(got, want) {
			t.Fatalf("types whose row run prepares its activations: %v, want %v", got, want)
		}
		r := rand.New(rand.NewPCG(19, 9))
		seen := 0
		for _, c := range append(newqTypes(), mxfp4Type) {
			wk := &tab.weights[c.typ]
			if wk.q80.prep == nil && wk.q8k.prep == nil {
				continue
			}
			inputs := func(nb int) []newqInput { return newqInputs(r, c, nb) }
			if c.typ == tensor.MXFP4 {
				inputs = func(nb int) []newqInput { return mxfp4Inputs(r, nb) }
			}
			seen++
			nbs := []int{1, 7, 8, 9, 17, 64, 67, q80RowsMaxBlocks, q80RowsMaxBlocks + 1}
			if wk.q8k.prep != nil {
				nbs = []int{1, 2, 3, 7, 8, 9, 17, 67}
			}
			for _, nb := range nbs {
				if nb > 67 && testing.Short() {
					continue
				}
				ins := inputs(nb)
				if wk.q8k.prep != nil {
					ins = append(ins, specialQ8KInputs(r, c, nb, 7)...)
				}
				var w []byte
				for _, in := range ins {
					w = append(w, in.w...)
				}
				name := fmt.Sprintf("%s nb=%d", c.typ, nb)
				if wk.q80.prep != nil {
					x := ins[len(ins)-1].q80
					if k := wk.q80.prepLen(nb); (k == 0) != (nb > q80RowsMaxBlocks) {
						t.Fatalf("%s: prepLen %d", name, k)
					}
					checkPrepared(t, r, name, &wk.q80, w, x, len(ins))
					continue
				}
				for _, k := range []int{0, len(ins) - 1} {
					checkPrepared(t, r, fmt.Sprintf("%s activations %d", name, k), &wk.q8k, w, ins[k].q8k, len(ins))
				}
			}
		}
		if seen != len(got) {
			t.Errorf("checked %d of the %d prepared types %v", seen, len(got), got)
		}
	})
}

// checkPrepared is TestNewTypeRowsPrepared for n rows w of a type with
// dots d and one token's activations x.
func checkPrepared[X any](t *testing.T, r *rand.Rand, name string, d *dots[X], w []byte, x []X, n int) {
	t.Helper()
	want := make([]float32, n)
	d.rows(w, x, want)
	k := d.prepLen(len(x))
	scr := make([]byte, k+1)
	for i := range scr {
		scr[i] = byte(r.Uint32()) // poison: any unwritten byte read shows
	}
	last := scr[k]
	d.prep(x, scr[:k])
	got := make([]float32, n+1)
	got[n] = 42
	for _, lo := range []int{0, n / 2} {
		rb := len(w) / n
		d.prepRows(w[lo*rb:], x, scr[:k], got[lo:n])
		for i := lo; i < n; i++ {
			if !sameFloat(got[i], want[i]) {
				t.Errorf("%s rows %d-%d: row %d = %v, rows %v", name, lo, n, i, got[i], want[i])
			}
		}
	}
	if got[n] != 42 || scr[k] != last {
		t.Errorf("%s: wrote past the run or the scratch", name)
	}
}

// TestQ3KPrepGFNI checks the Q3_K row run of processors with GFNI against
// the one without, bit for bit, on the inputs TestNewTypeRowsPrepared
// takes (random and special blocks, widths with a tail, every input's
// activations): the avx512 path takes only one of the two, the GFNI one
// where the processor has it, so this is where the other is checked.
func TestQ3KPrepGFNI(t *testing.T) {
	if f := detect(); !f.avx512 || !f.gfni {
		t.Skip("the processor lacks AVX-512 or GFNI")
	}
	i := slices.IndexFunc(newqTypes(), func(c newqType) bool { return c.typ == tensor.Q3_K })
	if i < 0 {
		t.Fatal("no Q3_K among newqTypes")
	}
	c := newqTypes()[i]
	r := rand.New(rand.NewPCG(19, 10))
	for _, nb := range []int{1, 2, 3, 7, 8, 9, 17, 67} {
		ins := append(newqInputs(r, c, nb), specialQ8KInputs(r, c, nb, 7)...)
		var w []byte
		for _, in := range ins {
			w = append(w, in.w...)
		}
		for k, in := range ins {
			x := in.q8k
			var got [2][]float32
			for i, split := range []q8kPrep{q3kPrepAVX512Split, q3kPrepGFNISplit} {
				scr := make([]byte, split.prepLen(nb))
				split.prep(&x[0], nb, &scr[0])
				got[i] = make([]float32, len(ins))
				split.rows(&w[0], &x[0], nb, len(ins), &got[i][0], &scr[0])
			}
			for row := range got[0] {
				if !sameFloat(got[0][row], got[1][row]) {
					t.Fatalf("nb=%d activations %d row %d: %v with GFNI, %v without", nb, k, row, got[1][row], got[0][row])
				}
			}
		}
	}
}
