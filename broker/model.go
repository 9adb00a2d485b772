package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lisa-llm/lisa/gguf"
)

// ErrModelDigest is returned by OpenModel when the file's SHA-256 is not
// the configured one.
var ErrModelDigest = errors.New("model SHA-256 mismatch")

// OpenModel opens the model file read-only for the worker. When wantSHA256
// (hex, optionally "sha256:"-prefixed) is not empty, it hashes the whole
// file and refuses a mismatch, naming both digests. For a split model path
// is its first shard and model_sha256 pins that shard alone (it holds the
// metadata; OpenShards opens the others). It reads the bytes
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

// OpenShards opens, read-only, the further shards of the split model
// whose first shard is at path (named as llama.cpp's gguf-split names
// them, "<prefix>-00001-of-00003.gguf"), and returns their paths and
// files in order: none for a model in one file. It reads only names, never
// the files: the worker checks that the shards belong together. A later
// shard given as path, a split of more than maxShards files, and a shard
// that cannot be opened or is not a regular file are errors naming the
// shard (a *gguf.SplitError).
func OpenShards(path string, maxShards int) ([]string, []*os.File, error) {
	paths, err := gguf.SplitPaths(path)
	if err != nil {
		return nil, nil, fmt.Errorf("model: %w", err)
	}
	if len(paths) > maxShards {
		return nil, nil, fmt.Errorf("model: %w", &gguf.SplitError{Count: len(paths), Path: path,
			Msg: fmt.Sprintf("has %d shards, more than the %d a worker may be given", len(paths), maxShards)})
	}
	paths = paths[1:]
	files := make([]*os.File, 0, len(paths))
	for i, p := range paths {
		f, err := openRegular(p)
		if err != nil {
			CloseShards(files)
			return nil, nil, fmt.Errorf("model: %w", &gguf.SplitError{Shard: i + 2, Count: len(paths) + 1, Path: p,
				Msg: "cannot be opened (a split model needs all its shards, in the first shard's directory)", Err: err})
		}
		files = append(files, f)
	}
	return paths, files, nil
}

// CloseShards closes the files OpenShards returned.
func CloseShards(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// openRegular opens path read-only and refuses anything but a regular
// file.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	return f, nil
}
