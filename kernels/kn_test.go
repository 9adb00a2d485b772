package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/internal/cputime"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// dotKLanesGo is the pure-Go twin of the avx512 path's one-token Q4_K
// (or, q6, Q6_K) row-run kernel (dotQ4KRowsAVX512, dotQ6KRowsAVX512) and
// so of every token of its multi-token kernels (dotQ4KRowsNAVX512,
// dotQ6KRowsNAVX512): the same exact integer sums per vector lane, each
// block's 16 lane sums and 8 mins (Q6_K: scaled bsum) sums converted to
// float32 and added with one rounding (a fused multiply-add) times the
// block's d·dx (dmin·dx), then the lanes folded in the kernels' order.
// A value v of a block falls in lane (v%64)/4 of its sums.
func dotKLanesGo(q6 bool, w []byte, x []quant.BlockQ8K) float32 {
	var acc [16]float32
	var mins [8]float32
	for i := range x {
		b := &x[i]
		var is [16]int32
		var ms [8]int32
		var d, dm float32
		if q6 {
			blk := w[q6KBytes*i : q6KBytes*(i+1)]
			for v := range quant.QK_K {
				c := int32(quant.Q6KCode(blk[0:128], blk[128:192], v))
				is[v%64/4] += int32(int8(blk[192+v/16])) * c * int32(b.Qs[v])
			}
			for l := range ms {
				ms[l] = int32(b.Bsums[2*l])*int32(int8(blk[192+2*l])) + int32(b.Bsums[2*l+1])*int32(int8(blk[193+2*l]))
			}
			d = float32(f16At(blk[208:]) * b.D)
			dm = d
		} else {
			blk := w[q4KBytes*i : q4KBytes*(i+1)]
			for v := range quant.QK_K {
				j := v / 32
				sc, _ := quant.ScaleMinK4(j, blk[4:16])
				q := int32(blk[16+32*(j/2)+v%32] >> (4 * uint(j&1)) & 0xf)
				is[v%64/4] += int32(sc) * q * int32(b.Qs[v])
			}
			for l := range ms {
				_, mn := quant.ScaleMinK4(l, blk[4:16])
				ms[l] = int32(mn) * (int32(b.Bsums[2*l]) + int32(b.Bsums[2*l+1]))
			}
			d = float32(f16At(blk) * b.D)
			dm = float32(f16At(blk[2:]) * b.D)
		}
		for l := range acc {
			acc[l] = fma32Once(float32(is[l]), d, acc[l])
		}
		for l := range mins {
			mins[l] = fma32Once(float32(ms[l]), dm, mins[l])
		}
	}
	var y [8]float32
	for l := range y {
		y[l] = acc[l] + acc[l+8]
		if q6 {
			y[l] = fma32Once(mins[l], -32, y[l])
		} else {
			y[l] -= mins[l]
		}
	}
	var z [4]float32
	for l := range z {
		z[l] = y[l] + y[l+4]
	}
	s0, s1 := z[0]+z[2], z[1]+z[3]
	return s0 + s1
}

// dotKLanesNGo is the pure-Go twin of the multi-token kernels: dots.xn's
// contract with dotKLanesGo for every row and token.
func dotKLanesNGo(q6 bool, w []byte, x []quant.BlockQ8K, nb, rows, tokens int, out []float32, stride int) {
	size := q4KBytes
	if q6 {
		size = q6KBytes
	}
	for t := range tokens {
		for r := range rows {
			out[t*stride+r] = dotKLanesGo(q6, w[r*nb*size:(r+1)*nb*size], x[t*nb:(t+1)*nb])
		}
	}
}

// kIn is one weight row and one token's activations.
type kIn struct {
	w []byte
	x []quant.BlockQ8K
}

