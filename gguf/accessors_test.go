package gguf

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestAccessors(t *testing.T) {
	f, err := ParseBytes(sampleFile(t, 32), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	call := map[string]func(string) (any, error){
		"String":   func(k string) (any, error) { return f.String(k) },
		"Uint32":   func(k string) (any, error) { return f.Uint32(k) },
		"Uint64":   func(k string) (any, error) { return f.Uint64(k) },
		"Int32":    func(k string) (any, error) { return f.Int32(k) },
		"Float32":  func(k string) (any, error) { return f.Float32(k) },
		"Bool":     func(k string) (any, error) { return f.Bool(k) },
		"Strings":  func(k string) (any, error) { return f.Strings(k) },
		"Float32s": func(k string) (any, error) { return f.Float32s(k) },
		"Int32s":   func(k string) (any, error) { return f.Int32s(k) },
	}
	cases := []struct {
		fn, key string
		want    any
		err     error
		msg     string // part of the error message
	}{
		{"String", "general.architecture", "llama", nil, ""},
		{"String", "t.str", "h\xffllo", nil, ""},
		{"String", "t.u8", nil, ErrValueType, `key "t.u8": expected string, found uint8 200`},
		{"String", "missing", nil, ErrNotFound, `key "missing" not found`},
		{"Uint32", "t.u8", uint32(200), nil, ""},
		{"Uint32", "t.u32", uint32(4000000000), nil, ""},
		{"Uint32", "t.i32", nil, ErrValueType, "uint32 range, found int32 -2000000000"},
		{"Uint32", "t.u64", nil, ErrValueType, "found uint64"},
		{"Uint32", "t.str", nil, ErrValueType, "found string"},
		{"Uint64", "t.u64", uint64(1<<64 - 1), nil, ""},
		{"Uint64", "t.i64", nil, ErrValueType, "non-negative integer"},
		{"Int32", "t.i32", int32(-2000000000), nil, ""},
		{"Int32", "t.i16", int32(-30000), nil, ""},
		{"Int32", "t.u16", int32(60000), nil, ""},
		{"Int32", "t.u32", nil, ErrValueType, "int32 range"},
		{"Int32", "t.f32", nil, ErrValueType, "found float32 1.5"},
		{"Float32", "t.f32", float32(1.5), nil, ""},
		{"Float32", "t.f64", float32(-2.25), nil, ""},
		{"Float32", "t.i32", nil, ErrValueType, "expected float32"},
		{"Bool", "t.bool", true, nil, ""},
		{"Bool", "t.u8", nil, ErrValueType, "expected bool"},
		{"Strings", "t.strs", []string{"a", "", "\x00\xfe"}, nil, ""},
		{"Strings", "t.f32s", nil, ErrValueType, "expected array of string, found array of float32"},
		{"Float32s", "t.f32s", []float32{1, -2, 3.5}, nil, ""},
		{"Float32s", "t.i32s", nil, ErrValueType, "found array of int32"},
		{"Int32s", "t.i32s", []int32{1, -2, 3}, nil, ""},
		{"Int32s", "t.u8s", []int32{7, 8}, nil, ""},
		{"Int32s", "t.bools", nil, ErrValueType, "found array of bool"},
		{"Int32s", "t.nested", nil, ErrValueType, "found array of array"},
		{"Int32s", "missing", nil, ErrNotFound, "not found"},
	}
	for _, c := range cases {
		t.Run(c.fn+"/"+c.key, func(t *testing.T) {
			got, err := call[c.fn](c.key)
			if c.err != nil {
				if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("got %v, want %v containing %q", err, c.err, c.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
}

func TestInt32sRange(t *testing.T) {
	w := NewWriter()
	if err := w.Add("big", Uint64sValue([]uint64{1, 1 << 40})); err != nil {
		t.Fatal(err)
	}
	f := writeParse(t, w)
	if _, err := f.Int32s("big"); !errors.Is(err, ErrValueType) || !strings.Contains(err.Error(), "element 1") {
		t.Fatalf("got %v", err)
	}
}

func TestValueMethods(t *testing.T) {
	nested := ArrayValue(TypeArray, Int16sValue([]int16{1, 2}), StringsValue([]string{"x"}))
	cases := []struct {
		v          Value
		typ, elem  ValueType
		n          int
		str        string
		iface      any
		typeString string
	}{
		{Uint8Value(3), TypeUint8, TypeUint8, 0, "3", uint8(3), "uint8"},
		{Int64Value(-3), TypeInt64, TypeInt64, 0, "-3", int64(-3), "int64"},
		{BoolValue(false), TypeBool, TypeBool, 0, "false", false, "bool"},
		{StringValue("a\n"), TypeString, TypeString, 0, `"a\n"`, "a\n", "string"},
		{Float64sValue([]float64{1, 2}), TypeArray, TypeFloat64, 2, "[2 × float64]", []float64{1, 2}, "array"},
		{nested, TypeArray, TypeArray, 2, "[2 × array]", nested.Slice(), "array"},
	}
	for _, c := range cases {
		if c.v.Type() != c.typ || c.v.ArrayType() != c.elem || c.v.Len() != c.n || c.v.String() != c.str ||
			!reflect.DeepEqual(c.v.Interface(), c.iface) || c.typ.String() != c.typeString {
			t.Errorf("%v: type %s elem %s len %d string %q iface %#v", c.v, c.v.Type(), c.v.ArrayType(), c.v.Len(), c.v.String(), c.v.Interface())
		}
	}
	if s := ValueType(13).String(); s != "type(13)" {
		t.Errorf("unknown type name %q", s)
	}
	e, ok := nested.Elem(1)
	if s, _ := e.Strings(); !ok || len(s) != 1 || s[0] != "x" {
		t.Errorf("Elem(1) = %v, %v", e, ok)
	}
	if _, ok := nested.Elem(2); ok {
		t.Error("Elem out of range succeeded")
	}
	if _, ok := Uint8Value(1).Elem(0); ok {
		t.Error("Elem of a scalar succeeded")
	}
	if n, ok := Int8Value(-1).Uint64(); ok {
		t.Errorf("Uint64 of -1 = %d", n)
	}
	if _, ok := Uint64Value(1 << 63).Int64(); ok {
		t.Error("Int64 of 2^63 succeeded")
	}
}

func writeParse(t *testing.T, w *Writer) *File {
	t.Helper()
	var b strings.Builder
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	f, err := ParseBytes([]byte(b.String()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
