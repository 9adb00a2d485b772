package tokenizer

import (
	"errors"
	"fmt"

	"github.com/lisa-llm/lisa/gguf"
)

// The tokenizer metadata keys.
const (
	keyModel     = "tokenizer.ggml.model"
	keyPre       = "tokenizer.ggml.pre"
	keyTokens    = "tokenizer.ggml.tokens"
	keyScores    = "tokenizer.ggml.scores"
	keyTypes     = "tokenizer.ggml.token_type"
	keyMerges    = "tokenizer.ggml.merges"
	keyAddBOS    = "tokenizer.ggml.add_bos_token"
	keyAddEOS    = "tokenizer.ggml.add_eos_token"
	keyAddPrefix = "tokenizer.ggml.add_space_prefix"
	// KeyChatTemplate is the metadata key of the chat template.
	KeyChatTemplate = "tokenizer.chat_template"
)

// VocabFromGGUF reads the vocabulary from f's tokenizer.* metadata, with
// llama.cpp's defaults for what is absent. Errors name the key.
func VocabFromGGUF(f *gguf.File) (Vocab, error) {
	model, err := f.String(keyModel)
	if err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	pre, err := optional(f.String(keyPre))
	if err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	v := DefaultVocab(model, pre)
	if v.Name, err = optional(f.String("general.name")); err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	if v.Tokens, err = f.Strings(keyTokens); err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	if v.Scores, err = optional(f.Float32s(keyScores)); err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	types, err := optional(f.Int32s(keyTypes))
	if err != nil {
		return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
	}
	if types != nil {
		v.Types = make([]TokenType, len(types))
		for i, ty := range types {
			v.Types[i] = TokenType(ty)
		}
	}
	if model == "gpt2" {
		if v.Merges, err = f.Strings(keyMerges); err != nil {
			return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
		}
	}
	// A default id outside the vocabulary is dropped, as llama.cpp does;
	// an id the file states must be valid (readIDs).
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK} {
		if *id >= int32(min(len(v.Tokens), MaxTokens)) {
			*id = None
		}
	}
	if err := readIDs(f, &v); err != nil {
		return Vocab{}, err
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{keyAddBOS, &v.AddBOS}, {keyAddEOS, &v.AddEOS}, {keyAddPrefix, &v.AddSpacePrefix}} {
		x, err := f.Bool(b.key)
		switch {
		case err == nil:
			*b.dst = x
		case !errors.Is(err, gguf.ErrNotFound):
			return Vocab{}, fmt.Errorf("read tokenizer: %w", err)
		}
	}
	// llama.cpp adds BOS for gemma4 whatever the file says.
	if p, ok := preNames[v.Pre]; ok && model == "gpt2" && p.forceBOS {
		v.AddBOS = true
	}
	return v, nil
}

// readIDs reads the special-token ids that are present.
func readIDs(f *gguf.File, v *Vocab) error {
	for _, s := range []struct {
		key string
		dst *int32
	}{
		{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.unknown_token_id", &v.UNK}, {"tokenizer.ggml.padding_token_id", &v.PAD},
		{"tokenizer.ggml.eot_token_id", &v.EOT}, {"tokenizer.ggml.eom_token_id", &v.EOM},
	} {
		n, err := f.Uint32(s.key)
		switch {
		case err == nil:
			if n >= uint32(len(v.Tokens)) && s.dst != &v.PAD {
				return vocabErr(s.key, -1, "token id %d out of range [0, %d)", n, len(v.Tokens))
			}
			*s.dst = int32(min(n, 1<<31-1))
		case !errors.Is(err, gguf.ErrNotFound):
			return fmt.Errorf("read tokenizer: %w", err)
		}
	}
	return nil
}

// optional turns a missing key into the zero value.
func optional[T any](x T, err error) (T, error) {
	if errors.Is(err, gguf.ErrNotFound) {
		var zero T
		return zero, nil
	}
	return x, err
}

// FromGGUF builds the tokenizer of a GGUF file (a model or a
// vocabulary-only file).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v, err := VocabFromGGUF(f)
	if err != nil {
		return nil, err
	}
	return New(v)
}

// ChatTemplate returns f's tokenizer.chat_template, or "" when it has none.
func ChatTemplate(f *gguf.File) (string, error) {
	s, err := optional(f.String(KeyChatTemplate))
	if err != nil {
		return "", fmt.Errorf("read chat template: %w", err)
	}
	return s, nil
}
