package gguf

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// hostileCase is a file the reader must refuse: the sentinel error it
// must report, the byte offset the error must carry, and a part of the
// message that names the field.
type hostileCase struct {
	name  string
	data  []byte
	want  error
	off   int64  // FormatError.Offset
	field string // must appear in the message
	lim   Limits
}

// oneTensor builds a v3 file with one KV-free tensor entry and data.
// The entry starts at 0x18, its dimension count at 0x21, its first
// dimension at 0x25.
func oneTensor(typ tensor.Type, off uint64, dataLen int, dims ...uint64) []byte {
	r := hdr(3, 1, 0).tensor("w", typ, off, dims...)
	return r.pad(32).zeros(dataLen).b
}

// withKV builds a v3 file with one key/value pair whose type and payload
// follow the key: the pair starts at 0x18, its value type at 0x21 and
// its payload at 0x25.
func withKV(key string, typ ValueType, payload func(*raw)) []byte {
	r := hdr(3, 0, 1).str(key).u32(uint32(typ))
	payload(r)
	return r.b
}

// nestArrays builds an array value nested depth levels deep.
func nestArrays(depth int) func(*raw) {
	return func(r *raw) {
		for range depth - 1 {
			r.u32(uint32(TypeArray)).u64(1)
		}
		r.u32(uint32(TypeUint8)).u64(1).u8(1)
	}
}

// alignFile builds a file whose general.alignment pair (at 0x18) has the
// given type and payload, followed by one F32 tensor.
func alignFile(payload func(*raw), typ ValueType) []byte {
	r := hdr(3, 1, 1).str(KeyAlignment).u32(uint32(typ))
	payload(r)
	r.tensor("w", tensor.F32, 0, 8)
	return r.pad(64).zeros(32).b
}

// longName is a tensor name long enough that a cut-short entry still
// passes the minimum-size checks on the counts.
var longName = strings.Repeat("n", 40)

