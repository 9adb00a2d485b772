package synth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
	"github.com/lisa-llm/lisa/tokenizer"
)

// hfShape is a model as its config.json describes it, typed here from the
// real configs (and, for the tiny shapes, from their intent), independent
// of Shapes: hidden_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, vocab_size,
// tie_word_embeddings; bias: attention_bias on q/k/v (Qwen2); qkNorm:
// per-head q/k RMSNorm (Qwen3); ropeFreqs: rope_type llama3.
type hfShape struct {
	name                                         string
	arch                                         string
	hidden, layers, heads, kv, headDim, ff, nVoc int
	tied, bias, qkNorm, ropeFreqs                bool
}

var hfShapes = []hfShape{
	{"mini", "llama", 256, 2, 4, 2, 64, 768, 32000, false, false, false, false},
	{"small-110m", "llama", 768, 12, 12, 12, 64, 2048, 32000, false, false, false, false},
	{"tinyllama-1.1b", "llama", 2048, 22, 32, 4, 64, 5632, 32000, false, false, false, false},
	{"llama-3.2-1b", "llama", 2048, 16, 32, 8, 64, 8192, 128256, true, false, false, true},
	{"llama-3.1-8b", "llama", 4096, 32, 32, 8, 128, 14336, 128256, false, false, false, true},
	{"mistral-nemo-12b", "llama", 5120, 40, 32, 8, 128, 14336, 131072, false, false, false, false},
	{"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 64, 4864, 151936, true, true, false, false},
	{"qwen2.5-1.5b", "qwen2", 1536, 28, 12, 2, 128, 8960, 151936, true, true, false, false},
	{"qwen2.5-7b", "qwen2", 3584, 28, 28, 4, 128, 18944, 152064, false, true, false, false},
	{"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 151936, true, false, true, false},
	{"qwen3-4b", "qwen3", 2560, 36, 32, 8, 128, 9728, 151936, true, false, true, false},
	{"granite-3.1-2b", "granite", 2048, 40, 32, 8, 64, 8192, 49155, true, false, false, false},
	{"llama3-tiny", "llama", 256, 2, 4, 2, 64, 768, 4096, true, false, false, true},
	{"mistral-tiny", "llama", 256, 2, 4, 2, 128, 768, 4096, false, false, false, false},
	{"qwen2-tiny", "qwen2", 256, 2, 4, 2, 64, 768, 4096, true, true, false, false},
	{"qwen2-tiny-yarn", "qwen2", 256, 2, 4, 2, 64, 768, 4096, true, true, false, false},
	{"qwen2-tiny-odd", "qwen2", 384, 2, 6, 2, 64, 1024, 4096, true, true, false, false},
	{"qwen3-tiny", "qwen3", 256, 2, 4, 2, 128, 768, 4096, true, false, true, false},
	{"granite-tiny", "granite", 256, 2, 4, 2, 64, 768, 4099, true, false, false, false},
	{"llama2-quant", "llama", 256, 1, 4, 2, 64, 256, 512, false, false, false, false},
	{"smollm2-quant", "llama", 576, 1, 9, 3, 64, 256, 512, true, false, false, false},
	{"qwen2-odd-quant", "qwen2", 384, 1, 6, 2, 64, 256, 512, true, true, false, false},
	{"gemma-2-2b", "gemma2", 2304, 26, 8, 4, 256, 9216, 256000, true, false, false, false},
	{"gemma-3-1b", "gemma3", 1152, 26, 4, 1, 256, 6912, 262144, true, false, true, false},
	{"gemma-3-4b", "gemma3", 2560, 34, 8, 4, 256, 10240, 262208, true, false, true, false},
	{"phi-3.5-mini", "phi3", 3072, 32, 32, 32, 96, 8192, 32064, false, false, false, false},
	{"phi-4-mini", "phi3", 3072, 32, 24, 8, 128, 8192, 200064, true, false, false, false},
	{"gemma2-tiny", "gemma2", 256, 2, 4, 2, 128, 768, 4096, true, false, false, false},
	{"gemma3-tiny", "gemma3", 256, 6, 4, 1, 128, 768, 4096, true, false, true, false},
	{"phi3-tiny", "phi3", 256, 2, 4, 2, 64, 768, 4096, false, false, false, false},
	{"phi4mini-tiny", "phi3", 256, 2, 4, 2, 64, 768, 4096, true, false, false, false},
	{"mixtral-8x7b", "llama", 4096, 32, 32, 8, 128, 14336, 32000, false, false, false, false},
	{"qwen3moe-30b-a3b", "qwen3moe", 2048, 48, 32, 4, 128, 6144, 151936, false, false, true, false},
	{"mixtral-tiny", "llama", 256, 2, 4, 2, 64, 512, 4096, false, false, false, false},
	{"qwen3moe-tiny", "qwen3moe", 256, 2, 4, 2, 128, 768, 4096, false, false, true, false},
	// gpt-oss-20b's config.json (attention_bias true: biases on q, k, v
	// and o, hence bias false here and gpt-oss's own table below).
	{"gpt-oss-20b", "gpt-oss", 2880, 24, 64, 8, 64, 2880, 201088, false, false, false, false},
	{"gpt-oss-tiny", "gpt-oss", 256, 4, 8, 1, 64, 256, 4096, false, false, false, false},
}

// hfExperts are the mixtures of experts among hfShapes: num_local_experts
// (num_experts), num_experts_per_tok and the experts' width
// (moe_intermediate_size, Mixtral's intermediate_size).
var hfExperts = map[string][3]int{
	"mixtral-8x7b":     {8, 2, 14336},
	"qwen3moe-30b-a3b": {128, 8, 768},
	"mixtral-tiny":     {8, 2, 512},
	"qwen3moe-tiny":    {32, 8, 256},
	"gpt-oss-20b":      {32, 4, 2880},
	"gpt-oss-tiny":     {16, 4, 256},
}

// longRopeDims is the rotated width of the phi3 shapes with LongRoPE
// factors (config.json's partial_rotary_factor × head_dim): each factor
// tensor has half as many values.
var longRopeDims = map[string]int{"phi-3.5-mini": 96, "phi-4-mini": 96, "phi3-tiny": 64, "phi4mini-tiny": 48}

// wantTensors returns the tensor names and dims llama.cpp's tensor table
// (src/llama-model.cpp, per architecture) expects for h.
func wantTensors(h hfShape) map[string][]uint64 {
	e, v, f := uint64(h.hidden), uint64(h.nVoc), uint64(h.ff)
	q, kv, hd := uint64(h.heads*h.headDim), uint64(h.kv*h.headDim), uint64(h.headDim)
	m := map[string][]uint64{"token_embd.weight": {e, v}, "output_norm.weight": {e}}
	if !h.tied {
		m["output.weight"] = []uint64{e, v}
	}
	if h.ropeFreqs {
		m["rope_freqs.weight"] = []uint64{hd / 2}
	}
	if d, ok := longRopeDims[h.name]; ok {
		m["rope_factors_long.weight"] = []uint64{uint64(d / 2)}
		m["rope_factors_short.weight"] = []uint64{uint64(d / 2)}
	}
	for l := range h.layers {
		b := fmt.Sprintf("blk.%d.", l)
		if h.arch == "phi3" {
			// llama.cpp's PHI3 table: fused QKV, ffn_up of 2·n_ff rows.
			m[b+"attn_norm.weight"] = []uint64{e}
			m[b+"attn_qkv.weight"] = []uint64{e, q + 2*kv}
			m[b+"attn_output.weight"] = []uint64{q, e}
			m[b+"ffn_norm.weight"] = []uint64{e}
			m[b+"ffn_up.weight"] = []uint64{e, 2 * f}
			m[b+"ffn_down.weight"] = []uint64{f, e}
			continue
		}
		if h.arch == "gpt-oss" {
			// llama.cpp's OPENAI_MOE table: biases on every projection
			// and the experts, one sink per head, the FFN's input norm
			// named post_attention_norm.
			x := hfExperts[h.name]
			ne, fe := uint64(x[0]), uint64(x[2])
			for name, d := range map[string][]uint64{
				"attn_norm.weight": {e}, "post_attention_norm.weight": {e}, "attn_sinks.weight": {uint64(h.heads)},
				"attn_q.weight": {e, q}, "attn_k.weight": {e, kv}, "attn_v.weight": {e, kv}, "attn_output.weight": {q, e},
				"attn_q.bias": {q}, "attn_k.bias": {kv}, "attn_v.bias": {kv}, "attn_output.bias": {e},
				"ffn_gate_inp.weight": {e, ne}, "ffn_gate_inp.bias": {ne},
				"ffn_gate_exps.weight": {e, fe, ne}, "ffn_up_exps.weight": {e, fe, ne}, "ffn_down_exps.weight": {fe, e, ne},
				"ffn_gate_exps.bias": {fe, ne}, "ffn_up_exps.bias": {fe, ne}, "ffn_down_exps.bias": {e, ne},
			} {
				m[b+name] = d
			}
			continue
		}
		if h.arch == "gemma2" || h.arch == "gemma3" {
			m[b+"post_attention_norm.weight"] = []uint64{e}
			m[b+"post_ffw_norm.weight"] = []uint64{e}
		}
		m[b+"attn_norm.weight"] = []uint64{e}
		m[b+"attn_q.weight"] = []uint64{e, q}
		m[b+"attn_k.weight"] = []uint64{e, kv}
		m[b+"attn_v.weight"] = []uint64{e, kv}
		m[b+"attn_output.weight"] = []uint64{q, e}
		m[b+"ffn_norm.weight"] = []uint64{e}
		if x, ok := hfExperts[h.name]; ok {
			// llama.cpp's tables: the router and the stacked experts.
			ne, fe := uint64(x[0]), uint64(x[2])
			m[b+"ffn_gate_inp.weight"] = []uint64{e, ne}
			m[b+"ffn_gate_exps.weight"] = []uint64{e, fe, ne}
			m[b+"ffn_up_exps.weight"] = []uint64{e, fe, ne}
			m[b+"ffn_down_exps.weight"] = []uint64{fe, e, ne}
		} else {
			m[b+"ffn_gate.weight"] = []uint64{e, f}
			m[b+"ffn_up.weight"] = []uint64{e, f}
			m[b+"ffn_down.weight"] = []uint64{f, e}
		}
		if h.bias {
			m[b+"attn_q.bias"] = []uint64{q}
			m[b+"attn_k.bias"] = []uint64{kv}
			m[b+"attn_v.bias"] = []uint64{kv}
		}
		if h.qkNorm {
			m[b+"attn_q_norm.weight"] = []uint64{hd}
			m[b+"attn_k_norm.weight"] = []uint64{hd}
		}
	}
	return m
}

// sortedLikeLlamaCpp reports whether p is in llama.cpp's
// weight_name_comparer order: block number (none first), then name.
func sortedLikeLlamaCpp(p []TensorPlan) bool {
	layer := func(n string) int {
		var l int
		if _, err := fmt.Sscanf(n, "blk.%d.", &l); err != nil {
			return -1
		}
		return l
	}
	return slices.IsSortedFunc(p, func(a, b TensorPlan) int {
		if la, lb := layer(a.Name), layer(b.Name); la != lb {
			return la - lb
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// TestPlanShapes checks every shape's tensors (names and dims) against the
// independent table, their order, and that Shapes has exactly the table's
// shapes.
func TestPlanShapes(t *testing.T) {
	if len(Shapes()) != len(hfShapes) {
		t.Errorf("Shapes has %d shapes, the table %d", len(Shapes()), len(hfShapes))
	}
	for _, h := range hfShapes {
		t.Run(h.name, func(t *testing.T) {
			s, ok := Lookup(h.name)
			if !ok {
				t.Fatal("no such shape")
			}
			if s.Arch != h.arch || s.NVocab != h.nVoc || s.NLayer != h.layers {
				t.Errorf("arch %s vocab %d layers %d; want %s %d %d", s.Arch, s.NVocab, s.NLayer, h.arch, h.nVoc, h.layers)
			}
			if x := hfExperts[h.name]; s.NExpert != x[0] || s.NExpertUsed != x[1] {
				t.Errorf("%d experts, %d per token; want %d, %d", s.NExpert, s.NExpertUsed, x[0], x[1])
			}
			for _, ft := range []FileType{F32, F16, Q8_0, Q4_K_M} {
				plan, err := Plan(s, ft)
				if err != nil {
					t.Fatal(err)
				}
				want := wantTensors(h)
				if len(plan) != len(want) {
					t.Errorf("%s: %d tensors, want %d", ft, len(plan), len(want))
				}
				for _, p := range plan {
					if d, ok := want[p.Name]; !ok || !slices.Equal(d, p.Dims) {
						t.Errorf("%s: %s %v, want %v (present: %v)", ft, p.Name, p.Dims, d, ok)
					}
				}
				if !sortedLikeLlamaCpp(plan) {
					t.Errorf("%s: not in llama.cpp's order", ft)
				}
			}
		})
	}
}

// TestTensorType checks llama_tensor_get_type's rules one by one.
func TestTensorType(t *testing.T) {
	tests := []struct {
		ft          FileType
		name        string
		dims        []uint64
		layer, n    int
		tied        bool
		want        tensor.Type
		unsupported bool
	}{
		{Q4_K_M, "output_norm.weight", []uint64{896}, -1, 24, true, tensor.F32, false},
		{Q4_K_M, "blk.0.attn_q.bias", []uint64{896}, 0, 24, true, tensor.F32, false},
		{F16, "blk.0.attn_q.bias", []uint64{896}, 0, 24, true, tensor.F32, false},
		{F16, "blk.0.attn_q.weight", []uint64{896, 896}, 0, 24, true, tensor.F16, false},
		{F32, "token_embd.weight", []uint64{896, 100}, -1, 24, true, tensor.F32, false},
		{Q8_0, "output.weight", []uint64{4096, 100}, -1, 32, false, tensor.Q8_0, false},
		{Q8_0, "blk.0.attn_q.weight", []uint64{48, 48}, 0, 2, false, 0, true},
		{Q4_K_M, "output.weight", []uint64{4096, 100}, -1, 32, false, tensor.Q6_K, false},
		{Q4_K_M, "output.weight", []uint64{896, 100}, -1, 24, false, tensor.Q8_0, false},
		{Q4_K_M, "token_embd.weight", []uint64{4096, 100}, -1, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "token_embd.weight", []uint64{4096, 100}, -1, 32, true, tensor.Q6_K, false},
		{Q4_K_M, "token_embd.weight", []uint64{896, 100}, -1, 24, true, tensor.Q8_0, false},
		{Q4_K_M, "token_embd.weight", []uint64{896, 100}, -1, 24, false, tensor.Q5_0, false},
		// use_more_bits(i, 32): i < 4, i >= 28, (i-4)%3 == 2.
		{Q4_K_M, "blk.3.attn_v.weight", []uint64{4096, 1024}, 3, 32, false, tensor.Q6_K, false},
		{Q4_K_M, "blk.4.attn_v.weight", []uint64{4096, 1024}, 4, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.6.attn_v.weight", []uint64{4096, 1024}, 6, 32, false, tensor.Q6_K, false},
		{Q4_K_M, "blk.6.ffn_down.weight", []uint64{14336, 4096}, 6, 32, false, tensor.Q6_K, false},
		{Q4_K_M, "blk.7.ffn_down.weight", []uint64{14336, 4096}, 7, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.28.ffn_down.weight", []uint64{14336, 4096}, 28, 32, false, tensor.Q6_K, false},
		{Q4_K_M, "blk.6.attn_q.weight", []uint64{4096, 4096}, 6, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.6.attn_k.weight", []uint64{4096, 1024}, 6, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.6.attn_output.weight", []uint64{4096, 4096}, 6, 32, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.6.ffn_gate.weight", []uint64{4096, 14336}, 6, 32, false, tensor.Q4_K, false},
		// Rows that are not whole 256-value blocks fall back.
		{Q4_K_M, "blk.0.attn_v.weight", []uint64{896, 128}, 0, 24, true, tensor.Q8_0, false},
		{Q4_K_M, "blk.3.attn_v.weight", []uint64{896, 128}, 3, 24, true, tensor.Q5_0, false},
		{Q4_K_M, "blk.3.ffn_up.weight", []uint64{896, 4864}, 3, 24, true, tensor.Q5_0, false},
		// ...and to F16 when not even 32-value blocks.
		{Q4_K_M, "blk.0.attn_q.weight", []uint64{48, 48}, 0, 2, false, tensor.F16, false},
		{Q4_K_M, "blk.1.attn_v.weight", []uint64{48, 48}, 1, 2, false, tensor.F16, false},
		// The router is never quantized; the stacked experts' rows follow
		// the dense rules (ffn_down's use_more_bits by layer).
		{Q4_K_M, "blk.0.ffn_gate_inp.weight", []uint64{4096, 8}, 0, 32, false, tensor.F32, false},
		{F16, "blk.0.ffn_gate_inp.weight", []uint64{4096, 8}, 0, 32, false, tensor.F32, false},
		{Q8_0, "blk.0.ffn_gate_inp.weight", []uint64{4096, 8}, 0, 32, false, tensor.F32, false},
		{Q4_K_M, "blk.5.ffn_down_exps.weight", []uint64{768, 2048, 128}, 5, 48, false, tensor.Q6_K, false},
		{Q4_K_M, "blk.7.ffn_down_exps.weight", []uint64{768, 2048, 128}, 7, 48, false, tensor.Q4_K, false},
		{Q4_K_M, "blk.7.ffn_gate_exps.weight", []uint64{2048, 768, 128}, 7, 48, false, tensor.Q4_K, false},
		// Biases of any rank stay F32 (gpt-oss's per-expert ones are 2-D;
		// llama-quantize quantizes only names ending in "weight").
		{Q4_K_M, "blk.0.ffn_gate_exps.bias", []uint64{2880, 32}, 0, 24, false, tensor.F32, false},
		{Q8_0, "blk.0.ffn_down_exps.bias", []uint64{2880, 32}, 0, 24, false, tensor.F32, false},
		{F16, "blk.0.ffn_up_exps.bias", []uint64{2880, 32}, 0, 24, false, tensor.F32, false},
	}
	for _, tc := range tests {
		t.Run(tc.ft.String()+" "+tc.name, func(t *testing.T) {
			got, err := tensorType(tc.ft, tc.name, tc.dims, tensorPos{layer: tc.layer, nLayer: tc.n, gqa: 1, tied: tc.tied})
			if tc.unsupported {
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("got %v, %v; want ErrUnsupported", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// llama.cpp's rules for eight-expert models (Mixtral): attn_k and
	// attn_v Q8_0, attn_output Q5_K in the K mixes.
	for _, tc := range []struct {
		ft   FileType
		name string
		want tensor.Type
	}{
		{Q4_K_M, "blk.4.attn_v.weight", tensor.Q8_0},
		{Q4_K_M, "blk.4.attn_k.weight", tensor.Q8_0},
		{Q4_0, "blk.4.attn_k.weight", tensor.Q8_0},
		{Q4_K_M, "blk.4.attn_output.weight", tensor.Q5_K},
		{Q2_K, "blk.4.attn_output.weight", tensor.Q5_K},
		{Q5_K_M, "blk.4.attn_output.weight", tensor.Q5_K},
		{Q6_K, "blk.4.attn_output.weight", tensor.Q6_K},
		{Q4_K_M, "blk.4.attn_q.weight", tensor.Q4_K},
	} {
		got, err := tensorType(tc.ft, tc.name, []uint64{4096, 1024}, tensorPos{layer: 4, nLayer: 32, gqa: 4, nExpert: 8})
		if err != nil || got != tc.want {
			t.Errorf("8 experts, %s %s: got %v, %v; want %v", tc.ft, tc.name, got, err, tc.want)
		}
	}
	odd := Shape{Name: "odd", Arch: ArchLlama, NEmbd: 48, NLayer: 1, NHead: 1, NHeadKV: 1, NFF: 64, NVocab: 300, NCtx: 64, RopeBase: 1e4}
	if _, err := Plan(odd, Q8_0); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Q8_0 plan of 48-wide rows: %v, want ErrUnsupported", err)
	}
}

// metadata returns the metadata Write gives o, without tensors.
func metadata(t *testing.T, o Options) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	if err := addMetadata(w, o); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseBytes(b.Bytes(), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMetadata checks the exact key set of each family, and the values
// that differ between them, against the keys convert_hf_to_gguf.py writes
// for the real model.
func TestMetadata(t *testing.T) {
	common := []string{"general.architecture", "general.type", "general.name", "general.description",
		"general.file_type", "general.quantization_version",
		"A.block_count", "A.context_length", "A.embedding_length", "A.feed_forward_length", "A.attention.head_count",
		"A.attention.head_count_kv", "A.rope.freq_base", "A.attention.layer_norm_rms_epsilon",
		"tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
		"tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
		"tokenizer.chat_template"}
	llama := []string{"A.vocab_size", "A.rope.dimension_count"}
	headDim := []string{"A.attention.key_length", "A.attention.value_length"}
	tests := []struct {
		shape string
		extra [][]string
		u32   map[string]uint32
		f32   map[string]float32
		str   map[string]string
	}{
		{"llama-3.2-1b", [][]string{llama, headDim},
			map[string]uint32{"A.context_length": 131072, "A.attention.key_length": 64, "A.rope.dimension_count": 64,
				"tokenizer.ggml.bos_token_id": 128000, "tokenizer.ggml.eos_token_id": 128009, "general.file_type": 15},
			map[string]float32{"A.rope.freq_base": 500000, "A.attention.layer_norm_rms_epsilon": 1e-5},
			map[string]string{"tokenizer.ggml.pre": "llama-bpe"}},
		{"llama-3.1-8b", [][]string{llama},
			map[string]uint32{"A.rope.dimension_count": 128, "A.vocab_size": 128256},
			nil, map[string]string{"general.architecture": "llama"}},
		{"mistral-nemo-12b", [][]string{llama, headDim, {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", "tokenizer.ggml.unknown_token_id"}},
			map[string]uint32{"A.attention.key_length": 128, "A.embedding_length": 5120, "A.context_length": 1024000,
				"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2},
			map[string]float32{"A.rope.freq_base": 1e6}, map[string]string{"tokenizer.ggml.pre": "tekken"}},
		{"qwen2.5-0.5b", [][]string{{"tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token"}},
			map[string]uint32{"A.context_length": 32768, "tokenizer.ggml.eos_token_id": 151645, "tokenizer.ggml.padding_token_id": 151643},
			map[string]float32{"A.rope.freq_base": 1e6, "A.attention.layer_norm_rms_epsilon": 1e-6},
			map[string]string{"general.architecture": "qwen2", "tokenizer.ggml.pre": "qwen2"}},
		{"qwen2-tiny-yarn", [][]string{{"tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token", "A.rope.scaling.type", "A.rope.scaling.factor",
			"A.rope.scaling.original_context_length"}},
			map[string]uint32{"A.rope.scaling.original_context_length": 32768},
			map[string]float32{"A.rope.scaling.factor": 4}, map[string]string{"A.rope.scaling.type": "yarn"}},
		{"qwen3-0.6b", [][]string{headDim, {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token"}},
			map[string]uint32{"A.attention.key_length": 128, "A.context_length": 40960, "A.attention.head_count": 16},
			nil, map[string]string{"general.architecture": "qwen3"}},
		{"granite-3.1-2b", [][]string{llama, {"A.attention.scale", "A.embedding_scale", "A.residual_scale", "A.logit_scale",
			"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
			"tokenizer.ggml.add_space_prefix"}},
			map[string]uint32{"A.vocab_size": 49155, "tokenizer.ggml.eos_token_id": 0, "A.context_length": 131072},
			map[string]float32{"A.attention.scale": 0.015625, "A.embedding_scale": 12, "A.residual_scale": 0.22,
				"A.logit_scale": 8, "A.rope.freq_base": 5e6},
			map[string]string{"tokenizer.ggml.pre": "refact"}},
		{"qwen3moe-30b-a3b", [][]string{headDim, {"tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token",
			"A.expert_count", "A.expert_used_count", "A.expert_feed_forward_length"}},
			map[string]uint32{"A.expert_count": 128, "A.expert_used_count": 8, "A.expert_feed_forward_length": 768,
				"A.feed_forward_length": 6144, "A.block_count": 48},
			nil, map[string]string{"general.architecture": "qwen3moe"}},
	}
	for _, tc := range tests {
		t.Run(tc.shape, func(t *testing.T) {
			s, _ := Lookup(tc.shape)
			f := metadata(t, Options{Shape: s, Type: Q4_K_M, Seed: 1})
			a := s.Arch
			key := func(k string) string { return strings.Replace(k, "A.", a+".", 1) }
			want := map[string]bool{}
			for _, k := range common {
				want[key(k)] = true
			}
			for _, ks := range tc.extra {
				for _, k := range ks {
					want[key(k)] = true
				}
			}
			have := map[string]bool{}
			for _, kv := range f.KV {
				have[kv.Key] = true
				if !want[kv.Key] {
					t.Errorf("unexpected key %s", kv.Key)
				}
			}
			for k := range want {
				if !have[k] {
					t.Errorf("missing key %s", k)
				}
			}
			for k, v := range tc.u32 {
				if got, err := f.Uint32(key(k)); err != nil || got != v {
					t.Errorf("%s = %d, %v; want %d", key(k), got, err, v)
				}
			}
			for k, v := range tc.f32 {
				if got, err := f.Float32(key(k)); err != nil || got != v {
					t.Errorf("%s = %g, %v; want %g", key(k), got, err, v)
				}
			}
			for k, v := range tc.str {
				if got, err := f.String(key(k)); err != nil || got != v {
					t.Errorf("%s = %q, %v; want %q", key(k), got, err, v)
				}
			}
			tmpl, _ := vocab.Template(s.Vocab.Template)
			if got, _ := f.String("tokenizer.chat_template"); got != tmpl || tmpl == "" {
				t.Errorf("chat template of %d bytes, want the %s one", len(got), s.Vocab.Template)
			}
		})
	}
}

// TestRopeFreqs checks rope_freqs.weight against the llama3 formula in
// float64 (the float32 steps of convert_hf_to_gguf.py move values by a
// few ulps at most) and its fixed points: 1 for the highest frequencies,
// the factor for the lowest.
func TestRopeFreqs(t *testing.T) {
	tests := []struct {
		base   float64
		dim    int
		r      RopeScaling
		nOnes  int // leading factors of exactly 1
		nScale int // trailing factors of exactly r.Factor
	}{
		// Llama 3.2 (head_dim 64) and 3.1 (head_dim 128), base 500000:
		// the wavelength 2π·base^(2i/d) is under 2048 (→ 1) while
		// 2i/d < ln(2048/2π)/ln(500000) = 0.441, and over 8192 (→ the
		// factor) once 2i/d > ln(8192/2π)/ln(500000) = 0.547: i ≤ 14 and
		// i ≥ 18 for d = 64, i ≤ 28 and i ≥ 35 for d = 128.
		{500000, 64, llama32Rope, 15, 14},
		{500000, 128, llama31Rope, 29, 29},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.dim), func(t *testing.T) {
			got := llama3RopeFactors(float32(tc.base), tc.dim, tc.r)
			if len(got) != tc.dim/2 {
				t.Fatalf("%d factors, want %d", len(got), tc.dim/2)
			}
			ones, scaled := 0, 0
			for i, g := range got {
				wavelen := 2 * math.Pi * math.Pow(tc.base, float64(2*i)/float64(tc.dim))
				var want float64
				switch {
				case wavelen < 2048:
					want = 1
				case wavelen > 8192:
					want = float64(tc.r.Factor)
				default:
					smooth := (8192/wavelen - 1) / (4 - 1)
					want = 1 / ((1-smooth)/float64(tc.r.Factor) + smooth)
				}
				if math.Abs(float64(g)-want) > 1e-5*want {
					t.Errorf("factor %d = %g, want %g", i, g, want)
				}
				if g == 1 {
					ones++
				}
				if g == tc.r.Factor {
					scaled++
				}
			}
			if ones != tc.nOnes || scaled != tc.nScale {
				t.Errorf("%d ones and %d factors of %g, want %d and %d", ones, scaled, tc.r.Factor, tc.nOnes, tc.nScale)
			}
		})
	}
}

// TestWriteTinyShapes writes every tiny shape, reads it back with package
// gguf, and checks each tensor's type, dims and values (norms 1, q/k
// norms and biases random but not trivial, rope factors exact, weights of
// standard deviation 0.02), and that package tokenizer loads the
// vocabulary and round-trips text (except Tekken, not supported yet).
func TestWriteTinyShapes(t *testing.T) {
	for _, name := range []string{"llama3-tiny", "mistral-tiny", "qwen2-tiny", "qwen2-tiny-yarn", "qwen2-tiny-odd", "qwen3-tiny", "granite-tiny",
		"gemma2-tiny", "gemma3-tiny", "phi3-tiny", "phi4mini-tiny", "mixtral-tiny", "qwen3moe-tiny"} {
		for _, ft := range []FileType{F32, Q4_K_M} {
			t.Run(name+" "+ft.String(), func(t *testing.T) {
				s, _ := Lookup(name)
				var b bytes.Buffer
				n, err := Write(&b, Options{Shape: s, Type: ft, Seed: 7, Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				if n != int64(b.Len()) {
					t.Fatalf("Write returned %d, wrote %d", n, b.Len())
				}
				f, err := gguf.ParseBytes(b.Bytes(), gguf.DefaultLimits())
				if err != nil {
					t.Fatal(err)
				}
				plan, _ := Plan(s, ft)
				if len(f.Tensors) != len(plan) {
					t.Fatalf("%d tensors, plan %d", len(f.Tensors), len(plan))
				}
				for i, p := range plan {
					ti := &f.Tensors[i]
					if ti.Name != p.Name || ti.Type != p.Type || !slices.Equal(ti.Dims, p.Dims) {
						t.Fatalf("tensor %d is %s %s %v, want %s %s %v", i, ti.Name, ti.Type, ti.Dims, p.Name, p.Type, p.Dims)
					}
					if ft == F32 {
						checkValues(t, f, ti, s)
					}
				}
				if got := fileTypeKey(t, f); got != fileTypes[ft].ftype {
					t.Errorf("general.file_type %d, want %d", got, fileTypes[ft].ftype)
				}
				tok, err := tokenizer.FromGGUF(f)
				if err != nil {
					t.Fatal(err)
				}
				const text = "Hello, world! func main() { return 42 }"
				if got := tok.Decode(tok.Encode(text, false, false)); got != text {
					t.Errorf("round trip: %q", got)
				}
			})
		}
	}
}

func fileTypeKey(t *testing.T, f *gguf.File) uint32 {
	t.Helper()
	v, err := f.Uint32("general.file_type")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkValues checks the F32 values of one tensor against how it was
// meant to be drawn.
func checkValues(t *testing.T, f *gguf.File, ti *gguf.TensorInfo, s Shape) {
	t.Helper()
	data, err := f.TensorData(ti)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, len(data)/4)
	if err := quant.Dequantize(tensor.F32, data, vals); err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	for _, v := range vals {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean := sum / float64(len(vals))
	std := math.Sqrt(sq/float64(len(vals)) - mean*mean)
	name := ti.Name
	switch {
	case name == "rope_freqs.weight":
		want := llama3RopeFactors(s.RopeBase, s.headDim(), s.Rope)
		if !slices.Equal(vals, want) {
			t.Errorf("%s = %v, want %v", name, vals, want)
		}
	case name == "rope_factors_long.weight" || name == "rope_factors_short.weight":
		long, short := longRopeFactors(s.ropeDim() / 2)
		want := short
		if name == "rope_factors_long.weight" {
			want = long
		}
		if !slices.Equal(vals, want) || len(vals) != s.ropeDim()/2 {
			t.Errorf("%s = %v, want %v", name, vals, want)
		}
	case strings.HasSuffix(name, "attn_q_norm.weight") || strings.HasSuffix(name, "attn_k_norm.weight") ||
		strings.HasSuffix(name, "post_attention_norm.weight") || strings.HasSuffix(name, "post_ffw_norm.weight"):
		if math.Abs(mean-1) > 0.05 || std < 0.05 || std > 0.2 {
			t.Errorf("%s: mean %.3f std %.3f, want about 1 and 0.1", name, mean, std)
		}
	case strings.HasSuffix(name, "_norm.weight"):
		if mean != 1 || std != 0 {
			t.Errorf("%s: mean %g std %g, want all 1", name, mean, std)
		}
	case strings.HasSuffix(name, ".bias"):
		if math.Abs(mean) > 0.05 || std < 0.05 || std > 0.2 {
			t.Errorf("%s: mean %.3f std %.3f, want about 0 and 0.1", name, mean, std)
		}
	default:
		if math.Abs(mean) > 0.002 || math.Abs(std-0.02) > 0.002 {
			t.Errorf("%s: mean %.4f std %.4f, want about 0 and 0.02", name, mean, std)
		}
	}
}

// TestWriteDeterministic writes a tiny shape with different thread
// counts (same bytes) and seeds (different bytes), with no vocabulary
// file.
func TestWriteDeterministic(t *testing.T) {
	s, _ := Lookup("qwen3-tiny")
	write := func(seed uint64, threads int) [32]byte {
		var b bytes.Buffer
		if _, err := Write(&b, Options{Shape: s, Type: Q4_K_M, Seed: seed, Threads: threads}); err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(b.Bytes())
	}
	if write(1, 1) != write(1, 3) {
		t.Error("same seed, different bytes")
	}
	if write(1, 2) == write(2, 2) {
		t.Error("different seeds, same bytes")
	}
}
