package gguf

import (
	"encoding/binary"
	"io"
	"math/bits"
	"slices"
	"strconv"

	"github.com/lisa-llm/lisa/tensor"
)

// Magic is the four bytes every GGUF file starts with.
const Magic = "GGUF"

// DefaultAlignment is the data alignment when general.alignment is absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that sets the data alignment.
const KeyAlignment = "general.alignment"

// MaxDims is the largest number of dimensions a tensor may have.
const MaxDims = 4

// MaxAlignment is the largest general.alignment the reader accepts.
const MaxAlignment = 1 << 30

// KV is one metadata key/value pair.
type KV struct {
	Key   string
	Value Value
}

// TensorInfo describes one tensor of the tensor table.
type TensorInfo struct {
	Name   string      // tensor name, unique in the file
	Dims   []uint64    // dimensions in GGUF order: Dims[0] is the row length
	Type   tensor.Type // ggml type
	Offset uint64      // offset of the data relative to the data section
	Size   int64       // bytes of data
}

// Elements returns the number of values in the tensor.
func (t *TensorInfo) Elements() int64 {
	n, err := tensor.Elements(t.Dims)
	if err != nil {
		return -1
	}
	return n
}

// File is a parsed GGUF file: its header, metadata and tensor table, and
// access to the tensor data, which is read on demand.
type File struct {
	Version    uint32       // GGUF version, 2 or 3
	Alignment  uint64       // data alignment (general.alignment, default 32)
	DataOffset int64        // file offset of the data section
	FileSize   int64        // size of the file
	KV         []KV         // metadata in file order
	Tensors    []TensorInfo // tensor table in file order

	kvIndex     map[string]int
	kvOffset    []int64 // file offset of each KV pair
	tensorIndex map[string]int
	r           io.ReaderAt // source, for reads in fallback mode
	data        []byte      // the whole file when mapped or in memory
	unmap       func() error
	owned       io.Closer // the file Open opened, closed by Close
	shards      []*File   // a joined split file's shards (JoinSplit), nil otherwise
	shardOf     []int32   // the shard of each tensor of a joined file
}

// Parse reads the header, metadata and tensor table of the GGUF file of
// the given size read through r, and checks the tensor layout. Tensor
// data is not read: TensorData reads it on demand through r. size must
// be the real size: counts are checked against it before the tables are
// reserved (a size that lies lets the claimed counts reserve up to what
// Limits allows, about 30 MiB under the defaults).
func Parse(r io.ReaderAt, size int64, lim Limits) (*File, error) {
	if size < 0 {
		return nil, formatErr(-1, ErrTruncated, "negative file size %d", size)
	}
	f, err := parse(newDecoder(r, size, lim.withDefaults()))
	if err != nil {
		return nil, err
	}
	f.r = r
	return f, nil
}

// ParseBytes parses a GGUF file held in memory. TensorData returns
// windows of data, which must not be modified while f is in use.
func ParseBytes(data []byte, lim Limits) (*File, error) {
	f, err := parse(newDecoder(&bytesAt{data}, int64(len(data)), lim.withDefaults()))
	if err != nil {
		return nil, err
	}
	f.data = data
	return f, nil
}

func parse(d *decoder) (*File, error) {
	f := &File{FileSize: d.size, Alignment: DefaultAlignment}
	nTensors, nKV, err := f.header(d)
	if err != nil {
		return nil, err
	}
	if err := f.readKVs(d, nKV); err != nil {
		return nil, err
	}
	if err := f.setAlignment(); err != nil {
		return nil, err
	}
	if err := f.readTensors(d, nTensors); err != nil {
		return nil, err
	}
	return f, nil
}

// header reads the magic, version and counts.
func (f *File) header(d *decoder) (nTensors, nKV int, err error) {
	b, err := d.next(4, "magic")
	if err != nil {
		return 0, 0, err
	}
	if string(b) != Magic {
		return 0, 0, formatErr(0, ErrMagic, "magic %q is not %q", b, Magic)
	}
	v, err := d.u32("version")
	if err != nil {
		return 0, 0, err
	}
	switch {
	case v == 1:
		return 0, 0, formatErr(4, ErrVersion, "version 1 is not supported (only 2 and 3)")
	case v == 2 || v == 3:
	case bits.ReverseBytes32(v) == 2 || bits.ReverseBytes32(v) == 3:
		return 0, 0, formatErr(4, ErrVersion, "big-endian GGUF (version %d byte-swapped) is not supported", bits.ReverseBytes32(v))
	default:
		return 0, 0, formatErr(4, ErrVersion, "version %d is not supported (only 2 and 3)", v)
	}
	f.Version = v
	nt, err := d.count("tensor count", d.lim.MaxTensors, minTensorInfoSize)
	if err != nil {
		return 0, 0, err
	}
	nk, err := d.count("metadata count", d.lim.MaxKV, minKVSize)
	if err != nil {
		return 0, 0, err
	}
	if nt > 0 || nk > 0 {
		if need := int64(nt)*minTensorInfoSize + int64(nk)*minKVSize; need > d.remaining() {
			return 0, 0, formatErr(8, ErrTruncated, "%d tensors and %d metadata pairs need at least %d bytes, only %d remain (file size %d)",
				nt, nk, need, d.remaining(), d.size)
		}
	}
	return nt, nk, nil
}