func hostileCases() []hostileCase {
	u32 := func(x uint32) func(*raw) { return func(r *raw) { r.u32(x) } }
	u64 := func(x uint64) func(*raw) { return func(r *raw) { r.u64(x) } }
	big := uint64(1) << 60
	const (
		kv0   = 0x18 // first key/value pair or tensor entry
		val0  = 0x25 // payload of withKV's value (key "k")
		elem0 = 0x29 // array length of withKV's array; elements follow at 0x31
	)
	return []hostileCase{
		// The header.
		{name: "empty file", data: nil, want: ErrTruncated, off: 0, field: "magic: needs 4 bytes, only 0 remain"},
		{name: "three bytes", data: []byte("GGU"), want: ErrTruncated, off: 0, field: "magic: needs 4 bytes, only 3 remain"},
		{name: "bad magic", data: append([]byte("GGML"), make([]byte, 20)...), want: ErrMagic, off: 0, field: `magic "GGML"`},
		{name: "lower-case magic", data: append([]byte("gguf"), make([]byte, 20)...), want: ErrMagic, off: 0, field: `magic "gguf"`},
		{name: "version 0", data: hdr(0, 0, 0).b, want: ErrVersion, off: 4, field: "version 0 is not supported"},
		{name: "version 1", data: hdr(1, 0, 0).b, want: ErrVersion, off: 4, field: "version 1 is not supported"},
		{name: "version 4", data: hdr(4, 0, 0).b, want: ErrVersion, off: 4, field: "version 4 is not supported"},
		{name: "version max", data: hdr(math.MaxUint32, 0, 0).b, want: ErrVersion, off: 4, field: "version 4294967295 is not supported"},
		{name: "big-endian version 3", data: hdr(3<<24, 0, 0).b, want: ErrVersion, off: 4, field: "big-endian GGUF (version 3 byte-swapped)"},
		{name: "big-endian version 2", data: hdr(2<<24, 0, 0).b, want: ErrVersion, off: 4, field: "big-endian GGUF (version 2 byte-swapped)"},
		{name: "no counts", data: (&raw{b: []byte(Magic)}).u32(3).b, want: ErrTruncated, off: 8, field: "tensor count: needs 8 bytes"},
		{name: "half a count", data: (&raw{b: []byte(Magic)}).u32(3).u32(0).b, want: ErrTruncated, off: 8, field: "tensor count: needs 8 bytes, only 4 remain"},
		{name: "no metadata count", data: (&raw{b: []byte(Magic)}).u32(3).u64(0).u32(0).b, want: ErrTruncated, off: 0x10, field: "metadata count: needs 8 bytes, only 4 remain"},
		// Counts: against the limits, then against the bytes that remain.
		{name: "2^60 tensors", data: hdr(3, big, 0).zeros(1000).b, want: ErrLimit, off: 8, field: "tensor count 1152921504606846976 exceeds the limit"},
		{name: "2^60 metadata pairs", data: hdr(3, 0, big).zeros(1000).b, want: ErrLimit, off: 0x10, field: "metadata count 1152921504606846976 exceeds the limit"},
		{name: "max-uint tensors", data: hdr(3, math.MaxUint64, 0).b, want: ErrLimit, off: 8, field: "tensor count 18446744073709551615"},
		{name: "max-uint metadata pairs", data: hdr(3, 0, math.MaxUint64).b, want: ErrLimit, off: 0x10, field: "metadata count 18446744073709551615"},
		{name: "1000 tensors in a tiny file", data: hdr(3, 1000, 0).zeros(100).b, want: ErrTruncated, off: 8, field: "tensor count 1000 needs at least 33000 bytes"},
		{name: "1000 pairs in a tiny file", data: hdr(3, 0, 1000).zeros(100).b, want: ErrTruncated, off: 0x10, field: "metadata count 1000 needs at least 14000 bytes"},
		{name: "pairs claimed, none present", data: hdr(3, 0, 2).b, want: ErrTruncated, off: 0x10, field: "metadata count 2 needs at least 28 bytes, only 0 remain"},
		{name: "tensor count beyond the file", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).zeros(10).b, want: ErrTruncated, off: 8, field: "tensor count 2 needs at least 66 bytes, only 51 remain"},
		{name: "both counts beyond the file", data: hdr(3, 1, 1).zeros(40).b, want: ErrTruncated, off: 8, field: "1 tensors and 1 metadata pairs need at least 47 bytes, only 40 remain"},
		{name: "too many tensors for limit", data: hdr(3, 5, 0).zeros(400).b, want: ErrLimit, off: 8, field: "tensor count 5 exceeds the limit of 4", lim: Limits{MaxTensors: 4}},
		{name: "too many pairs for limit", data: hdr(3, 0, 5).zeros(400).b, want: ErrLimit, off: 0x10, field: "metadata count 5 exceeds the limit of 4", lim: Limits{MaxKV: 4}},
		// Keys.
		{name: "key length 2^40", data: hdr(3, 0, 1).u64(1 << 40).zeros(64).b, want: ErrLimit, off: kv0, field: "metadata key 0: length 1099511627776 exceeds the limit of 1024"},
		{name: "key length max-uint", data: hdr(3, 0, 1).u64(math.MaxUint64).zeros(64).b, want: ErrLimit, off: kv0, field: "metadata key 0: length 18446744073709551615"},
		{name: "key over the key limit", data: withKV(strings.Repeat("k", DefaultMaxKeyLen+1), TypeUint8, func(r *raw) { r.u8(1) }), want: ErrLimit, off: kv0, field: "metadata key 0: length 1025 exceeds the limit of 1024"},
		{name: "key runs past the file", data: hdr(3, 0, 1).u64(500).zeros(20).b, want: ErrTruncated, off: kv0 + 8, field: "metadata key 0: needs 500 bytes, only 20 remain"},
		{name: "empty key", data: withKV("", TypeUint32, u32(1)), want: ErrType, off: kv0, field: "metadata key 0 is empty"},
		{name: "key not UTF-8", data: withKV("a\xffb", TypeUint32, u32(1)), want: ErrType, off: kv0, field: `metadata key 0 "a\xffb" is not valid UTF-8`},
		{name: "duplicate key", data: hdr(3, 0, 2).kvU32("k", 1).kvU32("k", 2).b, want: ErrDuplicate, off: 0x29, field: `metadata key "k" repeats the key at offset 0x18`},
		{name: "second key cut", data: hdr(3, 0, 2).kvU32("k", 1).u64(100).zeros(20).b, want: ErrTruncated, off: 0x31, field: "metadata key 1: needs 100 bytes, only 20 remain"},
		// Values.
		{name: "value type 13", data: withKV("k", 13, u32(1)), want: ErrType, off: 0x21, field: `key "k": value type: unknown value type 13`},
		{name: "value type max", data: withKV("k", math.MaxUint32, u32(1)), want: ErrType, off: 0x21, field: "unknown value type 4294967295"},
		{name: "value missing", data: withKV("k", TypeUint64, u32(1)), want: ErrTruncated, off: val0, field: `key "k": needs 8 bytes, only 4 remain`},
		{name: "string length 2^40", data: withKV("k", TypeString, u64(1<<40)), want: ErrLimit, off: val0, field: `key "k": length 1099511627776 exceeds the limit of 16777216`},
		{name: "string length 2^63", data: withKV("k", TypeString, u64(1<<63)), want: ErrLimit, off: val0, field: `key "k": length 9223372036854775808`},
		{name: "string length max-uint", data: withKV("k", TypeString, u64(math.MaxUint64)), want: ErrLimit, off: val0, field: `key "k": length 18446744073709551615`},
		{name: "string past the file", data: withKV("k", TypeString, func(r *raw) { r.u64(1000).zeros(10) }), want: ErrTruncated, off: val0 + 8, field: `key "k": needs 1000 bytes, only 10 remain`},
		{name: "string over limit", data: withKV("k", TypeString, func(r *raw) { r.str("hello") }), want: ErrLimit, off: val0, field: `key "k": length 5 exceeds the limit of 4`, lim: Limits{MaxStringLen: 4}},
		{name: "bool value 2", data: withKV("k", TypeBool, func(r *raw) { r.u8(2) }), want: ErrType, off: val0, field: `key "k": bool value 2 is neither 0 nor 1`},
		// Arrays.
		{name: "array length 2^60", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(big) }), want: ErrLimit, off: elem0, field: `key "k": array of 1152921504606846976 elements exceeds the limit of 16777216`},
		{name: "array length max-uint", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(math.MaxUint64) }), want: ErrLimit, off: elem0, field: "array of 18446744073709551615 elements"},
		{name: "array length 2^63", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeInt64)).u64(1 << 63) }), want: ErrLimit, off: elem0, field: "array of 9223372036854775808 elements"},
		{name: "array over limit", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(5).zeros(5) }), want: ErrLimit, off: elem0, field: "array of 5 elements exceeds the limit of 4", lim: Limits{MaxArrayLen: 4}},
		{name: "array past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint32)).u64(1 << 20).zeros(40) }), want: ErrTruncated, off: elem0, field: "array of 1048576 uint32 needs at least 4194304 bytes, only 40 remain"},
		{name: "string array past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(1 << 20).zeros(40) }), want: ErrTruncated, off: elem0, field: "array of 1048576 string needs at least 8388608 bytes"},
		{name: "string element past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(2).str("a").u64(64).zeros(8) }), want: ErrTruncated, off: 0x3a + 8, field: `key "k": needs 64 bytes, only 8 remain`},
		{name: "float array cut", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeFloat64)).u64(3).zeros(20) }), want: ErrTruncated, off: elem0, field: "array of 3 float64 needs at least 24 bytes, only 20 remain"},
		{name: "array of type 13", data: withKV("k", TypeArray, func(r *raw) { r.u32(13).u64(1).u8(0) }), want: ErrType, off: val0, field: `key "k": array element type: unknown value type 13`},
		{name: "bool array element 5", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeBool)).u64(3).u8(1).u8(0).u8(5) }), want: ErrType, off: 0x33, field: `key "k": element 2: bool value 5`},
		{name: "too many elements", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(100).zeros(100) }), want: ErrLimit, off: elem0, field: "brings the total to 100, over the limit of 99", lim: Limits{MaxElements: 99}},
		{name: "too many elements over two keys", data: hdr(3, 0, 2).str("a").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(60).zeros(60).
			str("b").u32(uint32(TypeArray)).u32(uint32(TypeUint8)).u64(60).zeros(60).b, want: ErrLimit, off: 0x7e, field: `key "b": array of 60 elements brings the total to 120, over the limit of 99`, lim: Limits{MaxElements: 99}},
		// Arrays of arrays.
		{name: "nested array too deep", data: withKV("k", TypeArray, nestArrays(DefaultMaxDepth+1)), want: ErrLimit, off: val0 + 12*DefaultMaxDepth, field: "arrays nested deeper than the limit of 4"},
		{name: "nested array deeper than a set limit", data: withKV("k", TypeArray, nestArrays(2)), want: ErrLimit, off: val0 + 12, field: "arrays nested deeper than the limit of 1", lim: Limits{MaxDepth: 1}},
		{name: "nested array 2^60 inside", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1).u32(0).u64(big) }), want: ErrLimit, off: 0x35, field: "array of 1152921504606846976 elements"},
		{name: "nested string array past the file", data: withKV("k", TypeArray, func(r *raw) {
			r.u32(uint32(TypeArray)).u64(1).u32(uint32(TypeString)).u64(1 << 20).zeros(16)
		}), want: ErrTruncated, off: 0x35, field: "array of 1048576 string needs at least 8388608 bytes"},
		{name: "bool in a nested array", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1).u32(uint32(TypeBool)).u64(1).u8(7) }), want: ErrType, off: 0x3d, field: "bool value 7"},
		{name: "nested element type 99", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1).u32(99).u64(1).u8(0) }), want: ErrType, off: 0x31, field: "array element type: unknown value type 99"},
		{name: "too many nested arrays", data: withKV("k", TypeArray, func(r *raw) {
			r.u32(uint32(TypeArray)).u64(2).u32(uint32(TypeArray)).u64(2).u32(0).u64(0).u32(0).u64(0).u32(0).u64(0)
		}), want: ErrLimit, off: 0x35, field: "array of 2 arrays brings the nested arrays to 4, over the limit of 3", lim: Limits{MaxNestedArrays: 3}},
		{name: "nested arrays past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1 << 20).zeros(64) }), want: ErrTruncated, off: elem0, field: "array of 1048576 array needs at least"},
		// general.alignment.
		{name: "alignment 0", data: alignFile(u32(0), TypeUint32), want: ErrLayout, off: kv0, field: `key "general.alignment": alignment 0 is not a power of two`},
		{name: "alignment 3", data: alignFile(u32(3), TypeUint32), want: ErrLayout, off: kv0, field: "alignment 3 is not a power of two"},
		{name: "alignment 48", data: alignFile(u32(48), TypeUint32), want: ErrLayout, off: kv0, field: "alignment 48 is not a power of two"},
		{name: "alignment 2^31", data: alignFile(u32(1<<31), TypeUint32), want: ErrLayout, off: kv0, field: "alignment 2147483648 is not a power of two between 1 and 1073741824"},
		{name: "alignment uint64 2^40", data: alignFile(u64(1<<40), TypeUint64), want: ErrLayout, off: kv0, field: "alignment 1099511627776"},
		{name: "alignment string", data: alignFile(func(r *raw) { r.str("32") }, TypeString), want: ErrValueType, off: kv0, field: `expected an unsigned integer, found string "32"`},
		{name: "alignment negative", data: alignFile(func(r *raw) { r.u32(math.MaxUint32) }, TypeInt32), want: ErrValueType, off: kv0, field: "found int32 -1"},
		{name: "alignment float", data: alignFile(u32(math.Float32bits(32)), TypeFloat32), want: ErrValueType, off: kv0, field: "found float32 32"},
		{name: "alignment pushes the data past the file", data: alignFile(u32(1<<20), TypeUint32), want: ErrTruncated, off: 1 << 20, field: "data section starts at 1048576, beyond the end of the file (size 160)"},
		// Tensor entries.
		{name: "empty tensor name", data: hdr(3, 1, 0).tensor("", tensor.F32, 0, 8).pad(32).zeros(32).b, want: ErrType, off: kv0, field: "tensor 0: empty name"},
		{name: "tensor name length 2^40", data: hdr(3, 1, 0).u64(1 << 40).zeros(64).b, want: ErrLimit, off: kv0, field: "tensor 0 name: length 1099511627776 exceeds the limit of 1024"},
		{name: "tensor name length max-uint", data: hdr(3, 1, 0).u64(math.MaxUint64).zeros(64).b, want: ErrLimit, off: kv0, field: "tensor 0 name: length 18446744073709551615"},
		{name: "tensor name past the file", data: hdr(3, 1, 0).u64(200).zeros(40).b, want: ErrTruncated, off: kv0 + 8, field: "tensor 0 name: needs 200 bytes, only 40 remain"},
		{name: "zero dimensions", data: oneTensor(tensor.F32, 0, 32), want: ErrLayout, off: 0x21, field: `tensor "w": 0 dimensions (must be 1 to 4)`},
		{name: "five dimensions", data: oneTensor(tensor.F32, 0, 32, 1, 1, 1, 1, 8), want: ErrLayout, off: 0x21, field: `tensor "w": 5 dimensions`},
		{name: "dimension count max", data: hdr(3, 1, 0).str("w").u32(math.MaxUint32).zeros(64).b, want: ErrLayout, off: 0x21, field: "4294967295 dimensions"},
		{name: "dimension 0", data: oneTensor(tensor.F32, 0, 32, 8, 0), want: ErrLayout, off: 0x2d, field: `tensor "w": dimension 1 is 0`},
		{name: "dimensions past the file", data: hdr(3, 1, 0).str(longName).u32(4).u64(8).b, want: ErrTruncated, off: 0x4c, field: `tensor "` + longName + `": dimensions: needs 32 bytes, only 8 remain`},
		{name: "tensor type 43", data: oneTensor(43, 0, 32, 8), want: ErrType, off: 0x2d, field: `tensor "w": unknown tensor type 43`},
		{name: "tensor type 1000", data: oneTensor(1000, 0, 32, 8), want: ErrType, off: 0x2d, field: "unknown tensor type 1000"},
		{name: "tensor type max", data: oneTensor(math.MaxUint32, 0, 32, 8), want: ErrType, off: 0x2d, field: "unknown tensor type 4294967295"},
		{name: "removed tensor type Q4_2", data: oneTensor(tensor.Q4_2, 0, 32, 32), want: ErrType, off: 0x2d, field: "removed tensor type Q4_2"},
		{name: "removed tensor type Q4_0_4_4", data: oneTensor(tensor.Q4_0_4_4, 0, 32, 32), want: ErrType, off: 0x2d, field: "removed tensor type Q4_0_4_4"},
		{name: "removed tensor type IQ4_NL_4_4", data: oneTensor(tensor.IQ4_NL4_4, 0, 32, 32), want: ErrType, off: 0x2d, field: "removed tensor type IQ4_NL_4_4"},
		{name: "element count overflow", data: oneTensor(tensor.F32, 0, 32, 1<<32, 1<<32, 1<<32), want: ErrLayout, off: 0x21, field: `tensor "w": [4294967296 4294967296 4294967296] F32: size overflows`},
		{name: "byte size overflow", data: oneTensor(tensor.F32, 0, 32, 1<<62), want: ErrLayout, off: 0x21, field: "[4611686018427387904] F32: size overflows"},
		{name: "dimension 2^64-1", data: oneTensor(tensor.I8, 0, 32, math.MaxUint64), want: ErrLayout, off: 0x21, field: "[18446744073709551615] I8: size overflows"},
		{name: "row not a block multiple", data: oneTensor(tensor.Q4_0, 0, 64, 31), want: ErrLayout, off: 0x21, field: "[31] Q4_0: bad shape for tensor type: 31 values of Q4_0 (block size 32)"},
		{name: "type missing", data: hdr(3, 1, 0).str(longName).u32(1).u64(8).zeros(2).b, want: ErrTruncated, off: 0x54, field: `tensor "` + longName + `": type: needs 4 bytes, only 2 remain`},
		{name: "tensor offset missing", data: hdr(3, 1, 0).str(longName).u32(1).u64(8).u32(0).b, want: ErrTruncated, off: 0x58, field: `tensor "` + longName + `": data offset: needs 8 bytes, only 0 remain`},
		{name: "tensor table past the file", data: hdr(3, 2, 0).tensor(longName, tensor.F32, 0, 8).str("b").u32(1).b, want: ErrTruncated, off: 0x6d, field: `tensor "b": dimensions: needs 8 bytes, only 0 remain`},
		{name: "duplicate tensor name", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).tensor("a", tensor.F32, 32, 8).pad(32).zeros(64).b, want: ErrDuplicate, off: 0x39, field: `tensor name "a" repeats the tensor at offset 0x18`},
		// Tensor data.
		{name: "misaligned offset", data: oneTensor(tensor.F32, 4, 64, 8), want: ErrLayout, off: kv0, field: `tensor "w": data offset 4 is not a multiple of the alignment 32`},
		{name: "misaligned for a set alignment", data: hdr(3, 1, 1).kvU32(KeyAlignment, 64).tensor("w", tensor.F32, 32, 8).pad(64).zeros(128).b, want: ErrLayout, off: 0x39, field: "data offset 32 is not a multiple of the alignment 64"},
		{name: "data past the file", data: oneTensor(tensor.F32, 0, 31, 8), want: ErrLayout, off: kv0, field: `tensor "w": data [64, 96) ends beyond the file (size 95)`},
		{name: "offset past the file", data: oneTensor(tensor.F32, 1024, 64, 8), want: ErrLayout, off: kv0, field: "data offset 1024 starts beyond the file (data section at 64, size 128)"},
		{name: "offset near 2^64", data: oneTensor(tensor.F32, math.MaxUint64&^31, 64, 8), want: ErrLayout, off: kv0, field: "data offset 18446744073709551584 starts beyond the file"},
		{name: "offset 2^63", data: oneTensor(tensor.F32, 1<<63, 64, 8), want: ErrLayout, off: kv0, field: "data offset 9223372036854775808 starts beyond the file"},
		{name: "no data section", data: hdr(3, 1, 0).tensor("w", tensor.F32, 0, 8).b, want: ErrTruncated, off: 0x40, field: "data section starts at 64, beyond the end of the file (size 57)"},
		{name: "overlapping tensors", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 16).tensor("b", tensor.F32, 32, 16).pad(32).zeros(128).b, want: ErrLayout, off: 0x39, field: `tensor "b": data [32, 96) overlaps tensor "a" at [0, 64)`},
		{name: "same offset", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).tensor("b", tensor.F32, 0, 8).pad(32).zeros(64).b, want: ErrLayout, off: 0x39, field: `tensor "b": data [0, 32) overlaps tensor "a" at [0, 32)`},
		{name: "overlap out of table order", data: hdr(3, 3, 0).tensor("a", tensor.F32, 64, 8).tensor("b", tensor.F32, 0, 8).tensor("c", tensor.F32, 32, 16).pad(32).zeros(160).b, want: ErrLayout, off: kv0, field: `tensor "a": data [64, 96) overlaps tensor "c" at [32, 96)`},
	}
}

