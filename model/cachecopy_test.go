package model

import (
	"errors"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// TestCopyPrefix: positions from..n of one sequence become another's,
// keys and values, in both element types, leaving the destination's
// positions below from and the other sequences alone; arguments outside
// what the sequences hold are refused.
func TestCopyPrefix(t *testing.T) {
	cfg := Config{NLayer: 2, NHeadKV: 2, HeadDim: 3}
	w := cfg.KVDim()
	// Small integers, exact in F16.
	row := func(seq, pos, layer int, v bool) []float32 {
		out := make([]float32, w)
		for d := range out {
			out[d] = float32(100*seq + 10*pos + layer + d)
			if v {
				out[d] = -out[d]
			}
		}
		return out
	}
	for _, kv := range []KVType{KVF16, KVF32} {
		c, err := NewCache(cfg, kv, 3, 8)
		if err != nil {
			t.Fatal(err)
		}
		fill := func(seq, n int) {
			for l := range cfg.NLayer {
				for p := range n {
					c.store(l, seq, p, row(seq, p, l, false), row(seq, p, l, true))
				}
			}
			c.lens[seq] = n
		}
		fill(0, 6)
		fill(1, 4)
		fill(2, 5)
		if err := c.CopyPrefix(1, 0, 2, 6); err != nil {
			t.Fatal(err)
		}
		read := func(layer, seq, pos int) (k, v []float32) {
			for d := range w {
				ko, vo := c.keyOff(layer, seq, pos)+d, c.valOff(layer, seq, d)+pos
				if kv == KVF16 {
					k = append(k, quant.F16ToF32(c.k16[ko]))
					v = append(v, quant.F16ToF32(c.v16[vo]))
				} else {
					k = append(k, c.k32[ko])
					v = append(v, c.v32[vo])
				}
			}
			return k, v
		}
		for l := range cfg.NLayer {
			for p := range 6 {
				src := 0 // copied
				if p < 2 {
					src = 1 // kept
				}
				k, v := read(l, 1, p)
				if !slices.Equal(k, row(src, p, l, false)) || !slices.Equal(v, row(src, p, l, true)) {
					t.Fatalf("%v layer %d position %d: %v %v, want sequence %d's", kv, l, p, k, v, src)
				}
				if p < 5 {
					if k, _ := read(l, 2, p); !slices.Equal(k, row(2, p, l, false)) {
						t.Fatalf("%v: sequence 2 changed at layer %d position %d", kv, l, p)
					}
				}
			}
		}
		if c.Len(1) != 6 {
			t.Fatalf("%v: length %d after the copy, want 6", kv, c.Len(1))
		}
		for _, bad := range [][4]int{{3, 0, 0, 1}, {1, -1, 0, 1}, {1, 0, 3, 2}, {1, 0, 0, 7}, {1, 0, -1, 2}, {2, 1, 6, 6}} {
			if err := c.CopyPrefix(bad[0], bad[1], bad[2], bad[3]); !errors.Is(err, ErrInvalid) {
				t.Errorf("%v: CopyPrefix%v: %v, want ErrInvalid", kv, bad, err)
			}
		}
	}
}
