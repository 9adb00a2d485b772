package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// checkQ8K quantizes x on every native path and requires the blocks
// quant's reference quantizer writes, field for field (D bit for bit).
func checkQ8K(t *testing.T, name string, x []float32) {
	t.Helper()
	nb := len(x) / quant.QK_K
	want := make([]quant.BlockQ8K, nb)
	quant.QuantizeRowQ8K(x, want)
	for _, p := range nativePaths() {
		got := make([]quant.BlockQ8K, nb)
		for i := range got { // must be overwritten
			got[i].D = float32(math.NaN())
			got[i].Qs[7], got[i].Bsums[3] = 99, 99
		}
		tableFor(p).quantQ8K(x, got)
		for i := range got {
			g, w := &got[i], &want[i]
			if math.Float32bits(g.D) != math.Float32bits(w.D) || g.Qs != w.Qs || g.Bsums != w.Bsums {
				t.Fatalf("%s %s block %d: got d %v qs %v bsums %v, reference d %v qs %v bsums %v",
					name, p, i, g.D, g.Qs, g.Bsums, w.D, w.Qs, w.Bsums)
			}
		}
	}
}

// TestQuantizeQ8K checks every path's activation quantizer against
// quant's reference byte for byte: random rows of several scales, ties of
// the largest magnitude with either sign first, zero and negative-zero
// blocks, NaN and infinite values, subnormals, and codes that round at .5.
func TestQuantizeQ8K(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 31))
	block := func(f func(k int) float32) []float32 { return blockOf(quant.QK_K, f) }
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := append(zeroRows(quant.QK_K), []namedRow{
		{"tie-negative-first", block(func(k int) float32 {
			switch k {
			case 40:
				return -3
			case 200:
				return 3
			}
			return float32(k%7) / 7
		})},
		{"tie-positive-first", block(func(k int) float32 {
			switch k {
			case 17:
				return 3
			case 255:
				return -3
			}
			return -float32(k%5) / 5
		})},
		{"max-last", block(func(k int) float32 {
			if k == 255 {
				return -9
			}
			return float32(k) / 64
		})},
		{"nan", block(func(k int) float32 {
			if k%9 == 0 {
				return nan
			}
			return float32(k) - 128
		})},
		{"all-nan", block(func(int) float32 { return nan })},
		{"nan-last", block(func(k int) float32 {
			if k >= 240 {
				return nan
			}
			return float32(k) - 100
		})},
		{"nan-payload", block(func(k int) float32 {
			if k%3 == 0 {
				return math.Float32frombits(0x7fc01234 + uint32(k)) // codes past 127 before the clamp
			}
			return float32(k)
		})},
		{"nan-and-zero", block(func(k int) float32 {
			if k%2 == 0 {
				return nan
			}
			return 0
		})},
		{"inf", block(func(k int) float32 {
			if k == 77 {
				return -inf
			}
			return float32(k)
		})},
		{"subnormal", block(func(k int) float32 { return float32(k-128) * 1e-43 })},
		{"max", block(func(k int) float32 { return float32(k-128) / 128 * math.MaxFloat32 })},
		{"halves", block(func(k int) float32 { return float32(k%255-127) + 0.5 })},
	}...)
	for _, c := range cases {
		checkQ8K(t, c.name, c.x)
	}
	randomRows(r, quant.QK_K, []int{1, 2, 3, 8, 22}, func(name string, x []float32) {
		checkQ8K(t, name, x)
	})
}

// randomRows calls check with rows of nb blocks of qk random values, for
// each nb of nbs at three scales, as they are ("random") and one float
// off their alignment ("unaligned").
func randomRows(r *rand.Rand, qk int, nbs []int, check func(name string, x []float32)) {
	for _, nb := range nbs {
		for _, scale := range []float32{1e-3, 1, 1e4} {
			x := randF32(r, nb*qk, scale)
			check("random", x)
			check("unaligned", append(make([]float32, 1), x...)[1:])
		}
	}
}

// fuzzBlocks decodes a fuzzer's bytes as float32 bit patterns into 1 to
// most blocks of qk values (more bytes, more blocks), zero where the
// bytes run out.
func fuzzBlocks(data []byte, qk, most int) []float32 {
	nb := 1 + len(data)/(4*qk)%most
	x := make([]float32, nb*qk)
	for i := range x {
		if 4*i+4 <= len(data) {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	}
	return x
}

// FuzzQuantizeQ8K feeds arbitrary float32 bit patterns (one or two
// blocks; zero when short) to every path's activation quantizer, which
// must write quant's reference bytes.
func FuzzQuantizeQ8K(f *testing.F) {
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkQ8K(t, "fuzz", fuzzBlocks(data, quant.QK_K, 2))
	})
}

// namedRow is one named input row of a quantizer test.
type namedRow struct {
	name string
	x    []float32
}

// blockOf returns the qk values f(0), ..., f(qk-1).
func blockOf(qk int, f func(k int) float32) []float32 {
	x := make([]float32, qk)
	for k := range x {
		x[k] = f(k)
	}
	return x
}

// zeroRows returns a block of qk zeros and one of negative zeros.
func zeroRows(qk int) []namedRow {
	negZero := float32(math.Copysign(0, -1))
	return []namedRow{
		{"zero", make([]float32, qk)},
		{"negative-zero", blockOf(qk, func(int) float32 { return negZero })},
	}
}
