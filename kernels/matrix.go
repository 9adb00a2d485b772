package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/tensor"
)

// ErrUnsupportedType is returned (wrapped) for a weight type the kernels
// cannot multiply.
var ErrUnsupportedType = errors.New("unsupported weight type")

// ErrLength is the sentinel every *LengthError wraps.
var ErrLength = tensor.ErrLength

// LengthError reports a slice or dimension that does not fit a matrix
// product; it is tensor.LengthError, shared with package quant. Field
// names it ("data", "cols", "rows", "x", "out", "n"), Op is
// "kernels: matrix" or "kernels: matmul".
type LengthError = tensor.LengthError

// Matrix is a weight tensor of Rows rows of Cols values (GGUF dimensions
// [Cols, Rows]) of type Type, in its raw little-endian GGUF bytes: row r is
// Data[r*rowBytes : (r+1)*rowBytes]. Build one with NewMatrix, which checks
// the sizes.
type Matrix struct {
	Type       tensor.Type
	Rows, Cols int
	Data       []byte
}

// MaxRows is the most rows a Matrix may have: the pool hands a product's
// rows out in pieces whose bounds are 32-bit.
const MaxRows = math.MaxInt32

// NewMatrix returns the matrix of rows×cols values of type t stored in
// data. It returns ErrUnsupportedType (wrapped) for a type MatMul cannot
// multiply and a *LengthError when cols is not a positive multiple of the
// block size, rows is negative or above MaxRows, or data is not exactly
// the bytes the shape takes.
func NewMatrix(t tensor.Type, rows, cols int, data []byte) (Matrix, error) {
	m := Matrix{Type: t, Rows: rows, Cols: cols, Data: data}
	return m, m.check("matrix")
}

// rowBytes returns the bytes one row takes; m must have passed check.
func (m Matrix) rowBytes() int {
	return m.Cols / m.Type.BlockSize() * m.Type.BlockBytes()
}

// check validates m's type and sizes, naming op in errors.
func (m Matrix) check(op string) error {
	if !supported(m.Type) {
		return fmt.Errorf("kernels: %s: %s: %w", op, m.Type, ErrUnsupportedType)
	}
	bs := m.Type.BlockSize()
	if m.Cols <= 0 || m.Cols%bs != 0 {
		return &LengthError{Pkg: "kernels", Op: op, Type: m.Type, Field: "cols", Len: int64(m.Cols), Want: -1}
	}
	if m.Rows < 0 || m.Rows > MaxRows {
		return &LengthError{Pkg: "kernels", Op: op, Type: m.Type, Field: "rows", Len: int64(m.Rows), Want: -1}
	}
	rb, err := m.Type.RowBytes(int64(m.Cols))
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	want, err := tensor.MulInt64(rb, int64(m.Rows))
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	if int64(len(m.Data)) != want {
		return &LengthError{Pkg: "kernels", Op: op, Type: m.Type, Field: "data", Len: int64(len(m.Data)), Want: want}
	}
	return nil
}
