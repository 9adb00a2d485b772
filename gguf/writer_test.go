package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestRoundTrip writes files with every value type and several
// alignments and checks the reader gives everything back.
func TestRoundTrip(t *testing.T) {
	for _, align := range []uint64{1, 8, 32, 64, 4096} {
		w := NewWriter()
		w.SetAlignment(align)
		kvs := []KV{
			{"a.str", StringValue("\xff\x00bytes")},
			{"a.u64", Uint64Value(math.MaxUint64)},
			{"a.i8", Int8Value(-128)},
			{"a.f64", Float64Value(math.Inf(-1))},
			{"a.f32s", Float32sValue([]float32{float32(math.NaN()), 0, -1})},
			{"a.u16s", Uint16sValue([]uint16{1, 65535})},
			{"a.i64s", Int64sValue([]int64{math.MinInt64, 5})},
			{"a.f64s", Float64sValue([]float64{1e300})},
			{"a.u64s", Uint64sValue([]uint64{7})},
			{"a.i8s", Int8sValue([]int8{-1})},
			{"a.i16s", Int16sValue([]int16{-300})},
			{"a.u32s", Uint32sValue([]uint32{1 << 31})},
			{"a.empty", StringsValue(nil)},
			{"a.deep", ArrayValue(TypeArray, ArrayValue(TypeArray, BoolsValue([]bool{true})))},
			{"a.built", ArrayValue(TypeUint32, Uint32Value(1), Uint32Value(2))},
		}
		for _, kv := range kvs {
			if err := w.Add(kv.Key, kv.Value); err != nil {
				t.Fatal(err)
			}
		}
		datas := map[string][]byte{
			"t0": addTensor(t, w, "t0", tensor.F32, []uint64{7}),
			"t1": addTensor(t, w, "t1", tensor.Q4_K, []uint64{256, 3, 1, 2}),
			"t2": addTensor(t, w, "t2", tensor.IQ4_XS, []uint64{256}),
			"t3": addTensor(t, w, "t3", tensor.I8, []uint64{3}),
		}
		var buf bytes.Buffer
		n, err := w.WriteTo(&buf)
		if err != nil || n != int64(buf.Len()) {
			t.Fatalf("WriteTo: %d, %v (buffer %d)", n, err, buf.Len())
		}
		f, err := ParseBytes(buf.Bytes(), Limits{})
		if err != nil {
			t.Fatalf("alignment %d: %v", align, err)
		}
		if f.Version != 3 || f.Alignment != align || f.DataOffset%int64(align) != 0 {
			t.Errorf("version %d alignment %d data offset %d", f.Version, f.Alignment, f.DataOffset)
		}
		wantKV := len(kvs)
		if align != DefaultAlignment {
			wantKV++
		}
		if len(f.KV) != wantKV {
			t.Fatalf("%d pairs, want %d", len(f.KV), wantKV)
		}
		for i, kv := range kvs {
			if f.KV[i].Key != kv.Key || !sameValue(f.KV[i].Value, kv.Value) {
				t.Errorf("pair %d: got %s=%v, want %s=%v", i, f.KV[i].Key, f.KV[i].Value, kv.Key, kv.Value)
			}
		}
		for name, want := range datas {
			ti, ok := f.Tensor(name)
			if !ok {
				t.Fatalf("tensor %s missing", name)
			}
			got, err := f.TensorData(ti)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("tensor %s: data differs (%v)", name, err)
			}
		}
	}
}

// sameValue compares values bit for bit (NaN equals NaN).
func sameValue(a, b Value) bool {
	if a.Type() != b.Type() || a.ArrayType() != b.ArrayType() || a.Len() != b.Len() {
		return false
	}
	if a.Type() != TypeArray {
		return a.bits == b.bits && a.str == b.str
	}
	for i := range a.Len() {
		x, _ := a.Elem(i)
		y, _ := b.Elem(i)
		if !sameValue(x, y) {
			return false
		}
	}
	return true
}

// TestWriterLayout checks the bytes llama.cpp relies on: tensor offsets
// packed back to back with padding, data section aligned.
func TestWriterLayout(t *testing.T) {
	w := NewWriter()
	addTensor(t, w, "x", tensor.F32, []uint64{3})   // 12 bytes, padded to 32
	addTensor(t, w, "y", tensor.F16, []uint64{40})  // 80 bytes, padded to 96
	addTensor(t, w, "z", tensor.Q8_0, []uint64{32}) // 34 bytes
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := ParseBytes(buf.Bytes(), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0, 32, 128}
	for i, ti := range f.Tensors {
		if ti.Offset != want[i] {
			t.Errorf("tensor %s offset %d, want %d", ti.Name, ti.Offset, want[i])
		}
	}
	if got := int64(buf.Len()); got != f.DataOffset+128+64 {
		t.Errorf("file size %d, want %d", got, f.DataOffset+128+64)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("GGUF\x03\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")) {
		t.Errorf("header % x", buf.Bytes()[:24])
	}
}

