package tensor

import (
	"errors"
	"math"
	"testing"
)

func TestTypeSizes(t *testing.T) {
	tests := []struct {
		typ        Type
		name       string
		blockSize  int
		blockBytes int
	}{
		{F32, "F32", 1, 4},
		{F16, "F16", 1, 2},
		{BF16, "BF16", 1, 2},
		{Q8_0, "Q8_0", 32, 34},
		{Q4_K, "Q4_K", 256, 144},
		{Q6_K, "Q6_K", 256, 210},
		{Q8_K, "Q8_K", 256, 292},
		{IQ4_XS, "IQ4_XS", 256, 136},
		{MXFP4, "MXFP4", 32, 17},
		{NVFP4, "NVFP4", 64, 36},
		{Q1_0, "Q1_0", 128, 18},
		{Q2_0, "Q2_0", 64, 18},
	}
	for _, tc := range tests {
		if tc.typ.String() != tc.name || tc.typ.BlockSize() != tc.blockSize || tc.typ.BlockBytes() != tc.blockBytes {
			t.Errorf("%d: got %s %d %d, want %s %d %d", uint32(tc.typ), tc.typ, tc.typ.BlockSize(), tc.typ.BlockBytes(), tc.name, tc.blockSize, tc.blockBytes)
		}
		if got, ok := ParseType(tc.name); !ok || got != tc.typ {
			t.Errorf("ParseType(%q) = %v, %v", tc.name, got, ok)
		}
	}
}

func TestTypeCheck(t *testing.T) {
	if err := Q4_2.Check(); !errors.Is(err, ErrRemovedType) {
		t.Errorf("Q4_2: %v", err)
	}
	if err := Type(1000).Check(); !errors.Is(err, ErrUnknownType) {
		t.Errorf("1000: %v", err)
	}
	if Type(1000).String() != "type(1000)" {
		t.Errorf("name of 1000: %s", Type(1000))
	}
}

func TestBytes(t *testing.T) {
	tests := []struct {
		typ     Type
		dims    []uint64
		want    int64
		wantErr error
	}{
		{F32, []uint64{64, 512}, 64 * 512 * 4, nil},
		{Q4_K, []uint64{2048, 32000}, 8 * 144 * 32000, nil},
		{Q8_0, []uint64{33}, 0, ErrShape},
		{F32, []uint64{math.MaxUint64}, 0, ErrOverflow},
		{F32, []uint64{1 << 31, 1 << 31, 1 << 2}, 0, ErrOverflow},
		{Q4_2, []uint64{32}, 0, ErrRemovedType},
		{F32, nil, 0, ErrShape},
	}
	for _, tc := range tests {
		got, err := tc.typ.Bytes(tc.dims)
		if tc.wantErr != nil {
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("%s %v: err %v, want %v", tc.typ, tc.dims, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %v: %d, %v; want %d", tc.typ, tc.dims, got, err, tc.want)
		}
	}
}

func TestTypeCount(t *testing.T) {
	if int(TypeCount) != len(typeTraits) {
		t.Fatalf("TypeCount = %d, but the traits table has %d rows", TypeCount, len(typeTraits))
	}
	if TypeCount.Known() || !(TypeCount - 1).Known() {
		t.Fatalf("TypeCount %d is not one past the last known type", TypeCount)
	}
}

func TestLengthError(t *testing.T) {
	cases := []struct {
		e    LengthError
		want string
	}{
		{LengthError{Pkg: "quant", Op: "dequantize", Type: Q4_K, Field: "src", Unit: "bytes", Len: 143, Want: 144}, "quant: dequantize Q4_K: src holds 143 bytes, want 144"},
		{LengthError{Pkg: "quant", Op: "quantize", Type: Q8_0, Field: "src", Unit: "values", Len: 33, Block: 32}, "quant: quantize Q8_0: src holds 33 values, not a multiple of the block size 32"},
		{LengthError{Pkg: "kernels", Op: "matmul", Type: Q4_K, Field: "n", Len: -1, Want: -1}, "kernels: matmul Q4_K: invalid n -1"},
		{LengthError{Pkg: "kernels", Op: "matmul", Type: F16, Field: "x", Len: 3, Want: 4}, "kernels: matmul F16: x holds 3, want 4"},
	}
	for _, c := range cases {
		if got := c.e.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(&c.e, ErrLength) {
			t.Errorf("%q does not wrap ErrLength", c.want)
		}
	}
}