// parseBoth parses data through the in-memory path and the io.ReaderAt
// path and checks they agree on the outcome.
func parseBoth(t *testing.T, data []byte, lim Limits) (*File, error) {
	t.Helper()
	f1, err1 := ParseBytes(data, lim)
	_, err2 := Parse(bytes.NewReader(data), int64(len(data)), lim)
	if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
		t.Fatalf("in-memory and reader paths disagree:\n  %v\n  %v", err1, err2)
	}
	return f1, err1
}

func TestHostile(t *testing.T) {
	cases := hostileCases()
	if len(cases) < 40 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseBoth(t, c.data, c.lim)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%T is not a *FormatError", err)
			}
			if fe.Offset != c.off {
				t.Errorf("offset %#x, want %#x (%v)", fe.Offset, c.off, err)
			}
			if !strings.Contains(fe.Msg, c.field) {
				t.Errorf("message %q does not contain %q", fe.Msg, c.field)
			}
			msg := err.Error()
			if want := fmt.Sprintf("gguf: offset %#x: ", c.off); !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
				t.Fatalf("message %q is not one line starting %q", msg, want)
			}
		})
	}
}

// TestTruncated cuts a valid file at every byte: every prefix must fail
// cleanly, the whole file must parse.
func TestTruncated(t *testing.T) {
	data := sampleFile(t, 32)
	f, err := ParseBytes(data, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	dataEnd := f.DataOffset + int64(last.Offset) + last.Size // the rest is padding
	for n := range len(data) {
		_, err := parseBoth(t, data[:n], Limits{})
		if n >= int(dataEnd) {
			if err != nil {
				t.Fatalf("prefix of %d bytes cuts only padding: %v", n, err)
			}
			continue
		}
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrLayout) {
			t.Fatalf("prefix of %d bytes: got %v, want ErrTruncated or ErrLayout", n, err)
		}
	}
	if _, err := parseBoth(t, data, Limits{}); err != nil {
		t.Fatalf("whole file: %v", err)
	}
}

