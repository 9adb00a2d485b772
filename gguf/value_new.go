package gguf

import (
	"math"
	"strconv"
)

// Uint8Value returns a uint8 value.
func Uint8Value(x uint8) Value { return Value{typ: TypeUint8, bits: uint64(x)} }

// Int8Value returns an int8 value.
func Int8Value(x int8) Value { return Value{typ: TypeInt8, bits: uint64(int64(x))} }

// Uint16Value returns a uint16 value.
func Uint16Value(x uint16) Value { return Value{typ: TypeUint16, bits: uint64(x)} }

// Int16Value returns an int16 value.
func Int16Value(x int16) Value { return Value{typ: TypeInt16, bits: uint64(int64(x))} }

// Uint32Value returns a uint32 value.
func Uint32Value(x uint32) Value { return Value{typ: TypeUint32, bits: uint64(x)} }

// Int32Value returns an int32 value.
func Int32Value(x int32) Value { return Value{typ: TypeInt32, bits: uint64(int64(x))} }

// Uint64Value returns a uint64 value.
func Uint64Value(x uint64) Value { return Value{typ: TypeUint64, bits: x} }

// Int64Value returns an int64 value.
func Int64Value(x int64) Value { return Value{typ: TypeInt64, bits: uint64(x)} }

// Float32Value returns a float32 value.
func Float32Value(x float32) Value {
	return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(x))}
}

// Float64Value returns a float64 value.
func Float64Value(x float64) Value { return Value{typ: TypeFloat64, bits: math.Float64bits(x)} }

// BoolValue returns a bool value.
func BoolValue(x bool) Value {
	v := Value{typ: TypeBool}
	if x {
		v.bits = 1
	}
	return v
}

// StringValue returns a string value. s is stored as raw bytes.
func StringValue(s string) Value { return Value{typ: TypeString, str: s} }

func arrayOf(elem ValueType, a any) Value { return Value{typ: TypeArray, elem: elem, arr: a} }

// Uint8sValue returns an array of uint8 sharing a.
func Uint8sValue(a []uint8) Value { return arrayOf(TypeUint8, a) }

// Int8sValue returns an array of int8 sharing a.
func Int8sValue(a []int8) Value { return arrayOf(TypeInt8, a) }

// Uint16sValue returns an array of uint16 sharing a.
func Uint16sValue(a []uint16) Value { return arrayOf(TypeUint16, a) }

// Int16sValue returns an array of int16 sharing a.
func Int16sValue(a []int16) Value { return arrayOf(TypeInt16, a) }

// Uint32sValue returns an array of uint32 sharing a.
func Uint32sValue(a []uint32) Value { return arrayOf(TypeUint32, a) }

// Int32sValue returns an array of int32 sharing a.
func Int32sValue(a []int32) Value { return arrayOf(TypeInt32, a) }

// Uint64sValue returns an array of uint64 sharing a.
func Uint64sValue(a []uint64) Value { return arrayOf(TypeUint64, a) }

// Int64sValue returns an array of int64 sharing a.
func Int64sValue(a []int64) Value { return arrayOf(TypeInt64, a) }

// Float32sValue returns an array of float32 sharing a.
func Float32sValue(a []float32) Value { return arrayOf(TypeFloat32, a) }

// Float64sValue returns an array of float64 sharing a.
func Float64sValue(a []float64) Value { return arrayOf(TypeFloat64, a) }

// BoolsValue returns an array of bool sharing a.
func BoolsValue(a []bool) Value { return arrayOf(TypeBool, a) }

// StringsValue returns an array of strings sharing a.
func StringsValue(a []string) Value { return arrayOf(TypeString, a) }

// ArrayValue returns an array of elem built from elems, which must all
// have type elem (for elem TypeArray: all be arrays). When they do not,
// or elem is not a valid type, the result is an invalid Value that
// Writer.Add refuses with an error naming the problem.
func ArrayValue(elem ValueType, elems ...Value) Value {
	if !elem.Valid() {
		return Value{typ: typeInvalid, str: "array of unknown element " + elem.String()}
	}
	for i, e := range elems {
		if e.typ != elem {
			return Value{typ: typeInvalid, str: "array of " + elem.String() + ": element " +
				strconv.Itoa(i) + " is " + e.typ.String()}
		}
	}
	switch elem {
	case TypeString:
		a := make([]string, len(elems))
		for i, e := range elems {
			a[i] = e.str
		}
		return StringsValue(a)
	case TypeArray:
		return arrayOf(TypeArray, append([]Value(nil), elems...))
	case TypeBool:
		a := make([]bool, len(elems))
		for i, e := range elems {
			a[i] = e.bits != 0
		}
		return BoolsValue(a)
	}
	return arrayOf(elem, scalarSlice(elem, len(elems), func(i int) uint64 { return elems[i].bits }))
}

// scalarSlice builds the typed slice of n numeric values of type t from
// their payload bits.
func scalarSlice(t ValueType, n int, bits func(int) uint64) any {
	switch t {
	case TypeUint8:
		return fill(make([]uint8, n), func(i int) uint8 { return uint8(bits(i)) })
	case TypeInt8:
		return fill(make([]int8, n), func(i int) int8 { return int8(bits(i)) })
	case TypeUint16:
		return fill(make([]uint16, n), func(i int) uint16 { return uint16(bits(i)) })
	case TypeInt16:
		return fill(make([]int16, n), func(i int) int16 { return int16(bits(i)) })
	case TypeUint32:
		return fill(make([]uint32, n), func(i int) uint32 { return uint32(bits(i)) })
	case TypeInt32:
		return fill(make([]int32, n), func(i int) int32 { return int32(bits(i)) })
	case TypeFloat32:
		return fill(make([]float32, n), func(i int) float32 { return math.Float32frombits(uint32(bits(i))) })
	case TypeUint64:
		return fill(make([]uint64, n), bits)
	case TypeInt64:
		return fill(make([]int64, n), func(i int) int64 { return int64(bits(i)) })
	case TypeFloat64:
		return fill(make([]float64, n), func(i int) float64 { return math.Float64frombits(bits(i)) })
	}
	return nil
}

func fill[T any](a []T, f func(int) T) []T {
	for i := range a {
		a[i] = f(i)
	}
	return a
}
