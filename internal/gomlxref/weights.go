package gomlxref

import (
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// matrix is a row-major weight: rows × cols float32 values.
type matrix struct {
	rows, cols int
	data       []float32
}

// layer holds one block's weights as float32; the optional ones are nil
// when the file does not have them.
type layer struct {
	attnNorm, ffnNorm []float32
	q, k, v, o        matrix
	gate, up, down    matrix
	bq, bk, bv, bo    []float32 // projection biases
	qNorm, kNorm      []float32 // per-head RMSNorm gains [HeadDim] (qwen3)
}

// weights is every tensor of a model, dequantized to float32.
type weights struct {
	embed, output matrix // output is embed when the output is tied
	outputNorm    []float32
	layers        []layer
	// ropeFactors divides the angle of each rotated pair (Llama 3's
	// rope_freqs.weight, [RopeDim/2]); nil when absent.
	ropeFactors []float32
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

// has reports whether the file has the named tensor.
func (l *loader) has(name string) bool {
	_, ok := l.f.Tensor(name)
	return ok
}

// want reads the named tensor when need is required, or optional and the
// tensor is present; otherwise it returns nil and leaves the tensor
// unused, so that a tensor the family never reads is refused.
func (l *loader) want(need int, name string, dims ...int) ([]float32, error) {
	if need == absent || need == optional && !l.has(name) {
		return nil, nil
	}
	return l.tensor(name, dims...)
}

// ropeFreqs reads rope_freqs.weight: F32 (ggml's rope op accepts no
// other type), one positive finite divisor per rotated pair.
func (l *loader) ropeFreqs(c Config) ([]float32, error) {
	const name = "rope_freqs.weight"
	if ti, ok := l.f.Tensor(name); ok && ti.Type != tensor.F32 {
		return nil, fail(ErrUnsupported, name, "type %s, want F32", ti.Type)
	}
	v, err := l.tensor(name, c.RopeDim/2)
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return nil, fail(ErrInvalid, name, "factor %d is %g, want a positive finite number", i, x)
		}
	}
	return v, nil
}

// loadWeights reads every tensor c and its family describe and rejects
// any other.
func loadWeights(f *gguf.File, c Config, fam family) (*weights, error) {
	l := &loader{f: f, used: map[string]bool{}}
	w := &weights{layers: make([]layer, c.NLayer)}
	var err error
	if w.embed, err = l.matrix("token_embd.weight", c.NVocab, c.NEmbd); err != nil {
		return nil, err
	}
	if fam.ropeFreqs && l.has("rope_freqs.weight") {
		if w.ropeFactors, err = l.ropeFreqs(c); err != nil {
			return nil, err
		}
	}
	for i := range w.layers {
		if err := l.layer(&w.layers[i], i, c, fam); err != nil {
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
func (l *loader) layer(ly *layer, i int, c Config, fam family) error {
	p := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
	b := func(s string) string { return fmt.Sprintf("blk.%d.%s.bias", i, s) }
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
	qkNorm := absent
	if fam.qkNorm {
		qkNorm = required
	}
	opts := []struct {
		dst  *[]float32
		need int
		name string
		n    int
	}{
		{&ly.bq, fam.qkvBias, b("attn_q"), qd}, {&ly.bk, fam.qkvBias, b("attn_k"), kd},
		{&ly.bv, fam.qkvBias, b("attn_v"), kd}, {&ly.bo, fam.outBias, b("attn_output"), c.NEmbd},
		{&ly.qNorm, qkNorm, p("attn_q_norm"), c.HeadDim}, {&ly.kNorm, qkNorm, p("attn_k_norm"), c.HeadDim},
	}
	for _, o := range opts {
		if *o.dst, err = l.want(o.need, o.name, o.n); err != nil {
			return err
		}
	}
	return nil
}
