// Package synth writes random-weight models with the exact layouts of real
// downloads (Llama 3.1/3.2, Mistral Nemo, Qwen2.5, Qwen3, Granite 3.1,
// Gemma 2 and 3, Phi-3.5-mini, Phi-4-mini, Mixtral 8x7B, Qwen3-30B-A3B,
// gpt-oss-20b, TinyLlama and two small llama models) and small test shapes of each
// family, for benchmarks and for tests against llama.cpp: random weights
// run at exactly the speed of trained ones, and a file has the metadata
// keys, tensor names, shapes and type mix that llama.cpp's
// convert_hf_to_gguf.py and llama-quantize write for the real model.
//
// Weights are N(0, 0.02); RMS norm weights are 1.0, except the per-head
// Q/K norms of Qwen3 and Gemma 3 and Gemma's post-attention and post-FFN
// norms (1 + N(0, 0.1)) and the Q/K/V biases of Qwen2 (N(0, 0.1)), which
// get non-trivial values so that a loader that drops them shows; gpt-oss's
// biases are N(0, 0.1) too, except its router's, N(0, 1) (logits spread
// wider than their rounding errors, so that fewer near ties between the
// fourth and fifth expert flip), and its experts' gate and up biases,
// N(0, 4), so that the clamps of its SwiGLU (±7) bind for some values;
// its attention sinks are N(0, 1) (a weight comparable to one
// position's). phi3's
// LongRoPE factors are fixed curves shaped like Phi-3.5's. rope_freqs.weight holds the factors convert_hf_to_gguf.py
// computes from the llama3 rope_scaling of the real config. Values are
// quantized with package quant's reference quantizers, so the bytes are
// those llama-quantize would write for the same F32 values. For the mixes
// the per-tensor type follows llama.cpp's llama_tensor_get_type (see
// tensorType).
//
// The tokenizer is either copied from a vocabulary GGUF file (every
// tokenizer.* key) or, for the shapes of the modern families, a synthetic
// byte-level BPE vocabulary with the family's real layout, special tokens
// and chat template (package vocab).
//
// A file is a pure function of its shape, type, seed and vocabulary: each
// chunk of rows draws from its own generator seeded by (seed, tensor,
// chunk), so chunks are generated in parallel and the output does not
// depend on the thread count. Tensors are produced while the file is
// written, a few chunks at a time, so memory stays bounded.
package synth

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// The architectures (general.architecture) Write produces.
const (
	ArchLlama   = "llama"
	ArchQwen2   = "qwen2"
	ArchQwen3   = "qwen3"
	ArchGranite = "granite"
	ArchGemma2  = "gemma2"
	ArchGemma3  = "gemma3"
	ArchPhi3    = "phi3"
	// ArchQwen3MoE is Qwen3-30B-A3B's architecture; Mixtral is ArchLlama
	// with experts.
	ArchQwen3MoE = "qwen3moe"
	// ArchGptOss is gpt-oss's (llama.cpp's LLM_ARCH_OPENAI_MOE).
	ArchGptOss = "gpt-oss"
)

// RopeScaling is a model's RoPE scaling as its config.json states it.
type RopeScaling struct {
	// Type is "" (none), "llama3" (written as rope_freqs.weight), "yarn"
	// or "linear" (written as the rope.scaling.* keys), or "longrope"
	// (phi3: rope_factors_long/short.weight, the original context and
	// the attention factor).
	Type   string
	Factor float32
	// LowFreqFactor and HighFreqFactor are llama3's.
	LowFreqFactor, HighFreqFactor float32
	// OrigCtx is original_max_position_embeddings.
	OrigCtx int
}

// Shape is the hyperparameters of a model, as its config.json has them.
type Shape struct {
	Name    string // e.g. "qwen2.5-0.5b"
	Arch    string // general.architecture
	NEmbd   int    // hidden_size
	NLayer  int    // num_hidden_layers
	NHead   int    // num_attention_heads
	NHeadKV int    // num_key_value_heads
	NFF     int    // intermediate_size
	NVocab  int    // vocab_size: the tokenizer must have this many tokens
	NCtx    int    // max_position_embeddings
	// HeadDim is the per-head width of Q, K and V; 0 means NEmbd/NHead.
	HeadDim int
	// HeadDimKey says config.json states head_dim, so the file has
	// attention.key_length and attention.value_length.
	HeadDimKey bool
	RopeBase   float32 // rope_theta
	NormEps    float32 // rms_norm_eps; 0 means 1e-5
	Tied       bool    // tie_word_embeddings: no output.weight
	Rope       RopeScaling
	// Granite's multipliers: attention_multiplier, embedding_multiplier,
	// residual_multiplier, logits_scaling.
	AttnScale, EmbScale, ResScale, LogitScale float32
	// Vocab is the synthetic vocabulary of the family; a zero Family
	// means the shape needs a vocabulary file (Options.Vocab).
	Vocab vocab.Spec
	// SlidingWindow is config.json's sliding_window (gemma2, gemma3,
	// phi3; written as attention.sliding_window, by phi3 even when 0).
	SlidingWindow int
	// AttnSoftcap and FinalSoftcap are Gemma 2's attn_logit_softcapping
	// and final_logit_softcapping.
	AttnSoftcap, FinalSoftcap float32
	// RopeDim is the rotated width of a head when only part of it turns
	// (Phi-4-mini's partial_rotary_factor); 0 means the whole head.
	RopeDim int
	// NExpert and NExpertUsed make the FFN a mixture of experts
	// (num_local_experts or num_experts, num_experts_per_tok), each of
	// NFFExp values (moe_intermediate_size; 0 means NFF, as Mixtral's).
	NExpert, NExpertUsed, NFFExp int
}

// nffExp returns the width of one expert's FFN.
func (s Shape) nffExp() int {
	if s.NFFExp > 0 {
		return s.NFFExp
	}
	return s.NFF
}

// ropeDim returns the rotated values per head.
func (s Shape) ropeDim() int {
	if s.RopeDim > 0 {
		return s.RopeDim
	}
	return s.headDim()
}

// headDim returns the per-head width.
func (s Shape) headDim() int {
	if s.HeadDim > 0 {
		return s.HeadDim
	}
	if s.NHead == 0 {
		return 0
	}
	return s.NEmbd / s.NHead
}

func (s Shape) normEps() float32 {
	if s.NormEps == 0 {
		return 1e-5
	}
	return s.NormEps
}

// The llama3 RoPE scaling of Llama 3.1 (factor 8) and 3.2 (factor 32).
var (
	llama31Rope = RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192}
	llama32Rope = RopeScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OrigCtx: 8192}
)