// preallocMax caps the capacity reserved for the claimed number of
// metadata pairs or tensors before they are read.
const preallocMax = 4096

// Fewest bytes a tensor table entry and a key/value pair can take.
const (
	minTensorInfoSize = 8 + 1 + 4 + 8 + 4 + 8 // name, n_dims, one dim, type, offset
	minKVSize         = 8 + 1 + 4 + 1         // key, type, one-byte value
)

// count reads a uint64 count and checks it against a limit and against
// the bytes left, at least min bytes per item.
func (d *decoder) count(what string, limit int, min int64) (int, error) {
	at := d.offset()
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(limit) {
		return 0, formatErr(at, ErrLimit, "%s %d exceeds the limit of %d", what, n, limit)
	}
	if int64(n) > d.remaining()/min {
		return 0, formatErr(at, ErrTruncated, "%s %d needs at least %d bytes, only %d remain (file size %d)",
			what, n, int64(n)*min, d.remaining(), d.size)
	}
	return int(n), nil
}

func (f *File) readKVs(d *decoder, n int) error {
	c := min(n, preallocMax) // grow past this as pairs really arrive
	f.KV = make([]KV, 0, c)
	f.kvOffset = make([]int64, 0, c)
	f.kvIndex = make(map[string]int, c)
	for i := range n {
		at := d.offset()
		k, err := d.key("metadata key " + strconv.Itoa(i))
		if err != nil {
			return err
		}
		if j, dup := f.kvIndex[k]; dup {
			return formatErr(at, ErrDuplicate, "metadata key %q repeats the key at offset %#x", k, f.kvOffset[j])
		}
		what := "key " + strconv.Quote(k)
		t, err := d.valueType(what + ": value type")
		if err != nil {
			return err
		}
		v, err := d.value(t, 0, what)
		if err != nil {
			return err
		}
		f.kvIndex[k] = len(f.KV)
		f.KV = append(f.KV, KV{Key: k, Value: v})
		f.kvOffset = append(f.kvOffset, at)
	}
	return nil
}

// setAlignment applies general.alignment: an integer, a power of two.
func (f *File) setAlignment() error {
	i, ok := f.kvIndex[KeyAlignment]
	if !ok {
		return nil
	}
	v, at := f.KV[i].Value, f.kvOffset[i]
	a, ok := v.Uint64()
	if !ok {
		return formatErr(at, ErrValueType, "key %q: expected an unsigned integer, found %s %s", KeyAlignment, v.Type(), v)
	}
	if a == 0 || a&(a-1) != 0 || a > MaxAlignment {
		return formatErr(at, ErrLayout, "key %q: alignment %d is not a power of two between 1 and %d", KeyAlignment, a, MaxAlignment)
	}
	f.Alignment = a
	return nil
}

