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
package sample