// Shapes lists the shapes Lookup knows: the real models, then the small
// test shapes.
func Shapes() []Shape {
	llama3 := func(n int, tmpl string) vocab.Spec {
		return vocab.Spec{Family: vocab.Llama3, NVocab: n, SpecialAt: n - 256, Template: tmpl}
	}
	qwen := func(f vocab.Family, n, at int) vocab.Spec {
		tmpl := "qwen2.5"
		if f == vocab.Qwen3 {
			tmpl = "qwen3"
		}
		return vocab.Spec{Family: f, NVocab: n, SpecialAt: at, Template: tmpl}
	}
	granite := func(n int) vocab.Spec {
		return vocab.Spec{Family: vocab.Granite, NVocab: n, SpecialAt: n - 3, Template: "granite-3.1"}
	}
	tekken := func(n int) vocab.Spec {
		return vocab.Spec{Family: vocab.Tekken, NVocab: n, Template: "mistral-nemo"}
	}
	gemma2 := vocab.Spec{Family: vocab.Gemma2, NVocab: 256000, Template: "gemma-2"}
	gemma3 := func(n int) vocab.Spec { return vocab.Spec{Family: vocab.Gemma3, NVocab: n, Template: "gemma-3"} }
	phi3 := func(n int) vocab.Spec {
		return vocab.Spec{Family: vocab.Phi3, NVocab: n, SpecialAt: n - 64, Template: "phi-3.5"}
	}
	phi4mini := func(n, at int) vocab.Spec {
		return vocab.Spec{Family: vocab.Phi4Mini, NVocab: n, SpecialAt: at, Template: "phi-4-mini"}
	}
	longrope := RopeScaling{Type: "longrope", OrigCtx: 4096}
	mistral := func(n int) vocab.Spec { return vocab.Spec{Family: vocab.Mistral, NVocab: n, Template: "mixtral"} }
	gptoss := func(n, at int) vocab.Spec {
		return vocab.Spec{Family: vocab.GptOss, NVocab: n, SpecialAt: at, Template: "gpt-oss"}
	}
	// gpt-oss's YaRN: factor 32 over an original context of 4096.
	gptossYarn := RopeScaling{Type: "yarn", Factor: 32, OrigCtx: 4096}
	return []Shape{
		// Llama-2-style shapes; their tokenizer comes from a vocabulary
		// file (e.g. ggml-vocab-llama-spm.gguf).
		{Name: "mini", Arch: ArchLlama, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 32000, NCtx: 512, RopeBase: 10000},
		{Name: "small-110m", Arch: ArchLlama, NEmbd: 768, NLayer: 12, NHead: 12, NHeadKV: 12, NFF: 2048, NVocab: 32000, NCtx: 1024, RopeBase: 10000},
		{Name: "tinyllama-1.1b", Arch: ArchLlama, NEmbd: 2048, NLayer: 22, NHead: 32, NHeadKV: 4, NFF: 5632, NVocab: 32000, NCtx: 2048, RopeBase: 10000},

		// The real models (the Instruct variants' tokenizers).
		{Name: "llama-3.2-1b", Arch: ArchLlama, NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 128256, NCtx: 131072,
			HeadDim: 64, HeadDimKey: true, RopeBase: 500000, Tied: true, Rope: llama32Rope, Vocab: llama3(128256, "llama-3.2")},
		{Name: "llama-3.1-8b", Arch: ArchLlama, NEmbd: 4096, NLayer: 32, NHead: 32, NHeadKV: 8, NFF: 14336, NVocab: 128256, NCtx: 131072,
			RopeBase: 500000, Rope: llama31Rope, Vocab: llama3(128256, "llama-3.1")},
		{Name: "mistral-nemo-12b", Arch: ArchLlama, NEmbd: 5120, NLayer: 40, NHead: 32, NHeadKV: 8, NFF: 14336, NVocab: 131072, NCtx: 1024000,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, Vocab: tekken(131072)},
		{Name: "qwen2.5-0.5b", Arch: ArchQwen2, NEmbd: 896, NLayer: 24, NHead: 14, NHeadKV: 2, NFF: 4864, NVocab: 151936, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen2, 151936, 151643)},
		{Name: "qwen2.5-1.5b", Arch: ArchQwen2, NEmbd: 1536, NLayer: 28, NHead: 12, NHeadKV: 2, NFF: 8960, NVocab: 151936, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen2, 151936, 151643)},
		{Name: "qwen2.5-7b", Arch: ArchQwen2, NEmbd: 3584, NLayer: 28, NHead: 28, NHeadKV: 4, NFF: 18944, NVocab: 152064, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Vocab: qwen(vocab.Qwen2, 152064, 151643)},
		{Name: "qwen3-0.6b", Arch: ArchQwen3, NEmbd: 1024, NLayer: 28, NHead: 16, NHeadKV: 8, NFF: 3072, NVocab: 151936, NCtx: 40960,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen3, 151936, 151643)},
		{Name: "qwen3-4b", Arch: ArchQwen3, NEmbd: 2560, NLayer: 36, NHead: 32, NHeadKV: 8, NFF: 9728, NVocab: 151936, NCtx: 40960,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen3, 151936, 151643)},
		{Name: "granite-3.1-2b", Arch: ArchGranite, NEmbd: 2048, NLayer: 40, NHead: 32, NHeadKV: 8, NFF: 8192, NVocab: 49155, NCtx: 131072,
			RopeBase: 5e6, Tied: true, AttnScale: 0.015625, EmbScale: 12, ResScale: 0.22, LogitScale: 8, Vocab: granite(49155)},
		{Name: "gemma-2-2b", Arch: ArchGemma2, NEmbd: 2304, NLayer: 26, NHead: 8, NHeadKV: 4, NFF: 9216, NVocab: 256000, NCtx: 8192,
			HeadDim: 256, HeadDimKey: true, RopeBase: 10000, NormEps: 1e-6, Tied: true, SlidingWindow: 4096,
			AttnSoftcap: 50, FinalSoftcap: 30, Vocab: gemma2},
		{Name: "gemma-3-1b", Arch: ArchGemma3, NEmbd: 1152, NLayer: 26, NHead: 4, NHeadKV: 1, NFF: 6912, NVocab: 262144, NCtx: 32768,
			HeadDim: 256, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, SlidingWindow: 512, Vocab: gemma3(262144)},
		{Name: "gemma-3-4b", Arch: ArchGemma3, NEmbd: 2560, NLayer: 34, NHead: 8, NHeadKV: 4, NFF: 10240, NVocab: 262208, NCtx: 131072,
			HeadDim: 256, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, SlidingWindow: 1024,
			Rope: RopeScaling{Type: "linear", Factor: 8}, Vocab: gemma3(262208)},
		{Name: "phi-3.5-mini", Arch: ArchPhi3, NEmbd: 3072, NLayer: 32, NHead: 32, NHeadKV: 32, NFF: 8192, NVocab: 32064, NCtx: 131072,
			RopeBase: 10000, SlidingWindow: 262144, Rope: longrope, Vocab: phi3(32064)},
		{Name: "phi-4-mini", Arch: ArchPhi3, NEmbd: 3072, NLayer: 32, NHead: 24, NHeadKV: 8, NFF: 8192, NVocab: 200064, NCtx: 131072,
			RopeBase: 10000, SlidingWindow: 262144, Tied: true, RopeDim: 96, Rope: longrope, Vocab: phi4mini(200064, 199999)},
		// Mixtures of experts: Mixtral-8x7B-Instruct-v0.1 (the llama
		// architecture with eight experts of feed_forward_length, two per
		// token) and Qwen3-30B-A3B (128 experts of 768, eight per token).
		{Name: "mixtral-8x7b", Arch: ArchLlama, NEmbd: 4096, NLayer: 32, NHead: 32, NHeadKV: 8, NFF: 14336, NVocab: 32000, NCtx: 32768,
			RopeBase: 1e6, NExpert: 8, NExpertUsed: 2, Vocab: mistral(32000)},
		{Name: "qwen3moe-30b-a3b", Arch: ArchQwen3MoE, NEmbd: 2048, NLayer: 48, NHead: 32, NHeadKV: 4, NFF: 6144, NVocab: 151936, NCtx: 40960,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, NExpert: 128, NExpertUsed: 8, NFFExp: 768,
			Vocab: qwen(vocab.Qwen3, 151936, 151643)},
		// gpt-oss-20b (config.json: 24 layers of 2880, 64 query heads and
		// 8 KV heads of 64, 32 experts of 2880, four per token, a
		// 128-position window on the even layers, YaRN 32 over 4096).
		{Name: "gpt-oss-20b", Arch: ArchGptOss, NEmbd: 2880, NLayer: 24, NHead: 64, NHeadKV: 8, NFF: 2880, NVocab: 201088,
			NCtx: 131072, HeadDim: 64, HeadDimKey: true, RopeBase: 150000, SlidingWindow: 128, Rope: gptossYarn,
			NExpert: 32, NExpertUsed: 4, NFFExp: 2880, Vocab: gptoss(201088, 199998)},

		// Small test shapes: every distinguishing feature of the family
		// at widths that are whole 256-value blocks (except qwen2-tiny-odd,
		// which has Qwen2.5-0.5B's fallback types), 4096-token vocabularies.
		{Name: "llama3-tiny", Arch: ArchLlama, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 131072,
			HeadDim: 64, HeadDimKey: true, RopeBase: 500000, Tied: true, Rope: llama32Rope, Vocab: llama3(4096, "llama-3.2")},
		{Name: "mistral-tiny", Arch: ArchLlama, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 1024000,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, Vocab: tekken(4096)},
		{Name: "qwen2-tiny", Arch: ArchQwen2, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen2, 4096, 3840)},
		{Name: "qwen2-tiny-yarn", Arch: ArchQwen2, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Rope: RopeScaling{Type: "yarn", Factor: 4, OrigCtx: 32768},
			Vocab: qwen(vocab.Qwen2, 4096, 3840)},
		{Name: "qwen2-tiny-odd", Arch: ArchQwen2, NEmbd: 384, NLayer: 2, NHead: 6, NHeadKV: 2, NFF: 1024, NVocab: 4096, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen2, 4096, 3840)},
		{Name: "qwen3-tiny", Arch: ArchQwen3, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 40960,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen3, 4096, 3840)},
		{Name: "granite-tiny", Arch: ArchGranite, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4099, NCtx: 131072,
			RopeBase: 5e6, Tied: true, AttnScale: 0.015625, EmbScale: 12, ResScale: 0.22, LogitScale: 8, Vocab: granite(4099)},
		// The Gemma and Phi test shapes have windows of 16 positions, so
		// that even the short reference prompts run past them, and soft
		// caps small enough to bend random weights' scores and logits.
		// gemma3-tiny has six layers: five windowed, then a global one
		// with Gemma 3 4B's linear scaling.
		{Name: "gemma2-tiny", Arch: ArchGemma2, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 8192,
			HeadDim: 128, HeadDimKey: true, RopeBase: 10000, NormEps: 1e-6, Tied: true, SlidingWindow: 16,
			AttnSoftcap: 0.1, FinalSoftcap: 1, Vocab: vocab.Spec{Family: vocab.Gemma2, NVocab: 4096, Template: "gemma-2"}},
		{Name: "gemma3-tiny", Arch: ArchGemma3, NEmbd: 256, NLayer: 6, NHead: 4, NHeadKV: 1, NFF: 768, NVocab: 4096, NCtx: 131072,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, Tied: true, SlidingWindow: 16,
			Rope: RopeScaling{Type: "linear", Factor: 8}, Vocab: gemma3(4096)},
		{Name: "phi3-tiny", Arch: ArchPhi3, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 131072,
			RopeBase: 10000, SlidingWindow: 16, Rope: longrope, Vocab: phi3(4096)},
		{Name: "phi4mini-tiny", Arch: ArchPhi3, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 131072,
			RopeBase: 10000, SlidingWindow: 262144, Tied: true, RopeDim: 48, Rope: longrope, Vocab: phi4mini(4096, 4032)},
		// The mixtures of experts: Mixtral's eight experts, two per token
		// (and llama-quantize's rules for eight-expert models), and
		// Qwen3-30B-A3B's layout with 32 experts of 256, eight per token.
		{Name: "mixtral-tiny", Arch: ArchLlama, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 512, NVocab: 4096, NCtx: 32768,
			RopeBase: 1e6, NExpert: 8, NExpertUsed: 2, Vocab: mistral(4096)},
		{Name: "qwen3moe-tiny", Arch: ArchQwen3MoE, NEmbd: 256, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 768, NVocab: 4096, NCtx: 40960,
			HeadDim: 128, HeadDimKey: true, RopeBase: 1e6, NormEps: 1e-6, NExpert: 32, NExpertUsed: 8, NFFExp: 256,
			Vocab: qwen(vocab.Qwen3, 4096, 3840)},
		// gpt-oss's layout: heads of 64 whose queries are wider than the
		// residual stream, eight query heads per KV head, 16 experts four
		// per token, sinks, biases, YaRN 32 over 4096, and a window of 32
		// positions on the even layers of four.
		{Name: "gpt-oss-tiny", Arch: ArchGptOss, NEmbd: 256, NLayer: 4, NHead: 8, NHeadKV: 1, NFF: 256, NVocab: 4096,
			NCtx: 131072, HeadDim: 64, HeadDimKey: true, RopeBase: 150000, SlidingWindow: 32, Rope: gptossYarn,
			NExpert: 16, NExpertUsed: 4, NFFExp: 256, Vocab: gptoss(4096, 3840)},

		// Smaller still, for files llama.cpp's llama-quantize wrote that are
		// committed as test data (model/quantref): one layer, 512 tokens.
		// llama2-quant is Llama 2's layout (untied output, no RoPE
		// scaling) at whole 256-value blocks; smollm2-quant has
		// SmolLM2-135M's width, heads and tied embeddings and qwen2-odd-quant
		// Qwen2.5's layout at a width that is not a multiple of 256, so
		// that their K-quant files hold llama-quantize's Q5_0/Q8_0
		// fallbacks (a synthetic StarCoder-style and Qwen2 tokenizer).
		{Name: "llama2-quant", Arch: ArchLlama, NEmbd: 256, NLayer: 1, NHead: 4, NHeadKV: 2, NFF: 256, NVocab: 512, NCtx: 4096,
			RopeBase: 10000, Vocab: llama3(512, "")},
		{Name: "smollm2-quant", Arch: ArchLlama, NEmbd: 576, NLayer: 1, NHead: 9, NHeadKV: 3, NFF: 256, NVocab: 512, NCtx: 8192,
			RopeBase: 100000, Tied: true, Vocab: vocab.Spec{Family: vocab.Granite, NVocab: 512, SpecialAt: 509}},
		{Name: "qwen2-odd-quant", Arch: ArchQwen2, NEmbd: 384, NLayer: 1, NHead: 6, NHeadKV: 2, NFF: 256, NVocab: 512, NCtx: 32768,
			RopeBase: 1e6, NormEps: 1e-6, Tied: true, Vocab: qwen(vocab.Qwen2, 512, 256)},
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

