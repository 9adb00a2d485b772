package gguf

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzRead parses arbitrary bytes: it must never panic, every error must
// be a *FormatError wrapping a sentinel, both input paths must agree, and
// an accepted file's tensors must lie inside it.
func FuzzRead(f *testing.F) {
	f.Add(sampleFile(f, 32))
	f.Add(sampleFile(f, 1))
	for _, c := range hostileCases() {
		f.Add(c.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxArrayLen: 1 << 16, MaxElements: 1 << 18}
		a, err := ParseBytes(data, lim)
		_, err2 := Parse(bytes.NewReader(data), int64(len(data)), lim)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("paths disagree: %v / %v", err, err2)
		}
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Err == nil {
				t.Fatalf("error %v (%T) is not a classified *FormatError", err, err)
			}
			return
		}
		for i := range a.Tensors {
			d, err := a.TensorData(&a.Tensors[i])
			if err != nil || int64(len(d)) != a.Tensors[i].Size {
				t.Fatalf("tensor %d: %v", i, err)
			}
		}
		for _, kv := range a.KV {
			_ = kv.Value.String()
			if _, ok := a.Lookup(kv.Key); !ok {
				t.Fatalf("key %q not found", kv.Key)
			}
			// The accessors must classify every mismatch, never panic.
			for _, get := range []func(string) error{
				func(k string) error { _, err := a.Uint32(k); return err },
				func(k string) error { _, err := a.Int32(k); return err },
				func(k string) error { _, err := a.Float32(k); return err },
				func(k string) error { _, err := a.Int32s(k); return err },
				func(k string) error { _, err := a.Float32s(k); return err },
				func(k string) error { _, err := a.Strings(k); return err },
			} {
				if err := get(kv.Key); err != nil && !errors.Is(err, ErrValueType) {
					t.Fatalf("key %q: unclassified error %v", kv.Key, err)
				}
			}
		}
		rewrite(t, a)
	})
}

// rewrite writes an accepted file again with the Writer and checks that
// the result reads back the same.
func rewrite(t *testing.T, a *File) {
	if a.Alignment > 1<<16 {
		return // valid, but rewriting would write up to a gigabyte of padding
	}
	w := NewWriter()
	w.SetAlignment(a.Alignment)
	for _, kv := range a.KV {
		if kv.Key == KeyAlignment {
			continue
		}
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatalf("rewriting key %q: %v", kv.Key, err)
		}
	}
	for i := range a.Tensors {
		ti := &a.Tensors[i]
		d, _ := a.TensorData(ti)
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, d); err != nil {
			if len(ti.Name) > MaxTensorName {
				return // valid GGUF, but not something the Writer produces
			}
			t.Fatalf("rewriting tensor %q: %v", ti.Name, err)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := ParseBytes(buf.Bytes(), Limits{})
	if err != nil {
		t.Fatalf("reading the rewritten file: %v", err)
	}
	wantKV := len(a.KV)
	if _, ok := a.Lookup(KeyAlignment); ok && a.Alignment == DefaultAlignment {
		wantKV-- // the Writer records only a non-default alignment
	} else if !ok && a.Alignment != DefaultAlignment {
		t.Fatalf("alignment %d without %s", a.Alignment, KeyAlignment)
	}
	if len(b.KV) != wantKV || len(b.Tensors) != len(a.Tensors) || b.Alignment != a.Alignment {
		t.Fatalf("rewritten file has %d pairs, %d tensors, alignment %d", len(b.KV), len(b.Tensors), b.Alignment)
	}
	for _, kv := range a.KV {
		if kv.Key == KeyAlignment {
			continue
		}
		v, ok := b.Lookup(kv.Key)
		if !ok || !sameValue(v, kv.Value) {
			t.Fatalf("key %q differs after rewriting", kv.Key)
		}
	}
	for i := range a.Tensors {
		x, y := &a.Tensors[i], &b.Tensors[i]
		dx, _ := a.TensorData(x)
		dy, _ := b.TensorData(y)
		if x.Name != y.Name || x.Type != y.Type || x.Size != y.Size || !bytes.Equal(dx, dy) {
			t.Fatalf("tensor %q differs after rewriting", x.Name)
		}
	}
}
