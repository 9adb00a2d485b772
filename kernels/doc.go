// Package kernels holds the numeric kernels of the forward pass: dot
// products and matrix products for the weight formats GGUF models use
// (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_XS, MXFP4; SupportedTypes), the activation conversions they need,
// and the small vector ops around them (RMSNorm, softmax, SiLU×mul, RoPE,
// add, scale, F16 conversion, axpy over an F16 cache).
//
// # Paths
//
// Every kernel has a pure-Go version, the generic path, which is always
// compiled and is the reference the others are tested against. On amd64
// (without the purego build tag) there are also Go assembly versions: the
// avx2 path (AVX2, FMA and F16C) and the avx512 path (AVX-512 F, BW and VL
// with VNNI). Selected reports the path chosen once at start-up from the
// CPU's features (read with klauspost/cpuid, which honours the operating
// system's support for the AVX-512 register state) and from the
// environment variable LISA_KERNELS (generic, avx2 or avx512), which forces
// a path for tests and benchmarks. Available lists every path the CPU can
// run; Describe says what was chosen and why.
//
// On arm64 the assembly paths are neon (ASIMD), dotprod (ASIMD with SDOT)
// and i8mm (dotprod with SMMLA), chosen from the kernel's HWCAP bits and
// forced with LISA_KERNELS=neon, dotprod or i8mm. Their code is written by
// the generator in _arm64gen (quant_{neon,dotprod,i8mm}_arm64.s,
// vec_arm64.s), which spells the instructions Go's assembler lacks as
// WORDs with the instruction in a comment. They cover the Q8_0, Q4_0,
// Q4_K, Q6_K, Q5_K and IQ4_XS dots, bit for bit the generic twins', the
// float dots (the half ones with FMLAL where the CPU has FEAT_FHM),
// conversions and F16 axpy, and on i8mm two-row by eight-token
// Q8_0, Q4_0 and Q4_K tiles (dots.x8r2), each output bit for bit the
// one-token dot; the other types and ops run the generic code.
//
// # Matrix products
//
// A Matrix is a weight tensor in its raw GGUF bytes. Pool.MatMul multiplies
// it by n activation rows: the activations are converted once per call to
// the weight type's partner format (F16 weights: F16; BF16: BF16; Q8_0,
// Q4_0, Q5_0, IQ4_NL and MXFP4: Q8_0 blocks; Q4_1 and Q5_1: Q8_1 blocks; the
// 256-value types: Q8_K blocks; on the avx2 and avx512 paths by
// assembly that writes the pure-Go quantizers' bytes), then the weight
// rows are split
// across a fixed set of worker goroutines, which claim them in pieces
// so that one slowed by another process takes fewer: about eight per
// goroutine for several tokens, and for one token pieces that shrink as
// the rows run out (each a share of the rows left), so the goroutines
// finish together. On the avx512 path a one-token product of Q4_K, Q6_K,
// Q5_K, Q3_K, Q2_K, IQ4_XS, Q4_0, Q5_0, IQ4_NL or MXFP4 weights, and on
// the avx2 path one of Q4_0, Q5_0, IQ4_NL or IQ4_XS weights, takes each
// claimed piece in one call of a row-run dot, the activations prepared for
// it once per product (dots.prep) where it has a prep. Quantized dot
// products multiply 8-bit codes with integer arithmetic and apply one
// float scale per block; the integer sums are exact on every path. The
// Q4_K and Q6_K dots of the generic and avx2 paths run the same scalar
// float sequence and agree bit for bit; the avx512 quantized dots and the
// avx2 Q4_0, Q5_0, IQ4_NL, IQ4_XS, Q2_K, Q3_K and Q5_K ones accumulate in
// float32 vector lanes, reduced once per row, and agree with the generic
// twins within a summation-order tolerance. For n > 1 the rows
// are processed in tiles small enough to stay in cache
// while every token column is multiplied by them, so each weight block is
// read from memory once per call; the quantized types take eight tokens at
// a time, then four, with kernels that unpack each weight block once for
// all of them (the Q8_0 four- and eight-token dots equal the path's
// one-token dot bit for bit, the K-quant four-token dots too), and the
// avx512 Q4_K and Q6_K ones up to eight tokens at a time with a kernel
// (dots.xn) whose every token equals the one-token row-run dot bit for
// bit, so that a sequence's results never depend on its batch. Tokens are taken in blocks whose activations fit the
// second-level cache, each block multiplied by every row tile of a piece
// before the next. For Q8_0 the conversion also lays out the block
// scales of each group of eight tokens as float32, block-major, so that
// the avx512 eight-token dot multiplies two blocks of all eight tokens'
// scales at once instead of gathering them from the blocks.
//
// On the avx512 and avx2 paths, Q4_0, Q5_0, IQ4_NL, Q8_0 and IQ4_XS
// weights with two or more tokens take the prompt tile instead (qtile.go):
// each goroutine rewrites its rows, sixteen at a time, into a bounded
// scratch buffer in a row-interleaved layout of unsigned codes and
// float32 block scales (the repacks load rows and transpose them in
// registers, no gathers), and VPDPBUSD multiplies them with each token's
// activation bytes broadcast to the sixteen rows, one float32 lane per
// row; AVX2 has no VPDPBUSD, so its kernels add VPMADDUBSW's 16-bit pair
// sums as far as the type's code range allows (qtile_avx2_amd64.s; the
// types whose codes take all of 0..255 read the activations split in
// nibbles). Every result is the same sequence of float steps whatever its
// lane, piece or token group, so it does not depend on the thread count or
// on how a prompt is split into products of two or more tokens; the
// pure-Go twin gives the same bits. A one-token product of these types
// sums in its own order, so a token's result there differs in rounding
// from the same token's in a batch. On the avx2 path Q4_K takes a tile of
// its own layout too (qtile_q4k.go), whose float steps are the generic
// Q4_K dot's, which the avx2 one-token dot keeps: every token of a batch
// equals its one-token dot, as the avx512 path's dots.xn give.
//
// F32, F16 and BF16 weights with gemmMinTokens (3) or more tokens take a
// blocked matrix product instead (gemm.go): each goroutine converts a
// tile of its weight rows to float32 once, the activations are converted
// once per call to float32 rounded through the partner format (so every
// product equals the one the one-row dot forms and only the order of the
// sum differs), and a register tile of six rows by four tokens is summed
// by a micro-kernel: AVX-512 (gemm_avx512_amd64.s), AVX2+FMA
// (gemm_avx2_amd64.s) or its pure-Go twin, which sums in index order like
// the generic dots and so matches them bit for bit.
//
// # One row per weight type
//
// What a path knows about a weight type is one row of its table
// (weightKernels, in the spirit of ggml's type_traits_cpu): the partner
// format and the one-token, row-run, four- and eight-token dots against
// it, any of which but the one-token dot may be missing (MatMul then
// takes the tokens one at a time). Block sizes and names come from
// package tensor's table, the conversions from package quant's. Adding a
// type is adding its rows and kernels; nothing else switches on the
// weight type. The generic rows of the types other than Q8_0, Q4_K and
// Q6_K are package quant's dots, which reproduce ggml's generic C kernels
// bit for bit.
//
// # Other ops
//
// Softmax and SiLUMul use a float32 exponential (expf, the Cephes
// polynomial, within about an ulp of e^x) whose vectorised version gives
// the same bits. RMSNorm, RoPE, Add and Scale are pure Go on every path.
//
// # Generated assembly
//
// The AVX2 kernels (avx2_amd64.s, avx2_amd64_stubs.go) are generated by
// the avo program in _asm, a module of its own: run go generate in this
// directory. The AVX-512 kernels (quant_avx512_amd64.s,
// newq_avx512_amd64.s) are hand-written Go assembly, because they need
// VNNI instructions (VPDPWSSD, VPDPBUSD) and opmask registers the avo
// version in use does not have; so are the activation quantizers
// (q8k_amd64.s, q8act_amd64.s; the Q8_0 and Q8_1 ones share macros,
// q8act_amd64.h, with the prompt tile's), the AVX2 row-run dots of
// Q4_0, Q5_0 and IQ4_NL (rows_avx2_amd64.s) and of IQ4_XS
// (iq4xs_avx2_amd64.s).
//
// # Which types have which kernels
//
// avx512: one-token (row-run) dots for every quantized type but Q4_1 and
// Q5_1, which take the AVX2 ones; eight-token dots for all of those but Q2_K, Q4_K and Q6_K
// (four-token ones for Q8_0 too), and for Q4_K and Q6_K one multi-token dot for 1..8 tokens; the rest multiply a prompt token by token,
// each weight tile staying in cache. avx2: one- and four-token dots for
// Q6_K and Q8_0, a one-token dot for Q4_K (its prompts take the Q4_K
// tile); row-run dots for Q4_0, Q5_0, IQ4_NL and IQ4_XS
// that sum in float32 lanes (rows_avx2_amd64.s, iq4xs_avx2_amd64.s; two
// or more tokens take the prompt tile); one-token dots for Q4_1 and Q5_1
// that equal the generic ones bit for bit (MXFP4: one- and four-token,
// both bit for bit; mxfp4_amd64.s), and for Q2_K, Q3_K and Q5_K in the
// AVX2 Q4_K dot's order. Every other pair runs the generic row: package
// quant's dot, ggml's generic C kernel's arithmetic. The blocked-product kernels
// (gemm_avx512_amd64.s, gemm_avx2_amd64.s) are hand-written too.
package kernels
