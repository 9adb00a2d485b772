package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// forEachPath runs f as a subtest for every path this CPU can run.
func forEachPath(t *testing.T, f func(t *testing.T, tab *table)) {
	t.Helper()
	for _, p := range Available() {
		t.Run(string(p), func(t *testing.T) { f(t, tableFor(p)) })
	}
}

// nativePaths returns the available paths other than generic.
func nativePaths() []Path {
	var ps []Path
	for _, p := range Available() {
		if p != Generic {
			ps = append(ps, p)
		}
	}
	return ps
}

// randF32 returns n values uniform in [-s, s).
func randF32(r *rand.Rand, n int, s float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (r.Float32()*2 - 1) * s
	}
	return v
}

// randF16 returns n finite half-precision values of magnitude below s.
func randF16(r *rand.Rand, n int, s float32) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = quant.F32ToF16((r.Float32()*2 - 1) * s)
	}
	return v
}

// putF16 stores f as a little-endian half at b[0:2].
func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, quant.F32ToF16(f)) }

// randBlocks returns nb random weight blocks of size bytes with finite f16
// scales of magnitude below scale at the given offsets within each block.
func randBlocks(r *rand.Rand, nb, size int, scaleOffs []int, scale float32) []byte {
	w := make([]byte, nb*size)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := range nb {
		for _, o := range scaleOffs {
			putF16(w[b*size+o:], (r.Float32()*2-1)*scale)
		}
	}
	return w
}

// randQ8K quantizes random activations into nb Q8_K blocks.
func randQ8K(r *rand.Rand, nb int) []quant.BlockQ8K {
	x := make([]quant.BlockQ8K, nb)
	quant.QuantizeRowQ8K(randF32(r, nb*quant.QK_K, 3), x)
	return x
}

// randQ8_0 quantizes random activations into nb Q8_0 blocks.
func randQ8_0(r *rand.Rand, nb int) []quant.BlockQ8_0 {
	x := make([]quant.BlockQ8_0, nb)
	quant.QuantizeRowQ8_0(randF32(r, nb*quant.QK8_0, 3), x)
	return x
}

// scalesQ8_0x8 returns the block scales of eight tokens' nb Q8_0 blocks
// (x[t*nb+b]) in the layout the eight-token dots take as dx.
func scalesQ8_0x8(x []quant.BlockQ8_0, nb int) []float32 {
	dx := make([]float32, 8*nb)
	for k := range 8 {
		q80Scales(dx, x[k*nb:(k+1)*nb], k)
	}
	return dx
}

// fixBsums recomputes the block sums of b from its codes.
func fixBsums(b *quant.BlockQ8K) {
	for j := range b.Bsums {
		var s int16
		for _, q := range b.Qs[16*j : 16*j+16] {
			s += int16(q)
		}
		b.Bsums[j] = s
	}
}

// sameFloat reports whether a and b are the same value, all NaNs being equal.
func sameFloat(a, b float32) bool {
	if a != a || b != b {
		return a != a && b != b
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// near reports whether got is within tol of want, or both are the same
// non-finite value.
func near(got, want float32, tol float64) bool {
	if math.IsNaN(float64(want)) || math.IsInf(float64(want), 0) {
		return sameFloat(got, want)
	}
	return math.Abs(float64(got)-float64(want)) <= tol
}

// f32Put stores v as little-endian float32 at b[0:4].
func f32Put(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) }
