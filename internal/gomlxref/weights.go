package gomlxref

import (
	"fmt"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/quant"
)

// matrix is a row-major weight: rows × cols float32 values.
type matrix struct {
	rows, cols int
	data       []float32
}

// layer holds one block's weights as float32.
type layer struct {
	attnNorm, ffnNorm []float32
	q, k, v, o        matrix
	gate, up, down    matrix
}

// weights is every tensor of a model, dequantized to float32.
type weights struct {
	embed, output matrix // output is embed when the output is tied
	outputNorm    []float32
	layers        []layer
}

// loader dequantizes tensors of one file, checking their shapes.
type loader struct {
	f    *gguf.File
	used map[string]bool
}

// tensor returns the named tensor as float32 values, which must have
// exactly the GGUF dimensions dims (row length first).
func (l *loader) tensor(name string, dims ...int) ([]float32, error) {
	ti, ok := l.f.Tensor(name)
	if !ok {
		return nil, fail(ErrMissing, name, "required tensor is absent")
	}
	l.used[name] = true
	if len(ti.Dims) != len(dims) {
		return nil, fail(ErrInvalid, name, "dimensions %v, want %v", ti.Dims, dims)
	}
	n := 1
	for i, d := range dims {
		if ti.Dims[i] != uint64(d) {
			return nil, fail(ErrInvalid, name, "dimensions %v, want %v", ti.Dims, dims)
		}
		n *= d
	}
	data, err := l.f.TensorData(ti)
	if err != nil {
		return nil, fail(ErrInvalid, name, "data: %v", err)
	}
	out := make([]float32, n)
	if err := quant.Dequantize(ti.Type, data, out); err != nil {
		return nil, fail(ErrUnsupported, name, "dequantize %s: %v", ti.Type, err)
	}
	return out, nil
}

// matrix returns the named rows × cols matrix.
func (l *loader) matrix(name string, rows, cols int) (matrix, error) {
	d, err := l.tensor(name, cols, rows)
	return matrix{rows: rows, cols: cols, data: d}, err
}

// loadWeights reads every tensor c describes and rejects any other.
func loadWeights(f *gguf.File, c Config) (*weights, error) {
	l := &loader{f: f, used: map[string]bool{}}
	w := &weights{layers: make([]layer, c.NLayer)}
	var err error
	if w.embed, err = l.matrix("token_embd.weight", c.NVocab, c.NEmbd); err != nil {
		return nil, err
	}
	for i := range w.layers {
		if err := l.layer(&w.layers[i], i, c); err != nil {
			return nil, err
		}
	}
	if w.outputNorm, err = l.tensor("output_norm.weight", c.NEmbd); err != nil {
		return nil, err
	}
	w.output = w.embed
	if !c.Tied {
		if w.output, err = l.matrix("output.weight", c.NVocab, c.NEmbd); err != nil {
			return nil, err
		}
	}
	for _, ti := range f.Tensors {
		if !l.used[ti.Name] {
			return nil, fail(ErrUnsupported, ti.Name, "tensor the reference does not use")
		}
	}
	return w, nil
}

// layer reads block i.
func (l *loader) layer(ly *layer, i int, c Config) error {
	p := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
	qd, kd := c.NHead*c.HeadDim, c.NHeadKV*c.HeadDim
	var err error
	vecs := []struct {
		dst  *[]float32
		name string
	}{{&ly.attnNorm, "attn_norm"}, {&ly.ffnNorm, "ffn_norm"}}
	for _, v := range vecs {
		if *v.dst, err = l.tensor(p(v.name), c.NEmbd); err != nil {
			return err
		}
	}
	mats := []struct {
		dst        *matrix
		name       string
		rows, cols int
	}{
		{&ly.q, "attn_q", qd, c.NEmbd}, {&ly.k, "attn_k", kd, c.NEmbd}, {&ly.v, "attn_v", kd, c.NEmbd},
		{&ly.o, "attn_output", c.NEmbd, qd}, {&ly.gate, "ffn_gate", c.NFF, c.NEmbd},
		{&ly.up, "ffn_up", c.NFF, c.NEmbd}, {&ly.down, "ffn_down", c.NEmbd, c.NFF},
	}
	for _, m := range mats {
		if *m.dst, err = l.matrix(p(m.name), m.rows, m.cols); err != nil {
			return err
		}
	}
	return nil
}
