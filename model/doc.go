// Package model runs decoder-only transformer models from GGUF files.
//
// Each architecture is a Family (arch.go) registered by its
// general.architecture name from a file of its own: llama.go (Llama 1-3.x,
// Mistral, SmolLM, DeepSeek-R1-Distill-Llama, Mixtral), qwen2.go,
// qwen3.go, qwen3moe.go, granite.go, gemma2.go, gemma3.go, phi3.go,
// gptoss.go. A family names its own
// metadata keys and lists the tensors of its blocks, required or
// optional, from shared entries; the Runner runs the shared blocks, whose
// optional parts (Q/K/V/O biases, fused QKV and gate/up projections,
// per-head Q/K RMSNorm, post-attention and post-FFN norms, NeoX or normal
// RoPE with frequency factors and linear, YaRN or LongRoPE scaling, a
// sliding window on a pattern of layers with its own RoPE base, attention
// sinks, attention and final soft caps, attention, embedding, residual
// and logit scales, a SiLU- or GELU-gated FFN, or a mixture of experts in
// its place, moe.go, with biases, either gating and gpt-oss's clamped
// SwiGLU) are on when the family's config or weights have them.
//
// ConfigFromGGUF reads the hyperparameters from the general.architecture
// and <arch>.* metadata keys into a validated Config; Load binds every
// weight by name from the family's table (token_embd, blk.N.attn_norm,
// attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up,
// ffn_down, output_norm, output, and the family's optional tensors),
// checking each tensor's exact shape and type and using the large ones in
// place from the file's mapping. A file without
// output.weight computes its logits with the embedding matrix (tied
// output). Errors name the key (*KeyError) or tensor (*TensorError) at
// fault and wrap ErrMissing, ErrInvalid or ErrUnsupported.
//
// A Cache holds keys and values for several sequences, each in its own
// preallocated region; a Runner evaluates a Batch of tokens, each with its
// position and sequence, so the steps of different requests can share
// one batched matrix product (continuous batching). Within a sequence the
// positions of a batch continue the cache; Truncate drops the end of a
// sequence so that a shared prompt prefix can be reused.
//
// The arithmetic follows llama.cpp's CPU path without flash attention:
// RMSNorm with the sum of squares in float64; Q, K and V projections;
// rotary embeddings in the normal (adjacent pairs) or NeoX mode with
// angles from the float32 recurrence theta *= base^(-2/rope_dim), divided
// by rope_freqs.weight's factors and scaled as ggml's rope_yarn does; keys and values
// stored in the cache rounded to F16 (the default; F32 is an option);
// scores K·q with q rounded to F16, scaled by 1/sqrt(head_dim) (or the
// family's scale; gemma and phi3 scale q before the rounding instead),
// soft-capped when the family says, masked causally (and outside the
// sliding window on windowed layers: the cache keeps every position, the
// masked ones get weight 0) and soft-maxed in float32; outputs Σ round_f16(p_j)·V_j;
// grouped-query heads sharing each KV head between NHead/NHeadKV query
// heads; the output projection and residual; SwiGLU feed-forward
// (silu(gate)·up, then down) and residual; final RMSNorm and the output
// matrix. F32 matrix products and RoPE, and for F32 models the attention
// dot products, softmax and SiLU, sum and round in ggml's own orders
// (ggml.go), so that F32 models match llama.cpp to float32 ulps; the rest
// uses package kernels, which converts activations to each weight type's
// partner format (F16, Q8_0 or Q8_K blocks) as ggml does. Which orders the
// attention, softmax and SiLU follow is named by an Arithmetic
// (Runner.SetArithmetic): ggml's, kernels', or auto (ggml's for all-F32
// models).
//
// With kernels' orders the attention over an F16 or Q8_0 cache runs tiled
// (attn.go): the query heads of one KV head share each tile of 256 keys
// and values, the softmax is taken per tile and the tiles folded in order
// (online softmax), the tiles of a deep decoding step spread over the
// threads; a row of at most one tile is the per-head softmax above, and
// no result depends on the thread count or on how a prompt is cut into
// batches. The cache's types are chosen per half (NewCacheTypes: f16,
// q8_0 in ggml's blocks of 32 along the head, f32).
//
// Subpackage sample turns logits into tokens.
package model