// The file types Write produces: llama.cpp's names and mixes (without an
// importance matrix).
const (
	F32 FileType = iota
	F16
	Q8_0
	Q4_K_M
	Q4_0
	Q4_1
	Q5_0
	Q5_1
	Q2_K
	Q3_K_S
	Q3_K_M
	Q3_K_L
	Q4_K_S
	Q5_K_S
	Q5_K_M
	Q6_K
	IQ4_NL
	IQ4_XS
	MXFP4_MOE
	MXFP4
)

var fileTypes = []struct {
	name  string
	ftype uint32      // general.file_type (llama_ftype)
	base  tensor.Type // llama-quantize's default type for the file type's matrices
	alias string      // llama-quantize's other name for it, if any
	// synthOnly marks a file type llama-quantize cannot write, only this
	// package: its tensors are what llama.cpp must load, not a mix to match.
	synthOnly bool
}{
	F32:    {"f32", 0, tensor.F32, "", false},
	F16:    {"f16", 1, tensor.F16, "", false},
	Q8_0:   {"q8_0", 7, tensor.Q8_0, "", false},
	Q4_K_M: {"q4_k_m", 15, tensor.Q4_K, "q4_k", false},
	Q4_0:   {"q4_0", 2, tensor.Q4_0, "", false},
	Q4_1:   {"q4_1", 3, tensor.Q4_1, "", false},
	Q5_0:   {"q5_0", 8, tensor.Q5_0, "", false},
	Q5_1:   {"q5_1", 9, tensor.Q5_1, "", false},
	Q2_K:   {"q2_k", 10, tensor.Q2_K, "", false},
	Q3_K_S: {"q3_k_s", 11, tensor.Q3_K, "", false},
	Q3_K_M: {"q3_k_m", 12, tensor.Q3_K, "q3_k", false},
	Q3_K_L: {"q3_k_l", 13, tensor.Q3_K, "", false},
	Q4_K_S: {"q4_k_s", 14, tensor.Q4_K, "", false},
	Q5_K_S: {"q5_k_s", 16, tensor.Q5_K, "", false},
	Q5_K_M: {"q5_k_m", 17, tensor.Q5_K, "q5_k", false},
	Q6_K:   {"q6_k", 18, tensor.Q6_K, "", false},
	IQ4_NL: {"iq4_nl", 25, tensor.IQ4_NL, "", false},
	IQ4_XS: {"iq4_xs", 30, tensor.IQ4_XS, "", false},
	// llama-quantize's MXFP4_MOE: the stacked experts MXFP4 (as gpt-oss
	// files hold them), every other matrix Q8_0 (tensorType).
	MXFP4_MOE: {"mxfp4_moe", 38, tensor.Q8_0, "", false},
	// Every matrix MXFP4, embeddings and output included: no llama.cpp
	// tool writes it, but llama.cpp loads and runs it, which makes it the
	// file that tests MXFP4 weights on dense shapes.
	MXFP4: {"mxfp4", 38, tensor.MXFP4, "", true},
}

