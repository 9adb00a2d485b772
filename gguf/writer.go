package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unicode/utf8"

	"github.com/lisa-llm/lisa/tensor"
)

// Writer builds a GGUF version 3 file: metadata pairs and tensors in the
// order they are added, tensor data aligned to the file's alignment and
// padded as llama.cpp expects (each tensor's offset is the previous one's
// plus its size rounded up to the alignment; the data section starts at
// the first aligned offset after the tensor table). llama.cpp refuses
// arrays of arrays, which the format allows and the Writer writes.
//
// The Writer refuses whatever a reader with DefaultLimits would refuse
// (long keys and strings, huge arrays, too many pairs or tensors), so
// every file it writes reads back.
type Writer struct {
	alignment uint64
	kvs       []KV
	keys      map[string]bool
	tensors   []writerTensor
	names     map[string]bool
	total     valueCount // what kvs add to the reader's totals
}

type writerTensor struct {
	info  TensorInfo
	data  []byte
	write func(io.Writer) error // streams the data instead when set
}

// MaxTensorName is the longest tensor name the Writer accepts, in bytes:
// ggml keeps names in 64-byte buffers with a terminating zero.
const MaxTensorName = 63

// NewWriter returns an empty Writer with the default alignment of 32.
func NewWriter() *Writer {
	return &Writer{alignment: DefaultAlignment, keys: map[string]bool{}, names: map[string]bool{}}
}

// SetAlignment sets the data alignment, which must be a power of two
// (WriteTo fails otherwise). When it is not 32 the file records it in
// general.alignment as a uint32.
func (w *Writer) SetAlignment(a uint64) { w.alignment = a }

// Add appends a metadata pair. The key must be non-empty valid UTF-8 and
// new; general.alignment is set through SetAlignment instead.
func (w *Writer) Add(key string, v Value) error {
	if key == "" || !utf8.ValidString(key) {
		return fmt.Errorf("gguf: add %q: key must be non-empty valid UTF-8", key)
	}
	if key == KeyAlignment {
		return fmt.Errorf("gguf: add %q: use SetAlignment", key)
	}
	if len(key) > DefaultMaxKeyLen {
		return fmt.Errorf("gguf: add %.40q…: %w: key of %d bytes, over the reader's default limit of %d", key, ErrLimit, len(key), DefaultMaxKeyLen)
	}
	if w.keys[key] {
		return fmt.Errorf("gguf: add %q: %w", key, ErrDuplicate)
	}
	if len(w.kvs) >= DefaultMaxKV-1 { // one is kept for general.alignment
		return fmt.Errorf("gguf: add %q: %w: more than %d metadata pairs", key, ErrLimit, DefaultMaxKV-1)
	}
	c, err := checkValue(v, 0)
	if err != nil {
		return fmt.Errorf("gguf: add %q: %w", key, err)
	}
	if w.total.elems+c.elems > DefaultMaxElements {
		return fmt.Errorf("gguf: add %q: %w: %d array elements in all, over the reader's default limit of %d",
			key, ErrLimit, w.total.elems+c.elems, DefaultMaxElements)
	}
	if w.total.nested+c.nested > DefaultMaxNestedArrays {
		return fmt.Errorf("gguf: add %q: %w: %d nested arrays in all, over the reader's default limit of %d",
			key, ErrLimit, w.total.nested+c.nested, DefaultMaxNestedArrays)
	}
	w.total.elems += c.elems
	w.total.nested += c.nested
	w.keys[key] = true
	w.kvs = append(w.kvs, KV{Key: key, Value: v})
	return nil
}

// valueCount is what one metadata value adds to the reader's totals.
type valueCount struct {
	elems  int64 // array elements, nested ones included
	nested int   // arrays inside arrays
}

