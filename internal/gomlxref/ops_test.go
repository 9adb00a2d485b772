package gomlxref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// run1 executes fn on float32 inputs of the given dimensions and returns
// the flat result.
func run1(tb testing.TB, fn func([]*graph.Node) *graph.Node, ins ...*tensors.Tensor) []float32 {
	tb.Helper()
	b, err := simplego.New("")
	if err != nil {
		tb.Fatal(err)
	}
	e, err := graph.NewExec(b, fn)
	if err != nil {
		tb.Fatal(err)
	}
	defer e.Finalize()
	args := make([]any, len(ins))
	for i, t := range ins {
		args[i] = t
	}
	out, err := e.Exec1(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out)
}

func randVals(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// loopRope rotates x [T, H, D] in place in float64 the way ggml's rope
// op does, written out per position and pair: the extrapolated angle
// t·base^(-2i/RopeDim)/factor, the interpolated one RopeScale times it,
// YaRN's ramp between them and its magnitude; pairs (2i, 2i+1) or, for
// NeoX, (i, i+RopeDim/2).
func loopRope(x []float32, T, H, D int, c Config, factors []float32) {
	half := c.RopeDim / 2
	for t := range T {
		for h := range H {
			row := x[(t*H+h)*D : (t*H+h+1)*D]
			for i := range half {
				extrap := float64(t) * math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDim))
				if factors != nil {
					extrap /= float64(factors[i])
				}
				interp := c.RopeScale * extrap
				ang, mag := interp, c.RopeAttnFactor
				if c.YaRN {
					dim := func(rot float64) float64 {
						return float64(c.RopeDim) * math.Log(float64(c.YarnOrigCtx)/(rot*2*math.Pi)) / (2 * math.Log(c.RopeBase))
					}
					low := math.Max(0, math.Floor(dim(32)))
					high := math.Min(float64(c.RopeDim-1), math.Ceil(dim(1)))
					y := (float64((2*i)/2) - low) / math.Max(0.001, high-low)
					ramp := 1 - math.Min(1, math.Max(0, y))
					ang = interp*(1-ramp) + extrap*ramp
					// ggml's term, then current llama.cpp's
					// attn_factor: divided by that term, times
					// max(1, 1 + 0.1·ln(factor)).
					factor := 1 / c.RopeScale
					ggmlTerm := 1 + 0.1*math.Log(1/c.RopeScale)
					mag *= ggmlTerm / (1 + 0.1*math.Log(factor)) * math.Max(1, 1+0.1*math.Log(factor))
				}
				ia, ib := 2*i, 2*i+1
				if c.NeoX {
					ia, ib = i, i+half
				}
				a, b := float64(row[ia]), float64(row[ib])
				cs, sn := math.Cos(ang)*mag, math.Sin(ang)*mag
				row[ia] = float32(a*cs - b*sn)
				row[ib] = float32(a*sn + b*cs)
			}
		}
	}
}

