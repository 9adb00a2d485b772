package model

import (
	"fmt"
	"math"
)

// The gpt-oss family (gpt-oss-20b, gpt-oss-120b), as llama.cpp's
// LLM_ARCH_OPENAI_MOE: pre-norm blocks with RMS norms; attention with
// biases on the Q, K, V and output projections, heads of
// attention.key_length values (64, so that Q is wider than the residual
// stream), NeoX RoPE with the file's YaRN scaling, and one learned sink
// logit per query head (attn_sinks.weight) that joins each softmax's
// denominator; a sliding window of attention.sliding_window positions on
// the even layers (attention.sliding_window_pattern, default 2, as
// llama.cpp's set_swa_pattern) and full attention on the odd ones; the
// FFN input norm named post_attention_norm.weight; and a mixture of
// experts of expert_feed_forward_length values each, with biases on the
// router and on every expert's gate, up and down products, the experts
// chosen by their router logits and weighted by the softmax of the
// chosen logits (no renormalisation), and the clamped SwiGLU of
// swigluOAI. The output is untied.
func init() {
	register(&Family{
		Arch:     "gpt-oss",
		RopeNeoX: true,
		Experts:  ExpertsRequired,
		Block: []BlockWeight{wAttnNorm, wQ, wK, wV, wO, wQBias, wKBias, wVBias, wOBias, wSinks,
			wFFNNormPost},
		Hyper: gptossHyper,
	})
}

// The tensors of the gpt-oss block beyond the shared ones: the sinks, and
// the FFN's input norm, which the converter names post_attention_norm
// (the norm after the attention's residual add, before the experts).
var (
	wSinks       = vecWeight("attn_sinks.weight", func(c Config) int { return c.NHead }, func(l *Layer) *[]float32 { return &l.Sinks })
	wFFNNormPost = vecWeight("post_attention_norm.weight", func(c Config) int { return c.NEmbd }, func(l *Layer) *[]float32 { return &l.FFNNorm })
)

// gpt-oss's SwiGLU constants, as llama.cpp's build_moe_ffn has them for
// LLM_FFN_SWIGLU_OAI_MOE (the model's swiglu_limit and its σ(1.702·x)
// GELU approximation).
const (
	gptossSwiGLUAlpha = 1.702
	gptossSwiGLULimit = 7
)

// gptossHyper reads gpt-oss's keys: expert_feed_forward_length and
// attention.sliding_window are required (llama.cpp refuses a file
// without them), attention.sliding_window_pattern and rope.freq_base_swa
// optional.
func gptossHyper(r reader, c *Config, k func(string) string) error {
	var err error
	if c.NFFExp, err = r.count(k("expert_feed_forward_length"), 1, MaxFF, -1); err != nil {
		return err
	}
	// A window of 0 would mask every key of the windowed layers.
	if c.NSWA, err = r.count(k("attention.sliding_window"), 1, MaxCtx, -1); err != nil {
		return err
	}
	pattern, err := r.count(k("attention.sliding_window_pattern"), 0, MaxLayers, 2)
	if err != nil {
		return err
	}
	switch pattern {
	case 0:
		// llama.cpp: every layer windowed (LayerSWA's pattern 0).
		c.SWAPattern = 0
	case 1:
		// llama.cpp's set_swa_pattern(1) windows no layer (l%1 < 0 never
		// holds), where LayerSWA would window all of them.
		c.NSWA, c.SWAPattern = 0, 0
	default:
		c.SWAPattern = pattern
	}
	base, err := r.float(k("rope.freq_base_swa"), 0, 1e12, true, 0)
	if err != nil {
		return err
	}
	if base > 0 && c.NSWA > 0 {
		// The windowed layers keep the scaling (llama.cpp's
		// rope_freq_scale_train_swa is the file's scale).
		c.RopeBaseSWA, c.RopeScaleSWA = base, c.RopeScale
	}
	if c.RopeDim != c.HeadDim {
		// llama.cpp shapes the projections by rope.dimension_count for
		// this architecture: the two must agree.
		return &KeyError{Key: k("rope.dimension_count"), Reason: fmt.Sprintf("%d differs from the head width %d", c.RopeDim, c.HeadDim), Err: ErrInvalid}
	}
	c.MoEBias, c.MoEWeightsSoftmax = true, true
	c.MoESwiGLUAlpha, c.MoESwiGLULimit = gptossSwiGLUAlpha, gptossSwiGLULimit
	return nil
}

// swigluOAI writes gpt-oss's clamped SwiGLU of gate and up into dst (which
// may alias either), as ggml's swiglu_oai: x = min(gate, limit),
// y = clamp(up, -limit, limit), dst = x/(1+e^(-alpha·x)) · (y+1), with
// e^v in float32 as the C library's expf.
func swigluOAI(dst, gate, up []float32, alpha, limit float32) {
	up = up[:len(gate)]
	dst = dst[:len(gate)]
	for i, g := range gate {
		x := min(g, limit)
		y := min(max(up[i], -limit), limit)
		e := float32(math.Exp(float64(float32(alpha * -x))))
		dst[i] = x / (1 + e) * (y + 1)
	}
}
