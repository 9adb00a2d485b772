package gguf

import (
	"fmt"
	"math"
	"strconv"
)

// ValueType is the type of a GGUF metadata value, numbered as in the file.
type ValueType uint32

// The GGUF metadata value types.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12

	// typeInvalid marks a Value built from bad constructor arguments;
	// Writer.Add refuses it. It never comes out of the reader.
	typeInvalid ValueType = math.MaxUint32
)

var valueTypeNames = [...]string{
	TypeUint8: "uint8", TypeInt8: "int8", TypeUint16: "uint16", TypeInt16: "int16",
	TypeUint32: "uint32", TypeInt32: "int32", TypeFloat32: "float32", TypeBool: "bool",
	TypeString: "string", TypeArray: "array", TypeUint64: "uint64", TypeInt64: "int64",
	TypeFloat64: "float64",
}

// valueTypeSizes gives the encoded size of fixed-size types (0 otherwise).
var valueTypeSizes = [...]int{
	TypeUint8: 1, TypeInt8: 1, TypeUint16: 2, TypeInt16: 2, TypeUint32: 4, TypeInt32: 4,
	TypeFloat32: 4, TypeBool: 1, TypeUint64: 8, TypeInt64: 8, TypeFloat64: 8,
}

// String returns the type's name as used in GGUF documentation and in
// `lisa gguf inspect --json`: "uint8" … "float64", "bool", "string",
// "array"; an unknown number gives "type(N)".
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return "type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

// Valid reports whether t is one of the thirteen GGUF value types.
func (t ValueType) Valid() bool { return t < ValueType(len(valueTypeNames)) }

// isInteger reports whether t is one of the eight integer types.
func (t ValueType) isInteger() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

// isSigned reports whether t is a signed integer type.
func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// minSize returns the fewest bytes one encoded value of t can take.
func (t ValueType) minSize() int64 {
	switch t {
	case TypeString:
		return 8
	case TypeArray:
		return 12
	}
	return int64(valueTypeSizes[t])
}

// Value is one typed GGUF metadata value: a scalar, a string, or an array
// (of scalars, strings or arrays). The zero Value is the uint8 0. Values
// are immutable; slices returned by the getters are shared and must not
// be modified.
type Value struct {
	typ  ValueType
	elem ValueType // element type, for arrays
	bits uint64    // scalar payload: integer bits, float bits, bool 0/1
	str  string    // string payload, or the problem for typeInvalid
	arr  any       // array payload: a typed slice, []Value for arrays of arrays
}

// Type returns the value's type.
func (v Value) Type() ValueType { return v.typ }

// ArrayType returns the element type of an array. For a value that is
// not an array it returns the value's own type.
func (v Value) ArrayType() ValueType {
	if v.typ != TypeArray {
		return v.typ
	}
	return v.elem
}

// Len returns the number of elements of an array, or 0 for other values.
func (v Value) Len() int {
	if v.typ != TypeArray {
		return 0
	}
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []Value:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	}
	return 0
}

// Uint64 returns an integer value as a uint64; ok is false for other
// types and for negative values.
func (v Value) Uint64() (n uint64, ok bool) {
	if !v.typ.isInteger() || (v.typ.isSigned() && int64(v.bits) < 0) {
		return 0, false
	}
	return v.bits, true
}

// Int64 returns an integer value as an int64; ok is false for other types
// and for unsigned values above math.MaxInt64.
func (v Value) Int64() (n int64, ok bool) {
	if !v.typ.isInteger() || (!v.typ.isSigned() && v.bits > math.MaxInt64) {
		return 0, false
	}
	return int64(v.bits), true
}

// Float64 returns a float32 or float64 value; ok is false for other types.
func (v Value) Float64() (f float64, ok bool) {
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// Bool returns a bool value; ok is false for other types.
func (v Value) Bool() (b bool, ok bool) { return v.bits != 0, v.typ == TypeBool }

// Str returns a string value (raw bytes, not necessarily valid UTF-8);
// ok is false for other types.
func (v Value) Str() (s string, ok bool) {
	if v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// Strings returns the elements of an array of strings.
func (v Value) Strings() ([]string, bool) { a, ok := v.arr.([]string); return a, ok }

// Float32s returns the elements of an array of float32.
func (v Value) Float32s() ([]float32, bool) { a, ok := v.arr.([]float32); return a, ok }

// Int32s returns the elements of an array of int32.
func (v Value) Int32s() ([]int32, bool) { a, ok := v.arr.([]int32); return a, ok }

// Uint32s returns the elements of an array of uint32.
func (v Value) Uint32s() ([]uint32, bool) { a, ok := v.arr.([]uint32); return a, ok }

// Arrays returns the elements of an array of arrays.
func (v Value) Arrays() ([]Value, bool) { a, ok := v.arr.([]Value); return a, ok }

// Slice returns the payload of an array as a typed Go slice ([]uint8,
// []int8, …, []bool, []string, or []Value for arrays of arrays), or nil
// for a value that is not an array.
func (v Value) Slice() any {
	if v.typ != TypeArray {
		return nil
	}
	return v.arr
}

// Elem returns element i of an array as a Value; ok is false when v is
// not an array or i is out of range.
func (v Value) Elem(i int) (e Value, ok bool) {
	if v.typ != TypeArray || i < 0 || i >= v.Len() {
		return Value{}, false
	}
	switch a := v.arr.(type) {
	case []uint8:
		return Uint8Value(a[i]), true
	case []int8:
		return Int8Value(a[i]), true
	case []uint16:
		return Uint16Value(a[i]), true
	case []int16:
		return Int16Value(a[i]), true
	case []uint32:
		return Uint32Value(a[i]), true
	case []int32:
		return Int32Value(a[i]), true
	case []float32:
		return Float32Value(a[i]), true
	case []bool:
		return BoolValue(a[i]), true
	case []string:
		return StringValue(a[i]), true
	case []Value:
		return a[i], true
	case []uint64:
		return Uint64Value(a[i]), true
	case []int64:
		return Int64Value(a[i]), true
	case []float64:
		return Float64Value(a[i]), true
	}
	return Value{}, false
}

// Interface returns the value as a plain Go value: uint8 … float64, bool
// or string for scalars, the typed slice for arrays.
func (v Value) Interface() any {
	switch v.typ {
	case TypeUint8:
		return uint8(v.bits)
	case TypeInt8:
		return int8(v.bits)
	case TypeUint16:
		return uint16(v.bits)
	case TypeInt16:
		return int16(v.bits)
	case TypeUint32:
		return uint32(v.bits)
	case TypeInt32:
		return int32(v.bits)
	case TypeUint64:
		return v.bits
	case TypeInt64:
		return int64(v.bits)
	case TypeFloat32:
		return math.Float32frombits(uint32(v.bits))
	case TypeFloat64:
		return math.Float64frombits(v.bits)
	case TypeBool:
		return v.bits != 0
	case TypeString:
		return v.str
	case TypeArray:
		return v.arr
	}
	return nil
}

// String formats the value for people: scalars as their value (strings
// quoted), arrays as "[N × type]".
func (v Value) String() string {
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeArray:
		return fmt.Sprintf("[%d × %s]", v.Len(), v.elem)
	case typeInvalid:
		return "invalid value: " + v.str
	}
	return fmt.Sprint(v.Interface())
}
