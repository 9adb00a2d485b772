package config

import (
	"fmt"
	"strings"
)

// MaxModels bounds the models of a server with several: entries of
// models, GGUF files of models_dir and preload names.
const MaxModels = 256

// maxModelID bounds the length of a model id.
const maxModelID = 128

// ValidModelID reports whether s may be the id of a model in a server
// with several: 1 to 128 ASCII letters, digits and ".-_+:", not starting
// with "." or "-". Ids come from file names, so the set keeps every path
// trick (separators, "..", control characters) out of ids and URLs.
func ValidModelID(s string) bool {
	if s == "" || len(s) > maxModelID || s[0] == '.' || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_+:", c) >= 0) {
			return false
		}
	}
	return true
}

// validateModels checks the keys of a server with several models, and
// that a server with one does not use them.
func (c *Config) validateModels() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if len(c.Models) > 0 && (c.Model != "" || c.HF != "") {
		bad("models", "give either model (or hf) or models, not both")
	}
	if c.ModelsMemoryBytes < 0 || (c.ModelsMemoryBytes > 0 && c.ModelsMemoryBytes < 64<<20) {
		bad("models_memory_bytes", "must be 0 (no budget) or at least %d, got %d", 64<<20, c.ModelsMemoryBytes)
	}
	if len(c.Preload) > MaxModels {
		bad("preload", "%d names, at most %d", len(c.Preload), MaxModels)
	}
	if !c.MultiModel() {
		if len(c.Preload) > 0 {
			bad("preload", "only a server with several models (models_dir or models) preloads; one model is always loaded at start")
		}
		return errs
	}
	if c.ModelName != "" || len(c.ModelAliases) > 0 || c.ModelSHA256 != "" {
		bad("model_name", "a server with several models takes names, aliases and digests per model, in the models entries (model_name, model_aliases and model_sha256 are for one model)")
	}
	for _, p := range c.Preload {
		if !validName(p) {
			bad("preload", "%q must be 1 to 256 printable characters", p)
		}
	}
	if len(c.Models) > MaxModels {
		bad("models", "%d entries, at most %d", len(c.Models), MaxModels)
		return errs
	}
	names := map[string]int{}
	for i, m := range c.Models {
		key := fmt.Sprintf("models[%d]", i)
		switch {
		case m.Path == "" && m.Name == "":
			bad(key, "give path (a GGUF file), or name (a model of models_dir to refine)")
		case m.Path == "" && c.ModelsDir == "":
			bad(key+".path", "an entry without path refines a model of models_dir, and models_dir is not set")
		}
		if m.Name != "" {
			if !ValidModelID(m.Name) {
				bad(key+".name", "%q is not a model id (1 to %d ASCII letters, digits and .-_+:, not starting with . or -)", m.Name, maxModelID)
			} else if j, dup := names[m.Name]; dup {
				bad(key+".name", "%q is also the name of models[%d]", m.Name, j)
			}
			names[m.Name] = i
		}
		if len(m.Aliases) > MaxAliases {
			bad(key+".aliases", "%d aliases, at most %d", len(m.Aliases), MaxAliases)
		}
		for _, a := range m.Aliases {
			if !validName(a) {
				bad(key+".aliases", "%q must be 1 to 256 printable characters", a)
			}
		}
		if m.SHA256 != "" {
			if h := strings.TrimPrefix(strings.ToLower(m.SHA256), DigestPrefix); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
				bad(key+".model_sha256", "want 64 hex digits, got %q", m.SHA256)
			}
		}
		if m.MemoryLimitBytes < 0 || (m.MemoryLimitBytes > 0 && m.MemoryLimitBytes < 64<<20) {
			bad(key+".memory_limit_bytes", "must be 0 (the server's memory_limit_bytes) or at least %d, got %d", 64<<20, m.MemoryLimitBytes)
		}
		if m.CtxSize < 0 || m.CtxSize == 1 || m.CtxSize > MaxCtxSize {
			bad(key+".ctx_size", "must be 0 (the server's ctx_size) or 2 to %d tokens per slot, got %d", MaxCtxSize, m.CtxSize)
		}
		if m.Parallel < 0 || m.Parallel > MaxParallel {
			bad(key+".parallel", "must be 0 (the server's parallel) or 1 to %d slots, got %d", MaxParallel, m.Parallel)
		}
	}
	return errs
}
