package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestVersion2 checks that a version 2 file (same layout as 3 for
// little-endian files) is read, and reports its version.
func TestVersion2(t *testing.T) {
	data := sampleFile(t, 32)
	data[4] = 2
	f, err := ParseBytes(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors) != 3 {
		t.Errorf("version %d, %d tensors", f.Version, len(f.Tensors))
	}
}

func TestOpenFile(t *testing.T) {
	data := sampleFile(t, 64)
	path := filepath.Join(t.TempDir(), "s.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := OpenFile(fh, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := ParseBytes(data, Limits{})
	for i := range ref.Tensors {
		got, err := f.TensorData(&f.Tensors[i])
		want, _ := ref.TensorData(&ref.Tensors[i])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("tensor %s differs: %v", ref.Tensors[i].Name, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// OpenFile must leave the descriptor open.
	if _, err := fh.Stat(); err != nil {
		t.Errorf("descriptor closed: %v", err)
	}
	if _, err := f.TensorData(&f.Tensors[0]); !errors.Is(err, ErrIO) {
		t.Errorf("TensorData after Close: %v", err)
	}
}

// TestFallbackReads checks the read path used without a mapping,
// including a file that shrinks after parsing.
func TestFallbackReads(t *testing.T) {
	data := sampleFile(t, 32)
	f, err := Parse(bytes.NewReader(data), int64(len(data)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Mapped() {
		t.Error("Parse over a reader claims to be mapped")
	}
	ti, _ := f.Tensor("b")
	got, err := f.TensorData(ti)
	ref, _ := ParseBytes(data, Limits{})
	want, _ := ref.TensorData(ti)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("tensor b: %v", err)
	}
	f.r = bytes.NewReader(data[:len(data)-40]) // the file shrank
	last := &f.Tensors[len(f.Tensors)-1]
	if _, err := f.TensorData(last); !errors.Is(err, ErrTruncated) {
		t.Errorf("shrunk file: %v", err)
	}
	if _, err := f.TensorData(&TensorInfo{Name: "x", Offset: 1 << 40, Size: 4}); !errors.Is(err, ErrLayout) {
		t.Errorf("foreign tensor: %v", err)
	}
	if _, err := f.TensorData(nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("nil tensor: %v", err)
	}
}

func TestFormatErrorText(t *testing.T) {
	e := formatErr(0x1c8, ErrLayout, "tensor %q: data [%d, %d) ends beyond the file (size %d)", "blk.0.attn_q.weight", 4096, 9437184, 8388608)
	want := `gguf: offset 0x1c8: tensor "blk.0.attn_q.weight": data [4096, 9437184) ends beyond the file (size 8388608)`
	if e.Error() != want || !errors.Is(e, ErrLayout) {
		t.Errorf("got %q", e.Error())
	}
	if e := formatErr(-1, ErrNotFound, "key %q not found", "k"); e.Error() != `gguf: key "k" not found` {
		t.Errorf("got %q", e.Error())
	}
}

// TestMappingReadOnly checks that Open serves tensor data from a shared
// read-only mapping: no copy (the slices are windows of one mapping, each
// capped at its tensor's end) and a write faults instead of changing the
// file.
func TestMappingReadOnly(t *testing.T) {
	data := sampleFile(t, 32)
	path := filepath.Join(t.TempDir(), "ro.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !f.Mapped() {
		t.Skip("no memory mapping on this platform")
	}
	base := &f.data[0]
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		d, err := f.TensorData(ti)
		if err != nil {
			t.Fatal(err)
		}
		off := f.DataOffset + int64(ti.Offset)
		if &d[0] != &f.data[off] || cap(d) != len(d) || !bytes.Equal(d, data[off:off+ti.Size]) {
			t.Errorf("tensor %s is not the window [%d, +%d) of the mapping at %p", ti.Name, off, ti.Size, base)
		}
	}
	d, _ := f.TensorData(&f.Tensors[0])
	faulted := func() (faulted bool) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { faulted = recover() != nil }()
		d[0] ^= 0xff
		return false
	}()
	if !faulted {
		t.Error("writing to tensor data did not fault")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Error("the file changed")
	}
}
