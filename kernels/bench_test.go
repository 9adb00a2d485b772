package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// benchShapes are the matrix shapes of a 1.1B Llama as [Cols, Rows] (GGUF
// dimensions): attention, key/value, FFN up and gate, FFN down, output.
var benchShapes = [][2]int{{2048, 2048}, {2048, 256}, {2048, 5632}, {5632, 2048}, {2048, 32000}}

// benchTypes are the weight types benchmarked.
var benchTypes = append([]tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0, tensor.F16, tensor.BF16, tensor.F32}, newTypes...)

// newTypes are the weight types added after Q4_K, Q6_K and Q8_0.
var newTypes = []tensor.Type{tensor.Q5_K, tensor.Q4_0, tensor.Q5_0, tensor.IQ4_XS, tensor.Q3_K,
	tensor.IQ4_NL, tensor.Q4_1, tensor.Q5_1, tensor.Q2_K, tensor.MXFP4}

// benchMatrix returns a random matrix of type t, [cols, rows], with finite
// scales.
func benchMatrix(b *testing.B, t tensor.Type, cols, rows int) Matrix {
	b.Helper()
	r := rand.New(rand.NewPCG(uint64(cols), uint64(rows)))
	nb := cols / t.BlockSize() * rows
	var data []byte
	switch t {
	case tensor.Q4_K:
		data = randBlocks(r, nb, q4KBytes, []int{0, 2}, 0.01)
	case tensor.Q6_K:
		data = randBlocks(r, nb, q6KBytes, []int{208}, 0.01)
	case tensor.Q8_0:
		data = randBlocks(r, nb, q8_0Bytes, []int{0}, 0.01)
	case tensor.F16, tensor.BF16:
		data = randBlocks(r, nb/2, 4, []int{0, 2}, 1)
	case tensor.F32:
		data = make([]byte, 4*nb)
		for i, v := range randF32(r, nb, 1) {
			f32Put(data[4*i:], v)
		}
	case tensor.MXFP4:
		data = randBlocks(r, nb, t.BlockBytes(), nil, 0)
		setMXFP4Exponents(r, data)
	default:
		// The other quantized types: every f16 scale finite.
		var offs []int
		for _, c := range newqTypes() {
			if c.typ == t {
				offs = c.scales
			}
		}
		data = randBlocks(r, nb, t.BlockBytes(), offs, 0.01)
	}
	m, err := NewMatrix(t, rows, cols, data)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkMatVec measures matrix-vector products (one token) in GB/s of
// weights, on one and two threads, with the selected path.
func BenchmarkMatVec(b *testing.B) {
	for _, t := range benchTypes {
		for _, s := range benchShapes {
			if t == tensor.F32 && s[1] == 32000 {
				continue
			}
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%dx%d/t%d", t, s[0], s[1], threads)
				b.Run(name, func(b *testing.B) { benchMatMul(b, t, s[0], s[1], 1, threads) })
			}
		}
	}
}

// BenchmarkMatMul measures 32-token matrix products (prompt processing) in
// GFLOP/s, on one and two threads, with the selected path.
func BenchmarkMatMul(b *testing.B) {
	for _, t := range benchTypes {
		for _, s := range benchShapes {
			if s[1] == 32000 {
				continue
			}
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%dx%d/t%d", t, s[0], s[1], threads)
				b.Run(name, func(b *testing.B) { benchMatMul(b, t, s[0], s[1], 32, threads) })
			}
		}
	}
}

// BenchmarkMatMulPrompt measures 512-token matrix products, a pp512
// prompt's, on one and two threads: the shape where the goroutines'
// shared state (their result buffers, the output rows) decides how well
// two threads scale.
func BenchmarkMatMulPrompt(b *testing.B) {
	for _, t := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0, tensor.F16, tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.IQ4_XS} {
		for _, s := range [][2]int{{2048, 2048}, {2048, 5632}, {5632, 2048}} {
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%dx%d/t%d", t, s[0], s[1], threads)
				b.Run(name, func(b *testing.B) { benchMatMul(b, t, s[0], s[1], 512, threads) })
			}
		}
	}
}

