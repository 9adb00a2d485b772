package quant

import (
	"errors"
	"fmt"

	"github.com/lisa-llm/lisa/tensor"
)

// Block sizes (values per block) and block byte sizes of the formats.
const (
	QK4_0 = 32  // QK4_0 is the number of values in a Q4_0 block.
	QK5_0 = 32  // QK5_0 is the number of values in a Q5_0 block.
	QK8_0 = 32  // QK8_0 is the number of values in a Q8_0 block.
	QK8_1 = 32  // QK8_1 is the number of values in a Q8_1 block.
	QK_K  = 256 // QK_K is the number of values in a K-quant block.

	BlockQ4_0Bytes = 18  // BlockQ4_0Bytes is the size of a Q4_0 block.
	BlockQ5_0Bytes = 22  // BlockQ5_0Bytes is the size of a Q5_0 block.
	BlockQ8_0Bytes = 34  // BlockQ8_0Bytes is the size of a Q8_0 block.
	BlockQ8_1Bytes = 36  // BlockQ8_1Bytes is the size of a Q8_1 block.
	BlockQ4_KBytes = 144 // BlockQ4_KBytes is the size of a Q4_K block.
	BlockQ5_KBytes = 176 // BlockQ5_KBytes is the size of a Q5_K block.
	BlockQ6_KBytes = 210 // BlockQ6_KBytes is the size of a Q6_K block.
	BlockQ8_KBytes = 292 // BlockQ8_KBytes is the size of a Q8_K block.
)

// ErrUnsupported is returned for a tensor type this package cannot convert.
var ErrUnsupported = errors.New("unsupported tensor type")

// ErrLength is the sentinel wrapped by every LengthError.
var ErrLength = errors.New("bad length")

// LengthError reports a slice whose length does not fit the tensor type.
type LengthError struct {
	Op    string      // "dequantize" or "quantize"
	Type  tensor.Type // the tensor type
	Field string      // "src" or "dst"
	Unit  string      // "values" or "bytes"
	Len   int64       // the length given
	Want  int64       // the length required, or 0 when Block applies
	Block int         // when non-zero, Len must be a multiple of Block
}

// Error describes the bad length.
func (e *LengthError) Error() string {
	if e.Block > 0 {
		return fmt.Sprintf("quant: %s %s: %s holds %d %s, not a multiple of the block size %d",
			e.Op, e.Type, e.Field, e.Len, e.Unit, e.Block)
	}
	return fmt.Sprintf("quant: %s %s: %s holds %d %s, want %d", e.Op, e.Type, e.Field, e.Len, e.Unit, e.Want)
}

// Unwrap returns ErrLength.
func (e *LengthError) Unwrap() error { return ErrLength }

// codec holds one format's row converters. Both assume the lengths were
// checked: dst (or src) holds whole blocks and the byte side matches.
type codec struct {
	dequant func(src []byte, dst []float32)
	quant   func(src []float32, dst []byte)
}

// codecOf returns the converters of t.
func codecOf(t tensor.Type) (codec, bool) {
	switch t {
	case tensor.F32:
		return codec{DequantizeF32, QuantizeF32}, true
	case tensor.F16:
		return codec{DequantizeF16, QuantizeF16}, true
	case tensor.BF16:
		return codec{DequantizeBF16, QuantizeBF16}, true
	case tensor.Q4_0:
		return codec{DequantizeQ4_0, QuantizeQ4_0}, true
	case tensor.Q5_0:
		return codec{DequantizeQ5_0, QuantizeQ5_0}, true
	case tensor.Q8_0:
		return codec{DequantizeQ8_0, QuantizeQ8_0}, true
	case tensor.Q8_1:
		return codec{DequantizeQ8_1, QuantizeQ8_1}, true
	case tensor.Q4_K:
		return codec{DequantizeQ4K, QuantizeQ4K}, true
	case tensor.Q5_K:
		return codec{DequantizeQ5K, QuantizeQ5K}, true
	case tensor.Q6_K:
		return codec{DequantizeQ6K, QuantizeQ6K}, true
	case tensor.Q8_K:
		return codec{DequantizeQ8K, QuantizeQ8K}, true
	}
	return codec{}, false
}

// Supported reports whether Dequantize and Quantize handle t.
func Supported(t tensor.Type) bool {
	_, ok := codecOf(t)
	return ok
}

// checkLengths validates n values against nbytes bytes of type t. vals and
// bytes name the two sides for the error.
func checkLengths(op string, t tensor.Type, n, nbytes int, vals, bytes string) error {
	bs := t.BlockSize()
	if n%bs != 0 {
		return &LengthError{Op: op, Type: t, Field: vals, Unit: "values", Len: int64(n), Block: bs}
	}
	// In int64, so that no slice length can overflow it on 32-bit machines.
	want := int64(n/bs) * int64(t.BlockBytes())
	if int64(nbytes) != want {
		return &LengthError{Op: op, Type: t, Field: bytes, Unit: "bytes", Len: int64(nbytes), Want: want}
	}
	return nil
}

// Dequantize converts src, the raw bytes of len(dst) values of type t, to
// float32 in dst. len(dst) must be a multiple of t's block size and len(src)
// exactly the bytes those values take; otherwise it returns a *LengthError.
// It returns ErrUnsupported (wrapped) for a type it does not handle.
func Dequantize(t tensor.Type, src []byte, dst []float32) error {
	c, ok := codecOf(t)
	if !ok {
		return fmt.Errorf("quant: dequantize %s: %w", t, ErrUnsupported)
	}
	if err := checkLengths("dequantize", t, len(dst), len(src), "dst", "src"); err != nil {
		return err
	}
	c.dequant(src, dst)
	return nil
}

// Quantize converts the float32 values in src to type t, writing exactly
// the bytes llama.cpp's reference quantizer writes (no importance matrix)
// into dst. len(src) must be a multiple of t's block size and len(dst)
// exactly the bytes those values take; otherwise it returns a *LengthError.
// It returns ErrUnsupported (wrapped) for a type it does not handle.
func Quantize(t tensor.Type, src []float32, dst []byte) error {
	c, ok := codecOf(t)
	if !ok {
		return fmt.Errorf("quant: quantize %s: %w", t, ErrUnsupported)
	}
	if err := checkLengths("quantize", t, len(src), len(dst), "src", "dst"); err != nil {
		return err
	}
	c.quant(src, dst)
	return nil
}
