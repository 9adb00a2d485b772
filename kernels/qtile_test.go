package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// qtTypes are the weight types of the prompt tile.
var qtTypes = []tensor.Type{tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.Q8_0, tensor.IQ4_XS}

// qtGenericTable is the generic path with the pure-Go tile: the twin
// every tile path must equal bit for bit.
func qtGenericTable() *table {
	t := genericTable()
	for _, typ := range qtTypes {
		t.weights[typ].qtRepack, t.weights[typ].qtBlock = qtRepackGeneric(qtDecoder(typ)), qtBlockBytes
		t.weights[typ].qtile = qtileGeneric
	}
	t.weights[tensor.Q4_K].qtRepack, t.weights[tensor.Q4_K].qtBlock = qkRepackGeneric, qkBlockBytes/8
	t.weights[tensor.Q4_K].qtile = qkTileGeneric
	return t
}

// qtTables returns the tables with a tile: the pure-Go twin first, then
// each native path that has one.
func qtTables() []*table {
	ts := []*table{qtGenericTable()}
	for _, p := range nativePaths() {
		if tab := tableFor(p); qtHasTile(tab) {
			ts = append(ts, tab)
		}
	}
	return ts
}

// qtHasTile reports whether tab has a tile kernel for any type.
func qtHasTile(tab *table) bool {
	for _, typ := range qtTypes {
		if tab.weights[typ].qtile != nil {
			return true
		}
	}
	return false
}

// qtKernActs returns the activation codes xq as typ's tile kernel on tab
// takes them: split in nibbles when it says so (qtSplit).
func qtKernActs(tab *table, typ tensor.Type, xq []int8) []int8 {
	if !tab.weights[typ].qtSplit {
		return xq
	}
	s := make([]int8, 2*len(xq))
	qtSplitActs(s, xq)
	return s
}

// qtCodes returns the range of a tile type's codes (its values + 128):
// a path's tile kernel for the type must take any code in it.
func qtCodes(typ tensor.Type) (lo, hi int) {
	switch typ {
	case tensor.Q4_0:
		return 120, 135
	case tensor.Q5_0:
		return 112, 143
	}
	return 0, 255
}

// qtScaleOffs returns the offsets of a tile type's f16 scales in its
// blocks.
func qtScaleOffs(typ tensor.Type) []int {
	if typ == tensor.Q4_K {
		return []int{0, 2}
	}
	return []int{0}
}

// qtEdgeScales are f16 scales that stress the float steps: zero, the
// smallest subnormal, the largest finite, infinities and a NaN.
var qtEdgeScales = []uint16{0x0000, 0x8000, 0x0001, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x3c00}

// qtRandRows returns rows random weight rows of nb 32-value blocks of
// typ (random bytes, finite scales, and with edge set some edge scales).
func qtRandRows(r *rand.Rand, typ tensor.Type, rows, nb int, edge bool) []byte {
	bpv := typ.BlockSize() / 32
	n := rows * nb / bpv
	w := randBlocks(r, n, typ.BlockBytes(), qtScaleOffs(typ), 0.05)
	if edge {
		for i := range n {
			if r.IntN(4) == 0 {
				binary.LittleEndian.PutUint16(w[i*typ.BlockBytes():], qtEdgeScales[r.IntN(len(qtEdgeScales))])
			}
		}
	}
	return w
}

// qtRandActs returns nt tokens' tile activations of nb blocks: random
// codes over the whole int8 range (with edge, some blocks all -128 or
// all 127) and scales, with their biases.
func qtRandActs(r *rand.Rand, nt, nb int, edge bool) ([]int8, []qtScale) {
	xq := make([]int8, nt*nb*32)
	xs := make([]qtScale, nt*nb)
	for i := range xs {
		q := xq[32*i : 32*i+32]
		mode := 0
		if edge {
			mode = r.IntN(4)
		}
		var s int32
		for k := range q {
			switch mode {
			case 1:
				q[k] = -128
			case 2:
				q[k] = 127
			default:
				q[k] = int8(r.Uint32())
			}
			s += int32(q[k])
		}
		d := r.Float32() * 0.01
		if edge && r.IntN(8) == 0 {
			d = quant.F16ToF32(qtEdgeScales[r.IntN(len(qtEdgeScales))])
		}
		xs[i] = qtScale{d: d, bias: -128 * s}
	}
	return xq, xs
}

