package kernels

import "math"

// Constants of expf: the range limits, log2(e), ln(2) split in two for an
// exact reduction, and the minimax polynomial of e^r on [-ln2/2, ln2/2]
// (the Cephes expf coefficients).
const (
	expHi   = 88.72283905206835 // above: +Inf
	expLo   = -86.9             // below: 0 (results under ~1.8e-38 flush)
	expLog2 = 1.44269504088896341
	expC1   = 0.693359375
	expC2   = -2.12194440e-4
	expP0   = 1.9875691500e-4
	expP1   = 1.3981999507e-3
	expP2   = 8.3334519073e-3
	expP3   = 4.1665795894e-2
	expP4   = 1.6666665459e-1
	expP5   = 5.0000001201e-1
)

// expf returns e^x in float32 within about 1 ulp (2 at worst) of the
// correctly rounded value: +Inf above 88.72, NaN for NaN, and 0 below
// -86.9, where the result would be close to the smallest normal float32.
// Every operation is rounded to float32 (no fused multiply-add).
func expf(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > expHi:
		return float32(math.Inf(1))
	case x < expLo:
		return 0
	}
	n := float32(math.RoundToEven(float64(float32(x * expLog2))))
	r := float32(x - float32(n*expC1))
	r = float32(r - float32(n*expC2))
	p := float32(float32(expP0*r) + expP1)
	p = float32(float32(p*r) + expP2)
	p = float32(float32(p*r) + expP3)
	p = float32(float32(p*r) + expP4)
	p = float32(float32(p*r) + expP5)
	rr := float32(r * r)
	p = float32(float32(float32(p*rr)+r) + 1)
	scale := math.Float32frombits(uint32(int32(n)+126) << 23) // 2^(n-1)
	return float32(p*scale) * 2
}

// ExpSub sets x[i] = e^(x[i]-m), each value as expf gives it (within
// about an ulp; -Inf and anything more than 86.9 below m give 0), and
// returns their sum accumulated in float64. The values are bit-identical
// on every path (assembly or Go); the sum's order is not (eight lanes on
// the assembly paths), so a caller that needs the same total everywhere
// adds the values itself. NaN inputs give NaN: the caller removes them.
func ExpSub(x []float32, m float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return dispatch.tab.expSubSum(x, m)
}
