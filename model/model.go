package model

import (
	"errors"
	"fmt"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// Layer holds the weights of one transformer block. The matrices are
// views of the model file's mapping; the vectors are decoded copies. The
// optional vectors are nil when the family or the file has none.
type Layer struct {
	AttnNorm []float32      // blk.N.attn_norm.weight [NEmbd]
	Q        kernels.Matrix // blk.N.attn_q.weight, QDim rows of NEmbd
	K        kernels.Matrix // blk.N.attn_k.weight, KVDim rows of NEmbd
	V        kernels.Matrix // blk.N.attn_v.weight, KVDim rows of NEmbd
	O        kernels.Matrix // blk.N.attn_output.weight, NEmbd rows of QDim
	QBias    []float32      // blk.N.attn_q.bias [QDim]
	KBias    []float32      // blk.N.attn_k.bias [KVDim]
	VBias    []float32      // blk.N.attn_v.bias [KVDim]
	OBias    []float32      // blk.N.attn_output.bias [NEmbd]
	QNorm    []float32      // blk.N.attn_q_norm.weight [HeadDim]: RMSNorm of each query head
	KNorm    []float32      // blk.N.attn_k_norm.weight [HeadDim]: RMSNorm of each key head
	FFNNorm  []float32      // blk.N.ffn_norm.weight [NEmbd]
	Gate     kernels.Matrix // blk.N.ffn_gate.weight, NFF rows of NEmbd
	Up       kernels.Matrix // blk.N.ffn_up.weight, NFF rows of NEmbd
	Down     kernels.Matrix // blk.N.ffn_down.weight, NEmbd rows of NFF

	QKV          kernels.Matrix // blk.N.attn_qkv.weight, QDim+2·KVDim rows of NEmbd (phi3; in place of Q, K, V)
	GateUp       kernels.Matrix // blk.N.ffn_up.weight, 2·NFF rows of NEmbd, gate then up (phi3; in place of Gate, Up)
	AttnPostNorm []float32      // blk.N.post_attention_norm.weight [NEmbd]: RMSNorm of the attention output
	FFNPostNorm  []float32      // blk.N.post_ffw_norm.weight [NEmbd]: RMSNorm of the FFN output
	// Sinks is blk.N.attn_sinks.weight [NHead] (gpt-oss): one logit per
	// query head that joins the denominator of each of its softmaxes.
	Sinks []float32

	// MoE is the block's mixture of experts (moe.go) in place of Gate, Up
	// and Down, or nil.
	MoE *MoE
}

// Embedding is the token embedding table: NVocab rows of NEmbd values of
// any type package quant can dequantize, used in place.
type Embedding struct {
	Type     tensor.Type
	RowBytes int
	Data     []byte
}

// Row dequantizes the embedding of token id into dst (NEmbd values).
func (e Embedding) Row(id int, dst []float32) error {
	if id < 0 || e.RowBytes <= 0 || id >= len(e.Data)/e.RowBytes {
		return fmt.Errorf("model: embedding row %d: %w", id, ErrInvalid)
	}
	off := id * e.RowBytes
	return quant.Dequantize(e.Type, e.Data[off:off+e.RowBytes], dst)
}

// Model is a loaded model: its configuration and its weights bound by
// name, the large ones used in place from the file's mapping.
type Model struct {
	Config     Config
	Embed      Embedding      // token_embd.weight
	Layers     []Layer        // blk.0 … blk.NLayer-1
	OutputNorm []float32      // output_norm.weight [NEmbd]
	Output     kernels.Matrix // output.weight, or token_embd.weight when tied
	RopeFreqs  []float32      // rope_freqs.weight [RopeDim/2], per-pair frequency divisors, or nil
	Rope       *kernels.Rope  // the rotary embedding of Config and RopeFreqs (phi3: the short factors)
	// RopeSWA is the rotary embedding of the windowed layers when their
	// base differs (Config.RopeBaseSWA), else nil.
	RopeSWA *kernels.Rope
	// RopeLong is phi3's rotary embedding with rope_factors_long.weight,
	// for caches of more positions per sequence than the original
	// context; nil when the file has no long factors.
	RopeLong *kernels.Rope
}

// RopeFor returns the rotary embedding of layer l for a cache of nCtx
// positions per sequence.
func (m *Model) RopeFor(l, nCtx int) *kernels.Rope {
	switch {
	case m.RopeSWA != nil && m.Config.LayerSWA(l):
		return m.RopeSWA
	case m.RopeLong != nil && nCtx > m.Config.RopeOrigCtx:
		return m.RopeLong
	}
	return m.Rope
}

// ropeParams returns the rotary embedding of c with the frequency factors
// of rope_freqs.weight (nil when the file has none).
func ropeParams(c Config, factors []float32) kernels.RopeParams {
	p := kernels.RopeParams{Dim: c.RopeDim, NeoX: c.RopeNeoX, Base: c.RopeBase, FreqScale: c.RopeScale,
		ExtFactor: c.RopeExtFactor, AttnFactor: c.RopeAttnFactor, OrigCtx: c.RopeOrigCtx,
		BetaFast: c.RopeBetaFast, BetaSlow: c.RopeBetaSlow, Factors: factors}
	if c.RopeOff {
		p.Dim, p.Factors = 0, nil
	}
	return p
}

// ConfigFromGGUF reads and validates the model configuration from f's
// metadata. NVocab comes from <arch>.vocab_size, else from the length of
// tokenizer.ggml.tokens, else from the rows of token_embd.weight.
func ConfigFromGGUF(f *gguf.File) (Config, error) {
	c, err := configFrom(f, gguf.ErrNotFound)
	if err != nil {
		return Config{}, err
	}
	if c.NVocab == 0 {
		if v, ok := f.Lookup("tokenizer.ggml.tokens"); ok && v.Type() == gguf.TypeArray && v.Len() > 0 {
			c.NVocab = v.Len()
		} else if ti, ok := f.Tensor("token_embd.weight"); ok && len(ti.Dims) >= 2 && ti.Dims[1] <= MaxVocab {
			c.NVocab = int(ti.Dims[1])
		}
	}
	if c.NVocab < 1 || c.NVocab > MaxVocab {
		return Config{}, &KeyError{Key: c.Arch + ".vocab_size",
			Reason: fmt.Sprintf("vocabulary size %d unknown or out of range [1, %d] (no vocab_size, token list or token_embd.weight)", c.NVocab, MaxVocab),
			Err:    ErrMissing}
	}
	return c, c.Validate()
}

// binder looks tensors up in one file and records which were used.
type binder struct {
	f    *gguf.File
	used map[string]bool
	done map[string]bool // validated and bound, counted in prog
	prog *progressCounter
}

// bound counts ti as validated, once however often it is bound.
func (b *binder) bound(ti *gguf.TensorInfo) {
	if !b.done[ti.Name] {
		b.done[ti.Name] = true
		b.prog.validated(ti.Size)
	}
}

// lookup returns the tensor name with exactly the GGUF dims want (extra
// trailing dimensions of 1 allowed, as llama.cpp allows) and its data.
func (b *binder) lookup(name string, want []int) (*gguf.TensorInfo, []byte, error) {
	ti, ok := b.f.Tensor(name)
	if !ok {
		return nil, nil, &TensorError{Name: name, Reason: "required tensor is missing", Err: ErrMissing}
	}
	b.used[name] = true
	okShape := len(ti.Dims) >= len(want)
	for i, d := range ti.Dims {
		switch {
		case i < len(want):
			okShape = okShape && d == uint64(want[i])
		default:
			okShape = okShape && d == 1
		}
	}
	if !okShape {
		return nil, nil, &TensorError{Name: name, Reason: fmt.Sprintf("shape %v, want %v", ti.Dims, want), Err: ErrInvalid}
	}
	data, err := b.f.TensorData(ti)
	if err != nil {
		return nil, nil, &TensorError{Name: name, Reason: fmt.Sprintf("data: %v", err), Err: ErrInvalid}
	}
	return ti, data, nil
}

// matrix binds a weight matrix of rows rows of cols values.
func (b *binder) matrix(name string, cols, rows int) (kernels.Matrix, error) {
	ti, data, err := b.lookup(name, []int{cols, rows})
	if err != nil {
		return kernels.Matrix{}, err
	}
	m, err := kernels.NewMatrix(ti.Type, rows, cols, data)
	if errors.Is(err, kernels.ErrUnsupportedType) {
		return kernels.Matrix{}, &TensorError{Name: name, Reason: fmt.Sprintf("type %s is not supported for a weight matrix (supported: %v)", ti.Type, kernels.SupportedTypes()), Err: ErrUnsupported}
	}
	if err != nil {
		return kernels.Matrix{}, &TensorError{Name: name, Reason: err.Error(), Err: ErrInvalid}
	}
	b.bound(ti)
	return m, nil
}

// norm binds and decodes a vector of n values (norm weights, biases,
// frequency factors).
func (b *binder) norm(name string, n int) ([]float32, error) {
	return b.floats(name, []int{n}, n)
}

// floats binds and decodes a tensor of the GGUF dims want (n values in
// all) of finite F32, F16 or BF16 values.
func (b *binder) floats(name string, want []int, n int) ([]float32, error) {
	ti, data, err := b.lookup(name, want)
	if err != nil {
		return nil, err
	}
	switch ti.Type {
	case tensor.F32, tensor.F16, tensor.BF16:
	default:
		return nil, &TensorError{Name: name, Reason: fmt.Sprintf("type %s is not supported for a vector (want F32, F16 or BF16)", ti.Type), Err: ErrUnsupported}
	}
	v := make([]float32, n)
	if err := quant.Dequantize(ti.Type, data, v); err != nil {
		return nil, &TensorError{Name: name, Reason: err.Error(), Err: ErrInvalid}
	}
	for i, x := range v {
		if !finite(x) {
			return nil, &TensorError{Name: name, Reason: fmt.Sprintf("value %d is %g", i, x), Err: ErrInvalid}
		}
	}
	b.bound(ti)
	return v, nil
}

// factors binds a vector of n RoPE frequency divisors, each > 0.
func (b *binder) factors(name string, n int) ([]float32, error) {
	v, err := b.norm(name, n)
	if err != nil {
		return nil, err
	}
	for i, x := range v {
		if !(x > 0) {
			return nil, &TensorError{Name: name, Reason: fmt.Sprintf("factor %d is %g, want > 0", i, x), Err: ErrInvalid}
		}
	}
	return v, nil
}

// embedding binds the token embedding table.
func (b *binder) embedding(name string, c Config) (Embedding, error) {
	ti, data, err := b.lookup(name, []int{c.NEmbd, c.NVocab})
	if err != nil {
		return Embedding{}, err
	}
	if !quant.Supported(ti.Type) {
		return Embedding{}, &TensorError{Name: name, Reason: fmt.Sprintf("type %s is not supported for embeddings (supported: %v)", ti.Type, quant.SupportedTypes()), Err: ErrUnsupported}
	}
	rb, err := ti.Type.RowBytes(int64(c.NEmbd))
	if err != nil || rb*int64(c.NVocab) != int64(len(data)) {
		return Embedding{}, &TensorError{Name: name, Reason: fmt.Sprintf("%d bytes do not hold %d rows of %d %s values", len(data), c.NVocab, c.NEmbd, ti.Type), Err: ErrInvalid}
	}
	b.bound(ti)
	return Embedding{Type: ti.Type, RowBytes: int(rb), Data: data}, nil
}

// Load reads the configuration of f and binds every tensor its
// architecture's family (arch.go) needs, checking each is present with
// exactly the expected shape and a supported type; errors name the key or
// tensor (*KeyError, *TensorError). output.weight may be absent: the
// logits then use token_embd.weight (Config.TiedOutput). A tensor the
// architecture does not use is an error, as in llama.cpp. f must stay
// open while the Model is used.
func Load(f *gguf.File) (*Model, error) { return LoadWithProgress(f, nil) }

// LoadWithProgress is Load, calling progress (when not nil) after each
// tensor it has validated and bound: the counts only grow, and a
// successful load ends with a report of every tensor of the file (Done).
// Wrap progress in Throttle to be told less often.
func LoadWithProgress(f *gguf.File, progress func(LoadProgress)) (*Model, error) {
	c, err := ConfigFromGGUF(f)
	if err != nil {
		return nil, err
	}
	fam, _ := lookupFamily(c.Arch) // ConfigFromGGUF found it
	b := &binder{f: f, used: make(map[string]bool), done: make(map[string]bool), prog: newProgressCounter(f, progress)}
	m := &Model{Layers: make([]Layer, c.NLayer)}
	if m.Embed, err = b.embedding("token_embd.weight", c); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("rope_freqs.weight"); ok && fam.RopeFreqs {
		if m.RopeFreqs, err = b.factors("rope_freqs.weight", c.RopeDim/2); err != nil {
			return nil, err
		}
	}
	var longFactors []float32
	if fam.LongRope {
		for _, lf := range []struct {
			name string
			dst  *[]float32
		}{{"rope_factors_short.weight", &m.RopeFreqs}, {"rope_factors_long.weight", &longFactors}} {
			if _, ok := f.Tensor(lf.name); !ok {
				continue
			}
			if *lf.dst, err = b.factors(lf.name, c.RopeDim/2); err != nil {
				return nil, err
			}
		}
	}
	for i := range m.Layers {
		if err := b.layer(&m.Layers[i], i, c, fam.blockFor(c)); err != nil {
			return nil, err
		}
		if c.NExpert > 0 {
			if m.Layers[i].MoE, err = b.experts(i, c); err != nil {
				return nil, err
			}
		}
	}
	if m.OutputNorm, err = b.norm("output_norm.weight", c.NEmbd); err != nil {
		return nil, err
	}
	if _, ok := f.Tensor("output.weight"); ok {
		if m.Output, err = b.matrix("output.weight", c.NEmbd, c.NVocab); err != nil {
			return nil, err
		}
	} else {
		c.TiedOutput = true
		if m.Output, err = b.matrix("token_embd.weight", c.NEmbd, c.NVocab); err != nil {
			return nil, err
		}
	}
	for _, ti := range f.Tensors {
		if !b.used[ti.Name] {
			return nil, &TensorError{Name: ti.Name, Reason: fmt.Sprintf("unexpected tensor: the %s architecture as implemented does not use it", c.Arch), Err: ErrUnsupported}
		}
	}
	if m.Rope, err = kernels.NewRope(ropeParams(c, m.RopeFreqs)); err != nil {
		return nil, &KeyError{Key: c.Arch + ".rope", Reason: err.Error(), Err: ErrInvalid}
	}
	if longFactors != nil {
		if m.RopeLong, err = kernels.NewRope(ropeParams(c, longFactors)); err != nil {
			return nil, &KeyError{Key: c.Arch + ".rope", Reason: err.Error(), Err: ErrInvalid}
		}
	}
	if c.NSWA > 0 && c.RopeBaseSWA != 0 {
		p := ropeParams(c, m.RopeFreqs)
		p.Base, p.FreqScale = c.RopeBaseSWA, c.RopeScaleSWA
		if m.RopeSWA, err = kernels.NewRope(p); err != nil {
			return nil, &KeyError{Key: c.Arch + ".rope", Reason: err.Error(), Err: ErrInvalid}
		}
	}
	m.Config = c
	return m, nil
}

// layer binds the weights of block i from the family's table.
func (b *binder) layer(l *Layer, i int, c Config, table []BlockWeight) error {
	for _, w := range table {
		name := fmt.Sprintf("blk.%d.%s", i, w.Name)
		if _, ok := b.f.Tensor(name); !ok && w.Optional {
			continue
		}
		s := w.Shape(c)
		var err error
		if w.vec != nil {
			*w.vec(l), err = b.norm(name, s[0])
		} else {
			*w.mat(l), err = b.matrix(name, s[0], s[1])
		}
		if err != nil {
			return err
		}
	}
	return nil
}