func TestWriterRefuses(t *testing.T) {
	cases := []struct {
		name string
		do   func(w *Writer) error
		want error
	}{
		{"empty key", func(w *Writer) error { return w.Add("", Uint8Value(1)) }, nil},
		{"invalid UTF-8 key", func(w *Writer) error { return w.Add("\xff", Uint8Value(1)) }, nil},
		{"duplicate key", func(w *Writer) error { w.Add("k", Uint8Value(1)); return w.Add("k", Uint8Value(2)) }, ErrDuplicate},
		{"alignment key", func(w *Writer) error { return w.Add(KeyAlignment, Uint32Value(64)) }, nil},
		{"mixed array", func(w *Writer) error { return w.Add("k", ArrayValue(TypeUint8, Int8Value(1))) }, ErrType},
		{"bad element type", func(w *Writer) error { return w.Add("k", ArrayValue(99)) }, ErrType},
		{"too deep", func(w *Writer) error {
			v := Uint8sValue([]uint8{1})
			for range DefaultMaxDepth {
				v = ArrayValue(TypeArray, v)
			}
			return w.Add("k", v)
		}, ErrLimit},
		// Found by FuzzWriterRoundTrip: the Writer wrote a 1025-byte key
		// the reader then refused.
		{"key over the reader's limit", func(w *Writer) error { return w.Add(strings.Repeat("k", DefaultMaxKeyLen+1), Uint8Value(1)) }, ErrLimit},
		{"string over the reader's limit", func(w *Writer) error { return w.Add("k", StringValue(strings.Repeat("s", DefaultMaxStringLen+1))) }, ErrLimit},
		{"string element over the reader's limit", func(w *Writer) error {
			return w.Add("k", StringsValue([]string{"a", strings.Repeat("s", DefaultMaxStringLen+1)}))
		}, ErrLimit},
		{"array over the reader's limit", func(w *Writer) error { return w.Add("k", Uint8sValue(make([]uint8, DefaultMaxArrayLen+1))) }, ErrLimit},
		{"elements over the reader's limit", func(w *Writer) error {
			x := Uint8sValue(make([]uint8, DefaultMaxArrayLen)) // five views of one slice
			return w.Add("k", ArrayValue(TypeArray, x, x, x, x, x))
		}, ErrLimit},
		{"nested arrays over the reader's limit", func(w *Writer) error {
			a := make([]Value, DefaultMaxNestedArrays/2+1)
			for i := range a {
				a[i] = Uint8sValue(nil)
			}
			if err := w.Add("a", ArrayValue(TypeArray, a...)); err != nil {
				return fmt.Errorf("first half: %v", err) // not ErrLimit: fails the case
			}
			return w.Add("b", ArrayValue(TypeArray, a...))
		}, ErrLimit},
		{"too many pairs", func(w *Writer) error {
			for i := range DefaultMaxKV - 1 {
				if err := w.Add(fmt.Sprint("k", i), Uint8Value(1)); err != nil {
					return fmt.Errorf("pair %d: %v", i, err) // not ErrLimit: fails the case
				}
			}
			return w.Add("one.more", Uint8Value(1))
		}, ErrLimit},
		{"empty tensor name", func(w *Writer) error { return w.AddTensor("", tensor.F32, []uint64{1}, make([]byte, 4)) }, ErrLayout},
		{"long tensor name", func(w *Writer) error {
			return w.AddTensor(strings.Repeat("n", MaxTensorName+1), tensor.F32, []uint64{1}, make([]byte, 4))
		}, ErrLayout},
		{"duplicate tensor", func(w *Writer) error {
			w.AddTensor("t", tensor.F32, []uint64{1}, make([]byte, 4))
			return w.AddTensor("t", tensor.F32, []uint64{1}, make([]byte, 4))
		}, ErrDuplicate},
		{"five dims", func(w *Writer) error { return w.AddTensor("t", tensor.F32, []uint64{1, 1, 1, 1, 1}, make([]byte, 4)) }, ErrLayout},
		{"zero dim", func(w *Writer) error { return w.AddTensor("t", tensor.F32, []uint64{0}, nil) }, ErrLayout},
		{"removed type", func(w *Writer) error { return w.AddTensor("t", tensor.Q4_2, []uint64{32}, make([]byte, 20)) }, ErrType},
		{"short data", func(w *Writer) error { return w.AddTensor("t", tensor.F32, []uint64{2}, make([]byte, 4)) }, ErrLayout},
		{"bad row", func(w *Writer) error { return w.AddTensor("t", tensor.Q8_0, []uint64{16}, make([]byte, 17)) }, ErrLayout},
		{"bad alignment", func(w *Writer) error { w.SetAlignment(48); _, err := w.WriteTo(&bytes.Buffer{}); return err }, ErrLayout},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.do(NewWriter())
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Fatalf("got %v, want an error wrapping %v", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "gguf: ") {
				t.Errorf("message %q", err)
			}
		})
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterOutputError(t *testing.T) {
	w := NewWriter()
	addTensor(t, w, "t", tensor.F32, []uint64{1 << 16})
	if _, err := w.WriteTo(&failWriter{n: 1000}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("got %v", err)
	}
}

