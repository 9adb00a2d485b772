package kernels

import (
	"errors"
	"fmt"
	"math"
)

// RopeParams describe a model's rotary position embedding.
type RopeParams struct {
	Dim        int       // rotated values at the start of each head (even; 0: none)
	NeoX       bool      // rotate (x[i], x[i+Dim/2]) instead of adjacent pairs
	Base       float32   // freq_base: pair i turns by pos·Base^(-2i/Dim)
	FreqScale  float32   // position multiplier, 1/factor (0: 1)
	ExtFactor  float32   // YaRN's extrapolation mix (0: plain interpolation)
	AttnFactor float32   // multiplies cos and sin (0: 1)
	OrigCtx    int       // YaRN's original context length
	BetaFast   float32   // YaRN's beta_fast (llama.cpp: 32)
	BetaSlow   float32   // YaRN's beta_slow (llama.cpp: 1)
	Factors    []float32 // per-pair frequency divisors (Llama 3's rope_freqs.weight), or nil
}

// Rope is a rotary position embedding as ggml's rope computes it: the
// angle of pair i at position p is p·theta_scale^i from the float32
// recurrence theta *= theta_scale, divided by the pair's frequency
// factor, then scaled as ggml's rope_yarn does (linear interpolation by
// FreqScale, and with ExtFactor the ramp between interpolation and
// extrapolation over YaRN's correction dimensions and the magnitude
// 1 + 0.1·ln(1/FreqScale)); the rotation fuses x0·cos and x0·sin into
// the other product's sum, as the compiled C does. It is the engine's
// only RoPE. A Rope keeps no state between calls: several goroutines may
// use one.
type Rope struct {
	p          RopeParams
	thetaScale float32
	corr       [2]float32
}

// ErrRope is wrapped by NewRope's errors.
var ErrRope = errors.New("kernels: bad rope parameters")

// NewRope checks p and derives what ggml derives once per graph.
func NewRope(p RopeParams) (*Rope, error) {
	if p.FreqScale == 0 {
		p.FreqScale = 1
	}
	if p.AttnFactor == 0 {
		p.AttnFactor = 1
	}
	switch {
	case p.Dim < 0 || p.Dim%2 != 0:
		return nil, fmt.Errorf("%w: dimension %d", ErrRope, p.Dim)
	case p.Factors != nil && len(p.Factors) < p.Dim/2:
		return nil, fmt.Errorf("%w: %d frequency factors for %d pairs", ErrRope, len(p.Factors), p.Dim/2)
	case p.Dim > 0 && !(p.Base > 0):
		return nil, fmt.Errorf("%w: base %g", ErrRope, p.Base)
	case !(p.FreqScale > 0):
		return nil, fmt.Errorf("%w: frequency scale %g", ErrRope, p.FreqScale)
	}
	r := &Rope{p: p}
	if p.Dim == 0 {
		return r, nil
	}
	r.thetaScale = float32(math.Pow(float64(p.Base), float64(float32(-2)/float32(p.Dim))))
	// ggml_rope_yarn_corr_dims, in float32 as ggml computes it.
	corrDim := func(nRot float32) float32 {
		return float32(p.Dim) * logf(float32(p.OrigCtx)/(nRot*2*float32(math.Pi))) / (2 * logf(p.Base))
	}
	start := float32(math.Floor(float64(corrDim(p.BetaFast))))
	end := float32(math.Ceil(float64(corrDim(p.BetaSlow))))
	r.corr = [2]float32{max(0, start), min(float32(p.Dim-1), end)}
	return r, nil
}

// Params returns the parameters r was made from (FreqScale and
// AttnFactor with their defaults filled in).
func (r *Rope) Params() RopeParams { return r.p }

// Dim returns the rotated values per head.
func (r *Rope) Dim() int { return r.p.Dim }

// logf is the float32 natural logarithm.
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// fma32 is a float32 fused multiply-add (a*b is exact in float64).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// cosSin returns the scaled cosine and sine of pair i at the unscaled
// angle theta, as ggml's rope_yarn.
func (r *Rope) cosSin(theta float32, i int) (float32, float32) {
	p := &r.p
	extrap := theta
	if p.Factors != nil {
		extrap = theta / p.Factors[i]
	}
	interp := p.FreqScale * extrap
	t, mscale := interp, p.AttnFactor
	if p.ExtFactor != 0 {
		y := (float32(i) - r.corr[0]) / max(0.001, r.corr[1]-r.corr[0])
		// The float32 conversions round each product before it is added
		// or subtracted: Go may fuse a*b+c into one multiply-add, even
		// across statements (arm64 does, amd64 never), which would make
		// the angles differ by architecture. The rotation in Apply fuses
		// on purpose, explicitly, as ggml does.
		ramp := float32((1 - min(1, max(0, y))) * p.ExtFactor)
		t = float32(interp*(1-ramp)) + float32(extrap*ramp)
		mscale *= 1 + float32(0.1*logf(1/p.FreqScale))
	}
	return float32(math.Cos(float64(t))) * mscale, float32(math.Sin(float64(t))) * mscale
}

// Apply rotates, in place, the first Dim values of each of the nHeads
// heads of x (headDim values each) for position pos. It panics if
// len(x) != nHeads*headDim or Dim > headDim.
func (r *Rope) Apply(x []float32, nHeads, headDim, pos int) {
	if nHeads < 0 || headDim < 0 || len(x) != nHeads*headDim || r.p.Dim > headDim {
		panic("kernels: Rope.Apply: bad shape")
	}
	half := r.p.Dim / 2
	theta := float32(pos)
	for i := range half {
		c, s := r.cosSin(theta, i)
		for h := range nHeads {
			a, b := h*headDim+2*i, h*headDim+2*i+1
			if r.p.NeoX {
				a, b = h*headDim+i, h*headDim+i+half
			}
			x0, x1 := x[a], x[b]
			x[a] = fma32(x0, c, -(x1 * s))
			x[b] = fma32(x0, s, x1*c)
		}
		theta *= r.thetaScale
	}
}