// benchMatMul runs one MatMul shape.
func benchMatMul(b *testing.B, t tensor.Type, cols, rows, n, threads int) {
	w := benchMatrix(b, t, cols, rows)
	x := randF32(rand.New(rand.NewPCG(7, 7)), n*cols, 1)
	out := make([]float32, n*rows)
	p := NewPool(threads)
	defer p.Close()
	if err := p.MatMul(out, w, x, n); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(w.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cputime.Process()
	for range b.N {
		if err := p.MatMul(out, w, x, n); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0, float64(len(w.Data)), 2*float64(rows)*float64(cols)*float64(n), n > 1)
}

// reportCPU adds the CPU-time rates of a benchmark that started at CPU
// time c0: weight GB per CPU-second and, for matrix products, GFLOP/s of
// wall time and per CPU-second. On a machine shared with other work the
// CPU-time figures are the steadier ones.
func reportCPU(b *testing.B, c0 time.Duration, bytes, flops float64, mm bool) {
	cpu := (cputime.Process() - c0).Seconds()
	n := float64(b.N)
	if cpu > 0 {
		b.ReportMetric(bytes*n/cpu/1e9, "GB/cpu-s")
	}
	if mm {
		b.ReportMetric(flops*n/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		if cpu > 0 {
			b.ReportMetric(flops*n/cpu/1e9, "GFLOP/cpu-s")
		}
	}
}

// BenchmarkQuantDot measures one quantized row dot of 2048 values on
// every path, from cache: the kernels' compute speed, in GB/s of weights.
// The Q8_0x4 and Q8_0x8 cases are the multi-token dots, counting the
// weights once per token.
func BenchmarkQuantDot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const nb = 8
	w4 := randBlocks(r, nb, q4KBytes, []int{0, 2}, 0.01)
	w6 := randBlocks(r, nb, q6KBytes, []int{208}, 0.01)
	w8 := randBlocks(r, nb*8, q8_0Bytes, []int{0}, 0.01)
	xk, x0 := randQ8K(r, nb), randQ8_0(r, nb*8)
	x4, x8 := randQ8_0(r, 4*nb*8), randQ8_0(r, 8*nb*8)
	dx8 := scalesQ8_0x8(x8, nb*8)
	var o4 [4]float32
	var o8 [8]float32
	for _, p := range Available() {
		tab := tableFor(p)
		cases := []struct {
			name string
			n    int
			f    func() float32
		}{
			{"Q4_K", len(w4), func() float32 { return tab.dotQ4K(w4, xk) }},
			{"Q6_K", len(w6), func() float32 { return tab.dotQ6K(w6, xk) }},
			{"Q8_0", len(w8), func() float32 { return tab.dotQ8_0(w8, x0) }},
			{"Q8_0x4", 4 * len(w8), func() float32 { tab.dotQ80x4(w8, x4, nb*8, &o4); return o4[0] }},
			{"Q8_0x8", 8 * len(w8), func() float32 { tab.dotQ80x8(w8, x8, dx8, nb*8, &o8); return o8[0] }},
		}
		for _, c := range cases {
			b.Run(c.name+"/"+string(p), func(b *testing.B) {
				b.SetBytes(int64(c.n))
				var s float32
				c0 := cputime.Process()
				for range b.N {
					s += c.f()
				}
				sink = s
				reportCPU(b, c0, float64(c.n), 0, false)
			})
		}
	}
}

// sink keeps benchmark results alive.
var sink float32

// BenchmarkQuantizeQ8K measures the activation quantization of one
// 2048-value row to Q8_K on every path, in GB/s of float32 input.
func BenchmarkQuantizeQ8K(b *testing.B) {
	benchQuantize(b, quant.QK_K, func(t *table) func([]float32, []quant.BlockQ8K) { return t.quantQ8K })
}

// BenchmarkQuantizeQ8_0 does so for Q8_0 (the partner of Q8_0, Q4_0,
// Q5_0, IQ4_NL and MXFP4 weights).
func BenchmarkQuantizeQ8_0(b *testing.B) {
	benchQuantize(b, quant.QK8_0, func(t *table) func([]float32, []quant.BlockQ8_0) { return t.quantQ8_0 })
}

// BenchmarkQuantizeQ8_1 does so for Q8_1 (the partner of Q4_1 and
// Q5_1).
func BenchmarkQuantizeQ8_1(b *testing.B) {
	benchQuantize(b, quant.QK8_1, func(t *table) func([]float32, []quant.BlockQ8_1) { return t.quantQ8_1 })
}

// benchQuantize measures every path's activation quantizer to blocks B
// of qk values (of, from its table) on one 2048-value row.
func benchQuantize[B any](b *testing.B, qk int, of func(*table) func([]float32, []B)) {
	x := randF32(rand.New(rand.NewPCG(3, 4)), 2048, 2)
	q := make([]B, 2048/qk)
	for _, p := range Available() {
		quantize := of(tableFor(p))
		b.Run(string(p), func(b *testing.B) {
			b.SetBytes(4 * 2048)
			b.ReportAllocs()
			for range b.N {
				quantize(x, q)
			}
		})
	}
}

// BenchmarkVec measures the float vector kernels on every path, in GB/s of
// input.
func BenchmarkVec(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	a, c := randF32(r, 5632, 1), randF32(r, 5632, 1)
	h, g := randF16(r, 5632, 1), randF16(r, 5632, 1)
	dst := make([]float32, 5632)
	dh := make([]uint16, 5632)
	for _, p := range Available() {
		tab := tableFor(p)
		cases := []struct {
			name  string
			bytes int
			f     func()
		}{
			{"DotF32/64", 512, func() { sink = tab.dotF32(a[:64], c[:64]) }},
			{"DotF32/2048", 16384, func() { sink = tab.dotF32(a[:2048], c[:2048]) }},
			{"DotF16/64", 256, func() { sink = tab.dotF16(h[:64], g[:64]) }},
			{"DotF16/2048", 8192, func() { sink = tab.dotF16(h[:2048], g[:2048]) }},
			{"F16ToF32/2048", 4096, func() { tab.f16ToF32(dst[:2048], h[:2048]) }},
			{"F32ToF16/2048", 8192, func() { tab.f32ToF16(dh[:2048], a[:2048]) }},
			{"AxpyF16/64", 128, func() { tab.axpyF16(dst[:64], 0.5, h[:64]) }},
		}
		for _, k := range cases {
			b.Run(k.name+"/"+string(p), func(b *testing.B) {
				b.SetBytes(int64(k.bytes))
				for range b.N {
					k.f()
				}
			})
		}
	}
}

// BenchmarkOps measures the single-path ops at model sizes, in GB/s of
// input.
func BenchmarkOps(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x, w := randF32(r, 5632, 1), randF32(r, 5632, 1)
	dst := make([]float32, 5632)
	rope, err := NewRope(RopeParams{Dim: 64, Base: 10000})
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name  string
		bytes int
		f     func()
	}{
		{"RMSNorm/2048", 8192, func() { RMSNorm(dst[:2048], x[:2048], w[:2048], 1e-5) }},
		{"Softmax/2048", 8192, func() { copy(dst, x[:2048]); Softmax(dst[:2048]) }},
		{"SiLUMul/5632", 2 * 22528, func() { SiLUMul(dst, x, w) }},
		{"RoPE/32x64", 8192, func() { rope.Apply(dst[:2048], 32, 64, 100) }},
		{"Add/2048", 16384, func() { Add(dst[:2048], x[:2048], w[:2048]) }},
	}
	for _, k := range cases {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(k.bytes))
			for range b.N {
				k.f()
			}
		})
	}
}

