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

// expRound is 1.5 * 2^52: adding and subtracting it rounds a float64 of
// magnitude below 2^51 to an integer (ties to even), the cheap way.
const expRound = 1 << 52 * 1.5

// exp returns e^d for d in (-700, 0] to within 1e-13 relative (far below
// the float32 rounding of the softmax it stands in for), in a few
// nanoseconds: math.Exp is most of the cost of weighing a whole
// vocabulary. It is plain float64 arithmetic with explicit roundings (no
// fused multiply-add), so it gives the same bits on every platform and a
// seed the same tokens. The caller keeps d in range.
func exp(d float64) float64 {
	k := float64(float64(d*expScale)+expRound) - expRound
	r := float64(d - float64(k*expLn2Hi))
	r = float64(r - float64(k*expLn2Lo))
	// e^r for |r| <= ln2/512: Taylor to r^3 as 1 + r + r^2 (1/2 + r/6),
	// truncation below 1.5e-13.
	p := float64(r+1) + float64(float64(r*r)*float64(float64(r*(1.0/6))+0.5)) // a short dependency chain
	ki := int64(k)
	return float64(math.Float64frombits(uint64(int64(math.Float64bits(expTable[ki&255]))+(ki>>8)<<52)) * p)
}
