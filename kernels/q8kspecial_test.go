package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// specialF16 are the f16 weight scales the edge-case inputs plant
// (specialQ8KInputs, TestRowsAVX2Lanes): infinities, NaN, zeros, the
// smallest and largest subnormals of both signs, the largest half, and
// 1.0.
var specialF16 = []uint16{0x7c00, 0xfc00, 0x7e00, 0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x7bff, 0xfbff, 0x3c00}

// specialF32 are the activation scales of specialQ8KInputs: zeros, NaN,
// infinities, a huge one, the smallest subnormal.
var specialF32 = []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e30, math.SmallestNonzeroFloat32}

// specialQ8KInputs returns rows of nb blocks of type c (a Q8_K partner)
// with random bytes (every code and sub-block scale) whose f16 scales are,
// block by block, a special value of specialF16 or a random finite one
// (the specials one block in nb+2, so that about half the rows stay
// finite), and activations whose blocks are all -128, all 127, or random
// codes over the whole int8 range, with a special scale of specialF32 or
// a random one; the bsums match the codes.
func specialQ8KInputs(r *rand.Rand, c newqType, nb, rows int) []newqInput {
	bb := c.typ.BlockBytes()
	ins := make([]newqInput, rows)
	for k := range ins {
		in := newqInput{w: make([]byte, nb*bb), q8k: make([]quant.BlockQ8K, nb)}
		for i := range in.w {
			in.w[i] = byte(r.Uint32())
		}
		for b := range nb {
			for _, o := range c.scales {
				h := quant.F32ToF16(float32(r.NormFloat64() * 0.01))
				if r.IntN(nb+2) == 0 {
					h = specialF16[r.IntN(len(specialF16))]
				}
				binary.LittleEndian.PutUint16(in.w[b*bb+o:], h)
			}
			x := &in.q8k[b]
			x.D = float32(r.Float64()*0.02 + 0.001)
			if r.IntN(nb+2) == 0 {
				x.D = specialF32[r.IntN(len(specialF32))]
			}
			kind := r.IntN(4)
			for j := range x.Qs {
				switch kind {
				case 0:
					x.Qs[j] = -128
				case 1:
					x.Qs[j] = 127
				default:
					x.Qs[j] = int8(r.Uint32())
				}
				x.Bsums[j/16] += int16(x.Qs[j])
			}
		}
		ins[k] = in
	}
	return ins
}

// TestQ8KDotsSpecial checks every path's dots of the Q8_K-partner types
// added after Q4_K on rows with non-finite, zero, subnormal and extreme
// scales in weights and activations, and activations of -128: each
// one-token dot against the generic twin (bit for bit where the path
// keeps the generic order, else within the summation-order tolerance, a
// non-finite twin needing a non-finite result), and every row of runs of
// 1 to 33 distinct rows bit for bit the one-token dot of that row, with
// nothing written past the run.
func TestQ8KDotsSpecial(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(23, 5))
		for _, c := range newqTypes() {
			if c.typ.BlockSize() != quant.QK_K {
				continue
			}
			wk := &tab.weights[c.typ].q8k
			gen := genericWeights()[c.typ].q8k.one
			for _, nb := range []int{1, 2, 3, 5, 8, 17} {
				ins := specialQ8KInputs(r, c, nb, 33)
				x := ins[0].q8k
				for k, in := range ins {
					got, want := wk.one(in.w, x), gen(in.w, x)
					abs := newqAbs(c, newqInput{w: in.w, q8k: x})
					if !nearTwin(tab, c.typ, got, want, nb, abs) {
						t.Errorf("%s nb=%d row %d: %v, generic %v (abs terms %g)", c.typ, nb, k, got, want, abs)
					}
					// The row's own activations too.
					got, want = wk.one(in.w, in.q8k), gen(in.w, in.q8k)
					abs = newqAbs(c, in)
					if !nearTwin(tab, c.typ, got, want, nb, abs) {
						t.Errorf("%s nb=%d row %d, own activations: %v, generic %v (abs terms %g)", c.typ, nb, k, got, want, abs)
					}
				}
				for _, n := range []int{1, 2, 3, 4, 7, 16, 33} {
					var w []byte
					for _, in := range ins[:n] {
						w = append(w, in.w...)
					}
					out := make([]float32, n+1)
					out[n] = 42
					rowsOf(*wk, w, x, out[:n])
					for i, in := range ins[:n] {
						if one := wk.one(in.w, x); !sameFloat(out[i], one) {
							t.Errorf("%s nb=%d rows=%d: row %d = %v, one-token dot %v", c.typ, nb, n, i, out[i], one)
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
