package synth

import (
	"io"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// BenchmarkTensorWrite measures how fast a tensor's bytes are produced:
// a slice of Qwen3-30B-A3B's stacked experts (2048-value rows, four of
// the 128 experts) at the types its Q4_K_M file holds. Bytes are output
// bytes.
func BenchmarkTensorWrite(b *testing.B) {
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0, tensor.F16} {
		b.Run(typ.String(), func(b *testing.B) {
			dims := []uint64{2048, 768, 4}
			g := &tensorGen{plan: TensorPlan{Name: "blk.0.ffn_up_exps.weight", Type: typ, Dims: dims, init: initWeight}, seed: 1, index: 7, threads: 2}
			n, err := typ.Bytes(dims)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := g.write(io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The same tensor from a pool of 4096 rows, drawn once outside
		// the timing (a real file's pools are shared by its tensors).
		b.Run(typ.String()+"-pool", func(b *testing.B) {
			dims := []uint64{2048, 768, 4}
			p := &rowPools{rows: 4096, seed: 1, threads: 2, byKey: map[poolKey][]byte{}}
			plan := TensorPlan{Name: "blk.0.ffn_up_exps.weight", Type: typ, Dims: dims, init: initWeight}
			if _, err := p.pool(poolKey{typ, dims[0]}); err != nil {
				b.Fatal(err)
			}
			n, err := typ.Bytes(dims)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n))
			for b.Loop() {
				if err := p.write(io.Discard, plan, 1, 7); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
