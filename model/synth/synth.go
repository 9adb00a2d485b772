// Package synth writes random-weight llama models with the exact shapes of
// real ones (TinyLlama-1.1B, Llama-3.2-1B, a 110M and a 24M model) for
// benchmarks: random weights run at exactly the speed of trained ones.
//
// Weights are N(0, 0.02), norms 1.0, quantized with package quant's
// reference quantizers, so the bytes are those llama-quantize would write
// for the same F32 values. For Q4_K_M the per-tensor type mix follows
// llama.cpp's llama_tensor_get_type: Q6_K for output.weight (and for
// token_embd.weight when the output is tied), Q6_K for attn_v and ffn_down
// on the layers use_more_bits picks, Q4_K elsewhere, F32 for norms. The
// tokenizer (every tokenizer.* key) is copied from a vocabulary GGUF file.
//
// A file is a pure function of its shape, type, seed and vocabulary: each
// chunk of rows draws from its own generator seeded by (seed, tensor,
// chunk), so chunks are generated in parallel and the output does not
// depend on the thread count. Tensors are produced while the file is
// written, a few chunks at a time, so memory stays bounded.
package synth

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// Shape is the hyperparameters of a llama model.
type Shape struct {
	Name     string  // e.g. "tinyllama-1.1b"
	NEmbd    int     // embedding length
	NLayer   int     // blocks
	NHead    int     // attention heads
	NHeadKV  int     // key/value heads
	NFF      int     // feed-forward length
	NVocab   int     // vocabulary size the tokenizer must have
	NCtx     int     // context length recorded in the file
	RopeBase float32 // rope.freq_base
	Tied     bool    // no output.weight: logits use token_embd.weight
}

// Shapes lists the shapes Lookup knows, smallest first.
func Shapes() []Shape {
	return []Shape{
		{Name: "mini", NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 32000, NCtx: 512, RopeBase: 10000},
		{Name: "small-110m", NEmbd: 768, NLayer: 12, NHead: 12, NHeadKV: 12, NFF: 2048, NVocab: 32000, NCtx: 1024, RopeBase: 10000},
		{Name: "tinyllama-1.1b", NEmbd: 2048, NLayer: 22, NHead: 32, NHeadKV: 4, NFF: 5632, NVocab: 32000, NCtx: 2048, RopeBase: 10000},
		// Llama 3.2 1B also has rope_freqs.weight (llama3 RoPE scaling),
		// which package model does not implement; the file omits it. It
		// holds 32 floats and does not change the speed.
		{Name: "llama-3.2-1b", NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 128256, NCtx: 131072, RopeBase: 500000, Tied: true},
	}
}

// Lookup returns the shape of the given name.
func Lookup(name string) (Shape, bool) {
	for _, s := range Shapes() {
		if s.Name == name {
			return s, true
		}
	}
	return Shape{}, false
}

// FileType is the quantization of a whole file, as llama.cpp's ftype.
type FileType int

// The file types Write produces.
const (
	F32 FileType = iota
	F16
	Q8_0
	Q4_K_M
)

var fileTypes = []struct {
	name  string
	ftype uint32 // general.file_type (llama_ftype)
}{F32: {"f32", 0}, F16: {"f16", 1}, Q8_0: {"q8_0", 7}, Q4_K_M: {"q4_k_m", 15}}

// ParseFileType parses f32, f16, q8_0 or q4_k_m (any case).
func ParseFileType(s string) (FileType, error) {
	for i, f := range fileTypes {
		if strings.EqualFold(s, f.name) {
			return FileType(i), nil
		}
	}
	return 0, fmt.Errorf("synth: file type %q: want f32, f16, q8_0 or q4_k_m", s)
}

// String returns the name ParseFileType accepts.
func (t FileType) String() string {
	if t < 0 || int(t) >= len(fileTypes) {
		return fmt.Sprintf("FileType(%d)", int(t))
	}
	return fileTypes[t].name
}

// TensorPlan is one tensor of a synthetic model, in file order.
type TensorPlan struct {
	Name string
	Type tensor.Type
	Dims []uint64 // ggml order: row length first
}

// useMoreBits is llama.cpp's choice of the layers that get more bits in
// the _M K-quant mixes: the first and last eighth and every third between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// matType returns the type of a matrix with rows of cols values; more
// selects Q6_K instead of Q4_K in Q4_K_M. As llama.cpp does, K-quants
// fall back to a 32-block type when a row is not whole 256-value blocks.
func matType(ft FileType, cols int, more bool) tensor.Type {
	switch ft {
	case F32:
		return tensor.F32
	case F16:
		return tensor.F16
	case Q8_0:
		return tensor.Q8_0
	}
	if cols%tensor.QK_K != 0 {
		if more {
			return tensor.Q8_0
		}
		return tensor.Q5_0
	}
	if more {
		return tensor.Q6_K
	}
	return tensor.Q4_K
}