// TestHostileMemory checks that refusing hostile headers allocates little:
// memory is bounded by the real file size, not by claimed counts.
func TestHostileMemory(t *testing.T) {
	const budget = 64 << 20
	cases := hostileCases()
	kib := hdr(3, 1<<60, 0).zeros(1000).b
	cases = append(cases,
		hostileCase{name: "1 KiB claiming 2^60 tensors", data: kib},
		hostileCase{name: "max tensors in 4 MiB", data: hdr(3, DefaultMaxTensors, 0).zeros(4 << 20).b},
		hostileCase{name: "max pairs in 1 MiB", data: hdr(3, 0, DefaultMaxKV).zeros(1 << 20).b},
		hostileCase{name: "16 MiB string array", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(1 << 24).zeros(1 << 20) })},
	)
	peak := uint64(0)
	for _, c := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ParseBytes(c.data, c.lim)
		_, err2 := Parse(bytes.NewReader(c.data), int64(len(c.data)), c.lim)
		// A reader lying about its size must not make Parse allocate more;
		// the layout may then look valid, so only memory is checked.
		_, _ = Parse(bytes.NewReader(c.data), 1<<40, c.lim)
		runtime.ReadMemStats(&after)
		if err == nil || err2 == nil {
			t.Errorf("%s: parsed without error (%v, %v)", c.name, err, err2)
		}
		used := after.TotalAlloc - before.TotalAlloc
		if used > budget {
			t.Errorf("%s: allocated %d bytes, over %d", c.name, used, budget)
		}
		peak = max(peak, used)
	}
	t.Logf("%d hostile inputs, three parses each: at most %d KiB allocated", len(cases), peak>>10)
}