// FuzzWriterRoundTrip builds files from fuzzed keys, strings, numbers and
// tensor shapes and checks that reading gives them back.
func FuzzWriterRoundTrip(f *testing.F) {
	f.Add("k", "v", uint64(1), int64(-1), 1.5, uint8(0), uint16(3), uint8(5))
	f.Add("general.name", "\xff", uint64(math.MaxUint64), int64(math.MinInt64), math.Inf(1), uint8(8), uint16(1), uint8(0))
	f.Fuzz(func(t *testing.T, key, s string, u uint64, i int64, x float64, typ uint8, rows uint16, alignLog uint8) {
		w := NewWriter()
		w.SetAlignment(1 << (alignLog % 13))
		vals := []Value{StringValue(s), Uint64Value(u), Int64Value(i), Float64Value(x),
			Float32Value(float32(x)), StringsValue([]string{s, key}), Int32sValue([]int32{int32(i), int32(u)})}
		var added []KV
		for j, v := range vals {
			k := key + "." + string(rune('a'+j))
			if err := w.Add(k, v); err != nil {
				continue // invalid keys are refused, never written
			}
			added = append(added, KV{k, v})
		}
		tt := tensor.Type(typ % 48) // every ggml type number and a few unknown ones
		var data []byte
		dims := []uint64{uint64(tt.BlockSize()), uint64(rows%8 + 1)}
		if tt.Valid() {
			n, _ := tt.Bytes(dims)
			data = bytes.Repeat([]byte{typ}, int(n))
			if err := w.AddTensor("t", tt, dims, data); err != nil {
				t.Fatalf("AddTensor %s %v: %v", tt, dims, err)
			}
		}
		var buf bytes.Buffer
		if _, err := w.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		r, err := ParseBytes(buf.Bytes(), Limits{})
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		for j, kv := range added {
			if r.KV[j].Key != kv.Key || !sameValue(r.KV[j].Value, kv.Value) {
				t.Fatalf("pair %d differs", j)
			}
		}
		if tt.Valid() {
			ti, ok := r.Tensor("t")
			got, err := r.TensorData(ti)
			if !ok || err != nil || !bytes.Equal(got, data) || !reflect.DeepEqual(ti.Dims, dims) || ti.Type != tt {
				t.Fatalf("tensor differs: %v", err)
			}
		}
	})
}

// TestWriterStream checks that tensors written through AddTensorFunc give
// the same file as the same bytes given to AddTensor, and that a function
// writing the wrong number of bytes, or failing, fails WriteTo.
func TestWriterStream(t *testing.T) {
	data := make([]byte, 4*100)
	for i := range data {
		data[i] = byte(i * 7)
	}
	dims := []uint64{10, 10}
	var want bytes.Buffer
	w := NewWriter()
	if err := w.AddTensor("a", tensor.F32, dims, data); err != nil {
		t.Fatal(err)
	}
	if err := w.AddTensor("b", tensor.F32, dims, data); err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	writeIn := func(chunk int) func(io.Writer) error {
		return func(out io.Writer) error {
			for off := 0; off < len(data); off += chunk {
				if _, err := out.Write(data[off:min(off+chunk, len(data))]); err != nil {
					return err
				}
			}
			return nil
		}
	}
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		write   func(io.Writer) error
		wantErr error
	}{
		{"whole", writeIn(len(data)), nil},
		{"chunks of 3", writeIn(3), nil},
		{"short", func(out io.Writer) error { _, err := out.Write(data[:len(data)-1]); return err }, ErrLayout},
		{"long", func(out io.Writer) error { _, err := out.Write(append(data, 0)); return err }, ErrLayout},
		{"failing", func(io.Writer) error { return errBoom }, errBoom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter()
			if err := w.AddTensor("a", tensor.F32, dims, data); err != nil {
				t.Fatal(err)
			}
			if err := w.AddTensorFunc("b", tensor.F32, dims, tc.write); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			_, err := w.WriteTo(&got)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("WriteTo: %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("streamed file differs from the buffered one (%d vs %d bytes)", got.Len(), want.Len())
			}
		})
	}
	if err := NewWriter().AddTensorFunc("c", tensor.F32, dims, nil); err == nil {
		t.Error("AddTensorFunc accepted a nil function")
	}
}
