package model

import (
	"fmt"
	"slices"

	"github.com/lisa-llm/lisa/kernels"
)

// Family describes one architecture (a general.architecture value): the
// metadata keys of its own beyond the shared ones, the tensors of its
// blocks, and the variant of the shared block it runs. Each family lives
// in a file of its own (llama.go, qwen2.go, ...) and registers itself in
// an init function; the loader and the Runner only read the Family, so a
// new architecture built from the shared blocks touches neither.
type Family struct {
	// Arch is the general.architecture value, also the prefix of the
	// family's metadata keys.
	Arch string
	// RopeNeoX selects the NeoX rotation (pairs x[i], x[i+RopeDim/2])
	// instead of adjacent pairs: llama.cpp's LLAMA_ROPE_TYPE_NEOX.
	RopeNeoX bool
	// RopeFreqs allows the optional rope_freqs.weight tensor: per-pair
	// frequency divisors (Llama 3.1 and later carry their llama3 scaling
	// this way).
	RopeFreqs bool
	// LongRope allows the optional rope_factors_long.weight and
	// rope_factors_short.weight tensors (phi3's LongRoPE): per-pair
	// frequency divisors, the long ones used when a sequence may grow past
	// the original context (the cache's positions per sequence exceed
	// rope.scaling.original_context_length), as llama.cpp chooses them.
	LongRope bool
	// Experts says whether the FFN may or must be a mixture of experts
	// (moe.go); with experts the dense FFN tensors of Block are not used.
	Experts ExpertMode
	// Block lists the tensors of one block, each required or optional.
	Block []BlockWeight
	// Hyper, when set, reads the family's own keys into c after the
	// shared ones (k prefixes a key with the architecture name).
	Hyper func(r reader, c *Config, k func(string) string) error
}

// families is the registry, filled by the family files' init functions
// and only read afterwards.
var families = map[string]*Family{}

// register adds f to the registry; two families of one name are a
// programming error.
func register(f *Family) {
	if _, dup := families[f.Arch]; dup {
		panic("model: family " + f.Arch + " registered twice")
	}
	families[f.Arch] = f
}

// lookupFamily returns the family of architecture arch.
func lookupFamily(arch string) (*Family, bool) {
	f, ok := families[arch]
	return f, ok
}

