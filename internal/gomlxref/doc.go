// Package gomlxref is an independent reference for package model: a
// plain float32 forward pass of a llama GGUF model written as a gomlx
// computation graph and run on gomlx's pure-Go backend (simplego, no cgo,
// no XLA).
//
// Load reads the hyperparameters from the file's metadata itself
// (ReadConfig: its own defaults for head_count_kv, key_length,
// rope.dimension_count, rope.freq_base and the linear RoPE scaling) and
// dequantizes every tensor to float32 with package quant; only packages
// gguf and quant are shared with the engine, never model's forward code.
// Forward evaluates a whole sequence in one graph: embedding gather;
// per block RMSNorm, Q/K/V products, rotary embeddings on the first
// rope.dimension_count values of each head (adjacent pairs as in GGUF
// llama files, or NeoX halves with Config.NeoX) with angles computed in
// float64, causal grouped-query attention over the full T×T score matrix,
// the output product, RMSNorm and the SwiGLU feed-forward; the final norm
// and the output matrix (token_embd.weight when output.weight is absent).
// Every op it needs exists in gomlx and in the simplego backend.
//
// The tests are the point of the package: random small configurations
// (odd head counts, GQA ratios 1 to 8, head widths that do not split the
// embedding, partial RoPE, several bases and linear scalings, tied and
// untied output) written as F32 GGUF files with the project's writer must
// give package model's logits within 1e-4 of this graph at every
// position, in both summation orders; mutation tests show the comparison
// fails when either side is wrong; the graph's RoPE (both pairings),
// attention and RMSNorm are checked against float64 loops.
//
// It is a module of its own (internal/gomlxref/go.mod) so that gomlx is
// never a dependency of the lisa binary: the root module's go.mod does
// not mention it, and `make test` runs this module's tests explicitly.
package gomlxref