// checkValue reports values the format cannot hold (invalid ones from
// ArrayValue) and values a reader with DefaultLimits refuses: strings,
// arrays or nesting beyond the defaults. It returns what v adds to the
// totals DefaultLimits bound.
func checkValue(v Value, depth int) (valueCount, error) {
	var c valueCount
	switch {
	case v.typ == typeInvalid:
		return c, fmt.Errorf("%w: %s", ErrType, v.str)
	case !v.typ.Valid():
		return c, fmt.Errorf("%w: value type %s", ErrType, v.typ)
	case v.typ == TypeString:
		if len(v.str) > DefaultMaxStringLen {
			return c, fmt.Errorf("%w: string of %d bytes, over the reader's default limit of %d", ErrLimit, len(v.str), DefaultMaxStringLen)
		}
		return c, nil
	case v.typ != TypeArray:
		return c, nil
	case depth+1 > DefaultMaxDepth:
		return c, fmt.Errorf("%w: arrays nested deeper than %d", ErrLimit, DefaultMaxDepth)
	case v.Len() > DefaultMaxArrayLen:
		return c, fmt.Errorf("%w: array of %d elements, over the reader's default limit of %d", ErrLimit, v.Len(), DefaultMaxArrayLen)
	}
	c.elems = int64(v.Len())
	if ss, ok := v.Strings(); ok {
		for i, s := range ss {
			if len(s) > DefaultMaxStringLen {
				return c, fmt.Errorf("%w: element %d: string of %d bytes, over the reader's default limit of %d", ErrLimit, i, len(s), DefaultMaxStringLen)
			}
		}
	}
	a, _ := v.Arrays()
	c.nested = len(a)
	for _, e := range a {
		k, err := checkValue(e, depth+1)
		if err != nil {
			return c, err
		}
		c.elems += k.elems
		c.nested += k.nested
	}
	return c, nil
}

// AddTensor appends a tensor. data must hold exactly the bytes the type
// and dimensions need; it is kept, not copied, until WriteTo.
func (w *Writer) AddTensor(name string, typ tensor.Type, dims []uint64, data []byte) error {
	info, err := w.checkTensor(name, typ, dims)
	if err != nil {
		return err
	}
	if int64(len(data)) != info.Size {
		return fmt.Errorf("gguf: add tensor %q: %w: %d bytes of data, %s %s needs %d",
			name, ErrLayout, len(data), shapeString(dims), typ, info.Size)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: info, data: data})
	return nil
}

// AddTensorFunc appends a tensor whose data is produced while the file is
// written: WriteTo calls write once, in tensor order, and it must write
// exactly the bytes the type and dimensions need (WriteTo fails otherwise).
// It lets a file larger than memory be written without holding its data.
func (w *Writer) AddTensorFunc(name string, typ tensor.Type, dims []uint64, write func(io.Writer) error) error {
	info, err := w.checkTensor(name, typ, dims)
	if err != nil {
		return err
	}
	if write == nil {
		return fmt.Errorf("gguf: add tensor %q: nil write function", name)
	}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: info, write: write})
	return nil
}

// checkTensor validates a new tensor's name, dimensions and type and
// returns its info with the size set.
func (w *Writer) checkTensor(name string, typ tensor.Type, dims []uint64) (TensorInfo, error) {
	if name == "" || len(name) > MaxTensorName {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: name must be 1 to %d bytes", name, ErrLayout, MaxTensorName)
	}
	if w.names[name] {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w", name, ErrDuplicate)
	}
	if len(w.tensors) >= DefaultMaxTensors {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: more than %d tensors", name, ErrLimit, DefaultMaxTensors)
	}
	if len(dims) < 1 || len(dims) > MaxDims {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: %d dimensions", name, ErrLayout, len(dims))
	}
	for i, d := range dims {
		if d == 0 {
			return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: dimension %d is 0", name, ErrLayout, i)
		}
	}
	if err := typ.Check(); err != nil {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: %w", name, ErrType, err)
	}
	size, err := typ.Bytes(dims)
	if err != nil {
		return TensorInfo{}, fmt.Errorf("gguf: add tensor %q: %w: %w", name, ErrLayout, err)
	}
	return TensorInfo{Name: name, Dims: append([]uint64(nil), dims...), Type: typ, Size: size}, nil
}

// WriteTo writes the file to out and returns the bytes written.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	a := w.alignment
	if a == 0 || a&(a-1) != 0 || a > MaxAlignment {
		return 0, fmt.Errorf("gguf: write: %w: alignment %d is not a power of two up to %d", ErrLayout, a, MaxAlignment)
	}
	kvs := w.kvs
	if a != DefaultAlignment {
		kvs = append(kvs[:len(kvs):len(kvs)], KV{Key: KeyAlignment, Value: Uint32Value(uint32(a))})
	}
	e := &encoder{w: bufio.NewWriterSize(out, 1<<16)}
	e.bytes([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.u32(uint32(kv.Value.typ))
		e.value(kv.Value)
	}
	var off uint64
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = off
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(t.Offset)
		off += padTo(uint64(t.Size), a)
	}
	e.pad(a)
	for _, t := range w.tensors {
		if t.write == nil {
			e.bytes(t.data)
		} else {
			e.stream(t)
		}
		e.pad(a)
	}
	if e.err == nil {
		e.err = e.w.Flush()
	}
	if e.err != nil {
		return e.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return e.n, nil
}

