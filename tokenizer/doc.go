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
//     the pre-tokenizer named by tokenizer.ggml.pre (every name current
//     llama.cpp accepts for byte-level BPE but "whitespace", which belongs
//     to another tokenizer model), every byte is mapped to a printable
//     character, and each word is merged by rank. The gemma4-style names
//     (gemma4, granite-embed-multi-311m, sarvam-moe) merge raw UTF-8
//     instead, with spaces as "▁" and <0xNN> byte tokens.
//
// Each pre-tokenizer is a list of steps, as llama.cpp's list of regular
// expressions. The expressions llama.cpp runs by hand (gpt-2, llama3,
// kimi-k2, AFMoE's digits) are hand-written splitters here too. The
// others run in Go's linear-time regexp on the text llama.cpp's std::regex
// fallback sees: every non-ASCII character collapsed to a stand-in for
// its Unicode category. Their look-ahead parts, which Go's regexp lacks,
// are matched by hand: the whitespace alternatives \s+(?!\S) and the
// digit-grouping look-aheads. Every step is linear in the input (a
// regexp search resumes where the last match ended), so hostile text (a
// megabyte of one character) cannot blow up.
//
// llama.cpp's per-name flags follow the name: space clean-up in Decode,
// add BOS by default, whole-word tokens before merging (ignore_merges),
// no default BOS (chatglm), and the strip attributes of special tokens
// (in a model whose general.name says phi-3, special tokens eat the
// whitespace after them; jina-v2's <mask> eats the whitespace before).
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