// SynthOnly reports whether llama-quantize cannot write file type t (only
// this package does): its tensor types are then not a llama.cpp mix.
func (t FileType) SynthOnly() bool {
	return t >= 0 && int(t) < len(fileTypes) && fileTypes[t].synthOnly
}

// ExpertType returns the tensor type file type t gives the stacked expert
// matrices (ffn_*_exps) of a mixture-of-experts model whose rows are whole
// blocks of it: MXFP4 for MXFP4_MOE and MXFP4 (the gpt-oss layout),
// otherwise the type of the dense matrices before llama.cpp's per-tensor
// rules.
func (t FileType) ExpertType() tensor.Type {
	switch t {
	case MXFP4_MOE, MXFP4:
		return tensor.MXFP4
	case F32:
		return tensor.F32
	case F16:
		return tensor.F16
	}
	return fileTypes[t].base
}

// FileTypeNames returns the names ParseFileType accepts (without the
// aliases), in FileType order.
func FileTypeNames() []string {
	names := make([]string, len(fileTypes))
	for i, f := range fileTypes {
		names[i] = f.name
	}
	return names
}

// ParseFileType parses a file type's name (FileTypeNames) or one of
// llama-quantize's aliases q4_k, q3_k and q5_k (the _M mixes), in any
// case.
func ParseFileType(s string) (FileType, error) {
	for i, f := range fileTypes {
		if strings.EqualFold(s, f.name) || f.alias != "" && strings.EqualFold(s, f.alias) {
			return FileType(i), nil
		}
	}
	return 0, fmt.Errorf("synth: file type %q: want one of %s", s, strings.Join(FileTypeNames(), ", "))
}

// String returns the name ParseFileType accepts.
func (t FileType) String() string {
	if t < 0 || int(t) >= len(fileTypes) {
		return fmt.Sprintf("FileType(%d)", int(t))
	}
	return fileTypes[t].name
}

// initKind says how a tensor's values are drawn.
type initKind int

const (
	initWeight   initKind = iota // N(0, 0.02)
	initOnes                     // 1.0 (RMS norms)
	initQKNorm                   // 1 + N(0, 0.1)
	initBias                     // N(0, 0.1)
	initFixed                    // TensorPlan.fixed
	initUnit                     // N(0, 1) (gpt-oss's attention sinks and router bias)
	initWideBias                 // N(0, 4) (gpt-oss's expert gate and up biases)
)

// TensorPlan is one tensor of a synthetic model, in file order.
type TensorPlan struct {
	Name string
	Type tensor.Type
	Dims []uint64 // ggml order: row length first

	init  initKind
	fixed []float32
}

// useMoreBits is llama.cpp's choice of the layers that get more bits in
// the _M K-quant mixes: the first and last eighth and every third between.
func useMoreBits(i, n int) bool {
	return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2
}

// ErrUnsupported reports a shape and file type llama.cpp would write with
// a tensor type package quant cannot produce, or could not write at all.
var ErrUnsupported = errors.New("synth: unsupported combination")

// tensorPos is where a tensor sits in its model, for the mixes' rules.
type tensorPos struct {
	layer, nLayer int  // block index (-1 outside the blocks) and count
	gqa           int  // query heads per key/value head (n_gqa)
	tied          bool // no output.weight: token_embd.weight is the output
	nExpert       int  // experts (hparams.n_expert; 0 for a dense model)
}

