package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// checkQ8_0Act quantizes x on every native path to Q8_0 and Q8_1 and
// requires the blocks quant.QuantizeRowQ8_0Act and QuantizeRowQ8_1Act
// write, byte for byte.
func checkQ8_0Act(t *testing.T, name string, x []float32) {
	t.Helper()
	nb := len(x) / quant.QK8_0
	want1 := make([]quant.BlockQ8_1, nb)
	quant.QuantizeRowQ8_1Act(x, want1)
	for _, p := range nativePaths() {
		got := make([]quant.BlockQ8_1, nb)
		for i := range got { // must be overwritten
			got[i].D, got[i].S = 0x1234, 0x4321
			got[i].Qs[7], got[i].Qs[31] = 99, 99
		}
		tableFor(p).quantQ8_1(x, got)
		for i := range got {
			if got[i] != want1[i] {
				t.Fatalf("%s %s Q8_1 block %d: got d %#04x s %#04x qs %v, twin d %#04x s %#04x qs %v",
					name, p, i, got[i].D, got[i].S, got[i].Qs, want1[i].D, want1[i].S, want1[i].Qs)
			}
		}
	}
	want := make([]quant.BlockQ8_0, nb)
	quant.QuantizeRowQ8_0Act(x, want)
	for _, p := range nativePaths() {
		got := make([]quant.BlockQ8_0, nb)
		for i := range got { // must be overwritten
			got[i].D = 0x1234
			got[i].Qs[7], got[i].Qs[31] = 99, 99
		}
		tableFor(p).quantQ8_0(x, got)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s %s block %d: got d %#04x qs %v, twin d %#04x qs %v",
					name, p, i, got[i].D, got[i].Qs, want[i].D, want[i].Qs)
			}
		}
	}
}

// TestQuantizeQ8_0Act checks every path's Q8_0 and Q8_1 activation
// quantizers against quant's twins byte for byte: random rows of several scales and
// lengths, unaligned input, zero blocks, NaN blocks (with payloads, and
// between ordinary blocks, which the assembly hands to the twin),
// infinities, subnormals (127/max overflows), values near float32's
// largest, scales that round to f16 infinity or subnormals, and ties.
func TestQuantizeQ8_0Act(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 33))
	block := func(f func(k int) float32) []float32 { return blockOf(quant.QK8_0, f) }
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := append(zeroRows(quant.QK8_0), []namedRow{
		{"nan", block(func(k int) float32 {
			if k == 9 {
				return nan
			}
			return float32(k) - 16
		})},
		{"nan-payload", block(func(k int) float32 {
			if k%3 == 0 {
				return math.Float32frombits(0xffc01234 + uint32(k))
			}
			return float32(k)
		})},
		{"inf", block(func(k int) float32 {
			if k == 7 {
				return -inf
			}
			return float32(k)
		})},
		{"subnormal", block(func(k int) float32 { return float32(k-16) * 1e-40 })},
		{"tiny-normal", block(func(k int) float32 { return float32(k-16) * 3e-37 })},
		{"max", block(func(k int) float32 { return float32(k-16) / 16 * math.MaxFloat32 })},
		{"f16-inf-scale", block(func(k int) float32 { return float32(k-16) * 1e6 })},
		{"f16-subnormal-scale", block(func(k int) float32 { return float32(k-16) * 1e-7 })},
		{"q8_1-sum-overflow", block(func(k int) float32 { return 6e4 * float32(1+k%2) })},
		{"ties", block(func(k int) float32 {
			if k == 0 {
				return 127
			}
			return float32(k-16) + 0.5
		})},
	}...)
	for _, c := range cases {
		checkQ8_0Act(t, c.name, c.x)
	}
	// The odd blocks out between ordinary ones.
	var mixed []float32
	for i, c := range cases {
		mixed = append(mixed, randF32(r, quant.QK8_0, float32(i+1))...)
		mixed = append(mixed, c.x...)
	}
	checkQ8_0Act(t, "mixed", mixed)
	randomRows(r, quant.QK8_0, []int{1, 2, 3, 8, 64, 176}, func(name string, x []float32) {
		checkQ8_0Act(t, name, x)
	})
}

// FuzzQuantizeQ8_0Act feeds arbitrary float32 bit patterns (one to three
// blocks; zero when short) to every path's Q8_0 and Q8_1 activation
// quantizers, which must write the twins' bytes.
func FuzzQuantizeQ8_0Act(f *testing.F) {
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0x80, 0x3f})
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0x80, 0xff, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkQ8_0Act(t, "fuzz", fuzzBlocks(data, quant.QK8_0, 3))
	})
}
