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

// loopRope rotates x [T, H, D] in place in float64, pairing (2i, 2i+1)
// or, for neox, (i, i+ropeDim/2).
func loopRope(x []float32, T, H, D int, c Config) {
	half := c.RopeDim / 2
	for t := range T {
		for h := range H {
			row := x[(t*H+h)*D : (t*H+h+1)*D]
			for i := range half {
				ang := float64(t) * c.RopeScale * math.Pow(c.RopeBase, -2*float64(i)/float64(c.RopeDim))
				ia, ib := 2*i, 2*i+1
				if c.NeoX {
					ia, ib = i, i+half
				}
				a, b := float64(row[ia]), float64(row[ib])
				row[ia] = float32(a*math.Cos(ang) - b*math.Sin(ang))
				row[ib] = float32(a*math.Sin(ang) + b*math.Cos(ang))
			}
		}
	}
}

// TestRopeGraph checks the graph's RoPE, both pairings, partial and full
// width, against loopRope. The engine implements only adjacent pairs (the
// llama layout), so this is what vouches for the NeoX path.
func TestRopeGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		H, D, ropeDim int
		neox          bool
		base, scale   float64
	}{
		{3, 8, 8, false, 10000, 1}, {3, 8, 8, true, 10000, 1}, {5, 10, 4, false, 500000, 0.25},
		{5, 10, 4, true, 500000, 0.25}, {2, 6, 2, true, 100, 2}, {1, 12, 0, false, 10000, 1},
	} {
		t.Run(fmt.Sprintf("H%d_D%d_rd%d_neox%v", tc.H, tc.D, tc.ropeDim, tc.neox), func(t *testing.T) {
			const T = 11
			c := Config{RopeDim: tc.ropeDim, NeoX: tc.neox, RopeBase: tc.base, RopeScale: tc.scale}
			x := randVals(r, T*tc.H*tc.D)
			got := run1(t, func(in []*graph.Node) *graph.Node {
				if c.RopeDim == 0 {
					return rope(in[0], nil, nil, c)
				}
				cos, sin := ropeTables(in[0].Graph(), T, c)
				return rope(in[0], cos, sin, c)
			}, tensors.FromFlatDataAndDimensions(append([]float32(nil), x...), T, tc.H, tc.D))
			loopRope(x, T, tc.H, tc.D, c)
			if d := maxDeviation([][]float32{got}, [][]float32{x}); d > 1e-5 {
				t.Errorf("max |Δ| %.3g against the loop", d)
			}
		})
	}
}

// loopAttention is causal grouped-query attention in float64 for q
// [T, H, D] and k, v [T, KV, D].
func loopAttention(q, k, v []float32, T, H, KV, D int) []float32 {
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
				w[j] = s / math.Sqrt(float64(D))
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
// loopAttention for group sizes 1, 2, 4 and 8.
func TestAttentionGraph(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ H, KV, D int }{{3, 3, 4}, {6, 3, 6}, {4, 1, 8}, {8, 1, 4}, {12, 3, 2}} {
		t.Run(fmt.Sprintf("H%d_KV%d_D%d", tc.H, tc.KV, tc.D), func(t *testing.T) {
			const T = 9
			c := Config{NHead: tc.H, NHeadKV: tc.KV, HeadDim: tc.D}
			q, k, v := randVals(r, T*tc.H*tc.D), randVals(r, T*tc.KV*tc.D), randVals(r, T*tc.KV*tc.D)
			got := run1(t, func(in []*graph.Node) *graph.Node { return attention(in[0], in[1], in[2], c) },
				tensors.FromFlatDataAndDimensions(q, T, tc.H, tc.D),
				tensors.FromFlatDataAndDimensions(k, T, tc.KV, tc.D),
				tensors.FromFlatDataAndDimensions(v, T, tc.KV, tc.D))
			want := loopAttention(q, k, v, T, tc.H, tc.KV, tc.D)
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