// tensorType is llama.cpp's type for a tensor of a file of type ft: F32
// for vectors; F16 (convert_hf_to_gguf.py --outtype f16) or Q8_0 for
// every matrix; for the quantized mixes llama-quantize's
// llama_tensor_get_type (not Falcon, not 70B), without an importance
// matrix:
//   - output.weight, and token_embd.weight when the output is tied: Q6_K,
//     or Q8_0 when a row is not whole blocks of the file's type;
//   - attn_v, ffn_down, attn_output and phi3's fused attn_qkv by the file
//     type's rules (mixRule);
//   - in models of eight experts, attn_k and attn_v Q8_0 and attn_output
//     Q5_K in the K mixes, as llama.cpp has it for Mixtral;
//   - the router (ffn_gate_inp) F32 in every file type, never quantized;
//   - everything else the file type's own (the stacked experts by the
//     rules of their dense names);
//   - then, when a row is not whole blocks, the K-quants and IQ4_XS fall
//     back (Q2_K and Q3_K to Q4_0, IQ4_XS to IQ4_NL, Q4_K to Q5_0, Q5_K to Q5_1,
//     Q6_K to Q8_0), and to F16 when not even 32-value blocks; the 32-value
//     types cannot fall back and llama-quantize refuses the file.
//
// The layer index stands for llama.cpp's running counts of attn_v and
// ffn_down tensors: a dense model has one of each per block, quantized in
// block order.
func tensorType(ft FileType, name string, dims []uint64, pos tensorPos) (tensor.Type, error) {
	// The router stays F32: convert_hf_to_gguf.py writes it so and
	// llama-quantize never quantizes it; so do biases of any rank
	// (gpt-oss's per-expert ones are 2-D), whose names do not end in
	// "weight".
	if len(dims) == 1 || strings.HasSuffix(name, ".ffn_gate_inp.weight") || strings.HasSuffix(name, ".bias") {
		return tensor.F32, nil
	}
	nx := dims[0]
	switch ft {
	case F32:
		return tensor.F32, nil
	case F16:
		return tensor.F16, nil
	case MXFP4_MOE, MXFP4:
		// llama-quantize's MXFP4_MOE takes MXFP4 for the stacked experts
		// and Q8_0 for the rest, with no per-tensor rules; the synthetic
		// MXFP4 type takes it for every matrix.
		t := tensor.Q8_0
		if ft == MXFP4 || strings.Contains(name, "_exps.") {
			t = tensor.MXFP4
		}
		if nx%uint64(t.BlockSize()) != 0 {
			return 0, fmt.Errorf("%w: %s: rows of %d values are not whole %s blocks (llama-quantize refuses it)", ErrUnsupported, name, nx, t)
		}
		return t, nil
	}
	base := fileTypes[ft].base
	t := base
	if name == "output.weight" || pos.tied && name == "token_embd.weight" {
		switch {
		case nx%uint64(base.BlockSize()) != 0:
			t = tensor.Q8_0
		case base != tensor.Q8_0:
			t = tensor.Q6_K
		}
	} else if name != "token_embd.weight" {
		t = mixRule(ft, strings.TrimPrefix(name, fmt.Sprintf("blk.%d.", pos.layer)), base, pos)
	}
	if nx%uint64(t.BlockSize()) == 0 {
		return t, nil
	}
	switch t {
	case tensor.Q2_K, tensor.Q3_K:
		// The llama.cpp of the mirror took IQ4_NL here; the current one
		// (bench/llamacpp's) writes Q4_0 (testdata/mixes.txt).
		t = tensor.Q4_0
	case tensor.IQ4_XS:
		t = tensor.IQ4_NL
	case tensor.Q4_K:
		t = tensor.Q5_0
	case tensor.Q5_K:
		t = tensor.Q5_1
	case tensor.Q6_K:
		t = tensor.Q8_0
	default:
		return 0, fmt.Errorf("%w: %s: rows of %d values are not whole %s blocks (llama-quantize refuses it)", ErrUnsupported, name, nx, t)
	}
	if nx%uint64(t.BlockSize()) != 0 {
		t = tensor.F16
	}
	return t, nil
}

// mixRule is llama_tensor_get_type's choice for a block's matrix (base:
// its name without the blk.N. prefix) of a dense model, before the
// fallback for rows that are not whole blocks.
func mixRule(ft FileType, base string, t tensor.Type, pos tensorPos) tensor.Type {
	i, n := pos.layer, pos.nLayer
	if pos.nExpert == 8 {
		// llama.cpp's rules for eight-expert models (Mixtral) replace the
		// dense ones for these three.
		switch base {
		case "attn_v.weight", "attn_k.weight":
			return tensor.Q8_0
		case "attn_output.weight":
			switch ft {
			case Q2_K, Q3_K_S, Q3_K_M, IQ4_NL, Q4_K_S, Q4_K_M, IQ4_XS:
				return tensor.Q5_K
			}
			return t
		}
	}
	switch base {
	case "attn_v.weight":
		switch {
		case ft == Q2_K:
			if pos.gqa >= 4 {
				return tensor.Q4_K
			}
			return tensor.Q3_K
		case ft == Q3_K_M:
			if i < 2 {
				return tensor.Q5_K
			}
			return tensor.Q4_K
		case ft == Q3_K_L:
			return tensor.Q5_K
		case (ft == IQ4_NL || ft == IQ4_XS) && pos.gqa >= 4:
			return tensor.Q5_K
		case (ft == Q4_K_M || ft == Q5_K_M) && useMoreBits(i, n):
			return tensor.Q6_K
		case ft == Q4_K_S && i < 4:
			return tensor.Q5_K
		}
	case "ffn_down.weight", "ffn_down_exps.weight":
		switch {
		case ft == Q2_K:
			return tensor.Q3_K
		case ft == Q3_K_M:
			if i < n/16 {
				return tensor.Q5_K
			}
			// Every architecture but Falcon: Q4_K on all later layers.
			return tensor.Q4_K
		case ft == Q3_K_L:
			return tensor.Q5_K
		case ft == Q4_K_M:
			if useMoreBits(i, n) {
				return tensor.Q6_K
			}
		case i < n/8 && (ft == IQ4_NL || ft == IQ4_XS):
			return tensor.Q5_K
		case ft == Q5_K_M && useMoreBits(i, n):
			return tensor.Q6_K
		case ft == Q4_K_S && i < n/8:
			return tensor.Q5_K
		}
	case "attn_qkv.weight":
		switch ft {
		case Q3_K_M, Q3_K_L:
			return tensor.Q4_K
		case Q4_K_M:
			return tensor.Q5_K
		case Q5_K_M:
			return tensor.Q6_K
		}
	case "attn_output.weight":
		switch ft {
		case Q2_K:
			return tensor.Q3_K
		case Q3_K_M:
			return tensor.Q4_K
		case Q3_K_L:
			return tensor.Q5_K
		}
	}
	return t
}