// TestQTileKernel checks each tile kernel against the pure-Go twin, bit
// for bit, on every token count, row count and several widths, with
// random and edge-case codes (anywhere in the type's range, its ends
// included) and scales.
func TestQTileKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, tab := range qtTables()[1:] {
		for _, typ := range qtTypes {
			kern := tab.weights[typ].qtile
			if kern == nil {
				continue
			}
			lo, hi := qtCodes(typ)
			qtKernelCases(t, r, tab, typ, kern, lo, hi)
		}
	}
}

// qtKernelCases runs TestQTileKernel's cases of one path's kernel for
// typ, whose codes lie in lo..hi.
func qtKernelCases(t *testing.T, r *rand.Rand, tab *table, typ tensor.Type, kern qtTileFunc, lo, hi int) {
	t.Helper()
	{
		for _, nb := range []int{1, 2, 7, 64} {
			for _, edge := range []bool{false, true} {
				w := make([]byte, nb*qtBlockBytes)
				for i := range w {
					w[i] = byte(lo + r.IntN(hi-lo+1))
					if edge && r.IntN(3) == 0 {
						w[i] = byte([2]int{lo, hi}[r.IntN(2)])
					}
				}
				for b := range nb {
					for k := range qtRows {
						d := (r.Float32()*2 - 1) * 0.1
						if edge && r.IntN(6) == 0 {
							d = quant.F16ToF32(qtEdgeScales[r.IntN(len(qtEdgeScales))])
						}
						binary.LittleEndian.PutUint32(w[b*qtBlockBytes+512+4*k:], math.Float32bits(d))
					}
				}
				for nt := 1; nt <= 8; nt++ {
					xq, xs := qtRandActs(r, nt, nb, edge)
					for _, rows := range []int{1, 5, 15, 16} {
						ldo := rows + 3
						want := make([]float32, nt*ldo)
						got := make([]float32, nt*ldo)
						for i := range want {
							want[i], got[i] = -1, -1
						}
						qtileGeneric(w, xq, xs, nb, nt, want, ldo, rows)
						kern(w, qtKernActs(tab, typ, xq), xs, nb, nt, got, ldo, rows)
						for i := range got {
							if !sameFloat(got[i], want[i]) {
								t.Fatalf("%s %s nb=%d nt=%d rows=%d edge=%v: out[%d] = %v, twin %v", tab.path, typ, nb, nt, rows, edge, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestQTileRepack checks each path's repacks against the pure-Go ones,
// byte for byte, on whole and partial groups, and the pure-Go layout
// against the types' dequantization: code - 128 times the scale is the
// value.
func TestQTileRepack(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	tabs := qtTables()
	for _, typ := range qtTypes {
		for _, nb := range []int{8, 16, 72} {
			for _, rows := range []int{16, 9, 1} {
				for _, edge := range []bool{false, true} {
					rb := typ.BlockBytes() * nb / (typ.BlockSize() / 32)
					w := qtRandRows(r, typ, rows, nb, edge)
					want := make([]byte, nb*qtBlockBytes)
					for i := range want {
						want[i] = 0xa5 // every byte must be written
					}
					tabs[0].weights[typ].qtRepack(want, w, rb, rows, nb)
					qtCheckLayout(t, typ, want, w, rb, rows, nb)
					for _, tab := range tabs[1:] {
						if tab.weights[typ].qtRepack == nil {
							continue
						}
						got := make([]byte, nb*qtBlockBytes)
						for i := range got {
							got[i] = 0x5a
						}
						tab.weights[typ].qtRepack(got, w, rb, rows, nb)
						for i := range got {
							if got[i] != want[i] {
								t.Fatalf("%s %s nb=%d rows=%d edge=%v: byte %d = %#x, twin %#x", tab.path, typ, nb, rows, edge, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}

// qtCheckLayout checks a repacked group against the dequantized rows:
// each value is (code - 128) times its block's scale, up to the
// rounding of that product (bit for bit where the types' dequantizers
// multiply the same two numbers), and the padding rows are zero.
func qtCheckLayout(t *testing.T, typ tensor.Type, g, w []byte, rb, rows, nb int) {
	t.Helper()
	vals := make([]float32, 32*nb)
	for k := range qtRows {
		if k < rows {
			if err := quant.Dequantize(typ, w[k*rb:(k+1)*rb], vals); err != nil {
				t.Fatal(err)
			}
		}
		for b := range nb {
			blk := g[b*qtBlockBytes:]
			d := math.Float32frombits(binary.LittleEndian.Uint32(blk[512+4*k:]))
			for v := range 32 {
				c := blk[(v/4)*64+4*k+v%4]
				if k >= rows {
					if c != 0 || d != 0 {
						t.Fatalf("%s padding row %d block %d: code %d scale %v", typ, k, b, c, d)
					}
					continue
				}
				got := float32(float32(int32(c)-128) * d)
				if want := vals[32*b+v]; !sameFloat(got, want) && !(got == 0 && want == 0) {
					t.Fatalf("%s row %d value %d: code %d × %v = %v, dequantized %v", typ, k, 32*b+v, c, d, got, want)
				}
			}
		}
	}
}

// TestQTileMatMul checks the tile path of MatMul: within matMulTol of the
// reference, bit for bit the pure-Go twin's, and the same bits for every
// thread count, token block and split of the tokens into products of two
// or more.
func TestQTileMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	tabs := qtTables()
	for _, typ := range append(qtTypes, tensor.Q4_K) {
		cols := 96
		if typ.BlockSize() == 256 {
			cols = 512
		}
		for _, rows := range []int{1, 15, 16, 17, 50} {
			w := testMatrix(t, r, typ, rows, cols)
			for _, n := range []int{2, 3, 8, 9, 21} {
				x := randF32(r, n*cols, 1)
				want := refMatMul(w, x, n)
				var first []float32
				var last *table
				for _, tab := range tabs {
					if tab.weights[typ].qtile == nil {
						continue // this path keeps the row dots for typ
					}
					last = tab
					for threads := 1; threads <= 3; threads++ {
						for _, tokenBlock := range []int{tokenBlockBytes, 1} {
							p := newPool(threads, tab)
							p.serial = 0
							p.job.tokenBlock = tokenBlock
							out := make([]float32, n*rows)
							if err := p.MatMul(out, w, x, n); err != nil {
								t.Fatal(err)
							}
							p.Close()
							name := fmt.Sprintf("%s %s %dx%d n=%d threads=%d block=%d", tab.path, typ, rows, cols, n, threads, tokenBlock)
							for i := range out {
								if !near(out[i], want[i], matMulTol) {
									t.Fatalf("%s: out[%d] = %v, reference %v", name, i, out[i], want[i])
								}
							}
							if first == nil {
								first = out
								continue
							}
							for i := range out {
								if !sameFloat(out[i], first[i]) {
									t.Fatalf("%s: out[%d] = %v, twin with one thread %v", name, i, out[i], first[i])
								}
							}
						}
					}
				}
				// Split into products of two tokens (and one of three for
				// an odd count): the same bits.
				p := newPool(2, last)
				for t0 := 0; t0 < n; {
					k := 2
					if n-t0 == 3 {
						k = 3
					}
					part := make([]float32, k*rows)
					if err := p.MatMul(part, w, x[t0*cols:(t0+k)*cols], k); err != nil {
						t.Fatal(err)
					}
					for i, v := range part {
						if !sameFloat(v, first[t0*rows+i]) {
							t.Fatalf("%s %dx%d n=%d: tokens %d.. alone give out[%d] = %v, in one product %v", typ, rows, cols, n, t0, i, v, first[t0*rows+i])
						}
					}
					t0 += k
				}
				p.Close()
			}
		}
	}
}

// TestQTileAllocs checks that a tile product allocates nothing once the
// pool's scratch has grown.
func TestQTileAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, tab := range qtTables() {
		for _, typ := range append(qtTypes, tensor.Q4_K) {
			w := testMatrix(t, r, typ, 64, 512)
			x := randF32(r, 20*512, 1)
			out := make([]float32, 20*64)
			p := newPool(2, tab)
			p.serial = 0
			if err := p.MatMul(out, w, x, 20); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(5, func() { _ = p.MatMul(out, w, x, 20) }); a != 0 {
				t.Errorf("%s %s: %v allocations per product", tab.path, typ, a)
			}
			p.Close()
		}
	}
}

// TestFMA32Once checks the pure-Go single-rounding fused multiply-add
// against exact arithmetic (math/big), on random operands, halfway
// cases, subnormals, overflow and non-finite values.
func TestFMA32Once(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	exact := func(a, b, c float32) float32 {
		if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) || math.IsNaN(float64(c)) ||
			math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) || math.IsInf(float64(c), 0) {
			return float32(float64(a)*float64(b) + float64(c))
		}
		x := new(big.Float).SetPrec(300).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetPrec(300).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetPrec(300).SetFloat64(float64(c)))
		f, _ := x.Float32()
		if f == 0 && math.Signbit(float64(f)) != math.Signbit(float64(a)*float64(b)+float64(c)) {
			// big.Float's zero sign; IEEE's exact-zero sum is +0 but
			// for two negative zeros.
			return float32(float64(a)*float64(b) + float64(c))
		}
		return f
	}
	edges := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1 + 1.0/(1<<23), math.SmallestNonzeroFloat32,
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.NaN()), 3, 1.0 / 3, 1 << 24, 1<<24 + 2}
	var cases [][3]float32
	for _, a := range edges {
		for _, b := range edges {
			for _, c := range edges {
				cases = append(cases, [3]float32{a, b, c})
			}
		}
	}
	for range 200000 {
		a := math.Float32frombits(r.Uint32())
		b := math.Float32frombits(r.Uint32())
		c := math.Float32frombits(r.Uint32())
		cases = append(cases, [3]float32{a, b, c})
		// Halfway cases: an integer times 2^-k plus a float32 whose last
		// place the product's bits straddle.
		i := float32(r.IntN(1<<21) - 1<<20)
		s := float32(math.Ldexp(1, -r.IntN(40)))
		cases = append(cases, [3]float32{i, s, float32(r.NormFloat64())}, [3]float32{i, s * 1.5, (1 << 24) * float32(r.IntN(8)+1)})
	}
	for _, k := range cases {
		got, want := fma32Once(k[0], k[1], k[2]), exact(k[0], k[1], k[2])
		if !sameFloat(got, want) {
			t.Fatalf("fma32Once(%v, %v, %v) = %v (%#x), exact %v (%#x)", k[0], k[1], k[2], got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// FuzzQTile feeds arbitrary weight bytes and activation codes to every
// tile path's repack and kernel: byte 0 picks the type, byte 1 the rows
// (1..16), byte 2 the tokens (1..8), byte 3 the blocks (1..4 weight
// blocks); the rest fills the weights, then the activation codes. The
// results must equal the pure-Go twin's bit for bit.
func FuzzQTile(f *testing.F) {
	f.Add([]byte{0, 15, 7, 1, 0x00, 0x3c, 0x12, 0x34})
	f.Add([]byte{3, 16, 8, 2, 0x00, 0x7c, 0xff, 0x80, 0x7f})
	f.Add([]byte{4, 3, 1, 0, 0xff, 0x7b, 0xff, 0xff, 0x55})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		typ := qtTypes[int(data[0])%len(qtTypes)]
		rows, nt, nk := 1+int(data[1]%16), 1+int(data[2]%8), 1+int(data[3]%4)
		rest := data[4:]
		nb := nk * typ.BlockSize() / 32
		rb := nk * typ.BlockBytes()
		w := make([]byte, rows*rb)
		rest = rest[copy(w, rest):]
		xq := make([]int8, nt*nb*32)
		for i := range xq {
			if i < len(rest) {
				xq[i] = int8(rest[i])
			}
		}
		xs := make([]qtScale, nt*nb)
		for i := range xs {
			var s int32
			for _, q := range xq[32*i : 32*i+32] {
				s += int32(q)
			}
			xs[i] = qtScale{d: float32(i%7) * 0.25, bias: -128 * s}
		}
		tabs := qtTables()
		want := make([]byte, nb*qtBlockBytes)
		tabs[0].weights[typ].qtRepack(want, w, rb, rows, nb)
		wantOut := make([]float32, nt*rows)
		qtileGeneric(want, xq, xs, nb, nt, wantOut, rows, rows)
		for _, tab := range tabs[1:] {
			if tab.weights[typ].qtile == nil {
				continue
			}
			g := make([]byte, nb*qtBlockBytes)
			tab.weights[typ].qtRepack(g, w, rb, rows, nb)
			for i := range g {
				if g[i] != want[i] {
					t.Fatalf("%s %s: repacked byte %d = %#x, twin %#x", tab.path, typ, i, g[i], want[i])
				}
			}
			out := make([]float32, nt*rows)
			tab.weights[typ].qtile(g, qtKernActs(tab, typ, xq), xs, nb, nt, out, rows, rows)
			for i := range out {
				if !sameFloat(out[i], wantOut[i]) {
					t.Fatalf("%s %s: out[%d] = %v, twin %v", tab.path, typ, i, out[i], wantOut[i])
				}
			}
		}
	})
}

// BenchmarkQTile measures the tile kernels from cache (one group of
// sixteen rows of 2048 columns, eight tokens) and the repacks of a
// group, on every path with a tile: GFLOP/s and weight GB/s.
func BenchmarkQTile(b *testing.B) {
	r := rand.New(rand.NewPCG(51, 52))
	nb := 64
	for _, tab := range qtTables() {
		w := make([]byte, nb*qtBlockBytes)
		xq, xs := qtRandActs(r, 8, nb, false)
		out := make([]float32, 8*qtRows)
		for _, typ := range qtTypes {
			kern := tab.weights[typ].qtile
			if kern == nil {
				continue
			}
			lo, hi := qtCodes(typ)
			for i := range w {
				w[i] = byte(lo + r.IntN(hi-lo+1))
			}
			for b := range nb {
				for k := range qtRows {
					binary.LittleEndian.PutUint32(w[b*qtBlockBytes+512+4*k:], math.Float32bits(r.Float32()*0.1))
				}
			}
			ka := qtKernActs(tab, typ, xq)
			b.Run(fmt.Sprintf("%s/kernel/%s", tab.path, typ), func(b *testing.B) {
				b.ReportAllocs()
				for range b.N {
					kern(w, ka, xs, nb, 8, out, qtRows, qtRows)
				}
				b.ReportMetric(2*float64(qtRows*8*32*nb)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
		for _, typ := range qtTypes {
			if tab.weights[typ].qtRepack == nil {
				continue
			}
			rb := typ.BlockBytes() * nb / (typ.BlockSize() / 32)
			src := qtRandRows(r, typ, qtRows, nb, false)
			b.Run(fmt.Sprintf("%s/repack/%s", tab.path, typ), func(b *testing.B) {
				b.SetBytes(int64(len(src)))
				b.ReportAllocs()
				for range b.N {
					tab.weights[typ].qtRepack(w, src, rb, qtRows, nb)
				}
			})
		}
	}
}

// TestQTileQuant checks each path's tile activation quantizer against the
// pure-Go one (which is quant.QuantizeRowQ8_0Act's codes and scales),
// byte for byte, on random blocks and on zeros, signed zeros, NaNs,
// infinities, subnormals, overflowing scales and values on halves.
func TestQTileQuant(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	const nb = 64
	edge := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.SmallestNonzeroFloat32, 1e-40, math.MaxFloat32, -math.MaxFloat32, 127, -127, 0.5, 1.5, 2.5, -0.5, 1e30}
	for _, p := range nativePaths() {
		tab := tableFor(p)
		if tab.qtQuant == nil {
			continue
		}
		for round := range 200 {
			src := randF32(r, 32*nb, float32(math.Ldexp(1, r.IntN(40)-20)))
			for b := range nb {
				blk := src[32*b : 32*b+32]
				switch (round + b) % 6 {
				case 1:
					clear(blk)
				case 2:
					blk[r.IntN(32)] = edge[r.IntN(len(edge))]
				case 3:
					// Values on halves of the scale: x·(127/amax) near k + 0.5.
					for k := range blk {
						blk[k] = float32(r.IntN(255)-127) + 0.5
					}
					blk[0] = 127
				case 4:
					for k := range blk {
						blk[k] = edge[r.IntN(len(edge))]
					}
				}
			}
			wq, gq := make([]int8, 32*nb), make([]int8, 32*nb)
			ws, gs := make([]qtScale, nb), make([]qtScale, nb)
			qtQuantQ8_0Generic(src, wq, ws)
			tab.qtQuant(src, gq, gs)
			for i := range wq {
				if wq[i] != gq[i] {
					t.Fatalf("%s round %d: code %d = %d, twin %d (block %v)", p, round, i, gq[i], wq[i], src[i/32*32:i/32*32+32])
				}
			}
			for i := range ws {
				if !sameFloat(ws[i].d, gs[i].d) || ws[i].bias != gs[i].bias {
					t.Fatalf("%s round %d: block %d scale %v bias %d, twin %v %d", p, round, i, gs[i].d, gs[i].bias, ws[i].d, ws[i].bias)
				}
			}
		}
	}
}
