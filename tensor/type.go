package tensor

import (
	"errors"
	"fmt"
	"math/bits"
)

// Type is a ggml tensor type, numbered as in GGUF files.
type Type uint32

// The ggml tensor types: every number ggml.h defines below
// GGML_TYPE_COUNT (43 in llama.cpp master as of 2026; NVFP4, Q1_0 and
// Q2_0 are the newest). Numbers 4, 5, 31–33 and 36–38 belonged to
// layouts ggml has removed; they are listed so that they can be named in
// errors, but have no size.
const (
	F32       Type = 0
	F16       Type = 1
	Q4_0      Type = 2
	Q4_1      Type = 3
	Q4_2      Type = 4 // removed from ggml
	Q4_3      Type = 5 // removed from ggml
	Q5_0      Type = 6
	Q5_1      Type = 7
	Q8_0      Type = 8
	Q8_1      Type = 9
	Q2_K      Type = 10
	Q3_K      Type = 11
	Q4_K      Type = 12
	Q5_K      Type = 13
	Q6_K      Type = 14
	Q8_K      Type = 15
	IQ2_XXS   Type = 16
	IQ2_XS    Type = 17
	IQ3_XXS   Type = 18
	IQ1_S     Type = 19
	IQ4_NL    Type = 20
	IQ3_S     Type = 21
	IQ2_S     Type = 22
	IQ4_XS    Type = 23
	I8        Type = 24
	I16       Type = 25
	I32       Type = 26
	I64       Type = 27
	F64       Type = 28
	IQ1_M     Type = 29
	BF16      Type = 30
	Q4_0_4_4  Type = 31 // removed from ggml
	Q4_0_4_8  Type = 32 // removed from ggml
	Q4_0_8_8  Type = 33 // removed from ggml
	TQ1_0     Type = 34
	TQ2_0     Type = 35
	IQ4_NL4_4 Type = 36 // removed from ggml
	IQ4_NL4_8 Type = 37 // removed from ggml
	IQ4_NL8_8 Type = 38 // removed from ggml
	MXFP4     Type = 39
	NVFP4     Type = 40
	Q1_0      Type = 41
	Q2_0      Type = 42
)

// TypeCount is one more than the largest type number ggml defines: the
// length of tables indexed by Type.
const TypeCount Type = Q2_0 + 1

// QK_K is the number of values in one block of the K-quant formats.
const QK_K = 256

// traits describes one type: its name, how many values a block holds and
// how many bytes it takes. A zero blockSize marks a removed layout.
type traits struct {
	name       string
	blockSize  int
	blockBytes int
}

var typeTraits = [...]traits{
	F32:       {"F32", 1, 4},
	F16:       {"F16", 1, 2},
	Q4_0:      {"Q4_0", 32, 18},
	Q4_1:      {"Q4_1", 32, 20},
	Q4_2:      {"Q4_2", 0, 0},
	Q4_3:      {"Q4_3", 0, 0},
	Q5_0:      {"Q5_0", 32, 22},
	Q5_1:      {"Q5_1", 32, 24},
	Q8_0:      {"Q8_0", 32, 34},
	Q8_1:      {"Q8_1", 32, 36},
	Q2_K:      {"Q2_K", QK_K, 84},
	Q3_K:      {"Q3_K", QK_K, 110},
	Q4_K:      {"Q4_K", QK_K, 144},
	Q5_K:      {"Q5_K", QK_K, 176},
	Q6_K:      {"Q6_K", QK_K, 210},
	Q8_K:      {"Q8_K", QK_K, 292},
	IQ2_XXS:   {"IQ2_XXS", QK_K, 66},
	IQ2_XS:    {"IQ2_XS", QK_K, 74},
	IQ3_XXS:   {"IQ3_XXS", QK_K, 98},
	IQ1_S:     {"IQ1_S", QK_K, 50},
	IQ4_NL:    {"IQ4_NL", 32, 18},
	IQ3_S:     {"IQ3_S", QK_K, 110},
	IQ2_S:     {"IQ2_S", QK_K, 82},
	IQ4_XS:    {"IQ4_XS", QK_K, 136},
	I8:        {"I8", 1, 1},
	I16:       {"I16", 1, 2},
	I32:       {"I32", 1, 4},
	I64:       {"I64", 1, 8},
	F64:       {"F64", 1, 8},
	IQ1_M:     {"IQ1_M", QK_K, 56},
	BF16:      {"BF16", 1, 2},
	Q4_0_4_4:  {"Q4_0_4_4", 0, 0},
	Q4_0_4_8:  {"Q4_0_4_8", 0, 0},
	Q4_0_8_8:  {"Q4_0_8_8", 0, 0},
	TQ1_0:     {"TQ1_0", QK_K, 54},
	TQ2_0:     {"TQ2_0", QK_K, 66},
	IQ4_NL4_4: {"IQ4_NL_4_4", 0, 0},
	IQ4_NL4_8: {"IQ4_NL_4_8", 0, 0},
	IQ4_NL8_8: {"IQ4_NL_8_8", 0, 0},
	MXFP4:     {"MXFP4", 32, 17},
	NVFP4:     {"NVFP4", 64, 36}, // 4 UE4M3 sub-block scales, 32 bytes of E2M1 codes
	Q1_0:      {"Q1_0", 128, 18}, // f16 scale, 128 sign bits
	Q2_0:      {"Q2_0", 64, 18},  // f16 scale, 64 2-bit codes
}

// ErrUnknownType is returned for a type number ggml does not define.
var ErrUnknownType = errors.New("unknown tensor type")

