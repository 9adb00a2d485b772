// Package model runs Llama-family transformer models from GGUF files.
//
// ConfigFromGGUF reads the hyperparameters from the general.architecture
// and llama.* metadata keys into a validated Config; Load binds every
// weight by name from a table (token_embd, blk.N.attn_norm, attn_q,
// attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down,
// output_norm, output), checking each tensor's exact shape and type and
// using the large ones in place from the file's mapping. A file without
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
// rotary embeddings in the normal (adjacent pairs) mode with angles from
// the float32 recurrence theta *= base^(-2/rope_dim); keys and values
// stored in the cache rounded to F16 (the default; F32 is an option);
// scores K·q with q rounded to F16, scaled by 1/sqrt(head_dim), masked
// causally and soft-maxed in float32; outputs Σ round_f16(p_j)·V_j;
// grouped-query heads sharing each KV head between NHead/NHeadKV query
// heads; the output projection and residual; SwiGLU feed-forward
// (silu(gate)·up, then down) and residual; final RMSNorm and the output
// matrix. F32 matrix products and RoPE, and for F32 models the attention
// dot products, softmax and SiLU, sum and round in ggml's own orders
// (ggml.go), so that F32 models match llama.cpp to float32 ulps; the rest
// uses package kernels, which converts activations to each weight type's
// partner format (F16, Q8_0 or Q8_K blocks) as ggml does.
//
// Subpackage sample turns logits into tokens.
package model