// BenchmarkMatVecStream measures matrix-vector products the way a decode
// step sees its weights: from memory, not cache. It cycles through enough
// copies of one matrix to exceed every cache level (about 1 GiB; the L3 of
// a cloud VM can be hundreds of MiB), so each product streams its weights
// from DRAM. GB/s of weights, one and two threads.
func BenchmarkMatVecStream(b *testing.B) {
	const total = 1 << 30
	for _, t := range append([]tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0, tensor.F16, tensor.F32}, newTypes...) {
		for _, s := range [][2]int{{2048, 5632}, {5632, 2048}} {
			for _, threads := range []int{1, 2} {
				name := fmt.Sprintf("%s/%dx%d/t%d", t, s[0], s[1], threads)
				b.Run(name, func(b *testing.B) { benchMatVecStream(b, t, s[0], s[1], threads, total) })
			}
		}
	}
}

// benchMatVecStream runs one streaming MatVec shape over copies of a
// matrix adding up to about total bytes.
func benchMatVecStream(b *testing.B, t tensor.Type, cols, rows, threads, total int) {
	w := benchMatrix(b, t, cols, rows)
	ms := streamCopies(b, w, total)
	x := randF32(rand.New(rand.NewPCG(7, 7)), cols, 1)
	out := make([]float32, rows)
	p := NewPool(threads)
	defer p.Close()
	for _, m := range ms {
		if err := p.MatMul(out, m, x, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(w.Data)))
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cputime.Process()
	for i := range b.N {
		if err := p.MatMul(out, ms[i%len(ms)], x, 1); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, c0, float64(len(w.Data)), 0, false)
}

