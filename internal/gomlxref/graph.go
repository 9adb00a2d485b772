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
// x [T, E].
func rmsNorm(x *graph.Node, gain []float32, eps float64) *graph.Node {
	ms := graph.ReduceAndKeep(graph.Square(x), graph.ReduceMean, -1)
	inv := graph.Rsqrt(graph.AddScalar(ms, eps))
	return graph.Mul(graph.Mul(x, inv), graph.Reshape(constVector(x.Graph(), gain), 1, len(gain)))
}

// ropeTables returns cos and sin of the rotation angles, [T, ropeDim/2]
// in float32: angle(p, i) = p·scale·base^(-2i/ropeDim), computed in
// float64 before rounding.
func ropeTables(g *graph.Graph, T int, c Config) (cos, sin *graph.Node) {
	half := c.RopeDim / 2
	pos := graph.MulScalar(graph.Iota(g, shapes.Make(dtypes.Float64, T, half), 0), c.RopeScale)
	i := graph.Iota(g, shapes.Make(dtypes.Float64, T, half), 1)
	freq := graph.Pow(graph.Scalar(g, dtypes.Float64, c.RopeBase), graph.MulScalar(i, -2/float64(c.RopeDim)))
	angle := graph.Mul(pos, freq)
	return graph.ConvertDType(graph.Cos(angle), dtypes.Float32), graph.ConvertDType(graph.Sin(angle), dtypes.Float32)
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
// sequence: q [T, NHead, D], k and v [T, NHeadKV, D]; query head h reads
// KV head h/(NHead/NHeadKV). The result is [T, NHead·D].
func attention(q, k, v *graph.Node, c Config) *graph.Node {
	g := q.Graph()
	T, D := q.Shape().Dimensions[0], c.HeadDim
	group := c.NHead / c.NHeadKV
	qg := graph.Reshape(q, T, c.NHeadKV, group, D)
	scores := graph.MulScalar(graph.Einsum("ikgd,jkd->kgij", qg, k), 1/math.Sqrt(float64(D)))
	causal := graph.GreaterOrEqual(graph.Iota(g, shapes.Make(dtypes.Int32, T, T), 0), graph.Iota(g, shapes.Make(dtypes.Int32, T, T), 1))
	causal = graph.BroadcastToDims(graph.Reshape(causal, 1, 1, T, T), c.NHeadKV, group, T, T)
	scores = graph.Where(causal, scores, graph.Infinity(g, dtypes.Float32, -1))
	e := graph.Exp(graph.Sub(scores, graph.ReduceAndKeep(scores, graph.ReduceMax, -1)))
	p := graph.Div(e, graph.ReduceAndKeep(e, graph.ReduceSum, -1))
	out := graph.Einsum("kgij,jkd->ikgd", p, v)
	return graph.Reshape(out, T, c.NHead*D)
}

// block returns x [T, E] after transformer block ly.
func block(x *graph.Node, ly *layer, cos, sin *graph.Node, c Config) *graph.Node {
	T := x.Shape().Dimensions[0]
	xn := rmsNorm(x, ly.attnNorm, c.RMSEps)
	q := rope(graph.Reshape(linear(xn, ly.q), T, c.NHead, c.HeadDim), cos, sin, c)
	k := rope(graph.Reshape(linear(xn, ly.k), T, c.NHeadKV, c.HeadDim), cos, sin, c)
	v := graph.Reshape(linear(xn, ly.v), T, c.NHeadKV, c.HeadDim)
	x = graph.Add(x, linear(attention(q, k, v, c), ly.o))
	xn = rmsNorm(x, ly.ffnNorm, c.RMSEps)
	gate := linear(xn, ly.gate)
	ff := graph.Mul(graph.Mul(gate, graph.Logistic(gate)), linear(xn, ly.up))
	return graph.Add(x, linear(ff, ly.down))
}

// forward returns the logits [T, NVocab] of tokens [T] (int32).
func forward(tokens *graph.Node, w *weights, c Config) *graph.Node {
	g := tokens.Graph()
	T := tokens.Shape().Dimensions[0]
	x := graph.Gather(constMatrix(g, w.embed), graph.Reshape(tokens, T, 1))
	var cos, sin *graph.Node
	if c.RopeDim > 0 {
		cos, sin = ropeTables(g, T, c)
	}
	for i := range w.layers {
		x = block(x, &w.layers[i], cos, sin, c)
	}
	return linear(rmsNorm(x, w.outputNorm, c.RMSEps), w.output)
}
