package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomWeights returns nb random blocks of blockBytes bytes whose f16
// fields at the given offsets hold finite scales of moderate size.
func randomWeights(rng *rand.Rand, nb, blockBytes int, f16At ...int) []byte {
	w := make([]byte, nb*blockBytes)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for b := range nb {
		for _, off := range f16At {
			putF16(w[b*blockBytes+off:], F32ToF16(float32(rng.Float64()*0.01+1e-4)))
		}
	}
	return w
}

// float64Dot dequantizes the weights and the activations and returns
// their dot product in float64 and the sum of the magnitudes of the terms.
func float64Dot(w, xq []float32) (dot, mag float64) {
	for i := range w {
		p := float64(w[i]) * float64(xq[i])
		dot += p
		mag += math.Abs(p)
	}
	return dot, mag
}

func dequantQ8K(x []BlockQ8K) []float32 {
	y := make([]float32, 0, len(x)*QK_K)
	for _, b := range x {
		for _, q := range b.Qs {
			y = append(y, float32(q)*b.D)
		}
	}
	return y
}

func dequantQ8_0(x []BlockQ8_0) []float32 {
	y := make([]float32, 0, len(x)*QK8_0)
	for _, b := range x {
		for _, q := range b.Qs {
			y = append(y, float32(q)*F16ToF32(b.D))
		}
	}
	return y
}

func randomActivations(rng *rand.Rand, n int) []float32 {
	a := make([]float32, n)
	for i := range a {
		a[i] = float32(rng.NormFloat64())
	}
	return a
}

// TestDotsAgainstFloat64 compares each reference dot with the float64 dot
// of the dequantized operands: they compute the same sum, so they agree to
// float32 rounding of the terms (relative to the sum of magnitudes).
func TestDotsAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const tol = 1e-5
	for _, nb := range []int{1, 2, 3, 8, 11} {
		x := randomActivations(rng, nb*QK_K)
		q8k := make([]BlockQ8K, nb)
		QuantizeRowQ8K(x, q8k)
		xk := dequantQ8K(q8k)
		q80 := make([]BlockQ8_0, nb*QK_K/QK8_0)
		QuantizeRowQ8_0(x, q80)
		x0 := dequantQ8_0(q80)
		cases := []struct {
			name string
			w    []byte
			dot  func(w []byte) float32
			deq  func(src []byte, dst []float32)
			xq   []float32
		}{
			{"Q8_0", randomWeights(rng, nb*8, BlockQ8_0Bytes, 0), func(w []byte) float32 { return DotQ8_0Q8_0(w, q80) }, DequantizeQ8_0, x0},
			{"Q4_K", randomWeights(rng, nb, BlockQ4_KBytes, 0, 2), func(w []byte) float32 { return DotQ4KQ8K(w, q8k) }, DequantizeQ4K, xk},
			{"Q6_K", randomWeights(rng, nb, BlockQ6_KBytes, 208), func(w []byte) float32 { return DotQ6KQ8K(w, q8k) }, DequantizeQ6K, xk},
		}
		for _, c := range cases {
			wf := make([]float32, nb*QK_K)
			c.deq(c.w, wf)
			want, mag := float64Dot(wf, c.xq)
			got := float64(c.dot(c.w))
			if math.Abs(got-want) > tol*mag {
				t.Errorf("%s, %d blocks: got %g, want %g (magnitude %g)", c.name, nb, got, want, mag)
			}
		}
	}
}

// TestDotsExact uses unit scales and small codes, so that every
// intermediate is an exactly representable integer: the reference dots
// must then equal the exact integer dot product.
func TestDotsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	const nb = 4
	var x []BlockQ8K
	for range nb {
		var b BlockQ8K
		b.D = 1
		for j := range b.Qs {
			b.Qs[j] = int8(rng.IntN(63) - 31)
		}
		for j := range b.Bsums {
			for _, q := range b.Qs[16*j : 16*j+16] {
				b.Bsums[j] += int16(q)
			}
		}
		x = append(x, b)
	}
	xf := dequantQ8K(x)
	exact := func(wf []float32) float32 {
		var s int64
		for i, v := range wf {
			s += int64(v) * int64(xf[i])
		}
		return float32(s)
	}
	t.Run("Q4_K", func(t *testing.T) {
		w := randomWeights(rng, nb, BlockQ4_KBytes)
		for b := range nb {
			blk := w[b*BlockQ4_KBytes:]
			putF16(blk, F32ToF16(1))
			putF16(blk[2:], F32ToF16(1))
			var ls, lm [8]uint8
			for j := range 8 {
				ls[j], lm[j] = uint8(rng.IntN(8)), uint8(rng.IntN(8))
			}
			packScalesK4(blk[4:16], &ls, &lm)
		}
		wf := make([]float32, nb*QK_K)
		DequantizeQ4K(w, wf)
		if got, want := DotQ4KQ8K(w, x), exact(wf); got != want {
			t.Errorf("got %g, want %g", got, want)
		}
	})
	t.Run("Q6_K", func(t *testing.T) {
		w := randomWeights(rng, nb, BlockQ6_KBytes)
		for b := range nb {
			blk := w[b*BlockQ6_KBytes:]
			putF16(blk[208:], F32ToF16(1))
			for j := 192; j < 208; j++ {
				blk[j] = byte(int8(rng.IntN(9) - 4))
			}
		}
		wf := make([]float32, nb*QK_K)
		DequantizeQ6K(w, wf)
		if got, want := DotQ6KQ8K(w, x), exact(wf); got != want {
			t.Errorf("got %g, want %g", got, want)
		}
	})
	t.Run("Q8_0", func(t *testing.T) {
		w := randomWeights(rng, nb*8, BlockQ8_0Bytes)
		x0 := make([]BlockQ8_0, nb*8)
		for b := range x0 {
			putF16(w[b*BlockQ8_0Bytes:], F32ToF16(1))
			x0[b].D = F32ToF16(1)
			for j := range x0[b].Qs {
				x0[b].Qs[j] = int8(rng.Uint32())
			}
		}
		wf := make([]float32, nb*QK_K)
		DequantizeQ8_0(w, wf)
		xf0 := dequantQ8_0(x0)
		var s int64
		for i, v := range wf {
			s += int64(v) * int64(xf0[i])
		}
		if got := DotQ8_0Q8_0(w, x0); got != float32(s) {
			t.Errorf("got %g, want %d", got, s)
		}
	})
}

