package model

import (
	"errors"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestWeightMatrixTypes checks the load-time decision on a weight
// matrix's type: MXFP4 (gpt-oss's experts) loads as matrix and as
// embedding; the codebook and ternary types no kernel multiplies (IQ1,
// IQ2, IQ3, TQ) are refused at load with the tensor, its type and the
// supported types named.
func TestWeightMatrixTypes(t *testing.T) {
	sp := synthSpec{embd: 256, layers: 1, heads: 4, kvHeads: 2, ff: 256, vocab: 40, seed: 23}
	for _, tc := range []struct {
		typ  tensor.Type
		name string
		ok   bool
	}{
		{tensor.MXFP4, "blk.0.attn_q.weight", true},
		{tensor.MXFP4, "token_embd.weight", true},
		{tensor.MXFP4, "output.weight", true},
		{tensor.IQ1_S, "blk.0.attn_q.weight", false},
		{tensor.IQ1_M, "blk.0.ffn_down.weight", false},
		{tensor.IQ2_XXS, "blk.0.attn_q.weight", false},
		{tensor.IQ2_XS, "blk.0.ffn_up.weight", false},
		{tensor.IQ2_S, "output.weight", false},
		{tensor.IQ3_XXS, "blk.0.attn_k.weight", false},
		{tensor.IQ3_S, "token_embd.weight", false},
		{tensor.TQ1_0, "blk.0.ffn_gate.weight", false},
		{tensor.TQ2_0, "blk.0.attn_output.weight", false},
	} {
		t.Run(tc.typ.String()+" "+tc.name, func(t *testing.T) {
			s := newSynth(t, sp)
			var dims []uint64
			for _, st := range s.tensors {
				if st.name == tc.name {
					dims = st.dims
				}
			}
			if dims == nil {
				t.Fatalf("no tensor %s", tc.name)
			}
			s.dropTensor(tc.name)
			rb, err := tc.typ.RowBytes(int64(dims[0]))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ok {
				vals := make([]float32, dims[0]*dims[1])
				for i := range vals {
					vals[i] = float32(i%7-3) / 16
				}
				s.tensors = append(s.tensors, encode(t, tc.name, tc.typ, dims, vals))
			} else {
				s.tensors = append(s.tensors, &synthTensor{name: tc.name, typ: tc.typ, dims: dims, data: make([]byte, int(rb)*int(dims[1]))})
			}
			_, err = s.load(t)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var te *TensorError
			if !errors.Is(err, ErrUnsupported) || !errors.As(err, &te) || te.Name != tc.name {
				t.Fatalf("error %v, want an ErrUnsupported TensorError for %s", err, tc.name)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.typ.String()) || !strings.Contains(msg, "MXFP4") || !strings.Contains(msg, "Q4_K") {
				t.Errorf("error %q names neither the type nor the supported ones (MXFP4 among them)", msg)
			}
		})
	}
}
