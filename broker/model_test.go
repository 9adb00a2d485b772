package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
