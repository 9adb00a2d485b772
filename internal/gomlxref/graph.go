package gomlxref

import (
	"math"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// constMatrix adds m to the graph as a [rows, cols] constant.
func constMatrix(g *graph.Graph, m matrix) *graph.Node {
	return graph.Const(g, tensors.FromFlatDataAndDimensions(m.data, m.rows, m.cols))
}

// constVector adds v to the graph as a [len(v)] constant.
func constVector(g *graph.Graph, v []float32) *graph.Node {
	return graph.Const(g, tensors.FromFlatDataAndDimensions(v, len(v)))
}

// linear returns x·Wᵀ for x [T, cols] and the rows × cols matrix w: the
// [T, rows] product GGUF's row-major weights define.
func linear(x *graph.Node, w matrix) *graph.Node {
	return graph.Einsum("tc,rc->tr", x, constMatrix(x.Graph(), w))
}

// rmsNorm returns x / sqrt(mean(x²) + eps) · gain over the last axis of
// x (any rank; gain has that axis' length).
func rmsNorm(x *graph.Node, gain []float32, eps float64) *graph.Node {
	ms := graph.ReduceAndKeep(graph.Square(x), graph.ReduceMean, -1)
	inv := graph.Rsqrt(graph.AddScalar(ms, eps))
	dims := make([]int, x.Rank())
	for i := range dims {
		dims[i] = 1
	}
	dims[len(dims)-1] = len(gain)
	return graph.Mul(graph.Mul(x, inv), graph.Reshape(constVector(x.Graph(), gain), dims...))
}

// addBias returns x [T, n] + bias, or x when bias is nil.
func addBias(x *graph.Node, bias []float32) *graph.Node {
	if bias == nil {
		return x
	}
	return graph.Add(x, graph.Reshape(constVector(x.Graph(), bias), 1, len(bias)))
}

// yarnCorrDims returns the first and last pair index (as ggml's float
// low and high) of YaRN's ramp: corr(n) = RopeDim·ln(origCtx/(2πn)) /
// (2·ln base) is the pair that turns n times over the original context;
// low = max(0, floor(corr(betaFast))), high = min(RopeDim-1,
// ceil(corr(betaSlow))).
func yarnCorrDims(c Config) (low, high float64) {
	corr := func(n float64) float64 {
		return float64(c.RopeDim) * math.Log(float64(c.YarnOrigCtx)/(n*2*math.Pi)) / (2 * math.Log(c.RopeBase))
	}
	return math.Max(0, math.Floor(corr(yarnBetaFast))), math.Min(float64(c.RopeDim-1), math.Ceil(corr(yarnBetaSlow)))
}

// ropeFreqs returns, for each rotated pair i, the angle per position in
// float64, and the magnitude cos and sin are multiplied by (attn_factor,
// with or without YaRN). The extrapolated angle per position is
// base^(-2i/RopeDim)/factors[i] (factors may be nil: all 1). Without YaRN
// the angle is that times RopeScale. With YaRN it is
// interpolated·(1-ramp) + extrapolated·ramp where interpolated =
// RopeScale·extrapolated and ramp(i) = 1 - clamp((i-low)/max(0.001,
// high-low), 0, 1) (ggml's i0/2 for the even index i0 is i), and the
// magnitude gains 1 + 0.1·ln(factor) for factor = 1/RopeScale > 1. For
// factors up to 1 it gains nothing: ggml's rope op multiplies by
// 1 + 0.1·ln(factor) whatever the factor, but llama.cpp since December
// 2025 divides attn_factor by that term and multiplies it by
// max(1, 1 + 0.1·ln(factor)) first (the February 2025 code did not).
func ropeFreqs(c Config, factors []float32) (freqs []float64, mscale float64) {
	half := c.RopeDim / 2
	freqs = make([]float64, half)
	mscale = c.RopeAttnFactor
	var low, high float64
	if c.YaRN {
		low, high = yarnCorrDims(c)
		if factor := 1 / c.RopeScale; factor > 1 {
			mscale *= 1 + 0.1*math.Log(factor)
		}
	}
	for i := range freqs {
		extrap := math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDim))
		if factors != nil {
			extrap /= float64(factors[i])
		}
		if !c.YaRN {
			freqs[i] = c.RopeScale * extrap
			continue
		}
		ramp := 1 - math.Min(1, math.Max(0, (float64(i)-low)/math.Max(0.001, high-low)))
		freqs[i] = c.RopeScale*extrap*(1-ramp) + extrap*ramp
	}
	return freqs, mscale
}

// ropeTables returns cos and sin of the rotation angles times the
// magnitude, [T, ropeDim/2] in float32: angle(p, i) = p·freqs[i] of
// ropeFreqs, computed in float64 before rounding.
func ropeTables(g *graph.Graph, T int, c Config, factors []float32) (cos, sin *graph.Node) {
	half := c.RopeDim / 2
	freqs, mscale := ropeFreqs(c, factors)
	pos := graph.Iota(g, shapes.Make(dtypes.Float64, T, 1), 0)
	angle := graph.Mul(pos, graph.Const(g, tensors.FromFlatDataAndDimensions(freqs, 1, half)))
	cos = graph.ConvertDType(graph.MulScalar(graph.Cos(angle), mscale), dtypes.Float32)
	sin = graph.ConvertDType(graph.MulScalar(graph.Sin(angle), mscale), dtypes.Float32)
	return cos, sin
}

