//go:build amd64 && !purego

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// rowsLanesAVX2Go is the float sequence of the AVX2 Q4_0, Q5_0 and IQ4_NL
// row-run dots (rows_avx2_amd64.s) in Go, for one row w of type typ and
// the activations x: per whole group of eight blocks, lane l takes block
// [0 2 4 6 1 3 5 7][l] of the group and fused-multiply-adds its exact
// Σ v·x (v the code minus the offset, or IQ4_NL's codebook value) times
// dw·dx (rounded to float32); the last nb%8 blocks one at a time, lane l
// the exact sum of values 4l..4l+3 (l < 4) or 16+4(l-4)..19+4(l-4); then
// the lanes are reduced as HSUMROW does.
func rowsLanesAVX2Go(typ tensor.Type, w []byte, x []quant.BlockQ8_0) float32 {
	bb := typ.BlockBytes()
	o := int32(8)
	if typ == tensor.Q5_0 {
		o = 16
	}
	// v returns value j of block b minus the offset (IQ4_NL: its
	// codebook value).
	v := func(b, j int) int32 {
		blk := w[b*bb : (b+1)*bb]
		switch typ {
		case tensor.Q4_0:
			return int32(blk[2+j%16]>>(4*uint(j/16))&0xf) - o
		case tensor.IQ4_NL:
			return int32(iq4NLValues[blk[2+j%16]>>(4*uint(j/16))&0xf])
		}
		qh := binary.LittleEndian.Uint32(blk[2:])
		return int32(blk[6+j%16]>>(4*uint(j/16))&0xf|byte(qh>>uint(j)&1)<<4) - o
	}
	// sum returns Σ v·x over values j0..j1-1 of block b.
	sum := func(b, j0, j1 int) int32 {
		var s int32
		for j := j0; j < j1; j++ {
			s += v(b, j) * int32(x[b].Qs[j])
		}
		return s
	}
	scale := func(b int) float32 { return float32(f16At(w[b*bb:]) * quant.F16ToF32(x[b].D)) }
	nb := len(x)
	var y [8]float32
	for g := range nb / 8 {
		for l, k := range [8]int{0, 2, 4, 6, 1, 3, 5, 7} {
			b := 8*g + k
			y[l] = fma32Once(float32(sum(b, 0, 32)), scale(b), y[l])
		}
	}
	for b := nb / 8 * 8; b < nb; b++ {
		for l := range y {
			j0 := 4 * l
			if l >= 4 {
				j0 = 16 + 4*(l-4)
			}
			y[l] = fma32Once(float32(sum(b, j0, j0+4)), scale(b), y[l])
		}
	}
	h := [4]float32{y[0] + y[4], y[1] + y[5], y[2] + y[6], y[3] + y[7]}
	return (h[0] + h[2]) + (h[1] + h[3])
}

// iq4NLValues is IQ4_NL's codebook (ggml's kvalues_iq4nl).
var iq4NLValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// TestRowsAVX2Lanes checks the AVX2 Q4_0, Q5_0 and IQ4_NL row-run dots against
// their Go twin bit for bit, on runs of distinct rows of random and
// edge-case inputs (NaN, infinite, huge, subnormal and zero scales of
// either side, -128 activation codes, all-0xff weight bytes) at widths
// with and without a tail of blocks, one block, and whole groups only:
// rows, prepRows from the prepared scratch and the one-token dot each
// give the twin's bits for every row.
func TestRowsAVX2Lanes(t *testing.T) {
	if !slices.Contains(Available(), AVX2) {
		t.Skip("no AVX2")
	}
	tab := tableFor(AVX2)
	r := rand.New(rand.NewPCG(23, 5))
	for _, c := range newqTypes()[:3] { // Q4_0, Q5_0, IQ4_NL
		d := &tab.weights[c.typ].q80
		if d.prep == nil || d.x4 != nil {
			t.Fatalf("%s: the avx2 row has no prepared row-run dot, or a four-token dot", c.typ)
		}
		bb := c.typ.BlockBytes()
		for _, nb := range []int{1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 64, 65, 200} {
			var rows []newqInput
			for len(rows) < 12 {
				rows = append(rows, newqInputs(r, c, nb)...)
			}
			// Special scales: on some rows' blocks, and on the
			// activations of some inputs.
			for i := range rows {
				for b := range nb {
					if (i+b)%3 == 0 {
						binary.LittleEndian.PutUint16(rows[i].w[b*bb:], specialF16[(i*7+b)%len(specialF16)])
					}
				}
			}
			for k, xin := range rows[:6] {
				x := slices.Clone(xin.q80)
				if k >= 3 {
					for b := range x {
						if (k+b)%4 == 0 {
							x[b].D = specialF16[(k+3*b)%len(specialF16)]
						}
					}
				}
				var w []byte
				for _, in := range rows {
					w = append(w, in.w...)
				}
				n := len(rows)
				want := make([]float32, n)
				for i, in := range rows {
					want[i] = rowsLanesAVX2Go(c.typ, in.w, x)
				}
				got := make([]float32, n+1)
				got[n] = 42
				d.rows(w, x, got[:n])
				scr := make([]byte, d.prepLen(nb))
				d.prep(x, scr)
				pr := make([]float32, n)
				d.prepRows(w, x, scr, pr)
				for i, in := range rows {
					name := fmt.Sprintf("%s nb=%d x%d row %d", c.typ, nb, k, i)
					if !sameFloat(got[i], want[i]) {
						t.Errorf("%s: rows %v (%#x), twin %v (%#x)", name, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
					}
					if !sameFloat(pr[i], want[i]) {
						t.Errorf("%s: prepRows %v, twin %v", name, pr[i], want[i])
					}
					if one := d.one(in.w, x); !sameFloat(one, want[i]) {
						t.Errorf("%s: one %v, twin %v", name, one, want[i])
					}
				}
				if got[n] != 42 {
					t.Errorf("%s nb=%d: wrote past the run", c.typ, nb)
				}
			}
		}
	}
}

// TestRowsAVX2NoAllocs checks that the AVX2 row-run dots allocate
// nothing: the one-token dot and rows at every size of their stack
// scratch, and prepRows.
func TestRowsAVX2NoAllocs(t *testing.T) {
	if !slices.Contains(Available(), AVX2) {
		t.Skip("no AVX2")
	}
	tab := tableFor(AVX2)
	r := rand.New(rand.NewPCG(23, 6))
	for _, c := range newqTypes()[:3] {
		d := &tab.weights[c.typ].q80
		for _, nb := range []int{9, q80RowsSmallBlocks, q80RowsMaxBlocks} {
			in := newqInputs(r, c, nb)[0]
			w := slices.Concat(in.w, in.w, in.w)
			out := make([]float32, 3)
			scr := make([]byte, d.prepLen(nb))
			d.prep(in.q80, scr)
			if a := testing.AllocsPerRun(10, func() {
				d.one(in.w, in.q80)
				d.rows(w, in.q80, out)
				d.prepRows(w, in.q80, scr, out)
			}); a != 0 {
				t.Errorf("%s nb=%d: %v allocations per product", c.typ, nb, a)
			}
		}
	}
}