// TestRopeGraph checks the graph's RoPE against loopRope: both pairings,
// partial and full width, linear scaling, rope factors, YaRN with its
// ramp inside and at the edges of the pairs, attn_factor with and
// without YaRN.
func TestRopeGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	factors := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(1 + 7*r.Float64())
		}
		return v
	}
	for _, tc := range []struct {
		H, D, ropeDim int
		neox          bool
		base, scale   float64
		yarn          bool
		orig          int
		attn          float64
		factors       []float32
	}{
		{H: 3, D: 8, ropeDim: 8, base: 10000, scale: 1}, {H: 3, D: 8, ropeDim: 8, neox: true, base: 10000, scale: 1},
		{H: 5, D: 10, ropeDim: 4, base: 500000, scale: 0.25}, {H: 5, D: 10, ropeDim: 4, neox: true, base: 500000, scale: 0.25},
		{H: 2, D: 6, ropeDim: 2, neox: true, base: 100, scale: 2}, {H: 1, D: 12, ropeDim: 0, base: 10000, scale: 1},
		{H: 2, D: 16, ropeDim: 16, base: 500000, scale: 1, factors: factors(8)},
		{H: 2, D: 16, ropeDim: 12, neox: true, base: 10000, scale: 0.5, attn: 1.3, factors: factors(6)},
		{H: 3, D: 16, ropeDim: 16, base: 10000, scale: 0.25, yarn: true, orig: 4096},
		{H: 3, D: 16, ropeDim: 16, neox: true, base: 100, scale: 0.125, yarn: true, orig: 64, attn: 0.8},
		{H: 2, D: 12, ropeDim: 8, neox: true, base: 1e6, scale: 1.0 / 32, yarn: true, orig: 1 << 20},
		{H: 2, D: 8, ropeDim: 8, base: 10000, scale: 0.5, yarn: true, orig: 32768, factors: factors(4)},
		{H: 2, D: 8, ropeDim: 8, neox: true, base: 10000, scale: 2, yarn: true, orig: 4096}, // factor 0.5: no magnitude
	} {
		name := fmt.Sprintf("H%d_D%d_rd%d_neox%v_scale%g_yarn%v_orig%d_af%g_factors%v", tc.H, tc.D, tc.ropeDim, tc.neox,
			tc.scale, tc.yarn, tc.orig, tc.attn, tc.factors != nil)
		t.Run(name, func(t *testing.T) {
			const T = 11
			c := Config{RopeDim: tc.ropeDim, NeoX: tc.neox, RopeBase: tc.base, RopeScale: tc.scale, YaRN: tc.yarn,
				YarnOrigCtx: tc.orig, RopeAttnFactor: 1}
			if tc.attn != 0 {
				c.RopeAttnFactor = tc.attn
			}
			x := randVals(r, T*tc.H*tc.D)
			got := run1(t, func(in []*graph.Node) *graph.Node {
				if c.RopeDim == 0 {
					return rope(in[0], nil, nil, c)
				}
				cos, sin := ropeTables(in[0].Graph(), T, c, tc.factors)
				return rope(in[0], cos, sin, c)
			}, tensors.FromFlatDataAndDimensions(append([]float32(nil), x...), T, tc.H, tc.D))
			loopRope(x, T, tc.H, tc.D, c, tc.factors)
			if d := maxDeviation([][]float32{got}, [][]float32{x}); d > 1e-5 {
				t.Errorf("max |Δ| %.3g against the loop", d)
			}
		})
	}
}

// TestYarnCorrDims checks the ramp's end pairs against values worked out
// by hand from corr(n) = d·ln(orig/(2πn))/(2·ln base): Llama-like 128-wide
// heads, Qwen2.5's base and original context, the clamp to 0 below and to
// RopeDim-1 above.
func TestYarnCorrDims(t *testing.T) {
	for _, tc := range []struct {
		ropeDim, orig int
		base          float64
		low, high     float64
	}{
		{128, 4096, 10000, 20, 46},   // corr(32) = 20.94, corr(1) = 45.03
		{128, 32768, 1e6, 23, 40},    // 23.60, 39.65
		{16, 64, 100, 0, 5},          // -1.99, 4.03
		{4, 1 << 30, 10000, 3, 3},    // 3.36, 4.12
		{16, 4096, 10000, 2, 6},      // 2.62, 5.63
		{64, 131072, 500000, 15, 25}, // 15.80, 24.25
	} {
		c := Config{RopeDim: tc.ropeDim, YarnOrigCtx: tc.orig, RopeBase: tc.base}
		low, high := yarnCorrDims(c)
		if low != tc.low || high != tc.high {
			t.Errorf("RopeDim %d, orig %d, base %g: corr dims (%g, %g), want (%g, %g)", tc.ropeDim, tc.orig, tc.base, low, high, tc.low, tc.high)
		}
	}
}

