package kernels

import (
	"compress/gzip"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// readRefGz reads package quant's llama.cpp reference file name (written
// by quant/testdata/gen/gen.sh from ggml's type traits).
func readRefGz(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "quant", "testdata", "ref", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGGMLDots checks every path's one-token dots of the new types against
// ggml's own results (its generic C kernel, run by the generator on the
// quantized reference rows and the CPU backend's activation blocks): bit
// for bit on a path that keeps the generic order, within the
// summation-order tolerance otherwise.
func TestGGMLDots(t *testing.T) {
	const cols, rows = 512, 24 // the reference input: 18 adversarial rows, 6 random
	for _, c := range newqTypes() {
		name := map[tensor.Type]string{
			tensor.Q4_0: "q4_0", tensor.Q5_0: "q5_0", tensor.IQ4_NL: "iq4_nl", tensor.Q4_1: "q4_1",
			tensor.Q5_1: "q5_1", tensor.Q2_K: "q2_K", tensor.Q3_K: "q3_K", tensor.Q5_K: "q5_K", tensor.IQ4_XS: "iq4_xs",
		}[c.typ]
		w := readRefGz(t, name+".quant.bin")
		act := readRefGz(t, name+".act.bin")
		dots := readRefGz(t, name+".dot.f32.bin")
		rb := cols / c.typ.BlockSize() * c.typ.BlockBytes()
		nx := len(dots) / 4 / 8
		xrb := len(act) / nx
		forEachPath(t, func(t *testing.T, tab *table) {
			wk := &tab.weights[c.typ]
			for i := range 8 {
				row := w[(rows-8+i)*rb : (rows-7+i)*rb]
				for j := range nx {
					a := act[j*xrb : (j+1)*xrb]
					want := math.Float32frombits(binary.LittleEndian.Uint32(dots[4*(i*nx+j):]))
					var got float32
					in := newqInput{w: row}
					switch wk.partner {
					case partnerQ8_0:
						in.q80 = make([]quant.BlockQ8_0, len(a)/quant.BlockQ8_0Bytes)
						for k := range in.q80 {
							quant.ReadBlockQ8_0(a[k*quant.BlockQ8_0Bytes:], &in.q80[k])
						}
						got = wk.q80.one(row, in.q80)
					case partnerQ8_1:
						x := make([]quant.BlockQ8_1, len(a)/quant.BlockQ8_1Bytes)
						for k := range x {
							b := a[k*quant.BlockQ8_1Bytes:]
							x[k].D, x[k].S = binary.LittleEndian.Uint16(b), binary.LittleEndian.Uint16(b[2:])
							for l := range x[k].Qs {
								x[k].Qs[l] = int8(b[4+l])
							}
						}
						in.q81 = x
						got = wk.q81.one(row, x)
					case partnerQ8K:
						in.q8k = make([]quant.BlockQ8K, len(a)/quant.BlockQ8_KBytes)
						for k := range in.q8k {
							quant.ReadBlockQ8K(a[k*quant.BlockQ8_KBytes:], &in.q8k[k])
						}
						got = wk.q8k.one(row, in.q8k)
					}
					if !reordered(tab, c.typ) {
						if !sameFloat(got, want) {
							t.Errorf("%s row %d token %d: %v, ggml %v: not bit for bit", c.typ, i, j, got, want)
						}
						continue
					}
					if in.q81 != nil {
						continue // no reordered Q8_1 kernels
					}
					nb := len(row) / c.typ.BlockBytes()
					if tol := float64(nb+16)*quantDotEps*newqAbs(c, in) + 1e-37; !near(got, want, tol) {
						t.Errorf("%s row %d token %d: %v, ggml %v (tolerance %g)", c.typ, i, j, got, want, tol)
					}
				}
			}
		})
	}
}