// familyNames returns the registered architectures, sorted.
func familyNames() []string {
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Architectures returns the general.architecture values Load accepts,
// sorted.
func Architectures() []string { return familyNames() }

// BlockWeight is one tensor of a block: blk.N.<Name>.weight (or .bias),
// with its shape, whether a file must have it, and the Layer field it
// binds to.
type BlockWeight struct {
	Name     string              // e.g. "attn_q.weight", "attn_q.bias"
	Shape    func(Config) [2]int // GGUF dims: row length, rows (rows 0 = vector)
	Optional bool                // absent is allowed (the field stays nil)
	mat      func(*Layer) *kernels.Matrix
	vec      func(*Layer) *[]float32
}

// optional returns w marked optional.
func (w BlockWeight) optional() BlockWeight { w.Optional = true; return w }

// The shared block tensors, as llama.cpp names them. Families compose
// their Block tables from these.
var (
	wAttnNorm = vecWeight("attn_norm.weight", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.AttnNorm })
	wQ        = matWeight("attn_q.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.QDim()} }, func(l *Layer) *kernels.Matrix { return &l.Q })
	wK        = matWeight("attn_k.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.KVDim()} }, func(l *Layer) *kernels.Matrix { return &l.K })
	wV        = matWeight("attn_v.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.KVDim()} }, func(l *Layer) *kernels.Matrix { return &l.V })
	wO        = matWeight("attn_output.weight", func(c Config) [2]int { return [2]int{c.QDim(), c.NEmbd} }, func(l *Layer) *kernels.Matrix { return &l.O })
	wQBias    = vecWeight("attn_q.bias", Config.QDim, func(l *Layer) *[]float32 { return &l.QBias })
	wKBias    = vecWeight("attn_k.bias", Config.KVDim, func(l *Layer) *[]float32 { return &l.KBias })
	wVBias    = vecWeight("attn_v.bias", Config.KVDim, func(l *Layer) *[]float32 { return &l.VBias })
	wOBias    = vecWeight("attn_output.bias", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.OBias })
	wQNorm    = vecWeight("attn_q_norm.weight", func(c Config) int { return c.HeadDim }, func(l *Layer) *[]float32 { return &l.QNorm })
	wKNorm    = vecWeight("attn_k_norm.weight", func(c Config) int { return c.HeadDim }, func(l *Layer) *[]float32 { return &l.KNorm })
	wFFNNorm  = vecWeight("ffn_norm.weight", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.FFNNorm })
	wGate     = matWeight("ffn_gate.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.NFF} }, func(l *Layer) *kernels.Matrix { return &l.Gate })
	wUp       = matWeight("ffn_up.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.NFF} }, func(l *Layer) *kernels.Matrix { return &l.Up })
	wDown     = matWeight("ffn_down.weight", func(c Config) [2]int { return [2]int{c.NFF, c.NEmbd} }, func(l *Layer) *kernels.Matrix { return &l.Down })

	// Fused projections (phi3): Q, K and V as one matrix, and the gate and
	// up halves of the FFN as one ffn_up of 2·NFF rows, the gate first.
	wQKV    = matWeight("attn_qkv.weight", func(c Config) [2]int { return [2]int{c.NEmbd, c.QDim() + 2*c.KVDim()} }, func(l *Layer) *kernels.Matrix { return &l.QKV })
	wGateUp = matWeight("ffn_up.weight", func(c Config) [2]int { return [2]int{c.NEmbd, 2 * c.NFF} }, func(l *Layer) *kernels.Matrix { return &l.GateUp })
	// Norms of the attention and FFN outputs before they join the residual
	// stream (gemma2, gemma3).
	wAttnPostNorm = vecWeight("post_attention_norm.weight", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.AttnPostNorm })
	wFFNPostNorm  = vecWeight("post_ffw_norm.weight", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.FFNPostNorm })
)

// preNormBlock is the tensors of the pre-norm attention + SwiGLU block
// every first-wave family shares.
func preNormBlock() []BlockWeight {
	return []BlockWeight{wAttnNorm, wQ, wK, wV, wO, wFFNNorm, wGate, wUp, wDown}
}

// matWeight declares a weight matrix.
func matWeight(name string, shape func(Config) [2]int, field func(*Layer) *kernels.Matrix) BlockWeight {
	return BlockWeight{Name: name, Shape: shape, mat: field}
}

// vecWeight declares a vector (norm weights, biases) of n(c) values,
// decoded to float32.
func vecWeight(name string, n func(Config) int, field func(*Layer) *[]float32) BlockWeight {
	return BlockWeight{Name: name, Shape: func(c Config) [2]int { return [2]int{n(c), 0} }, vec: field}
}

// readScale reads an optional positive scale key into dst, leaving it as
// it is when the key is absent.
func readScale(r reader, key string, dst *float32) error {
	v, err := r.float(key, 0, 1e6, true, -1)
	if err != nil {
		return err
	}
	if v >= 0 {
		*dst = v
	}
	return nil
}

// checkFamilies is run by the tests: every family's tensor names are
// distinct and each entry binds exactly one field.
func checkFamilies() error {
	for _, f := range families {
		seen := map[string]bool{}
		for _, w := range f.Block {
			if seen[w.Name] {
				return fmt.Errorf("family %s: tensor %s listed twice", f.Arch, w.Name)
			}
			seen[w.Name] = true
			if (w.mat == nil) == (w.vec == nil) {
				return fmt.Errorf("family %s: tensor %s must bind one matrix or one vector", f.Arch, w.Name)
			}
		}
	}
	return nil
}
