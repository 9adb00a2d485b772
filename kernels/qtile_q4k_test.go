package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// TestQKTile checks each path's Q4_K tile against the pure-Go twin: its
// repack byte for byte and its kernel bit for bit, on whole and partial
// groups, every token count, several widths, random and edge-case
// weights (f16 d and dmin from qtEdgeScales) and activations (blocks of
// all -128 or all 127).
func TestQKTile(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	tabs := qtTables()
	for _, tab := range tabs[1:] {
		wk := &tab.weights[tensor.Q4_K]
		if wk.qtile == nil {
			continue
		}
		for _, nk := range []int{1, 2, 7} {
			nb := 8 * nk
			for _, edge := range []bool{false, true} {
				for _, rows := range []int{16, 15, 5, 1} {
					rb := nk * q4KBytes
					w := qkRandRows(r, rows, nk, edge)
					want := make([]byte, nk*qkBlockBytes)
					qkRepackGeneric(want, w, rb, rows, nb)
					got := make([]byte, len(want))
					for i := range got {
						got[i] = 0x5a
					}
					wk.qtRepack(got, w, rb, rows, nb)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%s nk=%d rows=%d edge=%v: repacked byte %d = %#x, twin %#x", tab.path, nk, rows, edge, i, got[i], want[i])
						}
					}
					for nt := 1; nt <= 8; nt++ {
						xq, xs := qkRandActs(r, nt, nb, edge)
						ldo := rows + 2
						wantOut := make([]float32, nt*ldo)
						gotOut := make([]float32, nt*ldo)
						for i := range wantOut {
							wantOut[i], gotOut[i] = -1, -1
						}
						qkTileGeneric(want, xq, xs, nb, nt, wantOut, ldo, rows)
						wk.qtile(want, xq, xs, nb, nt, gotOut, ldo, rows)
						for i := range gotOut {
							if !sameFloat(gotOut[i], wantOut[i]) {
								t.Fatalf("%s nk=%d rows=%d nt=%d edge=%v: out[%d] = %v, twin %v", tab.path, nk, rows, nt, edge, i, gotOut[i], wantOut[i])
							}
						}
					}
				}
			}
		}
	}
}

// TestQKTileValues checks the Q4_K layout and the twin against the
// dequantized rows: each repacked code times its scale less the min
// times dmin is the value, and the twin's products are within a float32
// summation's rounding of the float64 product of those values.
func TestQKTileValues(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	const nk, rows, nt = 3, 16, 3
	nb := 8 * nk
	rb := nk * q4KBytes
	w := qkRandRows(r, rows, nk, false)
	g := make([]byte, nk*qkBlockBytes)
	qkRepackGeneric(g, w, rb, rows, nb)
	vals := make([]float32, 256*nk)
	xq, xs := qkRandActs(r, nt, nb, false)
	out := make([]float32, nt*rows)
	qkTileGeneric(g, xq, xs, nb, nt, out, rows, rows)
	for k := range rows {
		if err := quant.Dequantize(tensor.Q4_K, w[k*rb:(k+1)*rb], vals); err != nil {
			t.Fatal(err)
		}
		for i := range nk {
			blk := g[i*qkBlockBytes:]
			d := math.Float32frombits(binary.LittleEndian.Uint32(blk[qkDOff+4*k:]))
			dmin := math.Float32frombits(binary.LittleEndian.Uint32(blk[qkDminOff+4*k:]))
			for v := range 256 {
				sb, j := v/32, v%32
				q := blk[qkSubBytes*sb+64*(j/4)+4*k+j%4]
				sc := binary.LittleEndian.Uint16(blk[qkSubBytes*sb+qkScOff+4*k:])
				m := binary.LittleEndian.Uint16(blk[qkMinOff+64*sb+4*k:])
				got := float64(d)*float64(sc)*float64(q) - float64(dmin)*float64(m)
				if want := float64(vals[256*i+v]); math.Abs(got-want) > 1e-6*(1+math.Abs(want)) {
					t.Fatalf("row %d value %d: layout gives %v, dequantized %v", k, 256*i+v, got, want)
				}
			}
		}
		for tok := range nt {
			var want, abs float64
			for v := range 256 * nk {
				p := float64(vals[v]) * float64(xq[tok*nb*32+v]) * float64(xs[tok*nb+v/32].d)
				want += p
				abs += math.Abs(p)
			}
			if got := float64(out[tok*rows+k]); math.Abs(got-want) > 1e-5*abs+1e-6 {
				t.Fatalf("row %d token %d: twin %v, float64 product %v", k, tok, got, want)
			}
		}
	}
}

// qkRandRows returns rows random Q4_K rows of nk blocks: random bytes
// with finite d and dmin, and with edge some d and dmin from
// qtEdgeScales.
func qkRandRows(r *rand.Rand, rows, nk int, edge bool) []byte {
	w := randBlocks(r, rows*nk, q4KBytes, []int{0, 2}, 0.05)
	if edge {
		for i := range rows * nk {
			for _, o := range []int{0, 2} {
				if r.IntN(4) == 0 {
					binary.LittleEndian.PutUint16(w[i*q4KBytes+o:], qtEdgeScales[r.IntN(len(qtEdgeScales))])
				}
			}
		}
	}
	return w
}

// qkRandActs returns nt tokens' tile activations of nb 32-value blocks as
// Q8_K gives them: qtRandActs's codes, with one scale per 256 values.
func qkRandActs(r *rand.Rand, nt, nb int, edge bool) ([]int8, []qtScale) {
	xq, xs := qtRandActs(r, nt, nb, edge)
	for i := range xs {
		xs[i].d = xs[i/8*8].d
	}
	return xq, xs
}
