package quant

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The straightforward transcriptions of ggml's reference dot products,
// one value at a time in ggml's loop order. The exported dots restructure
// the integer sums (which is exact) for speed; TestDotsMatchSimple checks
// that they return the same bits.
func simpleDotQ8_0Q8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockQ8_0Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ8_0Bytes*i : BlockQ8_0Bytes*(i+1)]
		q := blk[2 : 2+QK8_0]
		var isum int32
		for j, a := range x[i].Qs {
			isum += int32(int8(q[j])) * int32(a)
		}
		dd := f16(blk) * F16ToF32(x[i].D)
		sum += float32(float32(isum) * dd)
	}
	return sum
}

func simpleDotQ4KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ4_KBytes*len(x)]
	var lanes [8]float32
	var sum float32
	for i := range x {
		blk := w[BlockQ4_KBytes*i : BlockQ4_KBytes*(i+1)]
		scales, qs := blk[4:16], blk[16:144]
		q8 := &x[i].Qs
		var acc [8]int32
		var mins int32
		for j := range 8 {
			sc, m := ScaleMinK4(j, scales)
			mins += int32(x[i].Bsums[2*j])*int32(m) + int32(x[i].Bsums[2*j+1])*int32(m)
			q := qs[32*(j/2) : 32*(j/2)+32]
			shift := 4 * uint(j&1)
			for k := range 32 {
				p := int32(int16(q[k]>>shift&0xf) * int16(q8[32*j+k]))
				acc[k%8] += int32(sc) * p
			}
		}
		d := float32(f16(blk[0:]) * x[i].D)
		for l := range lanes {
			lanes[l] += float32(d * float32(acc[l]))
		}
		dmin := float32(f16(blk[2:]) * x[i].D)
		sum -= float32(dmin * float32(mins))
	}
	for _, v := range lanes {
		sum += v
	}
	return sum
}

func simpleDotQ6KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ6_KBytes*len(x)]
	var lanes [8]float32
	for i := range x {
		blk := w[BlockQ6_KBytes*i : BlockQ6_KBytes*(i+1)]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		q8 := &x[i].Qs
		var acc [8]int32
		for k := range QK_K {
			c := int16(Q6KCode(ql, qh, k)) - 32
			p := int32(c * int16(q8[k]))
			acc[k%8] += int32(int8(sc[k/16])) * p
		}
		d := float32(f16(blk[208:]) * x[i].D)
		for l := range lanes {
			lanes[l] += float32(d * float32(acc[l]))
		}
	}
	var sum float32
	for _, v := range lanes {
		sum += v
	}
	return sum
}

func TestDotsMatchSimple(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for iter := range 300 {
		nb := 1 + iter%9
		xk := make([]BlockQ8K, nb)
		for i := range xk {
			if iter%3 == 0 {
				QuantizeRowQ8K(randomActivations(rng, QK_K), xk[i:i+1])
				continue
			}
			// Arbitrary codes, scales and bsums: the dots must agree on
			// any input, consistent or not.
			xk[i].D = float32(rng.NormFloat64())
			for j := range xk[i].Qs {
				xk[i].Qs[j] = int8(rng.Uint32())
			}
			for j := range xk[i].Bsums {
				xk[i].Bsums[j] = int16(rng.Uint32())
			}
		}
		x0 := make([]BlockQ8_0, nb*8)
		for i := range x0 {
			x0[i].D = uint16(rng.Uint32())
			for j := range x0[i].Qs {
				x0[i].Qs[j] = int8(rng.Uint32())
			}
		}
		rb := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return b
		}
		w8, w4, w6 := rb(nb*8*BlockQ8_0Bytes), rb(nb*BlockQ4_KBytes), rb(nb*BlockQ6_KBytes)
		cases := []struct {
			name      string
			got, want float32
		}{
			{"Q8_0", DotQ8_0Q8_0(w8, x0), simpleDotQ8_0Q8_0(w8, x0)},
			{"Q4_K", DotQ4KQ8K(w4, xk), simpleDotQ4KQ8K(w4, xk)},
			{"Q6_K", DotQ6KQ8K(w6, xk), simpleDotQ6KQ8K(w6, xk)},
		}
		for _, c := range cases {
			if !sameDot(c.got, c.want) {
				t.Fatalf("%s, %d blocks (iteration %d): %g (%#08x), simple %g (%#08x)", c.name, nb, iter,
					c.got, math.Float32bits(c.got), c.want, math.Float32bits(c.want))
			}
		}
	}
}

// sameDot reports whether two dot products are the same float32. Any two
// NaNs match: which NaN operand's payload an addition propagates depends on
// the operand order the compiler picks and on the architecture.
func sameDot(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}
