package gguf

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// hostileCase is a file the reader must refuse, and the sentinel error
// it must report.
type hostileCase struct {
	name string
	data []byte
	want error
	lim  Limits
}

// oneTensor builds a v3 file with one KV-free tensor entry and data.
func oneTensor(typ tensor.Type, off uint64, dataLen int, dims ...uint64) []byte {
	r := hdr(3, 1, 0).tensor("w", typ, off, dims...)
	return r.pad(32).zeros(dataLen).b
}

// withKV builds a v3 file with one key/value pair whose type and payload
// follow the key.
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

func alignFile(payload func(*raw), typ ValueType) []byte {
	r := hdr(3, 1, 1).str(KeyAlignment).u32(uint32(typ))
	payload(r)
	r.tensor("w", tensor.F32, 0, 8)
	return r.pad(64).zeros(32).b
}

func hostileCases() []hostileCase {
	u32 := func(x uint32) func(*raw) { return func(r *raw) { r.u32(x) } }
	big := uint64(1) << 60
	return []hostileCase{
		{name: "empty file", data: nil, want: ErrTruncated},
		{name: "three bytes", data: []byte("GGU"), want: ErrTruncated},
		{name: "bad magic", data: append([]byte("GGML"), make([]byte, 20)...), want: ErrMagic},
		{name: "lower-case magic", data: append([]byte("gguf"), make([]byte, 20)...), want: ErrMagic},
		{name: "version 0", data: hdr(0, 0, 0).b, want: ErrVersion},
		{name: "version 1", data: hdr(1, 0, 0).b, want: ErrVersion},
		{name: "version 4", data: hdr(4, 0, 0).b, want: ErrVersion},
		{name: "version max", data: hdr(math.MaxUint32, 0, 0).b, want: ErrVersion},
		{name: "big-endian version 3", data: hdr(3<<24, 0, 0).b, want: ErrVersion},
		{name: "no counts", data: (&raw{b: []byte(Magic)}).u32(3).b, want: ErrTruncated},
		{name: "half a count", data: (&raw{b: []byte(Magic)}).u32(3).u32(0).b, want: ErrTruncated},
		{name: "2^60 tensors", data: hdr(3, big, 0).zeros(1000).b, want: ErrLimit},
		{name: "2^60 metadata pairs", data: hdr(3, 0, big).zeros(1000).b, want: ErrLimit},
		{name: "max-uint tensors", data: hdr(3, math.MaxUint64, 0).b, want: ErrLimit},
		{name: "1000 tensors in a tiny file", data: hdr(3, 1000, 0).zeros(100).b, want: ErrTruncated},
		{name: "1000 pairs in a tiny file", data: hdr(3, 0, 1000).zeros(100).b, want: ErrTruncated},
		{name: "pairs claimed, none present", data: hdr(3, 0, 2).b, want: ErrTruncated},
		{name: "key length 2^40", data: hdr(3, 0, 1).u64(1 << 40).zeros(64).b, want: ErrLimit},
		{name: "key length max-uint", data: hdr(3, 0, 1).u64(math.MaxUint64).zeros(64).b, want: ErrLimit},
		{name: "key runs past the file", data: hdr(3, 0, 1).u64(500).zeros(20).b, want: ErrTruncated},
		{name: "empty key", data: withKV("", TypeUint32, u32(1)), want: ErrType},
		{name: "key not UTF-8", data: withKV("a\xffb", TypeUint32, u32(1)), want: ErrType},
		{name: "duplicate key", data: hdr(3, 0, 2).kvU32("k", 1).kvU32("k", 2).b, want: ErrDuplicate},
		{name: "value type 13", data: withKV("k", 13, u32(1)), want: ErrType},
		{name: "value type max", data: withKV("k", math.MaxUint32, u32(1)), want: ErrType},
		{name: "value missing", data: withKV("k", TypeUint64, u32(1)), want: ErrTruncated},
		{name: "string length 2^40", data: withKV("k", TypeString, func(r *raw) { r.u64(1 << 40) }), want: ErrLimit},
		{name: "string length 2^63", data: withKV("k", TypeString, func(r *raw) { r.u64(1 << 63) }), want: ErrLimit},
		{name: "string past the file", data: withKV("k", TypeString, func(r *raw) { r.u64(1000).zeros(10) }), want: ErrTruncated},
		{name: "array length 2^60", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(big) }), want: ErrLimit},
		{name: "array length max-uint", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(math.MaxUint64) }), want: ErrLimit},
		{name: "array past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint32)).u64(1 << 20).zeros(40) }), want: ErrTruncated},
		{name: "string array past the file", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeString)).u64(1 << 20).zeros(40) }), want: ErrTruncated},
		{name: "array of type 13", data: withKV("k", TypeArray, func(r *raw) { r.u32(13).u64(1).u8(0) }), want: ErrType},
		{name: "nested array too deep", data: withKV("k", TypeArray, nestArrays(DefaultMaxDepth+1)), want: ErrLimit},
		{name: "nested array 2^60 inside", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeArray)).u64(1).u32(0).u64(big) }), want: ErrLimit},
		{name: "too many elements", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(100).zeros(100) }), want: ErrLimit, lim: Limits{MaxElements: 99}},
		{name: "bool value 2", data: withKV("k", TypeBool, func(r *raw) { r.u8(2) }), want: ErrType},
		{name: "bool array element 5", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeBool)).u64(3).u8(1).u8(0).u8(5) }), want: ErrType},
		{name: "alignment 0", data: alignFile(u32(0), TypeUint32), want: ErrLayout},
		{name: "alignment 3", data: alignFile(u32(3), TypeUint32), want: ErrLayout},
		{name: "alignment 2^31", data: alignFile(u32(1<<31), TypeUint32), want: ErrLayout},
		{name: "alignment string", data: alignFile(func(r *raw) { r.str("32") }, TypeString), want: ErrValueType},
		{name: "alignment negative", data: alignFile(func(r *raw) { r.u32(math.MaxUint32) }, TypeInt32), want: ErrValueType},
		{name: "zero dimensions", data: oneTensor(tensor.F32, 0, 32), want: ErrLayout},
		{name: "five dimensions", data: oneTensor(tensor.F32, 0, 32, 1, 1, 1, 1, 8), want: ErrLayout},
		{name: "dimension count max", data: hdr(3, 1, 0).str("w").u32(math.MaxUint32).zeros(64).b, want: ErrLayout},
		{name: "dimension 0", data: oneTensor(tensor.F32, 0, 32, 8, 0), want: ErrLayout},
		{name: "tensor type 40", data: oneTensor(40, 0, 32, 8), want: ErrType},
		{name: "tensor type max", data: oneTensor(math.MaxUint32, 0, 32, 8), want: ErrType},
		{name: "removed tensor type Q4_2", data: oneTensor(tensor.Q4_2, 0, 32, 32), want: ErrType},
		{name: "element count overflow", data: oneTensor(tensor.F32, 0, 32, 1<<32, 1<<32, 1<<32), want: ErrLayout},
		{name: "byte size overflow", data: oneTensor(tensor.F32, 0, 32, 1<<62), want: ErrLayout},
		{name: "dimension 2^64-1", data: oneTensor(tensor.I8, 0, 32, math.MaxUint64), want: ErrLayout},
		{name: "row not a block multiple", data: oneTensor(tensor.Q4_0, 0, 64, 31), want: ErrLayout},
		{name: "misaligned offset", data: oneTensor(tensor.F32, 4, 64, 8), want: ErrLayout},
		{name: "data past the file", data: oneTensor(tensor.F32, 0, 31, 8), want: ErrLayout},
		{name: "offset past the file", data: oneTensor(tensor.F32, 1024, 64, 8), want: ErrLayout},
		{name: "offset near 2^64", data: oneTensor(tensor.F32, math.MaxUint64&^31, 64, 8), want: ErrLayout},
		{name: "no data section", data: hdr(3, 1, 0).tensor("w", tensor.F32, 0, 8).b, want: ErrTruncated},
		{name: "overlapping tensors", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 16).tensor("b", tensor.F32, 32, 16).pad(32).zeros(128).b, want: ErrLayout},
		{name: "same offset", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).tensor("b", tensor.F32, 0, 8).pad(32).zeros(64).b, want: ErrLayout},
		{name: "duplicate tensor name", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).tensor("a", tensor.F32, 32, 8).pad(32).zeros(64).b, want: ErrDuplicate},
		{name: "empty tensor name", data: hdr(3, 1, 0).tensor("", tensor.F32, 0, 8).pad(32).zeros(32).b, want: ErrType},
		{name: "tensor name length 2^40", data: hdr(3, 1, 0).u64(1 << 40).zeros(64).b, want: ErrLimit},
		{name: "tensor table past the file", data: hdr(3, 2, 0).tensor("a", tensor.F32, 0, 8).zeros(10).b, want: ErrTruncated},
		{name: "tensor offset missing", data: hdr(3, 1, 0).str("w").u32(1).u64(8).u32(0).u32(0).b, want: ErrTruncated},
		{name: "too many tensors for limit", data: hdr(3, 5, 0).zeros(400).b, want: ErrLimit, lim: Limits{MaxTensors: 4}},
		{name: "too many pairs for limit", data: hdr(3, 0, 5).zeros(400).b, want: ErrLimit, lim: Limits{MaxKV: 4}},
		{name: "string over limit", data: withKV("k", TypeString, func(r *raw) { r.str("hello") }), want: ErrLimit, lim: Limits{MaxStringLen: 4}},
		{name: "array over limit", data: withKV("k", TypeArray, func(r *raw) { r.u32(uint32(TypeUint8)).u64(5).zeros(5) }), want: ErrLimit, lim: Limits{MaxArrayLen: 4}},
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
			msg := err.Error()
			if !strings.HasPrefix(msg, "gguf: ") || strings.Contains(msg, "\n") {
				t.Fatalf("message %q is not one gguf: line", msg)
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