// padTo rounds n up to a multiple of a (a power of two).
func padTo(n, a uint64) uint64 { return (n + a - 1) &^ (a - 1) }

// encoder writes little-endian fields, remembering the first error.
type encoder struct {
	w   *bufio.Writer
	n   int64
	err error
	tmp [8]byte
}

func (e *encoder) bytes(b []byte) {
	if e.err != nil {
		return
	}
	n, err := e.w.Write(b)
	e.n += int64(n)
	e.err = err
}

func (e *encoder) u8(x uint8) { e.tmp[0] = x; e.bytes(e.tmp[:1]) }

func (e *encoder) u16(x uint16) {
	binary.LittleEndian.PutUint16(e.tmp[:], x)
	e.bytes(e.tmp[:2])
}

func (e *encoder) u32(x uint32) {
	binary.LittleEndian.PutUint32(e.tmp[:], x)
	e.bytes(e.tmp[:4])
}

func (e *encoder) u64(x uint64) {
	binary.LittleEndian.PutUint64(e.tmp[:], x)
	e.bytes(e.tmp[:8])
}

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		n, err := e.w.WriteString(s)
		e.n += int64(n)
		e.err = err
	}
}

// stream writes t's data through its write function and checks that it
// wrote exactly the tensor's size.
func (e *encoder) stream(t writerTensor) {
	if e.err != nil {
		return
	}
	start := e.n
	if err := t.write(encoderWriter{e}); err != nil && e.err == nil {
		e.err = fmt.Errorf("tensor %q: %w", t.info.Name, err)
	}
	if got := e.n - start; e.err == nil && got != t.info.Size {
		e.err = fmt.Errorf("tensor %q: %w: wrote %d bytes, %s %s needs %d",
			t.info.Name, ErrLayout, got, shapeString(t.info.Dims), t.info.Type, t.info.Size)
	}
}

// encoderWriter lets a tensor's write function write through the encoder.
type encoderWriter struct{ e *encoder }

// Write implements io.Writer.
func (w encoderWriter) Write(b []byte) (int, error) {
	if w.e.err != nil {
		return 0, w.e.err
	}
	w.e.bytes(b)
	return len(b), w.e.err
}

// pad writes zero bytes up to the next multiple of a.
func (e *encoder) pad(a uint64) {
	var zero [256]byte
	for k := padTo(uint64(e.n), a) - uint64(e.n); k > 0; {
		m := min(k, uint64(len(zero)))
		e.bytes(zero[:m])
		k -= m
	}
}

// scalar writes a fixed-size value of type t from its payload bits.
func (e *encoder) scalar(t ValueType, bits uint64) {
	switch valueTypeSizes[t] {
	case 1:
		e.u8(uint8(bits))
	case 2:
		e.u16(uint16(bits))
	case 4:
		e.u32(uint32(bits))
	default:
		e.u64(bits)
	}
}

func (e *encoder) value(v Value) {
	switch v.typ {
	case TypeString:
		e.str(v.str)
	case TypeArray:
		e.u32(uint32(v.elem))
		e.u64(uint64(v.Len()))
		e.array(v)
	default:
		e.scalar(v.typ, v.bits)
	}
}

func (e *encoder) array(v Value) {
	switch a := v.arr.(type) {
	case []string:
		for _, s := range a {
			e.str(s)
		}
	case []Value:
		for _, x := range a {
			e.value(x)
		}
	case []bool:
		for _, b := range a {
			e.u8(boolByte(b))
		}
	case []uint8:
		e.bytes(a)
	case []float32:
		for _, x := range a {
			e.u32(math.Float32bits(x))
		}
	default:
		for i := range v.Len() {
			x, _ := v.Elem(i)
			e.scalar(v.elem, x.bits)
		}
	}
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