// streamCopies returns copies of w adding up to about total bytes (at
// least one) in weight memory, so that a benchmark taking them in turn
// streams its weights from DRAM.
func streamCopies(b *testing.B, w Matrix, total int) []Matrix {
	ms := make([]Matrix, max(1, total/len(w.Data)))
	mem := weightMemory(b, len(ms)*len(w.Data))
	for i := range ms {
		ms[i] = w
		ms[i].Data = mem[i*len(w.Data) : (i+1)*len(w.Data) : (i+1)*len(w.Data)]
		copy(ms[i].Data, w.Data)
	}
	return ms
}

// BenchmarkQuantRows measures the row-run (one-token) dot of every
// quantized type on every path from cache: 48 rows of 2048 values, about
// 54-96 KiB of weights, in GB/s of weights and per CPU-second. It tells a
// kernel's compute rate apart from the memory bandwidth that
// BenchmarkMatVecStream adds, and the CPU-second rate holds better on a
// loaded machine. A type whose row-run dot prepares the activations once
// per product (dots.prep) is measured that way too (.../prep), as the
// pool's one-token products take it.
func BenchmarkQuantRows(b *testing.B) {
	const cols, rows = 2048, 48
	types := append([]tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0}, newTypes...)
	for _, p := range Available() {
		tab := tableFor(p)
		for _, t := range types {
			m := benchMatrix(b, t, cols, rows)
			x := randF32(rand.New(rand.NewPCG(7, 7)), cols, 1)
			out := make([]float32, rows)
			wk := &tab.weights[t]
			var run func()
			switch wk.partner {
			case partnerQ8_0:
				q := make([]quant.BlockQ8_0, cols/quant.QK8_0)
				quant.QuantizeRowQ8_0Act(x, q)
				run = func() { rowsOf(wk.q80, m.Data, q, out) }
			case partnerQ8_1:
				q := make([]quant.BlockQ8_1, cols/quant.QK8_1)
				quant.QuantizeRowQ8_1Act(x, q)
				run = func() { rowsOf(wk.q81, m.Data, q, out) }
			case partnerQ8K:
				q := make([]quant.BlockQ8K, cols/quant.QK_K)
				quant.QuantizeRowQ8K(x, q)
				run = func() { rowsOf(wk.q8k, m.Data, q, out) }
			}
			bench := func(name string, run func()) {
				b.Run(name, func(b *testing.B) {
					b.SetBytes(int64(len(m.Data)))
					b.ReportAllocs()
					c0 := cputime.Process()
					for range b.N {
						run()
					}
					reportCPU(b, c0, float64(len(m.Data)), 0, false)
				})
			}
			bench(fmt.Sprintf("%s/%s", t, p), run)
			if prep := prepRun(wk, m.Data, x, out); prep != nil {
				bench(fmt.Sprintf("%s/%s/prep", t, p), prep)
			}
		}
	}
}

// prepRun returns, for a type whose row-run dot prepares the activations
// once per product (dots.prep), the product of the rows w with the token
// x as the pool takes it: the activations converted and prepared, then
// the rows from the prepared scratch. It returns nil for the other types.
func prepRun(wk *weightKernels, w []byte, x []float32, out []float32) func() {
	switch {
	case wk.partner == partnerQ8_0 && wk.q80.prep != nil:
		q := make([]quant.BlockQ8_0, len(x)/quant.QK8_0)
		quant.QuantizeRowQ8_0Act(x, q)
		scr := make([]byte, wk.q80.prepLen(len(q)))
		return func() { wk.q80.prep(q, scr); wk.q80.prepRows(w, q, scr, out) }
	case wk.partner == partnerQ8K && wk.q8k.prep != nil:
		q := make([]quant.BlockQ8K, len(x)/quant.QK_K)
		quant.QuantizeRowQ8K(x, q)
		scr := make([]byte, wk.q8k.prepLen(len(q)))
		return func() { wk.q8k.prep(q, scr); wk.q8k.prepRows(w, q, scr, out) }
	}
	return nil
}

// rowsOf sets out to the dots of the len(out) rows of w with x, by d's
// row-run dot when it has one and its one-token dot otherwise.
func rowsOf[X any](d dots[X], w []byte, x []X, out []float32) {
	if d.rows != nil {
		d.rows(w, x, out)
		return
	}
	rb := len(w) / len(out)
	for r := range out {
		out[r] = d.one(w[r*rb:(r+1)*rb], x)
	}
}