// kLanesInputs returns nb-block rows and activations for the twin
// tests: random ones, and edge cases: zero, largest and smallest half
// scales of either sign, every code and activation at its extreme with a
// huge activation scale, and zero activation scales.
func kLanesInputs(r *rand.Rand, q6 bool, nb int) []kIn {
	size, offs := q4KBytes, []int{0, 2}
	if q6 {
		size, offs = q6KBytes, []int{208}
	}
	var ins []kIn
	for k := range 6 {
		w := randBlocks(r, nb, size, offs, 2)
		x := randQ8K(r, nb)
		for i := range nb {
			blk := w[i*size : (i+1)*size]
			if k == 2 || k == 3 {
				for j := range blk {
					blk[j] = 0xff // every code 15 (63), Q4_K scales and mins 63
				}
				if q6 {
					for j := range 16 {
						blk[192+j] = byte(0x7f + j%2) // scales 127 and -128
					}
				}
				for j := range x[i].Qs {
					x[i].Qs[j] = -128
					if j%3 == 0 {
						x[i].Qs[j] = 127
					}
				}
				fixBsums(&x[i])
				x[i].D = 1e30
			}
			for _, o := range offs {
				switch k {
				case 1:
					putF16(blk[o:], 0)
				case 2:
					putF16(blk[o:], 65504) // the largest half
				case 3:
					putF16(blk[o:], -65504)
				case 4:
					blk[o], blk[o+1] = 1, 0x80 // the smallest subnormal, negative
				}
			}
			if k == 5 {
				x[i].D = 0
			}
		}
		ins = append(ins, kIn{w, x})
	}
	return ins
}

// TestKLanesTwin checks the avx512 path's one-token K-quant row-run
// kernels against their pure-Go twin bit for bit, at every block count
// 0..40, on random and edge inputs.
func TestKLanesTwin(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		if tab.q8k(tensor.Q4_K).xn == nil {
			t.Skip("no multi-token K-quant kernels on this path")
		}
		r := rand.New(rand.NewPCG(41, 42))
		for _, q6 := range []bool{false, true} {
			typ := tensor.Q4_K
			if q6 {
				typ = tensor.Q6_K
			}
			for nb := 0; nb <= 40; nb++ {
				for k, in := range kLanesInputs(r, q6, nb) {
					w, x := in.w, in.x
					out := []float32{float32(math.NaN())}
					tab.q8k(typ).rows(w, x, out)
					if want := dotKLanesGo(q6, w, x); !sameFloat(out[0], want) {
						t.Fatalf("%s %d blocks input %d: kernel %v, twin %v", typ, nb, k, out[0], want)
					}
				}
			}
		}
	})
}