// rope rotates the first c.RopeDim values of every head of x [T, H, D]
// by the angles of cos and sin [T, RopeDim/2]; the other values pass
// through. Adjacent values (2i, 2i+1) form a pair, or with c.NeoX values
// i and i+RopeDim/2.
func rope(x, cos, sin *graph.Node, c Config) *graph.Node {
	if c.RopeDim == 0 {
		return x
	}
	dims := x.Shape().Dimensions
	T, H, D, half := dims[0], dims[1], dims[2], c.RopeDim/2
	rot := graph.Slice(x, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, c.RopeDim))
	cs, sn := graph.Reshape(cos, T, 1, half), graph.Reshape(sin, T, 1, half)
	var a, b *graph.Node // the two members of every pair, [T, H, half]
	if c.NeoX {
		a = graph.Slice(rot, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(0, half))
		b = graph.Slice(rot, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(half))
	} else {
		pairs := graph.Reshape(rot, T, H, half, 2)
		a = graph.Reshape(graph.Slice(pairs, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(), graph.AxisElem(0)), T, H, half)
		b = graph.Reshape(graph.Slice(pairs, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(), graph.AxisElem(1)), T, H, half)
	}
	ra := graph.Sub(graph.Mul(a, cs), graph.Mul(b, sn))
	rb := graph.Add(graph.Mul(a, sn), graph.Mul(b, cs))
	if c.NeoX {
		rot = graph.Concatenate([]*graph.Node{ra, rb}, -1)
	} else {
		rot = graph.Reshape(graph.Stack([]*graph.Node{ra, rb}, -1), T, H, c.RopeDim)
	}
	if c.RopeDim == D {
		return rot
	}
	return graph.Concatenate([]*graph.Node{rot, graph.Slice(x, graph.AxisRange(), graph.AxisRange(), graph.AxisRange(c.RopeDim))}, -1)
}

// attention returns causal grouped-query attention over the whole
// sequence, scores scaled by c.AttnScale: q [T, NHead, D], k and v [T, NHeadKV, D]; query head h reads
// KV head h/(NHead/NHeadKV). The result is [T, NHead·D].
func attention(q, k, v *graph.Node, c Config) *graph.Node {
	g := q.Graph()
	T, D := q.Shape().Dimensions[0], c.HeadDim
	group := c.NHead / c.NHeadKV
	qg := graph.Reshape(q, T, c.NHeadKV, group, D)
	scores := graph.MulScalar(graph.Einsum("ikgd,jkd->kgij", qg, k), c.AttnScale)
	causal := graph.GreaterOrEqual(graph.Iota(g, shapes.Make(dtypes.Int32, T, T), 0), graph.Iota(g, shapes.Make(dtypes.Int32, T, T), 1))
	causal = graph.BroadcastToDims(graph.Reshape(causal, 1, 1, T, T), c.NHeadKV, group, T, T)
	scores = graph.Where(causal, scores, graph.Infinity(g, dtypes.Float32, -1))
	e := graph.Exp(graph.Sub(scores, graph.ReduceAndKeep(scores, graph.ReduceMax, -1)))
	p := graph.Div(e, graph.ReduceAndKeep(e, graph.ReduceSum, -1))
	out := graph.Einsum("kgij,jkd->ikgd", p, v)
	return graph.Reshape(out, T, c.NHead*D)
}

// block returns x [T, E] after transformer block ly: pre-norm attention
// (biases after the projections when present, per-head Q/K RMSNorm before
// RoPE when present) and pre-norm SwiGLU, each output times
// ResidualScale before its residual addition.
func block(x *graph.Node, ly *layer, cos, sin *graph.Node, c Config) *graph.Node {
	T := x.Shape().Dimensions[0]
	xn := rmsNorm(x, ly.attnNorm, c.RMSEps)
	q := graph.Reshape(addBias(linear(xn, ly.q), ly.bq), T, c.NHead, c.HeadDim)
	k := graph.Reshape(addBias(linear(xn, ly.k), ly.bk), T, c.NHeadKV, c.HeadDim)
	v := graph.Reshape(addBias(linear(xn, ly.v), ly.bv), T, c.NHeadKV, c.HeadDim)
	if ly.qNorm != nil {
		q = rmsNorm(q, ly.qNorm, c.RMSEps)
	}
	if ly.kNorm != nil {
		k = rmsNorm(k, ly.kNorm, c.RMSEps)
	}
	q, k = rope(q, cos, sin, c), rope(k, cos, sin, c)
	att := addBias(linear(attention(q, k, v, c), ly.o), ly.bo)
	x = graph.Add(x, scaled(att, c.ResidualScale))
	xn = rmsNorm(x, ly.ffnNorm, c.RMSEps)
	gate := linear(xn, ly.gate)
	ff := graph.Mul(graph.Mul(gate, graph.Logistic(gate)), linear(xn, ly.up))
	return graph.Add(x, scaled(linear(ff, ly.down), c.ResidualScale))
}

// scaled returns x·s, or x itself when s is 1.
func scaled(x *graph.Node, s float64) *graph.Node {
	if s == 1 {
		return x
	}
	return graph.MulScalar(x, s)
}

// forward returns the logits [T, NVocab] of tokens [T] (int32).
func forward(tokens *graph.Node, w *weights, c Config) *graph.Node {
	g := tokens.Graph()
	T := tokens.Shape().Dimensions[0]
	x := scaled(graph.Gather(constMatrix(g, w.embed), graph.Reshape(tokens, T, 1)), c.EmbedScale)
	if c.NoRope {
		c.RopeDim = 0 // rope passes every value through
	}
	var cos, sin *graph.Node
	if c.RopeDim > 0 {
		cos, sin = ropeTables(g, T, c, w.ropeFactors)
	}
	for i := range w.layers {
		x = block(x, &w.layers[i], cos, sin, c)
	}
	return scaled(linear(rmsNorm(x, w.outputNorm, c.RMSEps), w.output), 1/c.LogitScale)
}
