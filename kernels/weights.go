package kernels

import (
	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// partner is the format a weight type's activations are converted to
// before its dots, as ggml's vec_dot_type.
type partner uint8

// The partner formats; partnerNone marks a type MatMul cannot multiply.
const (
	partnerNone partner = iota
	partnerF32          // float32 as given
	partnerF16          // IEEE half
	partnerBF16         // bfloat16
	partnerQ8_0         // quant.BlockQ8_0
	partnerQ8_1         // quant.BlockQ8_1
	partnerQ8K          // quant.BlockQ8K
)

// dots holds one weight type's dot kernels against activation blocks X on
// one path. one is always set; the others may be nil.
type dots[X any] struct {
	// one returns the dot of one weight row (len(x) blocks of w) with x.
	one func(w []byte, x []X) float32
	// rows sets out[r] to exactly one's dot of weight row r (the r-th
	// len(x) blocks of w) with x, for len(out) rows in one call.
	rows func(w []byte, x []X, out []float32)
	// x4 sets out[t] to a one-token dot of w with token t's nb blocks
	// x[t*nb:(t+1)*nb], for four tokens: exactly the path's one (the
	// avx512 path, whose one-token dots of the types added after Q4_K
	// sum in vector lanes, has no x4 for those, nor the avx2 path for
	// Q4_0, Q5_0 and IQ4_NL; avx512's Q4_K and Q6_K x4 is xn on one row).
	x4 func(w []byte, x []X, nb int, out *[4]float32)
	// x8 does so for eight tokens, up to float32 rounding when the
	// kernel sums in vector lanes (exactly when it is xn on one row). dx holds the tokens' block scales as
	// float32 (q80Scales's layout) for Q8_0 activations, nil otherwise; a
	// kernel that reads the scales from x ignores it.
	x8 func(w []byte, x []X, dx []float32, nb int, out *[8]float32)
	// x8r2, where set (only with x8), does x8's work for two
	// consecutive weight rows (w holds both): it sets out[t*stride+k] to
	// the dot of row k (0, 1) with token t, each equal to x8's.
	x8r2 func(w []byte, x []X, dx []float32, nb int, out []float32, stride int)
	// xn, where set, multiplies a run of rows weight rows (the r-th nb
	// blocks of w) with tokens tokens (token t's nb blocks at
	// x[t*nb:(t+1)*nb]), 1 <= tokens <= xnTokens, loading each weight
	// block once for all of them: it sets out[t*stride+r] to exactly
	// rows's dot of row r with token t, bit for bit, so a token's result
	// does not depend on the other tokens of its product. MatMul then
	// takes every group of up to xnTokens tokens with it, and x4, x8 and
	// x8r2 are not used.
	xn func(w []byte, x []X, nb, rows, tokens int, out []float32, stride int)
	// prepLen, prep and prepRows, where set (with rows), split rows in
	// two for a one-token product, whose rows come in many calls (one
	// per piece of the pool): the activation work a row-run kernel does
	// per call (the avx512 Q8_0-partner ones, MXFP4's included, and the
	// avx2 Q4_0, Q5_0 and IQ4_NL ones reorder the activations, sum their
	// offsets and convert their scales), or per row (the IQ4_XS ones: the
	// avx2 one splits each activation in two parts, the avx512 one
	// shuffles each block's activations and spreads its offsets), is done
	// once per product.
	// prepLen(nb) is the
	// scratch bytes for nb blocks (0: none, use rows), prep(x, scr)
	// writes them from the token's blocks, and prepRows(w, x, scr, out)
	// then sets out exactly as rows(w, x, out) does.
	prepLen  func(nb int) int
	prep     func(x []X, scr []byte)
	prepRows func(w []byte, x []X, scr []byte, out []float32)
}

// xnTokens is the most tokens one call of a dots.xn kernel takes.
const xnTokens = 8

// weightKernels is one weight type's row of a path's table: its partner
// format and its dots against that format (only the matching field is
// set; the float types' dots are table fields of their own). Adding a
// weight type is adding its row here and its kernels.
type weightKernels struct {
	partner partner
	q80     dots[quant.BlockQ8_0]
	q81     dots[quant.BlockQ8_1]
	q8k     dots[quant.BlockQ8K]
	// qtRepack rewrites weight rows into the prompt tile's layout
	// (qtile.go) and qtile multiplies tokens by them, for the types a
	// path has a tile kernel for; both nil for the others. The kernel is
	// the type's because a path may know the range of the type's codes
	// (the avx2 one sums Q4_0's and Q5_0's products in 16-bit lanes).
	qtRepack qtRepackFunc
	qtile    qtTileFunc
	// qtBlock is the size of 32 values of a group in the layout qtRepack
	// writes: qtBlockBytes, or qkBlockBytes/8 for Q4_K's own layout.
	qtBlock int
	// qtSplit is set when qtile takes the activation codes split in
	// nibbles (qtSplitActs) instead of as they are.
	qtSplit bool
}

// genericWeights returns the pure-Go rows. The types added after Q4_K,
// Q6_K and Q8_0 use package quant's dots, which follow ggml's generic C
// kernels' float order.
func genericWeights() [tensor.TypeCount]weightKernels {
	var w [tensor.TypeCount]weightKernels
	w[tensor.F32].partner = partnerF32
	w[tensor.F16].partner = partnerF16
	w[tensor.BF16].partner = partnerBF16
	w[tensor.Q8_0] = weightKernels{partner: partnerQ8_0, q80: dots[quant.BlockQ8_0]{one: dotQ8_0Generic, x4: dotQ8_0x4Generic, x8: dotQ8_0x8Generic}}
	w[tensor.Q4_0] = weightKernels{partner: partnerQ8_0, q80: dots[quant.BlockQ8_0]{one: quant.DotQ4_0Q8_0}}
	w[tensor.Q5_0] = weightKernels{partner: partnerQ8_0, q80: dots[quant.BlockQ8_0]{one: quant.DotQ5_0Q8_0}}
	w[tensor.IQ4_NL] = weightKernels{partner: partnerQ8_0, q80: dots[quant.BlockQ8_0]{one: quant.DotIQ4NLQ8_0}}
	w[tensor.MXFP4] = weightKernels{partner: partnerQ8_0, q80: dots[quant.BlockQ8_0]{one: quant.DotMXFP4Q8_0}}
	w[tensor.Q4_1] = weightKernels{partner: partnerQ8_1, q81: dots[quant.BlockQ8_1]{one: quant.DotQ4_1Q8_1}}
	w[tensor.Q5_1] = weightKernels{partner: partnerQ8_1, q81: dots[quant.BlockQ8_1]{one: quant.DotQ5_1Q8_1}}
	w[tensor.Q4_K] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: dotQ4KGeneric, x4: dotQ4Kx4Generic}}
	w[tensor.Q6_K] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: dotQ6KGeneric, x4: dotQ6Kx4Generic}}
	w[tensor.Q2_K] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: quant.DotQ2KQ8K}}
	w[tensor.Q3_K] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: quant.DotQ3KQ8K}}
	w[tensor.Q5_K] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: quant.DotQ5KQ8K}}
	w[tensor.IQ4_XS] = weightKernels{partner: partnerQ8K, q8k: dots[quant.BlockQ8K]{one: quant.DotIQ4XSQ8K}}
	return w
}