func (f *File) readTensors(d *decoder, n int) error {
	// count checked n against the limit and against the bytes left (at
	// least minTensorInfoSize each), so reserving n entries up front costs
	// at most a few bytes per byte of the file, and saves the garbage of
	// growing the table and the index entry by entry.
	f.Tensors = make([]TensorInfo, 0, n)
	f.tensorIndex = make(map[string]int, n)
	offsets := make([]int64, 0, n)
	var dims []uint64 // slab the entries' dimensions are cut from
	for i := range n {
		at := d.offset()
		if cap(dims)-len(dims) < MaxDims {
			dims = make([]uint64, 0, min(MaxDims*(n-i), dimSlab))
		}
		t, err := d.tensorInfo(i, &dims)
		if err != nil {
			return err
		}
		if j, dup := f.tensorIndex[t.Name]; dup {
			return formatErr(at, ErrDuplicate, "tensor name %q repeats the tensor at offset %#x", t.Name, offsets[j])
		}
		f.tensorIndex[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		offsets = append(offsets, at)
	}
	end := d.offset()
	pad := int64((f.Alignment - uint64(end)%f.Alignment) % f.Alignment)
	f.DataOffset = end + pad // cannot overflow: end <= size and pad < 2^30
	return f.checkLayout(offsets)
}

// dimSlab is the number of dimensions allocated at a time for the
// tensor table.
const dimSlab = 4096

// tensorWhat names the tensor called name in messages.
func tensorWhat(name string) string { return "tensor " + strconv.Quote(name) }

// tensorField returns the next n bytes, the field of the tensor called
// name. The message naming them is built only when they are missing: a
// table can hold hundreds of thousands of entries.
func (d *decoder) tensorField(n int, name, field string) ([]byte, error) {
	if d.end-d.pos < n {
		if err := d.fill(n, tensorWhat(name)+": "+field); err != nil {
			return nil, err
		}
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// tensorInfo reads entry i of the tensor table, cutting its dimensions
// from the end of *slab, which has room for MaxDims more.
func (d *decoder) tensorInfo(i int, slab *[]uint64) (TensorInfo, error) {
	at := d.offset()
	name, err := d.strLazy(d.lim.MaxKeyLen, func() string { return "tensor " + strconv.Itoa(i) + " name" })
	if err != nil {
		return TensorInfo{}, err
	}
	if name == "" {
		return TensorInfo{}, formatErr(at, ErrType, "tensor %d: empty name", i)
	}
	le := binary.LittleEndian
	dat := d.offset()
	b, err := d.tensorField(4, name, "dimension count")
	if err != nil {
		return TensorInfo{}, err
	}
	nd := le.Uint32(b)
	if nd < 1 || nd > MaxDims {
		return TensorInfo{}, formatErr(dat, ErrLayout, "%s: %d dimensions (must be 1 to %d)", tensorWhat(name), nd, MaxDims)
	}
	if b, err = d.tensorField(8*int(nd), name, "dimensions"); err != nil {
		return TensorInfo{}, err
	}
	k := len(*slab)
	dims := (*slab)[k : k+int(nd) : k+int(nd)]
	*slab = (*slab)[:k+int(nd)]
	for j := range dims {
		dims[j] = le.Uint64(b[8*j:])
		if dims[j] == 0 {
			return TensorInfo{}, formatErr(dat+4+8*int64(j), ErrLayout, "%s: dimension %d is 0", tensorWhat(name), j)
		}
	}
	tat := d.offset()
	if b, err = d.tensorField(4, name, "type"); err != nil {
		return TensorInfo{}, err
	}
	typ := tensor.Type(le.Uint32(b))
	if err := typ.Check(); err != nil {
		return TensorInfo{}, &FormatError{Offset: tat, Msg: tensorWhat(name) + ": " + err.Error(), Err: ErrType}
	}
	t := TensorInfo{Name: name, Dims: dims, Type: typ}
	if t.Size, err = typ.Bytes(dims); err != nil {
		return TensorInfo{}, &FormatError{Offset: dat, Msg: tensorWhat(name) + ": " + shapeString(dims) + " " + typ.String() + ": " + err.Error(), Err: ErrLayout}
	}
	if b, err = d.tensorField(8, name, "data offset"); err != nil {
		return TensorInfo{}, err
	}
	t.Offset = le.Uint64(b)
	return t, nil
}

// checkLayout checks that every tensor is aligned, lies inside the file
// and overlaps no other. offsets are the tensor table entries' offsets.
func (f *File) checkLayout(offsets []int64) error {
	if len(f.Tensors) == 0 {
		return nil
	}
	if f.DataOffset > f.FileSize {
		return formatErr(f.DataOffset, ErrTruncated, "data section starts at %d, beyond the end of the file (size %d)", f.DataOffset, f.FileSize)
	}
	room := uint64(f.FileSize - f.DataOffset)
	for i := range f.Tensors {
		t := &f.Tensors[i]
		if t.Offset%f.Alignment != 0 {
			return formatErr(offsets[i], ErrLayout, "tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > room {
			// DataOffset+Offset may not even fit in 64 bits: name both.
			return formatErr(offsets[i], ErrLayout, "tensor %q: data offset %d starts beyond the file (data section at %d, size %d)",
				t.Name, t.Offset, f.DataOffset, f.FileSize)
		}
		if uint64(t.Size) > room-t.Offset {
			start := f.DataOffset + int64(t.Offset) // <= FileSize: Offset <= room
			return formatErr(offsets[i], ErrLayout, "tensor %q: data [%d, %d) ends beyond the file (size %d)",
				t.Name, start, uint64(start)+uint64(t.Size), f.FileSize)
		}
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		x, y := f.Tensors[a].Offset, f.Tensors[b].Offset
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return a - b
	})
	for k := 1; k < len(order); k++ {
		p, c := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Offset+uint64(p.Size) > c.Offset {
			return formatErr(offsets[order[k]], ErrLayout, "tensor %q: data [%d, %d) overlaps tensor %q at [%d, %d)",
				c.Name, c.Offset, c.Offset+uint64(c.Size), p.Name, p.Offset, p.Offset+uint64(p.Size))
		}
	}
	return nil
}

// shapeString formats dims like "[4096 32000]".
func shapeString(dims []uint64) string {
	b := []byte{'['}
	for i, x := range dims {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendUint(b, x, 10)
	}
	return string(append(b, ']'))
}