// Plan returns the tensors of a model of shape s and type ft in the order
// llama.cpp writes them: output, output_norm, token_embd, then each block's
// tensors in name order.
func Plan(s Shape, ft FileType) []TensorPlan {
	headDim := s.NEmbd / s.NHead
	kvDim := s.NHeadKV * headDim
	e, v, f := uint64(s.NEmbd), uint64(s.NVocab), uint64(s.NFF)
	var p []TensorPlan
	add := func(name string, t tensor.Type, dims ...uint64) {
		p = append(p, TensorPlan{Name: name, Type: t, Dims: dims})
	}
	if !s.Tied {
		add("output.weight", matType(ft, s.NEmbd, true), e, v)
	}
	add("output_norm.weight", tensor.F32, e)
	add("token_embd.weight", matType(ft, s.NEmbd, s.Tied), e, v)
	for l := range s.NLayer {
		b := fmt.Sprintf("blk.%d.", l)
		more := useMoreBits(l, s.NLayer)
		add(b+"attn_k.weight", matType(ft, s.NEmbd, false), e, uint64(kvDim))
		add(b+"attn_norm.weight", tensor.F32, e)
		add(b+"attn_output.weight", matType(ft, s.NEmbd, false), e, e)
		add(b+"attn_q.weight", matType(ft, s.NEmbd, false), e, e)
		add(b+"attn_v.weight", matType(ft, s.NEmbd, more), e, uint64(kvDim))
		add(b+"ffn_down.weight", matType(ft, s.NFF, more), f, e)
		add(b+"ffn_gate.weight", matType(ft, s.NEmbd, false), e, f)
		add(b+"ffn_norm.weight", tensor.F32, e)
		add(b+"ffn_up.weight", matType(ft, s.NEmbd, false), e, f)
	}
	return p
}

// Options say what Write produces.
type Options struct {
	Shape Shape
	Type  FileType
	Seed  uint64
	// Vocab is a GGUF file whose tokenizer.* keys are copied; it must
	// have Shape.NVocab tokens.
	Vocab *gguf.File
	// Threads generating chunks in parallel (0: GOMAXPROCS). The output
	// does not depend on it.
	Threads int
}

// ErrVocab reports a missing or mismatched vocabulary.
var ErrVocab = errors.New("synth: vocabulary")

// chunkValues is about how many values one generator chunk holds.
const chunkValues = 1 << 20

// Write writes the model o describes to w and returns the bytes written.
func Write(w io.Writer, o Options) (int64, error) {
	s := o.Shape
	if s.NEmbd <= 0 || s.NHead <= 0 || s.NEmbd%s.NHead != 0 || s.NHeadKV <= 0 || s.NHead%s.NHeadKV != 0 ||
		s.NLayer <= 0 || s.NFF <= 0 || s.NVocab <= 0 || s.NCtx <= 0 {
		return 0, fmt.Errorf("synth: shape %q: invalid hyperparameters %+v", s.Name, s)
	}
	if o.Type < 0 || int(o.Type) >= len(fileTypes) {
		return 0, fmt.Errorf("synth: %v: unknown file type", o.Type)
	}
	gw := gguf.NewWriter()
	if err := addMetadata(gw, o); err != nil {
		return 0, err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	for i, t := range Plan(s, o.Type) {
		g := &tensorGen{plan: t, seed: o.Seed, index: uint64(i), threads: threads}
		if err := gw.AddTensorFunc(t.Name, t.Type, t.Dims, g.write); err != nil {
			return 0, fmt.Errorf("synth: %w", err)
		}
	}
	n, err := gw.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("synth: %w", err)
	}
	return n, nil
}

// WriteFile writes the model to path through a temporary file in the same
// folder, renamed into place when complete.
func WriteFile(path string, o Options) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synth-*.gguf")
	if err != nil {
		return 0, fmt.Errorf("synth: %w", err)
	}
	n, err := Write(tmp, o)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("synth: %w", cerr)
	}
	if err == nil {
		if err = os.Rename(tmp.Name(), path); err != nil {
			err = fmt.Errorf("synth: %w", err)
		}
	}
	if err != nil {
		os.Remove(tmp.Name())
		return n, err
	}
	return n, nil
}

