package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// x8r2Input is two weight rows of nb blocks and eight tokens' blocks
// (token t's at x[t*nb:]) in one partner format.
type x8r2Input[X any] struct {
	w []byte
	x []X
}

// x8r2Kinds is the number of input kinds the x8r2 input makers make:
// random, minimum codes, extreme codes, zero weight scales and an infinite
// activation scale.
const x8r2Kinds = 5

func x8r2Q8_0Input(r *rand.Rand, nb, kind int) x8r2Input[quant.BlockQ8_0] {
	w := randBlocks(r, 2*nb, q8_0Bytes, []int{0}, 2)
	x := randQ8_0(r, 8*nb)
	switch kind {
	case 1:
		withMinCodes(w, x)
	case 2: // the largest products: every code -128
		for i := range x {
			for k := range x[i].Qs {
				x[i].Qs[k] = -128
			}
		}
		for b := range 2 * nb {
			for k := range 32 {
				w[b*q8_0Bytes+2+k] = 0x80
			}
		}
	case 3:
		for b := range 2 * nb {
			w[b*q8_0Bytes], w[b*q8_0Bytes+1] = 0, 0
		}
	case 4: // token 3's last block
		if nb > 0 {
			x[4*nb-1].D = quant.F32ToF16(float32(math.Inf(1)))
		}
	}
	return x8r2Input[quant.BlockQ8_0]{w, x}
}

func x8r2Q4_0Input(r *rand.Rand, nb, kind int) x8r2Input[quant.BlockQ8_0] {
	const size = quant.BlockQ4_0Bytes
	w := randBlocks(r, 2*nb, size, []int{0}, 2)
	x := randQ8_0(r, 8*nb)
	switch kind {
	case 1: // codes 0 and 15 (-8 and 7) against -128
		for b := range 2 * nb {
			for k := 2; k < size; k++ {
				w[b*size+k] = []byte{0x00, 0xff, 0x0f, 0xf0}[k%4]
			}
		}
		for i := range x {
			for k := 0; k < len(x[i].Qs); k += 3 {
				x[i].Qs[k] = -128
			}
		}
	case 2: // the largest products: codes -8 against -128
		for b := range 2 * nb {
			clear(w[b*size+2 : (b+1)*size])
		}
		for i := range x {
			for k := range x[i].Qs {
				x[i].Qs[k] = -128
			}
		}
	case 3:
		for b := range 2 * nb {
			w[b*size], w[b*size+1] = 0, 0
		}
	case 4:
		if nb > 0 {
			x[4*nb-1].D = quant.F32ToF16(float32(math.Inf(-1)))
		}
	}
	return x8r2Input[quant.BlockQ8_0]{w, x}
}

func x8r2Q4KInput(r *rand.Rand, nb, kind int) x8r2Input[quant.BlockQ8K] {
	w := randBlocks(r, 2*nb, q4KBytes, []int{0, 2}, 0.05)
	x := randQ8K(r, 8*nb)
	switch kind {
	case 1: // activation codes -128 here and there
		for i := range x {
			for k := 0; k < len(x[i].Qs); k += 7 {
				x[i].Qs[k] = -128
			}
			fixBsums(&x[i])
		}
	case 2: // the largest codes, scales and mins against all -128 or 127
		for b := range 2 * nb {
			for k := 4; k < q4KBytes; k++ {
				w[b*q4KBytes+k] = 0xff
			}
		}
		for i := range x {
			for k := range x[i].Qs {
				x[i].Qs[k] = int8(-128 + 255*(i%2))
			}
			fixBsums(&x[i])
		}
	case 3:
		for b := range 2 * nb {
			clear(w[b*q4KBytes : b*q4KBytes+4])
		}
	case 4:
		if nb > 0 {
			x[4*nb-1].D = float32(math.Inf(1))
		}
	}
	return x8r2Input[quant.BlockQ8K]{w, x}
}

// checkX8R2 runs tile on in for several strides, with dx (the Q8_0 token
// scales, or nil) and without, and compares every output with one's dot
// of the row and the token, bit for bit; outputs between and after the
// tile's columns must stay untouched.
func checkX8R2[X any](t *testing.T, name string, in x8r2Input[X], nb, rb int, dx []float32,
	tile func([]byte, []X, []float32, int, []float32, int), one func([]byte, []X) float32) {
	t.Helper()
	for _, stride := range []int{2, 5} {
		for _, d := range [][]float32{dx, nil} {
			out := make([]float32, 8*stride+1)
			for i := range out {
				out[i] = 42
			}
			tile(in.w, in.x, d, nb, out, stride)
			for tok := range 8 {
				for k := range 2 {
					want := one(in.w[k*rb:(k+1)*rb], in.x[tok*nb:(tok+1)*nb])
					if got := out[tok*stride+k]; !sameFloat(got, want) {
						t.Errorf("%s stride=%d dx=%v: row %d token %d = %v, one-token %v", name, stride, d != nil, k, tok, got, want)
					}
				}
			}
			for i, v := range out {
				if (i%stride >= 2 || i == 8*stride) && v != 42 {
					t.Errorf("%s stride=%d: out[%d] written (%v)", name, stride, i, v)
				}
			}
		}
	}
}

// TestDotsX8R2 checks the two-row eight-token tiles of every path that has
// them (Q8_0, Q4_0 and Q4_K on i8mm) against the path's one-token dot, bit for
// bit, for every row and token, on random and edge inputs and several
// block counts, 0 included.
func TestDotsX8R2(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		q80, q40 := tab.weights[tensor.Q8_0].q80, tab.weights[tensor.Q4_0].q80
		q4k := tab.weights[tensor.Q4_K].q8k
		if q80.x8r2 == nil && q40.x8r2 == nil && q4k.x8r2 == nil {
			t.Skipf("path %s has no two-row tiles", tab.path)
		}
		r := rand.New(rand.NewPCG(24, 8))
		for _, nb := range []int{0, 1, 2, 3, 7, 33} {
			for kind := range x8r2Kinds {
				if q80.x8r2 != nil {
					in := x8r2Q8_0Input(r, nb, kind)
					checkX8R2(t, fmt.Sprintf("Q8_0 nb=%d kind=%d", nb, kind), in, nb, nb*q8_0Bytes,
						scalesQ8_0x8(in.x, nb), q80.x8r2, q80.one)
				}
				if q40.x8r2 != nil {
					in := x8r2Q4_0Input(r, nb, kind)
					checkX8R2(t, fmt.Sprintf("Q4_0 nb=%d kind=%d", nb, kind), in, nb, nb*quant.BlockQ4_0Bytes,
						scalesQ8_0x8(in.x, nb), q40.x8r2, q40.one)
				}
				if q4k.x8r2 != nil && nb <= 7 {
					in := x8r2Q4KInput(r, nb, kind)
					checkX8R2(t, fmt.Sprintf("Q4_K nb=%d kind=%d", nb, kind), in, nb, nb*q4KBytes,
						nil, q4k.x8r2, q4k.one)
				}
			}
		}
	})
}