// ErrRemovedType is returned for a type number whose layout ggml removed.
var ErrRemovedType = errors.New("removed tensor type")

// ErrShape is returned when a row length does not fit the type's blocks.
var ErrShape = errors.New("bad shape for tensor type")

// ErrOverflow is returned when a size does not fit in an int64.
var ErrOverflow = errors.New("size overflows")

// ErrLength is the sentinel every *LengthError wraps.
var ErrLength = errors.New("bad length")

// LengthError reports a slice or dimension whose length does not fit a
// tensor type or an operation on it. Packages quant and kernels return it.
type LengthError struct {
	Pkg   string // the package reporting it: "quant" or "kernels"
	Op    string // the operation: "dequantize", "quantize", "matrix", "matmul"
	Type  Type   // the tensor type concerned
	Field string // the slice or dimension, e.g. "src", "dst", "cols", "x"
	Unit  string // "values" or "bytes", or empty
	Len   int64  // the length or value given
	Want  int64  // the one required; -1 when Len is simply invalid, 0 when Block applies
	Block int    // when non-zero, Len must be a multiple of Block
}

// Error describes the bad length.
func (e *LengthError) Error() string {
	op := e.Pkg + ": " + e.Op + " " + e.Type.String()
	unit := ""
	if e.Unit != "" {
		unit = " " + e.Unit
	}
	switch {
	case e.Block > 0:
		return fmt.Sprintf("%s: %s holds %d%s, not a multiple of the block size %d", op, e.Field, e.Len, unit, e.Block)
	case e.Want < 0:
		return fmt.Sprintf("%s: invalid %s %d", op, e.Field, e.Len)
	}
	return fmt.Sprintf("%s: %s holds %d%s, want %d", op, e.Field, e.Len, unit, e.Want)
}

// Unwrap returns ErrLength.
func (e *LengthError) Unwrap() error { return ErrLength }

// Known reports whether t is a type ggml defines (removed ones included).
func (t Type) Known() bool { return int(t) < len(typeTraits) }

// Valid reports whether t is a type with a defined layout.
func (t Type) Valid() bool { return t.Known() && typeTraits[t].blockSize > 0 }

// String returns ggml's name for t, or "type(N)" for an unknown number.
func (t Type) String() string {
	if !t.Known() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return typeTraits[t].name
}

// BlockSize returns how many values one block of t holds (0 if t has no layout).
func (t Type) BlockSize() int {
	if !t.Known() {
		return 0
	}
	return typeTraits[t].blockSize
}

// BlockBytes returns how many bytes one block of t takes (0 if t has no layout).
func (t Type) BlockBytes() int {
	if !t.Known() {
		return 0
	}
	return typeTraits[t].blockBytes
}

// Check returns nil if t has a layout, and ErrUnknownType or ErrRemovedType otherwise.
func (t Type) Check() error {
	switch {
	case !t.Known():
		return fmt.Errorf("%w %d", ErrUnknownType, uint32(t))
	case !t.Valid():
		return fmt.Errorf("%w %s", ErrRemovedType, t)
	}
	return nil
}

// ParseType returns the type whose ggml name is name (case-sensitive).
func ParseType(name string) (Type, bool) {
	for i, tr := range typeTraits {
		if tr.name == name {
			return Type(i), true
		}
	}
	return 0, false
}

// RowBytes returns the bytes taken by n consecutive values of t. n must be a
// multiple of the block size.
func (t Type) RowBytes(n int64) (int64, error) {
	if err := t.Check(); err != nil {
		return 0, err
	}
	bs := int64(t.BlockSize())
	if n < 0 || n%bs != 0 {
		return 0, fmt.Errorf("%w: %d values of %s (block size %d)", ErrShape, n, t, bs)
	}
	return MulInt64(n/bs, int64(t.BlockBytes()))
}

// Bytes returns the bytes taken by a tensor of type t with the given
// dimensions (GGUF order: dims[0] is the row length). The row length must
// be a multiple of the block size.
func (t Type) Bytes(dims []uint64) (int64, error) {
	if len(dims) == 0 {
		return 0, fmt.Errorf("%w: no dimensions", ErrShape)
	}
	elems, err := Elements(dims[1:])
	if err != nil {
		return 0, err
	}
	if dims[0] > 1<<62 {
		return 0, fmt.Errorf("%w: row of %d values", ErrOverflow, dims[0])
	}
	row, err := t.RowBytes(int64(dims[0]))
	if err != nil {
		return 0, err
	}
	return MulInt64(row, elems)
}

// Elements returns the product of dims, or ErrOverflow if it exceeds
// the int64 range (an empty dims gives 1).
func Elements(dims []uint64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d > 1<<62 {
			return 0, fmt.Errorf("%w: dimension %d", ErrOverflow, d)
		}
		var err error
		if n, err = MulInt64(n, int64(d)); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// MulInt64 returns a*b for non-negative a and b, or ErrOverflow.
func MulInt64(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, fmt.Errorf("%w: negative factor", ErrOverflow)
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<63-1 {
		return 0, fmt.Errorf("%w: %d × %d", ErrOverflow, a, b)
	}
	return int64(lo), nil
}

// AddInt64 returns a+b for non-negative a and b, or ErrOverflow.
func AddInt64(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, fmt.Errorf("%w: negative term", ErrOverflow)
	}
	if a > 1<<63-1-b {
		return 0, fmt.Errorf("%w: %d + %d", ErrOverflow, a, b)
	}
	return a + b, nil
}
