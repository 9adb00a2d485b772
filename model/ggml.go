package model

import (
	"math"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// This file is the production form of ggml's F32 summation orders and
// exponential (those of llama.cpp's x86 AVX-512 CPU build that wrote the
// reference files; ggml_test.go emulates them independently, closures and
// all, and documents what was measured). F32 models are not rounded to a
// coarser partner format anywhere, so llama.cpp's exact orders are what
// keeps their logits within 1e-3 of its own: one float32 ulp of
// difference in a key, query or attention weight flips its F16 rounding
// in the cache and moves later logits of a trained model by up to 1e-2.
//
//   - F32 matrix products of a batch of two or more tokens with a row
//     length that is a multiple of 16 (llamafile's tinyBLAS): one 16-lane
//     fused accumulator per output, the lanes summed as a tree
//     (kernels.DotF32Lanes16);
//   - other F32 products (ggml_vec_dot_f32): four 16-lane fused
//     accumulators over blocks of 64, summed (0+2)+(1+3), the lanes as a
//     tree, the tail added one unfused product at a time
//     (kernels.DotF32GGML);
//   - F16 dot products of attention (ggml_vec_dot_f16): the same blocks of
//     64, the tail summed in float64; a one-token step's V×softmax runs
//     over the key count padded to a multiple of 32, a batch's over 16
//     lanes like tinyBLAS;
//   - exponentials of softmax and SiLU on 16-value chunks by ggml's
//     polynomial, SiLU's tail by the C library's expf (float64 exp here);
//   - RoPE's angles from the float32 recurrence theta *= base^(-2/dim),
//     YaRN's ramp and magnitude as rope_yarn, the rotation with x0*cos
//     and x0*sin fused.

// fma32 is a float32 fused multiply-add (a*b is exact in float64).
func fma32(a, b, c float32) float32 {
	return float32(math.FMA(float64(a), float64(b), float64(c)))
}

// reduce16 sums 16 lanes as a tree of halves.
func reduce16(x *[16]float32) float32 {
	var t [8]float32
	for i := range t {
		t[i] = x[i+8] + x[i]
	}
	var u [4]float32
	for i := range u {
		u[i] = t[i+4] + t[i]
	}
	return (u[0] + u[2]) + (u[1] + u[3])
}

// vExpf is ggml's vectorised e^x, one lane.
func vExpf(x float32) float32 {
	const shift = float32(0x1.8p23)
	z := fma32(x, 0x1.715476p+0, shift)
	n := z - shift
	if n != n || math.Abs(float64(n)) > 192 {
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	b := fma32(-n, 0x1.62e4p-1, x)
	b = fma32(-n, 0x1.7f7d1cp-20, b)
	u := b * b
	j := fma32(fma32(fma32(0x1.0e4020p-7, b, 0x1.573e2ep-5), u, fma32(0x1.555e66p-3, b, 0x1.fffdb6p-2)), u,
		fma32(0x1.ffffecp-1, b, 1))
	return float32(math.Ldexp(float64(j), int(n)))
}

// ggmlSoftmax is ggml's soft_max of one row (scale already applied): the
// exponentials of x-max in 16-value chunks, each chunk's sum a lane tree
// added in float64, then one multiplication by the reciprocal.
func ggmlSoftmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i := 0; i < len(x); i += 16 {
		var c [16]float32
		for k := 0; k < 16 && i+k < len(x); k++ {
			c[k] = vExpf(x[i+k] - mx)
			x[i+k] = c[k]
		}
		sum += float64(reduce16(&c))
	}
	kernels.Scale(x, float32(1/sum))
}

// ggmlSiLUMul is ggml's silu of one row times up.
func ggmlSiLUMul(dst, gate, up []float32) {
	chunks := len(gate) &^ 15
	up = up[:len(gate)]
	dst = dst[:len(gate)]
	for i, g := range gate {
		var e float32
		if i < chunks {
			e = vExpf(0 - g)
		} else {
			e = float32(math.Exp(float64(-g)))
		}
		dst[i] = g / (1 + e) * up[i]
	}
}

// ggmlScratch is the state of the ggml-order F32 products: the product
// the pool's goroutines share and the function they run it with (made
// once, so that a step allocates nothing). One per Runner (not safe for
// concurrent use, like the Runner).
type ggmlScratch struct {
	pool  *kernels.Pool
	out   []float32
	w     kernels.Matrix
	x     []float32
	n     int
	group []int32
	part  func(part int)
}

// f32ParallelMin is the multiply-adds of an F32 product from which its
// rows are split across the pool (a Qwen3-MoE router's 128×2048 for one
// token is 2^18; stories260K's products are a few thousand).
const f32ParallelMin = 1 << 16

// matmulF32 computes out = w·x for F32 weights in ggml's orders, row t
// as in a batch of group[t] tokens, the weight rows split across the
// pool when the product is large. Each output is one goroutine's dot
// product in a fixed order, so the split does not change it.
func (g *ggmlScratch) matmulF32(out []float32, w kernels.Matrix, x []float32, n int, group []int32) error {
	g.out, g.w, g.x, g.n, g.group = out, w, x, n, group
	defer func() { g.out, g.w, g.x, g.group = nil, kernels.Matrix{}, nil, nil }()
	if th := g.pool.Threads(); th > 1 && n*w.Rows*w.Cols >= f32ParallelMin {
		return g.pool.Run(g.part)
	}
	g.rows(0, w.Rows)
	return nil
}

// f32TokenBlock is how many tokens' activations an F32 product
// multiplies every row of a goroutine's share by before it moves on (32
// rows of 2048 values: 256 KiB, which stay in the second-level cache
// while the rows go by, instead of a long prompt's streaming from memory
// once per row).
const f32TokenBlock = 32

// rows computes the outputs of weight rows r0..r1-1 of the current
// product for every token (the order of the dots changes none of them).
func (g *ggmlScratch) rows(r0, r1 int) {
	w, rb := g.w, g.w.Cols*4
	for t0 := 0; t0 < g.n; t0 += f32TokenBlock {
		t1 := min(t0+f32TokenBlock, g.n)
		for r := r0; r < r1; r++ {
			row := w.Data[r*rb : (r+1)*rb]
			for t := t0; t < t1; t++ {
				xt := g.x[t*w.Cols : (t+1)*w.Cols]
				if g.group[t] >= 2 && w.Cols%16 == 0 {
					g.out[t*w.Rows+r] = kernels.DotF32Lanes16(row, xt)
				} else {
					g.out[t*w.Rows+r] = kernels.DotF32GGML(row, xt)
				}
			}
		}
	}
}

// vecDotF16 is ggml_vec_dot_f16 of two F16 rows extended with zeros to
// n values (n ≥ len(a)), in its block order; it keeps no state, so
// attention heads may run it concurrently.
func vecDotF16(a, b []uint16, n int) float32 {
	var s [4][16]float32
	b = b[:len(a)]
	nb := n &^ 63
	full := min(nb, len(a)&^63)
	for i := 0; i < full; i += 64 {
		for j := range 4 {
			o := i + j*16
			for k := range 16 {
				s[j][k] = fma32(quant.F16ToF32(a[o+k]), quant.F16ToF32(b[o+k]), s[j][k])
			}
		}
	}
	for i := full; i < min(nb, len(a)); i++ {
		j, k := (i%64)/16, i%16
		s[j][k] = fma32(quant.F16ToF32(a[i]), quant.F16ToF32(b[i]), s[j][k])
	}
	for k := range 16 {
		s[0][k] = (s[0][k] + s[2][k]) + (s[1][k] + s[3][k])
	}
	sum := float64(reduce16(&s[0]))
	for i := nb; i < len(a); i++ {
		sum += float64(quant.F16ToF32(a[i]) * quant.F16ToF32(b[i]))
	}
	return float32(sum)
}

// lanes16F16 is one 16-lane fused accumulator over two F16 rows.
func lanes16F16(a, b []uint16) float32 {
	var acc [16]float32
	b = b[:len(a)]
	for i := range a {
		acc[i%16] = fma32(quant.F16ToF32(a[i]), quant.F16ToF32(b[i]), acc[i%16])
	}
	return reduce16(&acc)
}

// ggmlArith returns the arithmetic of llama.cpp's CPU path: F32 matrix
// products, attention dot products, softmax, SiLU and RoPE in ggml's
// orders; the other weight types go to pool, whose kernels already round
// the activations to the weight's partner format (F16, Q8_0, Q8_K).
//
// The attention dot products, softmax and SiLU are ggml's only with
// exactAttn: in pure Go they cut prompt speed up to fivefold, and only
// models whose weights are all F32 need them (stories260K moves from
// 1.9e-6 to 4e-3 without; the F16 and quantized models, whose activations
// are rounded anyway, stay well within the 0.05 on package
// kernels' assembly: small-110m 0.046, mini-24m-q4_k_m 0.017).
//
// The F32 products read the weight rows in place (the second argument,
// the widest row, sized a scratch they no longer need) and split large
// products across pool; matmul is for one goroutine at a time, the other
// functions keep no state.
func ggmlArith(pool *kernels.Pool, exactAttn bool) arith {
	g := &ggmlScratch{pool: pool}
	g.part = func(part int) {
		th := g.pool.Threads()
		g.rows(g.w.Rows*part/th, g.w.Rows*(part+1)/th)
	}
	softmax, siluMul := kernels.Softmax, kernels.SiLUMul
	if exactAttn {
		softmax, siluMul = ggmlSoftmax, ggmlSiLUMul
	}
	return arith{
		matmul: func(out []float32, w kernels.Matrix, x []float32, n int, group []int32) error {
			if w.Type != tensor.F32 || len(out) != n*w.Rows || len(x) != n*w.Cols || len(w.Data) != w.Rows*w.Cols*4 || len(group) < n {
				// One-token products go to MatMul, not kernels.Products
				// (whose outputs are the same): quiet, two threads,
				// tinyllama Q4_K_M decodes 44.6 t/s through MatMul and
				// 36.6 through Products, whose page prefetch and claimed
				// 64 KiB pieces suit a mixture's many small products, not
				// a dense layer's few large ones.
				return pool.MatMul(out, w, x, n)
			}
			return g.matmulF32(out, w, x, n, group)
		},
		rope:    func(x []float32, nHeads, headDim, pos int, r *kernels.Rope) { r.Apply(x, nHeads, headDim, pos) },
		softmax: softmax,
		siluMul: siluMul,
		dotKQ: func(out []float32, k []uint16, stride int, q []uint16) {
			if !exactAttn {
				kernels.DotF16Rows(out, k, stride, q)
				return
			}
			for j := range out {
				out[j] = vecDotF16(k[j*stride:j*stride+len(q)], q, len(q))
			}
		},
		dotKQV: func(out []float32, v []uint16, stride int, p []uint16, batch int) {
			if !exactAttn {
				kernels.DotF16Rows(out, v, stride, p)
				return
			}
			for d := range out {
				row := v[d*stride : d*stride+len(p)]
				if batch >= 2 {
					out[d] = lanes16F16(row, p)
				} else {
					out[d] = vecDotF16(row, p, (len(p)+31)/32*32)
				}
			}
		},
	}
}

// allF32 reports whether every matrix of m is F32 (no activation of its
// forward pass is rounded to a coarser partner format).
func (m *Model) allF32() bool {
	all := m.Embed.Type == tensor.F32 && m.Output.Type == tensor.F32
	for _, l := range m.Layers {
		for _, w := range []kernels.Matrix{l.Q, l.K, l.V, l.O, l.Gate, l.Up, l.Down} {
			all = all && w.Type == tensor.F32
		}
		all = all && l.MoE.allF32()
	}
	return all
}