// Plan returns the tensors of a model of shape s and type ft in the order
// llama-quantize writes them (llama.cpp's weight_name_comparer): tensors
// outside the blocks by name, then each block's tensors by name.
func Plan(s Shape, ft FileType) ([]TensorPlan, error) {
	hd := s.headDim()
	qDim, kvDim := uint64(s.NHead*hd), uint64(s.NHeadKV*hd)
	e, v, f := uint64(s.NEmbd), uint64(s.NVocab), uint64(s.NFF)
	var p []TensorPlan
	var err error
	add := func(layer int, name string, init initKind, dims ...uint64) {
		if err != nil {
			return
		}
		full := name
		if layer >= 0 {
			full = fmt.Sprintf("blk.%d.%s", layer, name)
		}
		var t tensor.Type
		if t, err = tensorType(ft, full, dims, tensorPos{layer: layer, nLayer: s.NLayer, gqa: s.NHead / s.NHeadKV, tied: s.Tied, nExpert: s.NExpert}); err != nil {
			return
		}
		if !quant.Supported(t) {
			err = fmt.Errorf("%w: %s would be %s, which package quant cannot write yet", ErrUnsupported, full, t)
			return
		}
		p = append(p, TensorPlan{Name: full, Type: t, Dims: dims, init: init})
	}
	if !s.Tied {
		add(-1, "output.weight", initWeight, e, v)
	}
	add(-1, "output_norm.weight", initOnes, e)
	if s.Rope.Type == "llama3" {
		add(-1, "rope_freqs.weight", initFixed, uint64(hd/2))
		if err == nil {
			p[len(p)-1].fixed = llama3RopeFactors(s.RopeBase, hd, s.Rope)
		}
	}
	if s.Rope.Type == "longrope" {
		long, short := longRopeFactors(s.ropeDim() / 2)
		add(-1, "rope_factors_long.weight", initFixed, uint64(s.ropeDim()/2))
		if err == nil {
			p[len(p)-1].fixed = long
		}
		add(-1, "rope_factors_short.weight", initFixed, uint64(s.ropeDim()/2))
		if err == nil {
			p[len(p)-1].fixed = short
		}
	}
	add(-1, "token_embd.weight", initWeight, e, v)
	if s.Arch == ArchPhi3 {
		// Phi-3's block: fused Q/K/V and a fused gate/up of 2·NFF rows.
		for l := range s.NLayer {
			add(l, "attn_norm.weight", initOnes, e)
			add(l, "attn_output.weight", initWeight, qDim, e)
			add(l, "attn_qkv.weight", initWeight, e, qDim+2*kvDim)
			add(l, "ffn_down.weight", initWeight, f, e)
			add(l, "ffn_norm.weight", initOnes, e)
			add(l, "ffn_up.weight", initWeight, e, 2*f)
		}
		if err != nil {
			return nil, fmt.Errorf("synth: shape %s, %s: %w", s.Name, ft, err)
		}
		return p, nil
	}
	if s.Arch == ArchGptOss {
		// gpt-oss's block: biases on every projection, the sinks, the
		// experts and their router with biases, and the FFN input norm
		// named post_attention_norm.
		fe, ne := uint64(s.nffExp()), uint64(s.NExpert)
		for l := range s.NLayer {
			add(l, "attn_k.bias", initBias, kvDim)
			add(l, "attn_k.weight", initWeight, e, kvDim)
			add(l, "attn_norm.weight", initOnes, e)
			add(l, "attn_output.bias", initBias, e)
			add(l, "attn_output.weight", initWeight, qDim, e)
			add(l, "attn_q.bias", initBias, qDim)
			add(l, "attn_q.weight", initWeight, e, qDim)
			add(l, "attn_sinks.weight", initUnit, uint64(s.NHead))
			add(l, "attn_v.bias", initBias, kvDim)
			add(l, "attn_v.weight", initWeight, e, kvDim)
			add(l, "ffn_down_exps.bias", initBias, e, ne)
			add(l, "ffn_down_exps.weight", initWeight, fe, e, ne)
			add(l, "ffn_gate_exps.bias", initWideBias, fe, ne)
			add(l, "ffn_gate_exps.weight", initWeight, e, fe, ne)
			add(l, "ffn_gate_inp.bias", initUnit, ne)
			add(l, "ffn_gate_inp.weight", initWeight, e, ne)
			add(l, "ffn_up_exps.bias", initWideBias, fe, ne)
			add(l, "ffn_up_exps.weight", initWeight, e, fe, ne)
			add(l, "post_attention_norm.weight", initOnes, e)
		}
		if err != nil {
			return nil, fmt.Errorf("synth: shape %s, %s: %w", s.Name, ft, err)
		}
		return p, nil
	}
	bias := s.Arch == ArchQwen2
	qkNorm := s.Arch == ArchQwen3 || s.Arch == ArchGemma3 || s.Arch == ArchQwen3MoE
	postNorm := s.Arch == ArchGemma2 || s.Arch == ArchGemma3
	for l := range s.NLayer {
		if bias {
			add(l, "attn_k.bias", initBias, kvDim)
		}
		add(l, "attn_k.weight", initWeight, e, kvDim)
		if qkNorm {
			add(l, "attn_k_norm.weight", initQKNorm, uint64(hd))
		}
		add(l, "attn_norm.weight", initOnes, e)
		add(l, "attn_output.weight", initWeight, qDim, e)
		if bias {
			add(l, "attn_q.bias", initBias, qDim)
		}
		add(l, "attn_q.weight", initWeight, e, qDim)
		if qkNorm {
			add(l, "attn_q_norm.weight", initQKNorm, uint64(hd))
		}
		if bias {
			add(l, "attn_v.bias", initBias, kvDim)
		}
		add(l, "attn_v.weight", initWeight, e, kvDim)
		if s.NExpert > 0 {
			// The experts stacked in 3-D tensors, and the router.
			fe, ne := uint64(s.nffExp()), uint64(s.NExpert)
			add(l, "ffn_down_exps.weight", initWeight, fe, e, ne)
			add(l, "ffn_gate_exps.weight", initWeight, e, fe, ne)
			add(l, "ffn_gate_inp.weight", initWeight, e, ne)
			add(l, "ffn_norm.weight", initOnes, e)
			add(l, "ffn_up_exps.weight", initWeight, e, fe, ne)
		} else {
			add(l, "ffn_down.weight", initWeight, f, e)
			add(l, "ffn_gate.weight", initWeight, e, f)
			add(l, "ffn_norm.weight", initOnes, e)
			add(l, "ffn_up.weight", initWeight, e, f)
		}
		if postNorm {
			// Gemma's files hold 1+w (the converter adds the 1): values
			// around 1, not all 1, so that a loader that drops them shows.
			add(l, "post_attention_norm.weight", initQKNorm, e)
			add(l, "post_ffw_norm.weight", initQKNorm, e)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("synth: shape %s, %s: %w", s.Name, ft, err)
	}
	return p, nil
}

// llama3RopeFactors computes rope_freqs.weight as convert_hf_to_gguf.py
// does for rope_type "llama3": 1 for short wavelengths, factor for long
// ones, a smooth blend between. The arithmetic is in float32 where torch
// does it in float32.
func llama3RopeFactors(base float32, dim int, r RopeScaling) []float32 {
	lowWavelen := float64(r.OrigCtx) / float64(r.LowFreqFactor)
	highWavelen := float64(r.OrigCtx) / float64(r.HighFreqFactor)
	out := make([]float32, 0, dim/2)
	for i := 0; i < dim; i += 2 {
		exp := float32(i) / float32(dim)
		freq := 1 / float32(math.Pow(float64(base), float64(exp)))
		wavelen := float32(2*math.Pi) / freq
		switch {
		case float64(wavelen) < highWavelen:
			out = append(out, 1)
		case float64(wavelen) > lowWavelen:
			out = append(out, r.Factor)
		default:
			smooth := (float32(r.OrigCtx)/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out = append(out, 1/((1-smooth)/r.Factor+smooth))
		}
	}
	return out
}

// longRopeFactors returns n long and n short LongRoPE frequency
// divisors shaped like Phi-3.5's: the short ones near 1, the long ones
// rising from 1 to about 50 over the pairs (the lowest frequencies
// stretched most).
func longRopeFactors(n int) (long, short []float32) {
	long, short = make([]float32, n), make([]float32, n)
	for i := range n {
		x := float64(i) / float64(max(n-1, 1))
		long[i] = float32(1 + 49*x*x)
		short[i] = float32(1 + 0.1*x)
	}
	return long, short
}

// Options say what Write produces.
type Options struct {
	Shape Shape
	Type  FileType
	Seed  uint64
	// Vocab is a GGUF file whose tokenizer.* keys are copied; it must
	// have Shape.NVocab tokens. When nil, a shape of a modern family gets
	// its synthetic vocabulary; the Llama-2-style shapes need one.
	Vocab *gguf.File
	// VocabKVs, when Vocab is nil, are the tokenizer.* pairs of a
	// vocabulary parsed elsewhere (lisa parses vocabulary files in its
	// sandboxed worker); the same checks apply.
	VocabKVs []gguf.KV
	// Threads generating chunks in parallel (0: GOMAXPROCS). The output
	// does not depend on it.
	Threads int
	// PoolRows, when positive, writes a benchmark file fast: the
	// N(0, 0.02) matrices that are not F32 take their rows from a pool of
	// PoolRows random rows per row type (tensor type and width), drawn
	// and quantized once, each row of a tensor picked from the pool by a
	// hash of (seed, tensor, row). Quantizing every row of a real-size
	// K-quant file takes hours on a small machine; copying rows runs at
	// disk speed. Norms, biases, the F32 router and the other vectors are
	// drawn as usual. The file is still a pure function of the options
	// (not of Threads) and says so in general.description; 0 leaves every
	// byte as without it.
	PoolRows int
}

// maxPoolRows bounds PoolRows: a pool of a 16384-value Q8_0 row type
// holds 17 KiB a row, 1.1 GiB at the bound.
const maxPoolRows = 1 << 16

// ErrVocab reports a missing or mismatched vocabulary.
var ErrVocab = errors.New("synth: vocabulary")

// chunkValues is about how many values one generator chunk holds.
const chunkValues = 1 << 20

// validate checks the hyperparameters are consistent.
func (s Shape) validate() error {
	bad := s.NEmbd <= 0 || s.NHead <= 0 || s.NHeadKV <= 0 || s.NHead%s.NHeadKV != 0 ||
		s.NLayer <= 0 || s.NFF <= 0 || s.NVocab <= 0 || s.NCtx <= 0 || s.headDim() <= 0 || s.headDim()%2 != 0 ||
		s.HeadDim == 0 && s.NEmbd%s.NHead != 0
	switch s.Arch {
	case ArchLlama, ArchQwen2, ArchQwen3, ArchGranite, ArchGemma2, ArchGemma3, ArchPhi3, ArchQwen3MoE, ArchGptOss:
	default:
		bad = true
	}
	switch {
	case s.NExpert < 0 || s.NExpertUsed < 0 || s.NFFExp < 0:
		bad = true
	case s.NExpert > 0:
		// Experts: Mixtral's llama, qwen3moe or gpt-oss.
		bad = bad || s.NExpertUsed < 1 || s.NExpertUsed > s.NExpert || s.Arch != ArchLlama && s.Arch != ArchQwen3MoE && s.Arch != ArchGptOss
	default:
		bad = bad || s.NExpertUsed != 0 || s.NFFExp != 0 || s.Arch == ArchQwen3MoE || s.Arch == ArchGptOss
	}
	// gpt-oss files always state a window.
	bad = bad || s.Arch == ArchGptOss && s.SlidingWindow < 1
	bad = bad || s.RopeDim < 0 || s.RopeDim > s.headDim() || s.RopeDim%2 != 0 || s.SlidingWindow < 0
	switch s.Rope.Type {
	case "":
	case "llama3":
		bad = bad || s.Rope.Factor <= 0 || s.Rope.OrigCtx <= 0 || s.Rope.HighFreqFactor <= s.Rope.LowFreqFactor || s.Rope.LowFreqFactor <= 0
	case "yarn":
		bad = bad || s.Rope.Factor <= 0 || s.Rope.OrigCtx <= 0
	case "linear":
		bad = bad || s.Rope.Factor <= 0
	case "longrope":
		bad = bad || s.Rope.OrigCtx <= 0 || s.Arch != ArchPhi3
	default:
		bad = true
	}
	if bad {
		return fmt.Errorf("synth: shape %q: invalid hyperparameters %+v", s.Name, s)
	}
	return nil
}

// Write writes the model o describes to w and returns the bytes written.
func Write(w io.Writer, o Options) (int64, error) {
	s := o.Shape
	if err := s.validate(); err != nil {
		return 0, err
	}
	if o.Type < 0 || int(o.Type) >= len(fileTypes) {
		return 0, fmt.Errorf("synth: %v: unknown file type", o.Type)
	}
	if o.PoolRows < 0 || o.PoolRows > maxPoolRows {
		return 0, fmt.Errorf("synth: PoolRows %d: want 0 to %d", o.PoolRows, maxPoolRows)
	}
	plan, err := Plan(s, o.Type)
	if err != nil {
		return 0, err
	}
	gw := gguf.NewWriter()
	if err := addMetadata(gw, o); err != nil {
		return 0, err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	var pools *rowPools
	if o.PoolRows > 0 {
		pools = &rowPools{rows: o.PoolRows, seed: o.Seed, threads: threads, byKey: map[poolKey][]byte{}}
	}
	for i, t := range plan {
		g := &tensorGen{plan: t, seed: o.Seed, index: uint64(i), threads: threads}
		write := g.write
		if pools != nil && t.init == initWeight && t.Type != tensor.F32 {
			write = func(w io.Writer) error { return pools.write(w, t, o.Seed, uint64(i)) }
		}
		if err := gw.AddTensorFunc(t.Name, t.Type, t.Dims, write); err != nil {
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
	if err == nil {
		// CreateTemp makes the file private; a model file is for other
		// users too (a sandboxed worker may run as one), as os.Create
		// would have made it.
		if err = tmp.Chmod(0o644); err != nil {
			err = fmt.Errorf("synth: %w", err)
		}
	}
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

// tokenizerKVs returns the tokenizer.* pairs: copied from o.Vocab when
// given, else the shape's synthetic vocabulary.
func tokenizerKVs(o Options) ([]gguf.KV, error) {
	s := o.Shape
	if o.Vocab == nil && o.VocabKVs == nil {
		if s.Vocab.Family == 0 {
			return nil, fmt.Errorf("%w: shape %s needs a vocabulary of %d tokens (e.g. ggml-vocab-llama-spm.gguf)", ErrVocab, s.Name, s.NVocab)
		}
		if s.Vocab.NVocab != s.NVocab {
			return nil, fmt.Errorf("%w: shape %s: synthetic vocabulary of %d tokens, want %d", ErrVocab, s.Name, s.Vocab.NVocab, s.NVocab)
		}
		v, err := vocab.Build(s.Vocab)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrVocab, err)
		}
		return v.KVs(), nil
	}
	src := o.VocabKVs
	if o.Vocab != nil {
		src = o.Vocab.KV
	}
	var kvs []gguf.KV
	ntok := -1
	for _, kv := range src {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if kv.Key == "tokenizer.ggml.tokens" {
			toks, ok := kv.Value.Strings()
			if !ok {
				return nil, fmt.Errorf("%w: tokenizer.ggml.tokens is a %s, not an array of strings", ErrVocab, kv.Value.Type())
			}
			ntok = len(toks)
		}
		kvs = append(kvs, kv)
	}
	if ntok < 0 {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens: %w", ErrVocab, gguf.ErrNotFound)
	}
	if ntok != s.NVocab {
		return nil, fmt.Errorf("%w: tokenizer.ggml.tokens has %d tokens, shape %s needs %d", ErrVocab, ntok, s.Name, s.NVocab)
	}
	return kvs, nil
}

// description is general.description: how the weights were drawn.
func description(o Options) string {
	if o.PoolRows > 0 {
		return fmt.Sprintf("random weights N(0,0.02), matrix rows from a pool of %d per row type, norms=1.0, seed=%d, %s; written by lisa gguf synth",
			o.PoolRows, o.Seed, o.Type)
	}
	return fmt.Sprintf("random weights N(0,0.02), norms=1.0, seed=%d, %s; written by lisa gguf synth", o.Seed, o.Type)
}

// addMetadata adds the general.*, architecture and tokenizer.* keys, the
// ones convert_hf_to_gguf.py writes for the family in its order.
func addMetadata(gw *gguf.Writer, o Options) error {
	s := o.Shape
	tok, err := tokenizerKVs(o)
	if err != nil {
		return err
	}
	a := s.Arch
	u := func(k string, v int) gguf.KV { return gguf.KV{Key: a + "." + k, Value: gguf.Uint32Value(uint32(v))} }
	f := func(k string, v float32) gguf.KV { return gguf.KV{Key: a + "." + k, Value: gguf.Float32Value(v)} }
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.StringValue(a)},
		{Key: "general.type", Value: gguf.StringValue("model")},
		{Key: "general.name", Value: gguf.StringValue(s.Name + "-random")},
		{Key: "general.description", Value: gguf.StringValue(description(o))},
		u("block_count", s.NLayer),
		u("context_length", s.NCtx),
		u("embedding_length", s.NEmbd),
		u("feed_forward_length", s.NFF),
		u("attention.head_count", s.NHead),
		u("attention.head_count_kv", s.NHeadKV),
		f("rope.freq_base", s.RopeBase),
		f("attention.layer_norm_rms_epsilon", s.normEps()),
	}
	if s.NExpert > 0 {
		kvs = append(kvs, u("expert_count", s.NExpert), u("expert_used_count", s.NExpertUsed))
	}
	if s.HeadDimKey {
		kvs = append(kvs, u("attention.key_length", s.headDim()), u("attention.value_length", s.headDim()))
	}
	kvs = append(kvs, gguf.KV{Key: "general.file_type", Value: gguf.Uint32Value(fileTypes[o.Type].ftype)})
	if a == ArchQwen3MoE {
		// Qwen2MoeModel adds moe_intermediate_size after the common keys.
		kvs = append(kvs, u("expert_feed_forward_length", s.nffExp()))
	}
	if a == ArchGptOss {
		// GptOssModel adds these two after the common keys.
		kvs = append(kvs, u("attention.sliding_window", s.SlidingWindow), u("expert_feed_forward_length", s.nffExp()))
	}
	if a == ArchLlama || a == ArchGranite {
		// LlamaModel (and GraniteModel, its subclass) add these two.
		kvs = append(kvs, u("vocab_size", s.NVocab), u("rope.dimension_count", s.headDim()))
	}
	if s.Rope.Type == "yarn" || s.Rope.Type == "linear" {
		kvs = append(kvs, gguf.KV{Key: a + ".rope.scaling.type", Value: gguf.StringValue(s.Rope.Type)},
			f("rope.scaling.factor", s.Rope.Factor))
		if s.Rope.Type == "yarn" {
			kvs = append(kvs, u("rope.scaling.original_context_length", s.Rope.OrigCtx))
		}
	}
	switch a {
	case ArchGemma2:
		kvs = append(kvs, f("attn_logit_softcapping", s.AttnSoftcap), f("final_logit_softcapping", s.FinalSoftcap),
			u("attention.sliding_window", s.SlidingWindow))
	case ArchGemma3:
		kvs = append(kvs, u("attention.sliding_window", s.SlidingWindow))
	case ArchPhi3:
		kvs = append(kvs, u("rope.dimension_count", s.ropeDim()), u("attention.sliding_window", s.SlidingWindow))
		if s.Rope.Type == "longrope" {
			// convert_hf_to_gguf.py's LongRoPE attention factor.
			scale := float64(s.NCtx) / float64(s.Rope.OrigCtx)
			af := float32(1)
			if scale > 1 {
				af = float32(math.Sqrt(1 + math.Log(scale)/math.Log(float64(s.Rope.OrigCtx))))
			}
			kvs = append(kvs, u("rope.scaling.original_context_length", s.Rope.OrigCtx), f("rope.scaling.attn_factor", af))
		}
	}
	if a == ArchGranite {
		kvs = append(kvs, f("attention.scale", s.AttnScale), f("embedding_scale", s.EmbScale),
			f("residual_scale", s.ResScale), f("logit_scale", s.LogitScale))
	}
	kvs = append(kvs, tok...)
	if o.Type != F32 && o.Type != F16 {
		kvs = append(kvs, gguf.KV{Key: "general.quantization_version", Value: gguf.Uint32Value(2)})
	}
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

// fill sets vals, the chunk c of the tensor, from its generator.
func (g *tensorGen) fill(vals []float32, c int) {
	switch g.plan.init {
	case initOnes:
		for i := range vals {
			vals[i] = 1
		}
		return
	case initFixed:
		copy(vals, g.plan.fixed)
		return
	}
	r := rand.New(rand.NewPCG(g.seed, g.index<<32|uint64(c)))
	scale, offset := 0.02, 0.0
	switch g.plan.init {
	case initQKNorm:
		scale, offset = 0.1, 1
	case initBias:
		scale = 0.1
	case initUnit:
		scale = 1
	case initWideBias:
		scale = 4
	}
	for i := range vals {
		vals[i] = float32(offset + r.NormFloat64()*scale)
	}
}

// write generates the tensor in waves of up to threads chunks, each
// chunk in its own goroutine, and writes the chunks in order.
func (g *tensorGen) write(w io.Writer) error {
	cols := int(g.plan.Dims[0])
	rows := 1
	for _, d := range g.plan.Dims[1:] {
		rows *= int(d)
	}
	if g.plan.init == initFixed && len(g.plan.fixed) != cols*rows {
		return fmt.Errorf("synth: %s: %d fixed values for %d", g.plan.Name, len(g.plan.fixed), cols*rows)
	}
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
				g.fill(vals, c)
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

// poolKey names a row type: rows of one tensor type and width are
// interchangeable.
type poolKey struct {
	typ  tensor.Type
	cols uint64
}

// rowPools holds the quantized rows of Options.PoolRows, one pool per
// row type, each drawn the first time a tensor needs it.
type rowPools struct {
	rows    int
	seed    uint64
	threads int
	byKey   map[poolKey][]byte
}

// pool returns the pool of k's rows, drawing it on first use: PoolRows
// rows of N(0, 0.02) from generators seeded apart from the tensors' (the
// high bit of the index, which a plan's tensor index never has), so
// chunks are drawn in parallel and the bytes do not depend on the
// thread count.
func (p *rowPools) pool(k poolKey) ([]byte, error) {
	if b, ok := p.byKey[k]; ok {
		return b, nil
	}
	dims := []uint64{k.cols, uint64(p.rows)}
	n, err := k.typ.Bytes(dims)
	if err != nil {
		return nil, err
	}
	g := &tensorGen{
		plan:    TensorPlan{Name: fmt.Sprintf("pool %s×%d", k.typ, k.cols), Type: k.typ, Dims: dims, init: initWeight},
		seed:    p.seed,
		index:   1<<31 | uint64(k.typ)<<24 | k.cols&(1<<24-1),
		threads: p.threads,
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	if err := g.write(buf); err != nil {
		return nil, err
	}
	p.byKey[k] = buf.Bytes()
	return buf.Bytes(), nil
}

// write writes tensor index of the plan from its row type's pool: row r
// is the pool's row mix(seed, index, r) mod PoolRows.
func (p *rowPools) write(w io.Writer, t TensorPlan, seed, index uint64) error {
	k := poolKey{t.Type, t.Dims[0]}
	pool, err := p.pool(k)
	if err != nil {
		return fmt.Errorf("synth: %s: %w", t.Name, err)
	}
	rb := uint64(len(pool) / p.rows)
	rows := uint64(1)
	for _, d := range t.Dims[1:] {
		rows *= d
	}
	// Rows are gathered into a buffer of about a mebibyte per Write.
	per := max(1, (1<<20)/rb)
	buf := make([]byte, 0, per*rb)
	for r := uint64(0); r < rows; r++ {
		j := mix64(seed, index, r) % uint64(p.rows)
		buf = append(buf, pool[j*rb:(j+1)*rb]...)
		if uint64(len(buf)) == per*rb || r == rows-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}

// mix64 hashes (seed, index, row) to a pool row: SplitMix64's finalizer
// over the three words, so neighbouring rows land far apart.
func mix64(seed, index, row uint64) uint64 {
	x := seed ^ index*0x9e3779b97f4a7c15 ^ row*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
