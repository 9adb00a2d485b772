// Package tokenizer turns text into token ids and back for GGUF models,
// reproducing llama.cpp's tokenizers from the vocabulary stored in the
// file's tokenizer.* metadata (no external files).
//
// Two tokenizer models are supported:
//
//   - "llama": SentencePiece-style BPE over token scores. The text gets a
//     leading space, spaces become "▁", UTF-8 characters are merged pair
//     by pair (highest score first), and characters with no token fall
//     back to byte tokens <0xNN>.
//   - "gpt2": byte-level BPE with merge ranks. The text is first split by
//     the pre-tokenizer named by tokenizer.ggml.pre (default/gpt-2,
//     llama-bpe, qwen2, starcoder, falcon, deepseek-llm, deepseek-coder,
//     smollm and their aliases), every byte is mapped to a printable
//     character, and each word is merged by rank.
//
// The pre-tokenizers are hand-written Unicode-aware splitters that behave
// like llama.cpp's regular expressions (which need look-ahead that Go's
// regexp lacks); the deepseek families, which need none, use Go's
// linear-time regexp. Every algorithm is O(n log n) or better in the
// input length, so hostile text (a megabyte of one character) cannot
// blow up.
//
// Raw user text is encoded with special-token parsing off; templates are
// encoded through the explicit parseSpecial path. As in llama.cpp,
// user-defined tokens are always matched as whole tokens, control tokens
// only when parseSpecial is set. One deliberate difference: control tokens
// are never produced by merging ordinary text, so raw text can never turn
// into BOS, EOS or another control token.
//
// Decoding follows llama.cpp's detokenizer (control tokens render as
// nothing, byte tokens as their byte, the SentencePiece leading space of
// the first token is dropped when that token is not BOS, byte-level
// pieces map back to bytes, and BPE vocabularies clean up spaces before
// punctuation). StreamDecoder yields the same text piece by piece, always
// as valid UTF-8, holding back a character until all its bytes arrived.
package tokenizer
