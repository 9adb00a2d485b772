package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
)

func TestOpenModel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.gguf")
	data := []byte("GGUF not really a model")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	bad := strings.Repeat("0", 64)
	tests := []struct {
		name, path, want string
		err              error
	}{
		{"no digest", p, "", nil},
		{"right digest", p, good, nil},
		{"right digest upper with prefix", p, "sha256:" + strings.ToUpper(good), nil},
		{"wrong digest", p, bad, ErrModelDigest},
		{"missing", filepath.Join(dir, "nope"), "", os.ErrNotExist},
	}
	for _, tt := range tests {
		f, err := OpenModel(tt.path, tt.want)
		if tt.err != nil {
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
			}
			if errors.Is(err, ErrModelDigest) && (!strings.Contains(err.Error(), good) || !strings.Contains(err.Error(), bad)) {
				t.Errorf("%s: %v does not name both digests", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		got, _ := io.ReadAll(f)
		f.Close()
		if string(got) != string(data) {
			t.Errorf("%s: file not at its start", tt.name)
		}
	}
	if _, err := OpenModel(dir, ""); err == nil {
		t.Error("a directory was accepted as the model")
	}
}

func TestOpenSharedModel(t *testing.T) {
	p := shared.Model(t, "stories260K.gguf")
	f, err := OpenModel(p, "047bf46455a544931cff6fef14d7910154c56afbc23ab1c5e56a72e69912c04b")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestOpenShards: the further shards of a split model are opened by name
// alone (the broker never parses them), in order; a missing one, a
// directory in a shard's place, a later shard given first and a split of
// too many shards are refused naming the shard.
func TestOpenShards(t *testing.T) {
	dir := t.TempDir()
	name := func(no, count int) string {
		return filepath.Join(dir, fmt.Sprintf("m-%05d-of-%05d.gguf", no, count))
	}
	for i := 1; i <= 3; i++ {
		if err := os.WriteFile(name(i, 3), []byte{byte('0' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(name(1, 2), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(name(2, 2), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name(1, 4), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(dir, "whole.gguf")
	for _, c := range []struct {
		name, path string
		max        int
		want       []string // the further shards' contents
		err        string
	}{
		{"not split", single, 64, nil, ""},
		{"three shards", name(1, 3), 64, []string{"2", "3"}, ""},
		{"a shard missing", name(1, 4), 64, nil, "shard 2 of 4 (m-00002-of-00004.gguf) cannot be opened"},
		{"a directory for a shard", name(1, 2), 64, nil, "shard 2 of 2 (m-00002-of-00002.gguf) cannot be opened"},
		{"a later shard", name(2, 3), 64, nil, "is not the first shard: load the model from m-00001-of-00003.gguf"},
		{"too many shards", name(1, 3), 2, nil, "has 3 shards, more than the 2"},
	} {
		paths, files, err := OpenShards(c.path, c.max)
		if c.err != "" {
			if !errors.Is(err, gguf.ErrSplit) || !strings.Contains(err.Error(), c.err) || files != nil {
				t.Errorf("%s: %v, want gguf.ErrSplit saying %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var got []string
		for i, f := range files {
			b, _ := io.ReadAll(f)
			got = append(got, string(b))
			if f.Name() != paths[i] {
				t.Errorf("%s: file %s for path %s", c.name, f.Name(), paths[i])
			}
		}
		CloseShards(files)
		if !slices.Equal(got, c.want) || len(paths) != len(c.want) {
			t.Errorf("%s: shards %q at %q, want %q", c.name, got, paths, c.want)
		}
	}
}
