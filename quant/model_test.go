package quant

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// ggufTensor is one tensor's type and bytes in a GGUF file.
type ggufTensor struct {
	typ  tensor.Type
	n    int // number of values
	data []byte
}

// ggufReader walks a GGUF file held in memory. It is a minimal reader for
// these tests (the project's GGUF parser is another package); every read
// is bounds-checked and reports the offset on failure.
type ggufReader struct {
	b   []byte
	off int
	err error
}

func (r *ggufReader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("gguf: %d bytes wanted at offset %d of %d", n, r.off, len(r.b))
		return nil
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *ggufReader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *ggufReader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *ggufReader) str() string { return string(r.take(r.u64())) }

// value skips (or, for general.alignment, returns) one metadata value.
func (r *ggufReader) value(vt uint32) uint64 {
	sizes := map[uint32]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch vt {
	case 8:
		r.str()
	case 9:
		et, n := r.u32(), r.u64()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.value(et)
		}
	case 4:
		return uint64(r.u32())
	default:
		sz, ok := sizes[vt]
		if !ok {
			r.err = fmt.Errorf("gguf: value type %d at offset %d", vt, r.off)
			return 0
		}
		r.take(sz)
	}
	return 0
}

// readGGUF returns the tensors of a GGUF file by name.
func readGGUF(path string) (map[string]ggufTensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ggufReader{b: b}
	if string(r.take(4)) != "GGUF" || r.u32() != 3 {
		return nil, errors.New("gguf: not a version 3 GGUF file")
	}
	nt, nkv := r.u64(), r.u64()
	align := uint64(32)
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		key := r.str()
		if v := r.value(r.u32()); key == "general.alignment" {
			align = v
		}
	}
	type info struct {
		name string
		typ  tensor.Type
		dims []uint64
		off  uint64
	}
	var infos []info
	for i := uint64(0); i < nt && r.err == nil; i++ {
		in := info{name: r.str()}
		nd := r.u32()
		for d := uint32(0); d < nd && r.err == nil; d++ {
			in.dims = append(in.dims, r.u64())
		}
		in.typ = tensor.Type(r.u32())
		in.off = r.u64()
		infos = append(infos, in)
	}
	if r.err != nil {
		return nil, r.err
	}
	base := (uint64(r.off) + align - 1) / align * align
	out := map[string]ggufTensor{}
	for _, in := range infos {
		size, err := in.typ.Bytes(in.dims)
		if err != nil {
			return nil, fmt.Errorf("gguf: tensor %s: %w", in.name, err)
		}
		if base+in.off+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("gguf: tensor %s past the end of the file", in.name)
		}
		n, _ := tensor.Elements(in.dims)
		out[in.name] = ggufTensor{in.typ, int(n), b[base+in.off : base+in.off+uint64(size)]}
	}
	return out, nil
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
	src, err := readGGUF(shared.Model(t, "mini-24m-f16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mini-24m-q8_0.gguf", "mini-24m-q4_k_m.gguf"} {
		t.Run(name, func(t *testing.T) {
			quantized, err := readGGUF(shared.Model(t, name))
			if err != nil {
				t.Fatal(err)
			}
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
		tensors, err := readGGUF(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
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
