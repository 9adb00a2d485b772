package quant

import (
	"errors"
	"fmt"

	"github.com/lisa-llm/lisa/tensor"
)

// Block sizes (values per block) and block byte sizes of the formats.
const (
	QK4_0  = 32  // QK4_0 is the number of values in a Q4_0 block.
	QK4_1  = 32  // QK4_1 is the number of values in a Q4_1 block.
	QK5_0  = 32  // QK5_0 is the number of values in a Q5_0 block.
	QK5_1  = 32  // QK5_1 is the number of values in a Q5_1 block.
	QK8_0  = 32  // QK8_0 is the number of values in a Q8_0 block.
	QK8_1  = 32  // QK8_1 is the number of values in a Q8_1 block.
	QK4_NL = 32  // QK4_NL is the number of values in an IQ4_NL block.
	QK_K   = 256 // QK_K is the number of values in a K-quant (and IQ4_XS) block.

	QKMXFP4 = 32 // QKMXFP4 is the number of values in an MXFP4 block.

	BlockQ4_0Bytes   = 18  // BlockQ4_0Bytes is the size of a Q4_0 block.
	BlockQ4_1Bytes   = 20  // BlockQ4_1Bytes is the size of a Q4_1 block.
	BlockQ5_0Bytes   = 22  // BlockQ5_0Bytes is the size of a Q5_0 block.
	BlockQ5_1Bytes   = 24  // BlockQ5_1Bytes is the size of a Q5_1 block.
	BlockQ8_0Bytes   = 34  // BlockQ8_0Bytes is the size of a Q8_0 block.
	BlockQ8_1Bytes   = 36  // BlockQ8_1Bytes is the size of a Q8_1 block.
	BlockQ2_KBytes   = 84  // BlockQ2_KBytes is the size of a Q2_K block.
	BlockQ3_KBytes   = 110 // BlockQ3_KBytes is the size of a Q3_K block.
	BlockQ4_KBytes   = 144 // BlockQ4_KBytes is the size of a Q4_K block.
	BlockQ5_KBytes   = 176 // BlockQ5_KBytes is the size of a Q5_K block.
	BlockQ6_KBytes   = 210 // BlockQ6_KBytes is the size of a Q6_K block.
	BlockQ8_KBytes   = 292 // BlockQ8_KBytes is the size of a Q8_K block.
	BlockIQ4_NLBytes = 18  // BlockIQ4_NLBytes is the size of an IQ4_NL block.
	BlockIQ4_XSBytes = 136 // BlockIQ4_XSBytes is the size of an IQ4_XS block.
	BlockMXFP4Bytes  = 17  // BlockMXFP4Bytes is the size of an MXFP4 block.
)

// ErrUnsupported is returned for a tensor type this package cannot convert.
var ErrUnsupported = errors.New("unsupported tensor type")

// ErrLength is the sentinel wrapped by every LengthError.
var ErrLength = tensor.ErrLength

// LengthError reports a slice whose length does not fit the tensor type;
// it is tensor.LengthError, shared with package kernels.
type LengthError = tensor.LengthError

// format is one type's row of the conversion table: its row converters,
// both assuming the lengths were checked (dst or src holds whole blocks
// and the byte side matches). Adding a type is adding its row.
type format struct {
	dequant func(src []byte, dst []float32)
	quant   func(src []float32, dst []byte)
}

// formats is the conversion table, indexed by type.
var formats = [tensor.TypeCount]format{
	tensor.F32:    {DequantizeF32, QuantizeF32},
	tensor.F16:    {DequantizeF16, QuantizeF16},
	tensor.BF16:   {DequantizeBF16, QuantizeBF16},
	tensor.Q4_0:   {DequantizeQ4_0, QuantizeQ4_0},
	tensor.Q4_1:   {DequantizeQ4_1, QuantizeQ4_1},
	tensor.Q5_0:   {DequantizeQ5_0, QuantizeQ5_0},
	tensor.Q5_1:   {DequantizeQ5_1, QuantizeQ5_1},
	tensor.Q8_0:   {DequantizeQ8_0, QuantizeQ8_0},
	tensor.Q8_1:   {DequantizeQ8_1, QuantizeQ8_1},
	tensor.Q2_K:   {DequantizeQ2K, QuantizeQ2K},
	tensor.Q3_K:   {DequantizeQ3K, QuantizeQ3K},
	tensor.Q4_K:   {DequantizeQ4K, QuantizeQ4K},
	tensor.Q5_K:   {DequantizeQ5K, QuantizeQ5K},
	tensor.Q6_K:   {DequantizeQ6K, QuantizeQ6K},
	tensor.Q8_K:   {DequantizeQ8K, QuantizeQ8K},
	tensor.IQ4_NL: {DequantizeIQ4NL, QuantizeIQ4NL},
	tensor.IQ4_XS: {DequantizeIQ4XS, QuantizeIQ4XS},
	tensor.MXFP4:  {DequantizeMXFP4, QuantizeMXFP4},
}

// formatOf returns the row of t, if t has one.
func formatOf(t tensor.Type) (format, bool) {
	if int(t) >= len(formats) || formats[t].dequant == nil {
		return format{}, false
	}
	return formats[t], true
}

// Supported reports whether Dequantize and Quantize handle t.
func Supported(t tensor.Type) bool {
	_, ok := formatOf(t)
	return ok
}

// SupportedTypes returns the types Dequantize and Quantize handle, in
// type-number order.
func SupportedTypes() []tensor.Type {
	var ts []tensor.Type
	for t := range tensor.TypeCount {
		if Supported(t) {
			ts = append(ts, t)
		}
	}
	return ts
}

// checkLengths validates n values against nbytes bytes of type t. vals and
// bytes name the two sides for the error.
func checkLengths(op string, t tensor.Type, n, nbytes int, vals, bytes string) error {
	bs := t.BlockSize()
	if n%bs != 0 {
		return &LengthError{Pkg: "quant", Op: op, Type: t, Field: vals, Unit: "values", Len: int64(n), Block: bs}
	}
	// In int64, so that no slice length can overflow it on 32-bit machines.
	want := int64(n/bs) * int64(t.BlockBytes())
	if int64(nbytes) != want {
		return &LengthError{Pkg: "quant", Op: op, Type: t, Field: bytes, Unit: "bytes", Len: int64(nbytes), Want: want}
	}
	return nil
}

// Dequantize converts src, the raw bytes of len(dst) values of type t, to
// float32 in dst. len(dst) must be a multiple of t's block size and len(src)
// exactly the bytes those values take; otherwise it returns a *LengthError.
// It returns ErrUnsupported (wrapped) for a type it does not handle.
func Dequantize(t tensor.Type, src []byte, dst []float32) error {
	c, ok := formatOf(t)
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
	c, ok := formatOf(t)
	if !ok {
		return fmt.Errorf("quant: quantize %s: %w", t, ErrUnsupported)
	}
	if err := checkLengths("quantize", t, len(src), len(dst), "src", "dst"); err != nil {
		return err
	}
	c.quant(src, dst)
	return nil
}
