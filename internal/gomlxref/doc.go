// Package gomlxref is an independent reference for package model: a
// plain float32 forward pass of a llama, qwen2, qwen3 or granite GGUF
// model written as a gomlx computation graph and run on gomlx's pure-Go
// backend (simplego, no cgo, no XLA).
//
// Load reads the hyperparameters from the file's metadata itself
// (ReadConfig: its own defaults for head_count_kv, key_length,
// rope.dimension_count, rope.freq_base, the RoPE scaling type and factor,
// YaRN's original context and attn_factor, and granite's four scales)
// and dequantizes every tensor to float32 with package quant; only
// packages gguf and quant are shared with the engine, never model's
// forward code. The families follow llama.cpp's graphs: llama and granite
// (build_llama) pair adjacent values in RoPE and may carry attention
// biases and rope_freqs.weight; qwen2 pairs value i with i+RopeDim/2
// (NeoX) and requires Q/K/V biases; qwen3 pairs NeoX-style, has no biases
// and applies a per-head RMSNorm to Q and K before RoPE; granite adds an
// embedding scale, a residual scale on each block output, its own
// attention scale (these three optional, as in current llama.cpp) and a
// required logit divisor, and turns RoPE off when its
// rope.scaling.finetuned is false. Where current llama.cpp differs from
// the February 2025 source in the mirror, the reference follows the
// current one and says so (granite's optional scales and RoPE switch,
// YaRN's magnitude for factors below 1); YaRN overrides it does not
// compute (rope.scaling.yarn_*) are refused.
//
// Forward evaluates a whole sequence in one graph: embedding gather;
// per block RMSNorm, Q/K/V products and biases, the Q/K norms, rotary
// embeddings on the first rope.dimension_count values of each head with
// angles computed in float64 (base^(-2i/d) divided by the rope factor,
// times the linear scale, or YaRN's ramp between interpolation and
// extrapolation, cos and sin times the magnitude), causal grouped-query
// attention over the full T×T score matrix, the output product and bias,
// RMSNorm and the SwiGLU feed-forward; the final norm and the output
// matrix (token_embd.weight when output.weight is absent). Every op it
// needs exists in gomlx and in the simplego backend.
//
// The tests are the point of the package: random small configurations of
// every family (odd head counts, GQA ratios 1 to 8, head widths that do
// not split the embedding, partial RoPE in both pairings, several bases,
// linear and YaRN scalings, attn_factor, biases, rope factors, Q/K norms,
// granite's scales, tied and untied output) written as F32 GGUF files
// with the project's writer must give package model's logits within 1e-4
// of this graph at every position, in both summation orders; mutation
// tests show the comparison fails when either side is wrong; the graph's
// RoPE (both pairings, rope factors, YaRN), attention and RMSNorm are
// checked against float64 loops.
//
// It is a module of its own (internal/gomlxref/go.mod) so that gomlx is
// never a dependency of the lisa binary: the root module's go.mod does
// not mention it, and `make test` runs this module's tests explicitly.
package gomlxref
