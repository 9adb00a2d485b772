package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// raw assembles GGUF bytes field by field, for files the Writer would
// refuse to produce.
type raw struct{ b []byte }

func (r *raw) u8(x uint8) *raw   { r.b = append(r.b, x); return r }
func (r *raw) u32(x uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, x); return r }
func (r *raw) u64(x uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, x); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }

// pad appends zeros up to a multiple of a.
func (r *raw) pad(a int) *raw {
	for len(r.b)%a != 0 {
		r.b = append(r.b, 0)
	}
	return r
}

// zeros appends n zero bytes.
func (r *raw) zeros(n int) *raw { r.b = append(r.b, make([]byte, n)...); return r }

// kvU32 appends a uint32 key/value pair.
func (r *raw) kvU32(k string, v uint32) *raw { return r.str(k).u32(uint32(TypeUint32)).u32(v) }

// tensor appends a tensor table entry.
func (r *raw) tensor(name string, typ tensor.Type, off uint64, dims ...uint64) *raw {
	r.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		r.u64(d)
	}
	return r.u32(uint32(typ)).u64(off)
}

// hdr starts a file with the given version and counts.
func hdr(version uint32, tensors, kvs uint64) *raw {
	r := &raw{b: []byte(Magic)}
	return r.u32(version).u64(tensors).u64(kvs)
}

// sampleFile writes a small valid file holding every value type, an
// array of arrays, and tensors of three types.
func sampleFile(t testing.TB, align uint64) []byte {
	t.Helper()
	w := NewWriter()
	w.SetAlignment(align)
	kvs := []KV{
		{"general.architecture", StringValue("llama")},
		{"t.u8", Uint8Value(200)}, {"t.i8", Int8Value(-100)},
		{"t.u16", Uint16Value(60000)}, {"t.i16", Int16Value(-30000)},
		{"t.u32", Uint32Value(4000000000)}, {"t.i32", Int32Value(-2000000000)},
		{"t.u64", Uint64Value(math.MaxUint64)}, {"t.i64", Int64Value(math.MinInt64)},
		{"t.f32", Float32Value(1.5)}, {"t.f64", Float64Value(-2.25)},
		{"t.bool", BoolValue(true)}, {"t.str", StringValue("h\xffllo")},
		{"t.strs", StringsValue([]string{"a", "", "\x00\xfe"})},
		{"t.f32s", Float32sValue([]float32{1, -2, 3.5})},
		{"t.i32s", Int32sValue([]int32{1, -2, 3})},
		{"t.u8s", Uint8sValue([]uint8{7, 8})},
		{"t.bools", BoolsValue([]bool{true, false})},
		{"t.nested", ArrayValue(TypeArray, Int16sValue([]int16{1, 2}), StringsValue([]string{"x"}))},
	}
	for _, kv := range kvs {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	addTensor(t, w, "a", tensor.F32, []uint64{3, 2})
	addTensor(t, w, "b", tensor.Q8_0, []uint64{32, 2})
	addTensor(t, w, "c", tensor.F16, []uint64{5})
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// addTensor adds a tensor filled with a byte pattern.
func addTensor(t testing.TB, w *Writer, name string, typ tensor.Type, dims []uint64) []byte {
	t.Helper()
	n, err := typ.Bytes(dims)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + len(name))
	}
	if err := w.AddTensor(name, typ, dims, data); err != nil {
		t.Fatal(err)
	}
	return data
}
