package quant

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// The vectors in testdata/ref are written by testdata/gen/gen.sh from
// llama.cpp's ggml library (see that script for the files).
const refCols = 512

// ggmlRef is one type's reference vectors and the Go functions they check.
type ggmlRef struct {
	name string // ggml's name, the file prefix
	typ  tensor.Type
	// dot is the type's reference dot with activation bytes in its
	// partner format; nil for the activation formats themselves.
	dot func(w, act []byte) float32
}

func ggmlRefs() []ggmlRef {
	q80 := func(f func([]byte, []BlockQ8_0) float32) func(w, act []byte) float32 {
		return func(w, act []byte) float32 { return f(w, decodeQ8_0(act)) }
	}
	q81 := func(f func([]byte, []BlockQ8_1) float32) func(w, act []byte) float32 {
		return func(w, act []byte) float32 { return f(w, decodeQ8_1(act)) }
	}
	q8k := func(f func([]byte, []BlockQ8K) float32) func(w, act []byte) float32 {
		return func(w, act []byte) float32 { return f(w, decodeQ8K(act)) }
	}
	return []ggmlRef{
		{"q4_0", tensor.Q4_0, q80(DotQ4_0Q8_0)},
		{"q4_1", tensor.Q4_1, q81(DotQ4_1Q8_1)},
		{"q5_0", tensor.Q5_0, q80(DotQ5_0Q8_0)},
		{"q5_1", tensor.Q5_1, q81(DotQ5_1Q8_1)},
		{"q8_0", tensor.Q8_0, q80(DotQ8_0Q8_0)},
		{"q8_1", tensor.Q8_1, nil},
		{"q2_K", tensor.Q2_K, q8k(DotQ2KQ8K)},
		{"q3_K", tensor.Q3_K, q8k(DotQ3KQ8K)},
		{"q4_K", tensor.Q4_K, q8k(DotQ4KQ8K)},
		{"q5_K", tensor.Q5_K, q8k(DotQ5KQ8K)},
		{"q6_K", tensor.Q6_K, q8k(DotQ6KQ8K)},
		{"q8_K", tensor.Q8_K, nil},
		{"iq4_nl", tensor.IQ4_NL, q80(DotIQ4NLQ8_0)},
		{"iq4_xs", tensor.IQ4_XS, q8k(DotIQ4XSQ8K)},
		{"mxfp4", tensor.MXFP4, q80(DotMXFP4Q8_0)},
	}
}

func decodeQ8_0(b []byte) []BlockQ8_0 {
	x := make([]BlockQ8_0, len(b)/BlockQ8_0Bytes)
	for i := range x {
		ReadBlockQ8_0(b[i*BlockQ8_0Bytes:], &x[i])
	}
	return x
}

func decodeQ8_1(b []byte) []BlockQ8_1 {
	x := make([]BlockQ8_1, len(b)/BlockQ8_1Bytes)
	for i := range x {
		blk := b[i*BlockQ8_1Bytes:]
		x[i].D = binary.LittleEndian.Uint16(blk)
		x[i].S = binary.LittleEndian.Uint16(blk[2:])
		for j := range x[i].Qs {
			x[i].Qs[j] = int8(blk[4+j])
		}
	}
	return x
}

func decodeQ8K(b []byte) []BlockQ8K {
	x := make([]BlockQ8K, len(b)/BlockQ8_KBytes)
	for i := range x {
		ReadBlockQ8K(b[i*BlockQ8_KBytes:], &x[i])
	}
	return x
}

// readGz returns the contents of testdata/ref/name.gz, or nil (and ok
// false) when the file does not exist.
func readGz(t *testing.T, name string) ([]byte, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "ref", name+".gz"))
	if os.IsNotExist(err) {
		return nil, false
	}
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
	return b, true
}

// mustGz is readGz failing the test when the file is absent.
func mustGz(t *testing.T, name string) []byte {
	t.Helper()
	b, ok := readGz(t, name)
	if !ok {
		t.Fatalf("testdata/ref/%s.gz is missing (run testdata/gen/gen.sh)", name)
	}
	return b
}

