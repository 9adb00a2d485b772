// Package sample turns a row of logits into the next token.
//
// A Sampler applies the stages of llama.cpp's default sampler chain, in its
// order: repetition, presence and frequency penalties over the last N
// accepted tokens, then top-k, top-p (nucleus), min-p, temperature, and a
// draw from the resulting distribution with a seeded pseudo-random
// generator. A temperature of zero or less means greedy decoding: the
// highest (penalised) logit, lowest token id on ties.
//
// The stages follow llama.cpp's semantics (February 2025): a repeated
// token's positive logit is divided by the repetition penalty and a
// negative one multiplied by it, then count×frequency and presence (once)
// are subtracted; top-p keeps the shortest prefix of the sorted
// distribution whose probabilities sum to at least p; min-p keeps tokens
// whose logit is at least the maximum plus ln(p), i.e. whose probability is
// at least p times the top one's.
//
// Candidates are always kept sorted by descending logit with the lower
// token id first on equal logits, so a given seed reproduces the same
// tokens on every run and platform. Logprobs reports the log-probability of
// a chosen token and the most likely alternatives under the raw logits.
//
// Sample does not sort the vocabulary when top-k does not cut. With
// nothing cutting the distribution (OpenAI's defaults: temperature 1, no
// top-k, top-p or min-p) it takes the plain path (plain.go): the top
// logit, the weights by package kernels' vectorised exponential, block
// sums and an inverse-CDF walk in token id order, about the cost of a
// greedy pick. Tokens whose weight underflows float32 (more than 86.9
// times the temperature below the top logit) are never drawn there.
// With top-p or min-p (and a min-keep of one) it takes the cut path
// (cut.go): the same vectorised weights, top-p's cut found in buckets of
// the logits with only the bucket that holds it sorted, the weights past
// either cut zeroed, and the same walk in id order. With a larger
// min-keep it finds the cuts and the draw in buckets of the logits with
// an exact fixed-point sum of the weights, sorting only the one bucket
// that holds each position (fast.go). That bucket path picks
// the same token as the full sort of Candidates would for the same seed,
// except when the draw falls within float32 rounding of a boundary
// between two tokens (TestSampleMatchesFullSort), and tokens below 2^-44
// of the top one's probability (for vocabularies up to 2^18 tokens) are
// never drawn. Every path draws from the documented distribution
// (TestSampleChiSquare), and a seed gives the same tokens on every run
// and platform, though the plain and cut paths' tokens differ from the
// sorted chain's for the same seed (they walk in id order).
//
// A Constraint (a grammar) masks the logits before the chain; when it is
// also a TokenChecker, Sample first picks without it and masks only when
// the constraint refuses that token, as llama.cpp's sampler does.
package sample
