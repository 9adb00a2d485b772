package sample

import "math"

// expTable holds 2^(j/256) for j in 0..255, the table of exp below.
var expTable = func() (t [256]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 256)
	}
	return t
}()

// Constants of exp: 256/ln 2, and ln 2/256 split in a high part with
// trailing zero bits (so k times it is exact) and the rest.
const (
	expScale = 369.3299304675746 // 256 / ln 2
	expLn2Hi = 0.002707605715841055
	expLn2Lo = 4.582212314485292e-10
)

// exp returns e^d for d <= 0 to within a few units of 1e-16 relative, in
// a few nanoseconds: math.Exp is most of the cost of weighing a whole
// vocabulary. It is plain float64 arithmetic with explicit roundings (no
// fused multiply-add), so it gives the same bits on every platform and a
// seed the same tokens. Below -700 it returns 0 (a fixed-point weight is
// zero long before).
func exp(d float64) float64 {
	if !(d > -700) {
		return 0
	}
	k := math.Round(float64(d * expScale))
	r := float64(d - float64(k*expLn2Hi))
	r = float64(r - float64(k*expLn2Lo))
	// e^r for |r| <= ln2/512: Taylor to r^4, truncation below 4e-17.
	p := float64(float64(float64(float64(r*(1.0/24))+1.0/6)*r) + 0.5)
	p = float64(float64(float64(p*r)+1)*r) + 1
	ki := int64(k)
	t := expTable[ki&255]
	// 2^(k>>8) times t, by adding to the exponent field (no underflow:
	// k>>8 >= -1010 here and t is in [1, 2)).
	scaled := math.Float64frombits(uint64(int64(math.Float64bits(t)) + (ki>>8)<<52))
	return float64(scaled * p)
}