// TestKDotXN checks every path's multi-token K-quant kernels: for 1..9
// tokens, 1..5 rows, several strides and block counts 0..20, from
// unaligned weights, out[t*stride+r] must equal the path's one-token
// row-run dot of row r with token t bit for bit (and the pure-Go twin),
// every output must be written and nothing between them touched.
func TestKDotXN(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		if tab.q8k(tensor.Q4_K).xn == nil {
			t.Skip("no multi-token K-quant kernels on this path")
		}
		r := rand.New(rand.NewPCG(43, 44))
		for _, q6 := range []bool{false, true} {
			typ, size, offs := tensor.Q4_K, q4KBytes, []int{0, 2}
			if q6 {
				typ, size, offs = tensor.Q6_K, q6KBytes, []int{208}
			}
			d := tab.q8k(typ)
			for nb := 0; nb <= 20; nb++ {
				for tokens := 1; tokens <= 9; tokens++ {
					for _, rows := range []int{1, 2, 5} {
						for _, gap := range []int{0, 3} {
							stride := rows + gap
							x := randQ8K(r, tokens*nb)
							if nb > 0 && tokens > 2 {
								x[nb].D = 0 // a zero-scale token block
							}
							w := randBlocks(r, rows*nb, size, offs, 2)
							wb := make([]byte, len(w)+1)
							copy(wb[1:], w)
							const poison = 42
							out := make([]float32, tokens*stride+1)
							for i := range out {
								out[i] = float32(math.NaN())
								if i%stride >= rows || i >= (tokens-1)*stride+rows {
									out[i] = poison
								}
							}
							d.xn(wb[1:], x, nb, rows, tokens, out, stride)
							one := make([]float32, rows)
							twin := make([]float32, tokens*stride)
							dotKLanesNGo(q6, w, x, nb, rows, tokens, twin, stride)
							for tok := range tokens {
								d.rows(w, x[tok*nb:(tok+1)*nb], one)
								for k := range rows {
									got := out[tok*stride+k]
									if !sameFloat(got, one[k]) || !sameFloat(got, twin[tok*stride+k]) {
										t.Fatalf("%s nb=%d tokens=%d rows=%d stride=%d: token %d row %d = %v, one-token %v, twin %v",
											typ, nb, tokens, rows, stride, tok, k, got, one[k], twin[tok*stride+k])
									}
								}
							}
							for i, v := range out {
								if (i%stride >= rows || i >= (tokens-1)*stride+rows) && v != poison {
									t.Fatalf("%s nb=%d tokens=%d rows=%d stride=%d: out[%d] overwritten", typ, nb, tokens, rows, stride, i)
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestMatMulKBatchInvariant checks that through MatMul each token's
// Q4_K and Q6_K outputs are bit for bit those of a one-token product of
// that token, whatever the number of tokens (1..17) and threads: a
// sequence's logits must not depend on the other sequences of its
// batch. Every path keeps this (the avx512 one through its multi-token
// kernels, the others by keeping the one-token order).
func TestMatMulKBatchInvariant(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(45, 46))
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K} {
			const rows, cols = 75, 768
			w := testMatrix(t, r, typ, rows, cols)
			x := randF32(r, 17*cols, 2)
			for _, threads := range []int{1, 2} {
				p := newPool(threads, tab)
				p.serial = 0
				one := make([]float32, 17*rows)
				for i := range 17 {
					if err := p.MatMul(one[i*rows:(i+1)*rows], w, x[i*cols:(i+1)*cols], 1); err != nil {
						t.Fatal(err)
					}
				}
				for n := 1; n <= 17; n++ {
					// Token i of this product is token n-1-i of x, so the
					// same token sits at every position of a group.
					xs := make([]float32, n*cols)
					for i := range n {
						copy(xs[i*cols:], x[(n-1-i)*cols:(n-i)*cols])
					}
					out := make([]float32, n*rows)
					if err := p.MatMul(out, w, xs, n); err != nil {
						t.Fatal(err)
					}
					for i := range n {
						src := n - 1 - i
						for k := range rows {
							if got, want := out[i*rows+k], one[src*rows+k]; !sameFloat(got, want) {
								t.Fatalf("%s threads=%d n=%d: token %d row %d = %v, one-token product %v", typ, threads, n, i, k, got, want)
							}
						}
					}
				}
				p.Close()
			}
		}
	})
}

// TestMatMulKNoAllocs checks that few-token Q4_K and Q6_K products
// allocate nothing once the pool's scratch has grown, and neither does a
// direct call of a multi-token kernel.
func TestMatMulKNoAllocs(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(47, 48))
		for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K} {
			w := testMatrix(t, r, typ, 64, 512)
			for _, n := range []int{2, 3, 4, 8} {
				x := randF32(r, n*512, 1)
				out := make([]float32, n*64)
				for _, threads := range []int{1, 2} {
					p := newPool(threads, tab)
					p.serial = 0
					if err := p.MatMul(out, w, x, n); err != nil {
						t.Fatal(err)
					}
					allocs := testing.AllocsPerRun(20, func() {
						if err := p.MatMul(out, w, x, n); err != nil {
							t.Fatal(err)
						}
					})
					p.Close()
					if allocs != 0 {
						t.Errorf("%s n=%d threads=%d: %v allocations per product", typ, n, threads, allocs)
					}
				}
			}
			if xn := tab.q8k(typ).xn; xn != nil {
				nb := 2
				xq := randQ8K(r, 8*nb)
				out := make([]float32, 8*3)
				if allocs := testing.AllocsPerRun(20, func() { xn(w.Data, xq, nb, 3, 8, out, 3) }); allocs != 0 {
					t.Errorf("%s xn: %v allocations per call", typ, allocs)
				}
			}
		}
	})
}

