package quant

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// refCase is one llama.cpp reference case in shared/ref/quant.
type refCase struct {
	name string
	typ  tensor.Type
}

// refCases lists the llama.cpp reference cases.
func refCases() []refCase {
	return []refCase{
		{"q8_0.blk.0.attn_q.weight", tensor.Q8_0},
		{"q8_0.adversarial", tensor.Q8_0},
		{"q4_K.blk.0.attn_q.weight", tensor.Q4_K},
		{"q4_K.adversarial", tensor.Q4_K},
		{"q6_K.blk.0.ffn_down.weight", tensor.Q6_K},
		{"q6_K.adversarial", tensor.Q6_K},
	}
}

// readRef reads one file of a reference case.
func readRef(t *testing.T, name, suffix string) []byte {
	t.Helper()
	p := shared.Path(t, filepath.Join("ref", "quant", name+suffix))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// f32s decodes little-endian float32 values.
func f32s(t *testing.T, b []byte) []float32 {
	t.Helper()
	if len(b)%4 != 0 {
		t.Fatalf("float32 file of %d bytes", len(b))
	}
	v := make([]float32, len(b)/4)
	DequantizeF32(b, v)
	return v
}

// sameBits reports whether got and want are the same float32, comparing
// bits. Off amd64, where arithmetic NaNs may carry another sign, any NaN
// matches a NaN.
func sameBits(got, want float32) bool {
	if math.Float32bits(got) == math.Float32bits(want) {
		return true
	}
	return runtime.GOARCH != "amd64" && got != got && want != want
}

func TestReferenceQuantize(t *testing.T) {
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			in := f32s(t, readRef(t, c.name, ".input.f32.bin"))
			want := readRef(t, c.name, ".quant.bin")
			got := make([]byte, len(want))
			if err := Quantize(c.typ, in, got); err != nil {
				t.Fatal(err)
			}
			bb, bs := c.typ.BlockBytes(), c.typ.BlockSize()
			bad := 0
			for i := 0; i < len(want); i += bb {
				if string(got[i:i+bb]) != string(want[i:i+bb]) {
					if bad < 5 {
						blk := i / bb
						t.Errorf("block %d (values %d..%d):\n got %x\nwant %x", blk, blk*bs, blk*bs+bs-1, got[i:i+bb], want[i:i+bb])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d blocks differ", bad, len(want)/bb)
			}
		})
	}
}

func TestReferenceDequantize(t *testing.T) {
	for _, c := range refCases() {
		t.Run(c.name, func(t *testing.T) {
			q := readRef(t, c.name, ".quant.bin")
			want := f32s(t, readRef(t, c.name, ".dequant.f32.bin"))
			got := make([]float32, len(want))
			if err := Dequantize(c.typ, q, got); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range want {
				if !sameBits(got[i], want[i]) {
					if bad < 5 {
						t.Errorf("value %d: got %#08x (%g), want %#08x (%g)", i,
							math.Float32bits(got[i]), got[i], math.Float32bits(want[i]), want[i])
					}
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d values differ", bad, len(want))
			}
		})
	}
}

// TestReferenceAdversarialFacts checks the behaviours the reference README
// names for the adversarial rows, independently of the reference files'
// bytes, so a regression is reported by name.
func TestReferenceAdversarialFacts(t *testing.T) {
	in := f32s(t, readRef(t, "q8_0.adversarial", ".input.f32.bin"))
	const n = 512
	row := func(r int) []float32 { return in[r*n : (r+1)*n] }
	t.Run("q8_0 row 1 scale is +Inf", func(t *testing.T) {
		b := make([]byte, n/QK8_0*BlockQ8_0Bytes)
		QuantizeQ8_0(row(1), b)
		y := make([]float32, n)
		DequantizeQ8_0(b, y)
		idx := -1
		for i, v := range row(1) {
			if v == 1e30 {
				idx = i
			}
		}
		if idx < 0 {
			t.Fatal("row 1 has no 1e30")
		}
		blk := idx / QK8_0
		if h := binary.LittleEndian.Uint16(b[blk*BlockQ8_0Bytes:]); h != 0x7c00 {
			t.Errorf("scale %#04x, want +Inf 0x7c00", h)
		}
		if !math.IsInf(float64(y[idx]), 1) {
			t.Errorf("value %d = %g, want +Inf", idx, y[idx])
		}
		other := blk*QK8_0 + (idx+1)%QK8_0
		if y[other] == y[other] {
			t.Errorf("value %d = %g, want NaN", other, y[other])
		}
	})
	t.Run("q6_K row 1 is an all-zero block", func(t *testing.T) {
		b := make([]byte, 2*BlockQ6_KBytes)
		QuantizeQ6K(row(1), b)
		for i, c := range b {
			if c != 0 {
				t.Fatalf("byte %d = %#x, want all zeros", i, c)
			}
		}
	})
	t.Run("q4_K row 1 dequantizes to NaN", func(t *testing.T) {
		b := make([]byte, 2*BlockQ4_KBytes)
		QuantizeQ4K(row(1), b)
		y := make([]float32, n)
		DequantizeQ4K(b, y)
		nan := 0
		for _, v := range y {
			if v != v {
				nan++
			}
		}
		if nan != 256 {
			t.Errorf("%d NaN values, want 256", nan)
		}
	})
}