// addMetadata adds the general.*, llama.* and (copied) tokenizer.* keys.
func addMetadata(gw *gguf.Writer, o Options) error {
	s := o.Shape
	if o.Vocab == nil {
		return fmt.Errorf("%w: shape %s needs a vocabulary of %d tokens (e.g. ggml-vocab-llama-spm.gguf)", ErrVocab, s.Name, s.NVocab)
	}
	toks, err := o.Vocab.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return fmt.Errorf("%w: tokenizer.ggml.tokens: %w", ErrVocab, err)
	}
	if len(toks) != s.NVocab {
		return fmt.Errorf("%w: tokenizer.ggml.tokens has %d tokens, shape %s needs %d", ErrVocab, len(toks), s.Name, s.NVocab)
	}
	u := func(k string, v int) gguf.KV { return gguf.KV{Key: k, Value: gguf.Uint32Value(uint32(v))} }
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue("llama")},
		{Key: "general.name", Value: gguf.StringValue(s.Name + "-random")},
		{Key: "general.description", Value: gguf.StringValue(fmt.Sprintf(
			"random weights N(0,0.02), norms=1.0, seed=%d, %s; written by lisa gguf synth", o.Seed, o.Type))},
		u("llama.context_length", s.NCtx),
		u("llama.embedding_length", s.NEmbd),
		u("llama.block_count", s.NLayer),
		u("llama.feed_forward_length", s.NFF),
		u("llama.attention.head_count", s.NHead),
		u("llama.attention.head_count_kv", s.NHeadKV),
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: gguf.Float32Value(1e-5)},
		u("llama.rope.dimension_count", s.NEmbd/s.NHead),
		{Key: "llama.rope.freq_base", Value: gguf.Float32Value(s.RopeBase)},
		u("llama.vocab_size", s.NVocab),
	}
	for _, kv := range o.Vocab.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			kvs = append(kvs, kv)
		}
	}
	if o.Type != F32 && o.Type != F16 {
		kvs = append(kvs, u("general.quantization_version", 2))
	}
	kvs = append(kvs, gguf.KV{Key: "general.file_type", Value: gguf.Uint32Value(fileTypes[o.Type].ftype)})
	for _, kv := range kvs {
		if err := gw.Add(kv.Key, kv.Value); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	return nil
}

// tensorGen produces one tensor's bytes chunk by chunk.
type tensorGen struct {
	plan    TensorPlan
	seed    uint64
	index   uint64
	threads int
}

// write generates the tensor in waves of up to threads chunks, each
// chunk in its own goroutine, and writes the chunks in order.
func (g *tensorGen) write(w io.Writer) error {
	cols := int(g.plan.Dims[0])
	rows := 1
	for _, d := range g.plan.Dims[1:] {
		rows *= int(d)
	}
	norm := len(g.plan.Dims) == 1
	rowBytes, err := g.plan.Type.Bytes([]uint64{uint64(cols)})
	if err != nil {
		return err
	}
	per := max(1, chunkValues/cols) // rows per chunk
	nChunks := (rows + per - 1) / per
	type buf struct {
		vals []float32
		out  []byte
		n    int // bytes of out this chunk filled
		err  error
	}
	bufs := make([]buf, min(g.threads, nChunks))
	for i := range bufs {
		bufs[i] = buf{vals: make([]float32, per*cols), out: make([]byte, per*int(rowBytes))}
	}
	for c0 := 0; c0 < nChunks; c0 += len(bufs) {
		var wg sync.WaitGroup
		for k := range bufs {
			c := c0 + k
			if c >= nChunks {
				break
			}
			wg.Add(1)
			go func(b *buf, c int) {
				defer wg.Done()
				n := min(per, rows-c*per)
				vals, out := b.vals[:n*cols], b.out[:n*int(rowBytes)]
				if norm {
					for i := range vals {
						vals[i] = 1
					}
				} else {
					r := rand.New(rand.NewPCG(g.seed, g.index<<32|uint64(c)))
					for i := range vals {
						vals[i] = float32(r.NormFloat64() * 0.02)
					}
				}
				b.n, b.err = len(out), quant.Quantize(g.plan.Type, vals, out)
			}(&bufs[k], c)
		}
		wg.Wait()
		for k := range bufs {
			if c0+k >= nChunks {
				break
			}
			if bufs[k].err != nil {
				return bufs[k].err
			}
			if _, err := w.Write(bufs[k].out[:bufs[k].n]); err != nil {
				return err
			}
		}
	}
	return nil
}