// loopAttention is causal grouped-query attention in float64 for q
// [T, H, D] and k, v [T, KV, D], scores scaled by scale.
func loopAttention(q, k, v []float32, T, H, KV, D int, scale float64) []float32 {
	out := make([]float32, T*H*D)
	for i := range T {
		for h := range H {
			g := h / (H / KV)
			w := make([]float64, i+1)
			mx := math.Inf(-1)
			for j := range w {
				var s float64
				for d := range D {
					s += float64(q[(i*H+h)*D+d]) * float64(k[(j*KV+g)*D+d])
				}
				w[j] = s * scale
				mx = math.Max(mx, w[j])
			}
			var sum float64
			for j := range w {
				w[j] = math.Exp(w[j] - mx)
				sum += w[j]
			}
			for d := range D {
				var acc float64
				for j := range w {
					acc += w[j] / sum * float64(v[(j*KV+g)*D+d])
				}
				out[(i*H+h)*D+d] = float32(acc)
			}
		}
	}
	return out
}

// TestAttentionGraph checks the graph's causal GQA attention against
// loopAttention for group sizes 1, 2, 4 and 8, with the default scale
// 1/sqrt(D) and granite-like explicit ones.
func TestAttentionGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		H, KV, D int
		scale    float64
	}{{3, 3, 4, 0}, {6, 3, 6, 0}, {4, 1, 8, 0}, {8, 1, 4, 0}, {12, 3, 2, 0}, {6, 3, 8, 0.0078125}, {4, 2, 4, 2}} {
		t.Run(fmt.Sprintf("H%d_KV%d_D%d_scale%g", tc.H, tc.KV, tc.D, tc.scale), func(t *testing.T) {
			const T = 9
			c := Config{NHead: tc.H, NHeadKV: tc.KV, HeadDim: tc.D, AttnScale: tc.scale}
			if tc.scale == 0 {
				c.AttnScale = 1 / math.Sqrt(float64(tc.D))
			}
			q, k, v := randVals(r, T*tc.H*tc.D), randVals(r, T*tc.KV*tc.D), randVals(r, T*tc.KV*tc.D)
			got := run1(t, func(in []*graph.Node) *graph.Node { return attention(in[0], in[1], in[2], c) },
				tensors.FromFlatDataAndDimensions(q, T, tc.H, tc.D),
				tensors.FromFlatDataAndDimensions(k, T, tc.KV, tc.D),
				tensors.FromFlatDataAndDimensions(v, T, tc.KV, tc.D))
			want := loopAttention(q, k, v, T, tc.H, tc.KV, tc.D, c.AttnScale)
			if d := maxDeviation([][]float32{got}, [][]float32{want}); d > 1e-5 {
				t.Errorf("max |Δ| %.3g against the loop", d)
			}
		})
	}
}

// TestRMSNormGraph checks rmsNorm against a float64 loop.
func TestRMSNormGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const T, E, eps = 5, 37, 1e-5
	x, gain := randVals(r, T*E), randVals(r, E)
	got := run1(t, func(in []*graph.Node) *graph.Node { return rmsNorm(in[0], gain, eps) },
		tensors.FromFlatDataAndDimensions(x, T, E))
	want := make([]float32, T*E)
	for i := range T {
		var ss float64
		for _, v := range x[i*E : (i+1)*E] {
			ss += float64(v) * float64(v)
		}
		sc := 1 / math.Sqrt(ss/E+eps)
		for j := range E {
			want[i*E+j] = float32(float64(x[i*E+j]) * sc * float64(gain[j]))
		}
	}
	if d := maxDeviation([][]float32{got}, [][]float32{want}); d > 1e-5 {
		t.Errorf("max |Δ| %.3g against the loop", d)
	}
}

// TestForwardCausal checks that a position's logits do not depend on the
// tokens after it: every prefix of a sequence, down to one token, gives
// the rows of the whole sequence.
func TestForwardCausal(t *testing.T) {
	m, err := Load(mutationSpec.file(t))
	if err != nil {
		t.Fatal(err)
	}
	tokens := []int32{5, 17, 3, 96, 0, 41, 41, 8}
	whole, err := m.Forward(tokens)
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(tokens); n++ {
		part, err := m.Forward(tokens[:n])
		if err != nil {
			t.Fatal(err)
		}
		if d := maxDeviation(part, whole[:n]); d > 1e-5 {
			t.Errorf("prefix of %d: max |Δlogit| %.3g against the whole sequence", n, d)
		}
	}
}