// TestDotsEmpty checks that zero blocks give a zero dot.
func TestDotsEmpty(t *testing.T) {
	cases := []struct {
		name string
		got  float32
	}{
		{"Q8_0", DotQ8_0Q8_0(nil, nil)},
		{"Q4_K", DotQ4KQ8K(nil, nil)},
		{"Q6_K", DotQ6KQ8K(nil, nil)},
	}
	for _, c := range cases {
		if c.got != 0 || math.Signbit(float64(c.got)) {
			t.Errorf("%s: empty dot = %g, want +0", c.name, c.got)
		}
	}
}

func TestQuantizeRowQ8_1Act(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	src := randomActivations(rng, 64*QK8_1)
	// One block of exact ties (scale 1, values k+0.5), one all zero.
	src[0] = 127
	for k := 1; k < QK8_1; k++ {
		src[k] = float32(k-16) + 0.5
	}
	clear(src[QK8_1 : 2*QK8_1])
	act := make([]BlockQ8_1, len(src)/QK8_1)
	q80 := make([]BlockQ8_0, len(src)/QK8_1)
	ref := make([]BlockQ8_1, len(src)/QK8_1)
	QuantizeRowQ8_1Act(src, act)
	QuantizeRowQ8_0Act(src, q80)
	QuantizeRowQ8_1(src, ref)
	if act[1] != (BlockQ8_1{}) {
		t.Errorf("zero block: %+v", act[1])
	}
	ties := 0
	for i := range act {
		// The codes and scale are the Q8_0 activation quantizer's.
		if act[i].D != q80[i].D || act[i].Qs != q80[i].Qs {
			t.Fatalf("block %d: %+v, Q8_0 activation block %+v", i, act[i], q80[i])
		}
		var sum int32
		for _, q := range act[i].Qs {
			sum += int32(q)
		}
		amax := float32(0)
		for _, v := range src[QK8_1*i : QK8_1*(i+1)] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if want := F32ToF16(amax / 127 * float32(sum)); act[i].S != want {
			t.Errorf("block %d: S %#04x, want %#04x", i, act[i].S, want)
		}
		if act[i].Qs != ref[i].Qs {
			ties++
		}
	}
	// The tie block rounds differently from the reference quantizer.
	if ties == 0 {
		t.Error("no block differs from the reference quantizer: the tie block should")
	}
}

func TestQuantizeRowQ8_0Act(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	src := randomActivations(rng, 64*QK8_0)
	// One block of exact ties: scale 1 (max 127) and values k+0.5.
	src[0] = 127
	for k := 1; k < QK8_0; k++ {
		src[k] = float32(k-16) + 0.5
	}
	clear(src[QK8_0 : 2*QK8_0]) // an all-zero block
	act := make([]BlockQ8_0, len(src)/QK8_0)
	ref := make([]BlockQ8_0, len(src)/QK8_0)
	QuantizeRowQ8_0Act(src, act)
	QuantizeRowQ8_0(src, ref)
	for k := 1; k < QK8_0; k++ {
		want := int8(math.RoundToEven(float64(src[k])))
		if act[0].Qs[k] != want {
			t.Errorf("tie %g coded %d, want %d (ties to even)", src[k], act[0].Qs[k], want)
		}
		if away := int8(math.Round(float64(src[k]))); ref[0].Qs[k] != away {
			t.Errorf("reference tie %g coded %d, want %d (ties away)", src[k], ref[0].Qs[k], away)
		}
	}
	if act[1] != (BlockQ8_0{}) {
		t.Errorf("zero block: %+v", act[1])
	}
	nan := make([]float32, QK8_0)
	nan[5] = float32(math.NaN())
	var nb [1]BlockQ8_0
	QuantizeRowQ8_0Act(nan, nb[:])
	for j, q := range nb[0].Qs {
		if q != -128 {
			t.Fatalf("NaN block: code %d = %d, want -128", j, q)
		}
	}
	// A block of subnormals: 127/max|x| is +Inf, and every product
	// (±Inf, or NaN for a zero) converts to 0x80000000 on x86.
	sub := make([]float32, QK8_0)
	for j := range sub {
		sub[j] = float32(j-16) * 1e-40
	}
	QuantizeRowQ8_0Act(sub, nb[:])
	for j, q := range nb[0].Qs {
		if q != -128 {
			t.Fatalf("subnormal block: code %d = %d, want -128", j, q)
		}
	}
	for i := range act {
		if act[i].D != ref[i].D {
			t.Fatalf("block %d: scale %#04x, reference %#04x", i, act[i].D, ref[i].D)
		}
		for j := range act[i].Qs {
			if d := int(act[i].Qs[j]) - int(ref[i].Qs[j]); d < -1 || d > 1 {
				t.Fatalf("block %d value %d: code %d, reference %d", i, j, act[i].Qs[j], ref[i].Qs[j])
			}
		}
	}
}