// TestKDotXNPanics checks the bounds checks of the multi-token kernels'
// wrappers: a stride below the row count or short slices panic rather
// than let the assembly write or read out of bounds.
func TestKDotXNPanics(t *testing.T) {
	tab := dispatch.tab
	xn := tab.q8k(tensor.Q4_K).xn
	if xn == nil {
		t.Skip("no multi-token K-quant kernels on the selected path")
	}
	w := make([]byte, 2*q4KBytes)
	x := make([]quant.BlockQ8K, 2)
	for _, c := range []struct {
		name                string
		w, x, out           int
		rows, tokens, strid int
	}{
		{"stride below rows", 2, 2, 8, 2, 2, 1},
		{"short weights", 1, 2, 8, 2, 1, 2},
		{"short activations", 2, 1, 8, 1, 2, 1},
		{"short out", 2, 2, 2, 1, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			xn(w[:c.w*q4KBytes:c.w*q4KBytes], x[:c.x:c.x], 1, c.rows, c.tokens, make([]float32, c.out), c.strid)
		})
	}
}

// BenchmarkKDotTokens measures the K-quant dots of a 28-row run (one
// tile of a 2048-column matrix, from cache) for 1, 2, 3, 4 and 8 tokens:
// the one-token row-run kernel once per token, and the path's
// multi-token kernel, in GB/s of weights per token (the compute rate),
// with the CPU-time rate beside it.
func BenchmarkKDotTokens(b *testing.B) {
	const nb, rows = 8, 28
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range Available() {
		tab := tableFor(p)
		for _, q6 := range []bool{false, true} {
			typ, size, offs := tensor.Q4_K, q4KBytes, []int{0, 2}
			if q6 {
				typ, size, offs = tensor.Q6_K, q6KBytes, []int{208}
			}
			d := tab.q8k(typ)
			w := randBlocks(r, rows*nb, size, offs, 0.01)
			x := randQ8K(r, 8*nb)
			out := make([]float32, 8*rows)
			for _, n := range []int{1, 2, 3, 4, 8} {
				runs := map[string]func(){
					"rows": func() {
						for t := range n {
							rowsOf(*d, w, x[t*nb:(t+1)*nb], out[t*rows:(t+1)*rows])
						}
					},
				}
				if d.xn != nil {
					runs["xn"] = func() { d.xn(w, x, nb, rows, n, out, rows) }
				}
				for _, name := range []string{"rows", "xn"} {
					run := runs[name]
					if run == nil {
						continue
					}
					b.Run(fmt.Sprintf("%s/%s/n%d/%s", typ, p, n, name), func(b *testing.B) {
						b.SetBytes(int64(n * len(w)))
						b.ReportAllocs()
						c0 := cputime.Process()
						for range b.N {
							run()
						}
						reportCPU(b, c0, float64(n*len(w)), 0, false)
					})
				}
			}
		}
	}
}

// BenchmarkMatMulFew measures few-token products (a serving step's
// batch of 1, 2, 3, 4 or 8 sequences) of the tinyllama Q4_K and Q6_K
// shapes on one thread, in GB/s of weights (once per product, not per
// token) per CPU-second.
func BenchmarkMatMulFew(b *testing.B) {
	for _, t := range []tensor.Type{tensor.Q4_K, tensor.Q6_K} {
		for _, s := range [][2]int{{2048, 2048}, {2048, 5632}, {5632, 2048}} {
			for _, n := range []int{1, 2, 3, 4, 8} {
				name := fmt.Sprintf("%s/%dx%d/n%d", t, s[0], s[1], n)
				b.Run(name, func(b *testing.B) { benchMatMul(b, t, s[0], s[1], n, 1) })
			}
		}
	}
}