// TestAbsurdCountsAllocate checks that a 1 KiB file claiming absurd
// counts or lengths fails without allocating for them: a few dozen small
// allocations (the error message, the empty tables) and at most a few KiB
// per parse, whatever the claim, on both input paths.
func TestAbsurdCountsAllocate(t *testing.T) {
	const size = 1 << 10
	kib := func(r *raw) []byte { return r.zeros(size - len(r.b)).b }
	big := uint64(1) << 60
	cases := []struct {
		name string
		data []byte
	}{
		{"2^60 tensors", kib(hdr(3, big, 0))},
		{"2^60 metadata pairs", kib(hdr(3, 0, big))},
		{"the limit of tensors", kib(hdr(3, DefaultMaxTensors, 0))},
		{"the limit of pairs", kib(hdr(3, 0, DefaultMaxKV))},
		{"2^40-byte key", kib(hdr(3, 0, 1).u64(1 << 40))},
		{"2^40-byte string", kib(hdr(3, 0, 1).str("k").u32(uint32(TypeString)).u64(1 << 40))},
		{"16 MiB string", kib(hdr(3, 0, 1).str("k").u32(uint32(TypeString)).u64(DefaultMaxStringLen))},
		{"2^60-element array", kib(hdr(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(big))},
		{"2^24 strings", kib(hdr(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(DefaultMaxArrayLen))},
		{"2^24 arrays", kib(hdr(3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(DefaultMaxArrayLen))},
		{"2^40-byte tensor name", kib(hdr(3, 1, 0).u64(1 << 40))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.data) != size {
				t.Fatalf("file of %d bytes", len(c.data))
			}
			for _, p := range []struct {
				path  string
				parse func() error
				bytes uint64 // allocation budget per parse
			}{
				{"ParseBytes", func() error { _, err := ParseBytes(c.data, Limits{}); return err }, 2 << 10},
				{"Parse", func() error { _, err := Parse(bytes.NewReader(c.data), size, Limits{}); return err }, 4 << 10},
			} {
				if err := p.parse(); err == nil {
					t.Fatalf("%s: parsed", p.path)
				}
				allocs := testing.AllocsPerRun(100, func() { _ = p.parse() })
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				const runs = 100
				for range runs {
					_ = p.parse()
				}
				runtime.ReadMemStats(&after)
				per := (after.TotalAlloc - before.TotalAlloc) / runs
				if allocs > 32 || per > p.bytes {
					t.Errorf("%s: %.0f allocations, %d bytes per parse (budget 32, %d)", p.path, allocs, per, p.bytes)
				}
				t.Logf("%s: %.0f allocations, %d bytes", p.path, allocs, per)
			}
		})
	}
}

// TestFullTableMemory parses the largest tensor table the default limits
// admit, 2^18 entries whose last name repeats the first (so the whole
// table is read before the error): memory stays a small multiple of the
// file's size, with no garbage from growing the table.
func TestFullTableMemory(t *testing.T) {
	n := DefaultMaxTensors
	r := hdr(3, uint64(n), 0)
	for i := range n - 1 {
		r.tensor(fmt.Sprintf("%05x", i), tensor.F32, uint64(i)*32, 1)
	}
	data := r.tensor("00000", tensor.F32, 0, 1).b
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ParseBytes(data, Limits{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("got %v, want ErrDuplicate", err)
	}
	used := after.TotalAlloc - before.TotalAlloc
	if budget := 5 * uint64(len(data)); used > budget || after.Mallocs-before.Mallocs > uint64(2*n) {
		t.Errorf("%d-byte table: %d bytes in %d allocations (budget %d bytes, %d allocations)",
			len(data), used, after.Mallocs-before.Mallocs, budget, 2*n)
	}
	t.Logf("%d-byte table of %d entries: %d KiB in %d allocations", len(data), n, used>>10, after.Mallocs-before.Mallocs)
}