// compareF32Bits fails t at the first few values of got whose bits differ
// from the little-endian float32s in want.
func compareF32Bits(t *testing.T, what string, got []float32, want []byte) {
	t.Helper()
	if len(want) != 4*len(got) {
		t.Fatalf("%s: %d values, reference has %d bytes", what, len(got), len(want))
	}
	bad := 0
	for i, g := range got {
		w := math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:]))
		if !sameBits(g, w) {
			if bad < 5 {
				t.Errorf("%s: value %d (row %d) = %g (%#08x), ggml %g (%#08x)", what, i, i/refCols, g, math.Float32bits(g), w, math.Float32bits(w))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

func TestGGMLReference(t *testing.T) {
	in := f32s(t, mustGz(t, "input.f32.bin"))
	rows := len(in) / refCols
	for _, r := range ggmlRefs() {
		t.Run(r.name, func(t *testing.T) {
			rb := refCols / r.typ.BlockSize() * r.typ.BlockBytes()
			bb := r.typ.BlockBytes()
			want := mustGz(t, r.name+".quant.bin")
			if len(want) != rows*rb {
				t.Fatalf("%d quantized bytes, want %d rows of %d", len(want), rows, rb)
			}
			// Quantize row by row, as the generator calls ggml.
			got := make([]byte, rb)
			bad := 0
			for row := range rows {
				x := in[row*refCols : (row+1)*refCols]
				if err := Quantize(r.typ, x, got); err != nil {
					t.Fatal(err)
				}
				for b := 0; b < rb; b += bb {
					g, w := got[b:b+bb], want[row*rb+b:row*rb+b+bb]
					if r.typ == tensor.IQ4_NL && undefinedIQ4NL(x[b/bb*32:b/bb*32+32]) {
						// ggml leaves an all-zero block's codes as whatever its
						// stack held: only the (zero) scale is defined.
						g, w = g[:2], w[:2]
					}
					if r.typ == tensor.Q8_K && bytes.Equal(w[:4+QK_K], make([]byte, 4+QK_K)) {
						// An all-zero Q8_K block's bsums are left unwritten by
						// ggml; here they are zero.
						g, w = g[:4+QK_K], w[:4+QK_K]
					}
					if !bytes.Equal(g, w) && !generatedNaNSign(g, w) {
						if bad < 5 {
							t.Errorf("row %d block %d:\n got %x\nwant %x", row, b/bb, g, w)
						}
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d blocks differ", bad)
			}
			if deq, ok := readGz(t, r.name+".dequant.f32.bin"); ok {
				v := make([]float32, rows*refCols)
				if err := Dequantize(r.typ, want, v); err != nil {
					t.Fatal(err)
				}
				compareF32Bits(t, "dequantize", v, deq)
			}
			if hb, ok := readGz(t, r.name+".hostile.bin"); ok {
				v := make([]float32, len(hb)/rb*refCols)
				if err := Dequantize(r.typ, hb, v); err != nil {
					t.Fatal(err)
				}
				compareF32Bits(t, "dequantize hostile", v, mustGz(t, r.name+".hostile.dequant.f32.bin"))
			}
			if r.dot == nil {
				return
			}
			act := mustGz(t, r.name+".act.bin")
			dots := mustGz(t, r.name+".dot.f32.bin")
			nx := len(dots) / 4 / 8
			xrb := len(act) / nx
			var gotDots []float32
			for i := range 8 {
				w := want[(rows-8+i)*rb : (rows-7+i)*rb]
				for j := range nx {
					gotDots = append(gotDots, r.dot(w, act[j*xrb:(j+1)*xrb]))
				}
			}
			compareF32Bits(t, "dot", gotDots, dots)
		})
	}
}

// undefinedIQ4NL reports whether ggml's IQ4_NL quantizer leaves the codes
// of the 32-value block x undefined (all values below GROUP_MAX_EPS).
// generatedNaNSign reports whether block g differs from the reference w
// only in the sign of a NaN half-precision scale at its start, on a machine
// other than the x86 one the reference was made on. A NaN that an
// operation generates (inf-inf, 0*inf, 0/0) is negative on x86 and
// positive on arm64, in ggml's C as in Go; a row of infinities gives one
// (IQ4_NL's scale search).
func generatedNaNSign(g, w []byte) bool {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" || len(g) < 2 || len(g) != len(w) {
		return false
	}
	isNaN := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
	hg, hw := binary.LittleEndian.Uint16(g), binary.LittleEndian.Uint16(w)
	return isNaN(hg) && isNaN(hw) && hg^hw == 0x8000 && bytes.Equal(g[2:], w[2:])
}

func undefinedIQ4NL(x []float32) bool {
	for _, v := range x {
		if absf(v) >= groupMaxEps {
			return false
		}
	}
	return true
}

// TestGGMLActivations checks the activation quantizers against the
// partner-format rows ggml's CPU backend wrote for the dot vectors.
func TestGGMLActivations(t *testing.T) {
	in := f32s(t, mustGz(t, "input.f32.bin"))
	adv := len(in)/refCols - 6 // the random rows follow the 18 adversarial ones
	cases := []struct {
		name string
		size int
		conv func(x []float32) []byte
	}{
		{"q4_0", BlockQ8_0Bytes, func(x []float32) []byte {
			b := make([]BlockQ8_0, len(x)/32)
			QuantizeRowQ8_0(x, b)
			out := make([]byte, len(b)*BlockQ8_0Bytes)
			for i := range b {
				PutBlockQ8_0(out[i*BlockQ8_0Bytes:], &b[i])
			}
			return out
		}},
		{"q4_1", BlockQ8_1Bytes, func(x []float32) []byte {
			b := make([]BlockQ8_1, len(x)/32)
			QuantizeRowQ8_1(x, b)
			out := make([]byte, len(b)*BlockQ8_1Bytes)
			for i := range b {
				o := out[i*BlockQ8_1Bytes:]
				binary.LittleEndian.PutUint16(o, b[i].D)
				binary.LittleEndian.PutUint16(o[2:], b[i].S)
				for j, q := range b[i].Qs {
					o[4+j] = byte(q)
				}
			}
			return out
		}},
		{"q4_K", BlockQ8_KBytes, func(x []float32) []byte {
			b := make([]BlockQ8K, len(x)/256)
			QuantizeRowQ8K(x, b)
			out := make([]byte, len(b)*BlockQ8_KBytes)
			for i := range b {
				PutBlockQ8K(out[i*BlockQ8_KBytes:], &b[i])
			}
			return out
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := mustGz(t, c.name+".act.bin")
			rb := refCols / 32 * c.size
			if c.size == BlockQ8_KBytes {
				rb = refCols / 256 * c.size
			}
			for r := range len(want) / rb {
				got := c.conv(in[(adv+r)*refCols : (adv+r+1)*refCols])
				if !bytes.Equal(got, want[r*rb:(r+1)*rb]) {
					t.Errorf("row %d:\n got %x\nwant %x", r, got, want[r*rb:(r+1)*rb])
				}
			}
		})
	}
}
