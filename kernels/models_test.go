package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// modelTol is the error allowed between MatMul on real weights and the
// float64 product of the dequantized weights with the unquantized
// activations, relative to Σ|w·x|: it covers the 8-bit (or F16)
// rounding of the activations.
const modelTol = 0.02

// TestRealModelWeights multiplies every 2-D tensor of the shared test
// models (Q4_K, Q6_K, Q8_0, F16 and F32, as llama.cpp wrote them) on every
// path: exactly equal to the generic path (close to it for float weights
// and for Q8_0 on a path that reorders its sums), and close to the
// float64 product of quant's dequantized weights.
func TestRealModelWeights(t *testing.T) {
	for _, name := range []string{"mini-24m-q4_k_m.gguf", "mini-24m-q8_0.gguf", "mini-24m-f16.gguf", "stories260K.gguf"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(shared.Model(t, name), gguf.DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := rand.New(rand.NewPCG(50, 51))
			seen := map[tensor.Type]int{}
			for i := range f.Tensors {
				ti := &f.Tensors[i]
				if len(ti.Dims) != 2 || !supported(ti.Type) || seen[ti.Type] >= 3 {
					continue
				}
				seen[ti.Type]++
				data, err := f.TensorData(ti)
				if err != nil {
					t.Fatal(err)
				}
				rows := min(int(ti.Dims[1]), 300) // a prefix of the rows is enough
				m, err := NewMatrix(ti.Type, rows, int(ti.Dims[0]), data[:len(data)/int(ti.Dims[1])*rows])
				if err != nil {
					t.Fatalf("%s: %v", ti.Name, err)
				}
				checkRealMatrix(t, ti.Name, m, r)
			}
			if len(seen) == 0 {
				t.Fatal("no 2-D tensor of a supported type")
			}
			t.Logf("tensors checked per type: %v", seen)
		})
	}
}

// checkRealMatrix runs m on every path with five tokens of random
// activations and compares as TestRealModelWeights says.
func checkRealMatrix(t *testing.T, name string, m Matrix, r *rand.Rand) {
	t.Helper()
	const n = 5 // one four-token group and one single token
	x := randF32(r, n*m.Cols, 1)
	w := make([]float32, m.Rows*m.Cols)
	if err := quant.Dequantize(m.Type, m.Data, w); err != nil {
		t.Fatal(err)
	}
	var base []float32
	for _, p := range Available() {
		pool := newPool(2, tableFor(p))
		out := make([]float32, n*m.Rows)
		err := pool.MatMul(out, m, x, n)
		pool.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", name, p, err)
		}
		if base == nil {
			base = out
			for i := range n {
				for row := range m.Rows {
					var want, abs float64
					for k := range m.Cols {
						v := float64(w[row*m.Cols+k]) * float64(x[i*m.Cols+k])
						want += v
						abs += math.Abs(v)
					}
					if got := float64(out[i*m.Rows+row]); math.Abs(got-want) > modelTol*abs+1e-6 {
						t.Fatalf("%s (%s) token %d row %d: got %v, float64 product %v (Σ|wx| %v)", name, m.Type, i, row, got, want, abs)
					}
				}
			}
			continue
		}
		// The prompt tile (qtile.go), where the path has one for the
		// type, sums in its own order too.
		exact := m.Type != tensor.F32 && m.Type != tensor.F16 &&
			!reordered(tableFor(p), m.Type) && tableFor(p).weights[m.Type].qtile == nil
		for i, v := range out {
			if exact && !sameFloat(v, base[i]) || !near(v, base[i], 1e-4*(1+math.Abs(float64(base[i])))) {
				t.Fatalf("%s (%s) %s: out[%d] = %v, generic %v", name, m.Type, p, i, v, base[i])
			}
		}
	}
}
