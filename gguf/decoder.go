package gguf

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"unicode/utf8"
)

// decodeBufSize is the largest window the decoder reads from an
// io.ReaderAt at a time.
const decodeBufSize = 256 << 10

// decoder reads little-endian GGUF fields from a source of known size,
// through a window buffer. When the whole source is in memory the window
// is the source itself and nothing is copied.
type decoder struct {
	r        io.ReaderAt // nil when buf holds the whole source
	size     int64       // total bytes in the source
	base     int64       // source offset of buf[0]
	buf      []byte
	pos, end int // unread window is buf[pos:end]
	lim      Limits
	elems    int64 // array elements decoded so far
	nested   int   // arrays inside arrays decoded so far
}

func newDecoder(r io.ReaderAt, size int64, lim Limits) *decoder {
	if b, ok := r.(*bytesAt); ok && int64(len(b.b)) == size {
		return &decoder{size: size, buf: b.b, end: len(b.b), lim: lim}
	}
	n := int64(decodeBufSize)
	if size < n {
		n = size
	}
	return &decoder{r: r, size: size, buf: make([]byte, n), lim: lim}
}

// bytesAt is an io.ReaderAt over a byte slice the decoder can use in place.
type bytesAt struct{ b []byte }

func (b *bytesAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b.b)) {
		return 0, io.EOF
	}
	n := copy(p, b.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// offset returns the source offset of the next unread byte.
func (d *decoder) offset() int64 { return d.base + int64(d.pos) }

// remaining returns the bytes left in the source after the next unread byte.
func (d *decoder) remaining() int64 { return d.size - d.offset() }

// truncated builds the error for a field of n bytes that runs past the end.
func (d *decoder) truncated(n int64, what string) error {
	return formatErr(d.offset(), ErrTruncated, "%s: needs %d bytes, only %d remain (file size %d)",
		what, n, d.remaining(), d.size)
}

// next returns the next n bytes (n <= the window size) and consumes them.
// The slice is valid until the next call.
func (d *decoder) next(n int, what string) ([]byte, error) {
	if d.end-d.pos < n {
		if err := d.fill(n, what); err != nil {
			return nil, err
		}
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// fill makes at least n bytes available in the window.
func (d *decoder) fill(n int, what string) error {
	if int64(n) > d.remaining() || d.r == nil || n > len(d.buf) {
		return d.truncated(int64(n), what)
	}
	copy(d.buf, d.buf[d.pos:d.end])
	d.base += int64(d.pos)
	d.end -= d.pos
	d.pos = 0
	want := len(d.buf)
	if rem := d.size - d.base; rem < int64(want) {
		want = int(rem)
	}
	got, err := d.r.ReadAt(d.buf[d.end:want], d.base+int64(d.end))
	d.end += got
	if d.end-d.pos >= n {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return d.truncated(int64(n), what)
	}
	return &FormatError{Offset: d.offset(), Msg: what + ": " + err.Error(), Err: ErrIO}
}

// readBytes returns the next n bytes as a new string, for any n that fits
// the source (reading in window-sized pieces when n is large).
func (d *decoder) readString(n int64, what string) (string, error) {
	if n > d.remaining() {
		return "", d.truncated(n, what)
	}
	if n <= int64(len(d.buf)) {
		b, err := d.next(int(n), what)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
	out := make([]byte, n)
	for done := 0; done < len(out); {
		k := min(len(out)-done, len(d.buf))
		b, err := d.next(k, what)
		if err != nil {
			return "", err
		}
		done += copy(out[done:], b)
	}
	return string(out), nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.next(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.next(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string of at most max bytes.
func (d *decoder) str(max int, what string) (string, error) {
	if d.end-d.pos >= 8 {
		// The fast path builds nothing: str runs once per token of a
		// vocabulary.
		n := binary.LittleEndian.Uint64(d.buf[d.pos:])
		if n <= uint64(max) && n <= uint64(d.end-d.pos-8) {
			d.pos += 8
			s := string(d.buf[d.pos : d.pos+int(n)])
			d.pos += int(n)
			return s, nil
		}
	}
	return d.strLazy(max, func() string { return what })
}

// strLazy reads a length-prefixed string of at most max bytes; what
// names it in an error and is called only to build one.
func (d *decoder) strLazy(max int, what func() string) (string, error) {
	at := d.offset()
	if d.end-d.pos < 8 {
		if err := d.fill(8, what()+" length"); err != nil {
			return "", err
		}
	}
	n := binary.LittleEndian.Uint64(d.buf[d.pos:])
	d.pos += 8
	if n > uint64(max) {
		return "", formatErr(at, ErrLimit, "%s: length %d exceeds the limit of %d bytes", what(), n, max)
	}
	if n <= uint64(d.end-d.pos) {
		s := string(d.buf[d.pos : d.pos+int(n)])
		d.pos += int(n)
		return s, nil
	}
	return d.readString(int64(n), what())
}

// key reads a metadata key: non-empty, valid UTF-8, within MaxKeyLen.
func (d *decoder) key(what string) (string, error) {
	at := d.offset()
	k, err := d.str(d.lim.MaxKeyLen, what)
	if err != nil {
		return "", err
	}
	if k == "" {
		return "", formatErr(at, ErrType, "%s is empty", what)
	}
	if !utf8.ValidString(k) {
		return "", formatErr(at, ErrType, "%s %q is not valid UTF-8", what, k)
	}
	return k, nil
}

// valueType reads a value type number and checks it.
func (d *decoder) valueType(what string) (ValueType, error) {
	at := d.offset()
	t, err := d.u32(what)
	if err != nil {
		return 0, err
	}
	if !ValueType(t).Valid() {
		return 0, formatErr(at, ErrType, "%s: unknown value type %d", what, t)
	}
	return ValueType(t), nil
}

// value reads one value of type t; depth counts enclosing arrays.
func (d *decoder) value(t ValueType, depth int, what string) (Value, error) {
	switch t {
	case TypeString:
		s, err := d.str(d.lim.MaxStringLen, what)
		return StringValue(s), err
	case TypeArray:
		return d.array(depth+1, what)
	case TypeBool:
		at := d.offset()
		b, err := d.next(1, what)
		if err != nil {
			return Value{}, err
		}
		if b[0] > 1 {
			return Value{}, formatErr(at, ErrType, "%s: bool value %d is neither 0 nor 1", what, b[0])
		}
		return BoolValue(b[0] == 1), nil
	}
	b, err := d.next(valueTypeSizes[t], what)
	if err != nil {
		return Value{}, err
	}
	return Value{typ: t, bits: scalarBits(t, b)}, nil
}

// scalarBits decodes a fixed-size numeric value into Value's payload
// (signed integers sign-extended).
func scalarBits(t ValueType, b []byte) uint64 {
	switch t {
	case TypeUint8:
		return uint64(b[0])
	case TypeInt8:
		return uint64(int64(int8(b[0])))
	case TypeUint16:
		return uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		return uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32, TypeFloat32:
		return uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		return uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	}
	return binary.LittleEndian.Uint64(b)
}

// array reads an array header and its elements. depth is the nesting
// level of this array (1 for an array directly in a key/value pair).
func (d *decoder) array(depth int, what string) (Value, error) {
	at := d.offset()
	if depth > d.lim.MaxDepth {
		return Value{}, formatErr(at, ErrLimit, "%s: arrays nested deeper than the limit of %d", what, d.lim.MaxDepth)
	}
	elem, err := d.valueType(what + ": array element type")
	if err != nil {
		return Value{}, err
	}
	cat := d.offset()
	n64, err := d.u64(what + ": array length")
	if err != nil {
		return Value{}, err
	}
	if n64 > uint64(d.lim.MaxArrayLen) {
		return Value{}, formatErr(cat, ErrLimit, "%s: array of %d elements exceeds the limit of %d", what, n64, d.lim.MaxArrayLen)
	}
	n := int64(n64)
	if total := d.elems + n; total > d.lim.MaxElements {
		return Value{}, formatErr(cat, ErrLimit, "%s: array of %d elements brings the total to %d, over the limit of %d",
			what, n, total, d.lim.MaxElements)
	}
	if m := elem.minSize(); n > d.remaining()/m {
		return Value{}, formatErr(cat, ErrTruncated, "%s: array of %d %s needs at least %d bytes, only %d remain (file size %d)",
			what, n, elem, n*m, d.remaining(), d.size)
	}
	d.elems += n
	switch elem {
	case TypeString:
		return d.stringArray(int(n), what)
	case TypeArray:
		if total := d.nested + int(n); total > d.lim.MaxNestedArrays {
			return Value{}, formatErr(cat, ErrLimit, "%s: array of %d arrays brings the nested arrays to %d, over the limit of %d",
				what, n, total, d.lim.MaxNestedArrays)
		}
		d.nested += int(n)
		return d.arrayArray(int(n), depth, what)
	case TypeBool:
		return d.boolArray(int(n), what)
	}
	return d.numberArray(elem, int(n), what)
}

func (d *decoder) stringArray(n int, what string) (Value, error) {
	a := make([]string, 0, min(n, arrayPrealloc))
	for range n {
		s, err := d.str(d.lim.MaxStringLen, what)
		if err != nil {
			return Value{}, err
		}
		a = append(a, s)
	}
	return StringsValue(a), nil
}

func (d *decoder) arrayArray(n, depth int, what string) (Value, error) {
	a := make([]Value, 0, min(n, arrayPrealloc))
	for range n {
		v, err := d.array(depth+1, what)
		if err != nil {
			return Value{}, err
		}
		a = append(a, v)
	}
	return arrayOf(TypeArray, a), nil
}

func (d *decoder) boolArray(n int, what string) (Value, error) {
	a := make([]bool, 0, min(n, arrayPrealloc))
	for len(a) < n {
		at := d.offset()
		b, err := d.next(min(n-len(a), len(d.buf)), what)
		if err != nil {
			return Value{}, err
		}
		for j, c := range b {
			if c > 1 {
				return Value{}, formatErr(at+int64(j), ErrType, "%s: element %d: bool value %d is neither 0 nor 1", what, len(a), c)
			}
			a = append(a, c == 1)
		}
	}
	return BoolsValue(a), nil
}

// arrayPrealloc caps the elements reserved for an array before they are
// decoded, so that a reader whose claimed size is a lie cannot make the
// parser allocate for elements that never arrive.
const arrayPrealloc = 1 << 16

// numberArray reads n fixed-size numbers of type t.
func (d *decoder) numberArray(t ValueType, n int, what string) (Value, error) {
	le := binary.LittleEndian
	var a any
	var err error
	switch t {
	case TypeUint8:
		a, err = readNumbers(d, n, 1, what, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		a, err = readNumbers(d, n, 1, what, func(b []byte) int8 { return int8(b[0]) })
	case TypeUint16:
		a, err = readNumbers(d, n, 2, what, le.Uint16)
	case TypeInt16:
		a, err = readNumbers(d, n, 2, what, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case TypeUint32:
		a, err = readNumbers(d, n, 4, what, le.Uint32)
	case TypeInt32:
		a, err = readNumbers(d, n, 4, what, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case TypeFloat32:
		a, err = readNumbers(d, n, 4, what, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case TypeUint64:
		a, err = readNumbers(d, n, 8, what, le.Uint64)
	case TypeInt64:
		a, err = readNumbers(d, n, 8, what, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case TypeFloat64:
		a, err = readNumbers(d, n, 8, what, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	}
	if err != nil {
		return Value{}, err
	}
	return arrayOf(t, a), nil
}

// readNumbers decodes n values of size bytes each with conv, reading in
// window-sized runs.
func readNumbers[T any](d *decoder, n, size int, what string, conv func([]byte) T) ([]T, error) {
	a := make([]T, 0, min(n, arrayPrealloc))
	per := max(len(d.buf)/size, 1)
	for len(a) < n {
		k := min(n-len(a), per)
		b, err := d.next(k*size, what)
		if err != nil {
			return nil, err
		}
		for j := 0; j < len(b); j += size {
			a = append(a, conv(b[j:j+size]))
		}
	}
	return a, nil
}
