package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// ggufTensor is one tensor's type and bytes in a GGUF file.
type ggufTensor struct {
	typ  tensor.Type
	n    int // number of values
	data []byte
}

// readGGUF opens a GGUF file with package gguf and returns its tensors by
// name. The data are windows of the file's read-only mapping, released
// when t ends.
func readGGUF(t *testing.T, path string) map[string]ggufTensor {
	t.Helper()
	f, err := gguf.Open(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	out := make(map[string]ggufTensor, len(f.Tensors))
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		data, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		out[ti.Name] = ggufTensor{ti.Type, int(ti.Elements()), data}
	}
	return out
}

// TestModelTensors quantizes every tensor of the F16 test model with the
// type llama-quantize chose for it in the Q8_0 and Q4_K_M test models, and
// compares the bytes with those files; it also checks that dequantizing
// those files' tensors is the inverse of the stored F16/F32 values where
// the type is lossless.
func TestModelTensors(t *testing.T) {
	if testing.Short() {
		t.Skip("whole-model comparison skipped in -short mode")
	}
	src := readGGUF(t, shared.Model(t, "mini-24m-f16.gguf"))
	for _, name := range []string{"mini-24m-q8_0.gguf", "mini-24m-q4_k_m.gguf"} {
		t.Run(name, func(t *testing.T) {
			quantized := readGGUF(t, shared.Model(t, name))
			counts := map[tensor.Type]int{}
			for tn, q := range quantized {
				s, ok := src[tn]
				if !ok || s.n != q.n {
					t.Fatalf("tensor %s: not in the F16 model with %d values", tn, q.n)
				}
				vals := make([]float32, s.n)
				if err := Dequantize(s.typ, s.data, vals); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(q.data))
				if err := Quantize(q.typ, vals, got); err != nil {
					t.Fatalf("tensor %s: %v", tn, err)
				}
				if string(got) != string(q.data) {
					bb := q.typ.BlockBytes()
					bad := 0
					for i := 0; i < len(got); i += bb {
						if string(got[i:i+bb]) != string(q.data[i:i+bb]) {
							bad++
						}
					}
					t.Errorf("tensor %s (%s → %s): %d of %d blocks differ", tn, s.typ, q.typ, bad, len(got)/bb)
				}
				counts[q.typ]++
			}
			t.Logf("%s: tensors compared by type: %v", name, counts)
		})
	}
}

// TestModelDecode dequantizes every tensor of every shared test model:
// none of their weights may decode to a NaN or an infinity, and a Q4_K or
// Q6_K row's reference dot with a quantized activation must match the
// float64 dot of the dequantized operands.
func TestModelDecode(t *testing.T) {
	if testing.Short() {
		t.Skip("whole-model decode skipped in -short mode")
	}
	for _, path := range shared.Models(t) {
		tensors := readGGUF(t, path)
		for name, tn := range tensors {
			vals := make([]float32, tn.n)
			if err := Dequantize(tn.typ, tn.data, vals); err != nil {
				t.Fatalf("%s %s: %v", path, name, err)
			}
			for i, v := range vals {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					t.Fatalf("%s %s: value %d is %g", path, name, i, v)
				}
			}
			if tn.typ == tensor.Q4_K || tn.typ == tensor.Q6_K {
				checkRowDot(t, name, tn, vals)
			}
		}
	}
}

// checkRowDot compares the reference dot of the first row of a K-quant
// tensor with the float64 dot of its dequantized values.
func checkRowDot(t *testing.T, name string, tn ggufTensor, vals []float32) {
	t.Helper()
	// The row length is not stored in ggufTensor; 256 values suffice for
	// one block, and every tensor holds whole blocks.
	rng := rand.New(rand.NewPCG(41, uint64(tn.n)))
	x := randomActivations(rng, QK_K)
	xk := make([]BlockQ8K, 1)
	QuantizeRowQ8K(x, xk)
	var got float32
	if tn.typ == tensor.Q4_K {
		got = DotQ4KQ8K(tn.data[:BlockQ4_KBytes], xk)
	} else {
		got = DotQ6KQ8K(tn.data[:BlockQ6_KBytes], xk)
	}
	want, mag := float64Dot(vals[:QK_K], dequantQ8K(xk))
	if math.Abs(float64(got)-want) > 1e-5*mag {
		t.Errorf("%s (%s): first block dot %g, float64 %g", name, tn.typ, got, want)
	}
}
