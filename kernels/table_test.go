package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// Short names for the tests of the kernels of Q8_0, Q4_K and Q6_K, which
// predate the per-type rows of table.weights.

func (t *table) q80(typ tensor.Type) *dots[quant.BlockQ8_0] { return &t.weights[typ].q80 }
func (t *table) q8k(typ tensor.Type) *dots[quant.BlockQ8K]  { return &t.weights[typ].q8k }

func (t *table) dotQ8_0(w []byte, x []quant.BlockQ8_0) float32 { return t.q80(tensor.Q8_0).one(w, x) }
func (t *table) dotQ4K(w []byte, x []quant.BlockQ8K) float32   { return t.q8k(tensor.Q4_K).one(w, x) }
func (t *table) dotQ6K(w []byte, x []quant.BlockQ8K) float32   { return t.q8k(tensor.Q6_K).one(w, x) }
func (t *table) dotQ80x4(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32) {
	t.q80(tensor.Q8_0).x4(w, x, nb, out)
}
func (t *table) dotQ80x8(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32) {
	t.q80(tensor.Q8_0).x8(w, x, dx, nb, out)
}
func (t *table) dotQ4Kx4(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	t.q8k(tensor.Q4_K).x4(w, x, nb, out)
}
func (t *table) dotQ6Kx4(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	t.q8k(tensor.Q6_K).x4(w, x, nb, out)
}
