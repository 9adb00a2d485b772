package gguf

import (
	"math"
	"strconv"
)

// Lookup returns the metadata value stored under key.
func (f *File) Lookup(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.KV[i].Value, true
}

// Architecture returns general.architecture, or "" when it is absent or
// not a string.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// get returns the value under key and its offset, or an ErrNotFound error.
func (f *File) get(key string) (Value, int64, error) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, -1, &FormatError{Offset: -1, Msg: "key " + strconv.Quote(key) + " not found", Err: ErrNotFound}
	}
	return f.KV[i].Value, f.kvOffset[i], nil
}

// wrongType builds the ErrValueType error for key holding v.
func wrongType(key string, at int64, want string, v Value) error {
	found := v.Type().String()
	if v.Type() == TypeArray {
		found = "array of " + v.ArrayType().String()
	} else {
		found += " " + v.String()
	}
	return formatErr(at, ErrValueType, "key %q: expected %s, found %s", key, want, found)
}

// String returns the string stored under key.
func (f *File) String(key string) (string, error) {
	v, at, err := f.get(key)
	if err != nil {
		return "", err
	}
	s, ok := v.Str()
	if !ok {
		return "", wrongType(key, at, "string", v)
	}
	return s, nil
}

// Uint64 returns the integer stored under key, of any integer type, if
// it is not negative.
func (f *File) Uint64(key string) (uint64, error) {
	v, at, err := f.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := v.Uint64()
	if !ok {
		return 0, wrongType(key, at, "a non-negative integer", v)
	}
	return n, nil
}

// Uint32 returns the integer stored under key, of any integer type, if
// its value fits in a uint32 (llama.cpp files use both uint32 and int32).
func (f *File) Uint32(key string) (uint32, error) {
	v, at, err := f.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := v.Uint64()
	if !ok || n > math.MaxUint32 {
		return 0, wrongType(key, at, "an integer in the uint32 range", v)
	}
	return uint32(n), nil
}

// Int32 returns the integer stored under key, of any integer type, if
// its value fits in an int32.
func (f *File) Int32(key string) (int32, error) {
	v, at, err := f.get(key)
	if err != nil {
		return 0, err
	}
	n, ok := v.Int64()
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, wrongType(key, at, "an integer in the int32 range", v)
	}
	return int32(n), nil
}

// Float32 returns the float32 or float64 stored under key, as a float32.
func (f *File) Float32(key string) (float32, error) {
	v, at, err := f.get(key)
	if err != nil {
		return 0, err
	}
	x, ok := v.Float64()
	if !ok {
		return 0, wrongType(key, at, "float32", v)
	}
	return float32(x), nil
}

// Bool returns the bool stored under key.
func (f *File) Bool(key string) (bool, error) {
	v, at, err := f.get(key)
	if err != nil {
		return false, err
	}
	b, ok := v.Bool()
	if !ok {
		return false, wrongType(key, at, "bool", v)
	}
	return b, nil
}

// Strings returns the array of strings stored under key. The slice is
// shared and must not be modified.
func (f *File) Strings(key string) ([]string, error) {
	v, at, err := f.get(key)
	if err != nil {
		return nil, err
	}
	a, ok := v.Strings()
	if !ok {
		return nil, wrongType(key, at, "array of string", v)
	}
	return a, nil
}

// Float32s returns the array of float32 stored under key (an array of
// float64 is converted). A float32 slice is shared and must not be
// modified.
func (f *File) Float32s(key string) ([]float32, error) {
	v, at, err := f.get(key)
	if err != nil {
		return nil, err
	}
	if a, ok := v.Float32s(); ok {
		return a, nil
	}
	if a, ok := v.Slice().([]float64); ok {
		out := make([]float32, len(a))
		for i, x := range a {
			out[i] = float32(x)
		}
		return out, nil
	}
	return nil, wrongType(key, at, "array of float32", v)
}

// Int32s returns the array of integers stored under key as int32s. An
// int32 array is returned shared (do not modify it); arrays of other
// integer types are converted when every element fits in an int32.
func (f *File) Int32s(key string) ([]int32, error) {
	v, at, err := f.get(key)
	if err != nil {
		return nil, err
	}
	if a, ok := v.Int32s(); ok {
		return a, nil
	}
	if v.Type() != TypeArray || !v.ArrayType().isInteger() {
		return nil, wrongType(key, at, "array of int32", v)
	}
	out := make([]int32, v.Len())
	for i := range out {
		e, _ := v.Elem(i)
		n, ok := e.Int64()
		if !ok || n < math.MinInt32 || n > math.MaxInt32 {
			return nil, formatErr(at, ErrValueType, "key %q: element %d (%s %s) does not fit in an int32", key, i, e.Type(), e)
		}
		out[i] = int32(n)
	}
	return out, nil
}
