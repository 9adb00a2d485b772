package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrModelDigest is returned by OpenModel when the file's SHA-256 is not
// the configured one.
var ErrModelDigest = errors.New("model SHA-256 mismatch")

// OpenModel opens the model file read-only for the worker. When wantSHA256
// (hex, optionally "sha256:"-prefixed) is not empty, it hashes the whole
// file and refuses a mismatch, naming both digests. It reads the bytes
// only to hash them: the broker never parses the model. The returned file
// is positioned at its start.
func OpenModel(path, wantSHA256 string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("model: %w", err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("model %s: not a regular file", path)
	}
	if wantSHA256 == "" {
		return f, nil
	}
	want := strings.TrimPrefix(strings.ToLower(wantSHA256), "sha256:")
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("model %s: hashing: %w", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != want {
		f.Close()
		return nil, fmt.Errorf("%w: %s has SHA-256 %s but model_sha256 is %s: refusing to start", ErrModelDigest, path, got, want)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	return f, nil
}