// wholePieces reports whether the pool's one-token pieces of this type
// go to its row-run dot in one call each (Products.work): the Q8_0-partner
// row-run kernels (Q4_0, Q5_0, IQ4_NL on avx512 and avx2, MXFP4 on
// avx512) once converted the activation scales and reordered the
// activations at every call, which a call per prefetchBytes of rows paid
// every few rows. With the prep (dots.prep, once per product) they no
// longer do; they were measured with whole pieces, before the prep, and
// keep them. The Q8_K-partner ones keep the
// calls of prefetchBytes with the next rows prefetched, which measured
// faster for them (a Qwen3-MoE decode step, 2 threads: 8.8-9.2 CPU-ms
// against 10.5-11.1 with whole pieces).
func (w *weightKernels) wholePieces() bool {
	return w.partner == partnerQ8_0 && w.q80.rows != nil
}

// SupportedTypes returns the weight types MatMul multiplies, in
// type-number order.
func SupportedTypes() []tensor.Type {
	var ts []tensor.Type
	for t := range tensor.TypeCount {
		if supported(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// supported reports whether MatMul handles weights of type t (every path
// has the same rows).
func supported(t tensor.Type) bool {
	return t < tensor.TypeCount && dispatch.tab.weights[t].partner != partnerNone
}
