package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLoadFile checks that a file read into memory gives the same
// tensors as a parse of its bytes, that the copy does not follow later
// changes to the file, that Close releases it, and that invalid files
// are refused with the parser's typed errors.
func TestLoadFile(t *testing.T) {
	data := sampleFile(t, 64)
	dir := t.TempDir()
	path := filepath.Join(dir, "s.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Mapped() {
		t.Error("a loaded file reports its data as read on demand")
	}
	ref, _ := ParseBytes(data, Limits{})
	if len(f.Tensors) != len(ref.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(ref.Tensors))
	}
	first, _ := f.TensorData(&f.Tensors[0])
	before := append([]byte(nil), first...)
	// Overwrite the file's tensor data: the loaded copy must not change.
	mut := append([]byte(nil), data...)
	for i := int(ref.DataOffset); i < len(mut); i++ {
		mut[i] ^= 0xff
	}
	if err := os.WriteFile(path, mut, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range ref.Tensors {
		got, err := f.TensorData(&f.Tensors[i])
		want, _ := ref.TensorData(&ref.Tensors[i])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("tensor %s differs: %v", ref.Tensors[i].Name, err)
		}
	}
	if !bytes.Equal(first, before) {
		t.Error("the loaded copy followed a change to the file")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TensorData(&f.Tensors[0]); !errors.Is(err, ErrIO) {
		t.Errorf("TensorData after Close: %v", err)
	}

	bad := filepath.Join(dir, "bad.gguf")
	garbage := append([]byte("GGUX"), data[4:]...)
	if err := os.WriteFile(bad, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if _, err := Load(bad, Limits{}); !errors.As(err, &fe) {
		t.Errorf("bad magic: %v, want a *FormatError", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.gguf"), Limits{}); err == nil {
		t.Error("a missing file loaded")
	}
	if _, err := Load(dir, Limits{}); err == nil {
		t.Error("a directory loaded")
	}
}
