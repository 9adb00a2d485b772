package gguf

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
)

// Open opens the GGUF file at path and parses it. The file is mapped
// read-only into memory when the platform allows (tensor data is then
// used in place); otherwise tensor data is read on demand. Close
// releases the mapping and the file. When path is the first shard of a
// split file ("<prefix>-00001-of-00003.gguf"), Open opens every shard
// beside it and joins them (see JoinSplit), as llama.cpp does.
func Open(path string, lim Limits) (*File, error) {
	return openPathSplit(path, lim, openFile)
}

// OpenFile parses an already-open GGUF file, mapping it read-only when
// the platform allows. It does not close fh; in fallback mode (no
// mapping) fh must stay open while f is used. The file must not shrink
// while mapped. A shard of a split file is refused with a *SplitError
// naming the first shard missing: the shards are opened together with
// OpenSplit.
func OpenFile(fh *os.File, lim Limits) (*File, error) {
	f, err := openFile(fh, lim)
	if err != nil {
		return nil, err
	}
	if err := checkWhole(f, fh.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openFile is OpenFile for one file or one shard.
func openFile(fh *os.File, lim Limits) (*File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: stat: %w", err)
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file", fh.Name())
	}
	if data, unmap, err := mmapFile(fh, size); err == nil {
		f, err := ParseBytes(data, lim)
		if err != nil {
			unmap()
			return nil, err
		}
		f.unmap = unmap
		return f, nil
	}
	return Parse(fh, size, lim)
}

// Close releases the memory mapping and, for a File from Open in
// fallback mode, the file. Slices from TensorData must not be used after.
func (f *File) Close() error {
	var err error
	for _, s := range f.shards {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}
	if f.unmap != nil {
		err = f.unmap()
		f.unmap = nil
	}
	f.data = nil
	if f.owned != nil {
		if cerr := f.owned.Close(); err == nil {
			err = cerr
		}
		f.owned = nil
	}
	f.r = nil
	return err
}

// Mapped reports whether tensor data is served from memory (a mapping or
// ParseBytes) rather than read on demand.
func (f *File) Mapped() bool {
	if f.shards != nil {
		for _, s := range f.shards {
			if !s.Mapped() {
				return false
			}
		}
		return true
	}
	return f.data != nil
}

// Tensor returns the tensor table entry named name.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// TensorData returns the bytes of t's data. When the file is mapped the
// slice is a read-only window of the mapping (writing to it faults); from
// LoadFile it is a window of the private in-memory copy (which callers
// must treat as read-only too); otherwise it is a new buffer read from the
// file.
func (f *File) TensorData(t *TensorInfo) ([]byte, error) {
	if t == nil {
		return nil, &FormatError{Offset: -1, Msg: "nil tensor", Err: ErrNotFound}
	}
	if f.shards != nil {
		i, ok := f.tensorIndex[t.Name]
		if !ok {
			return nil, &FormatError{Offset: -1, Msg: "tensor " + strconv.Quote(t.Name) + " not found", Err: ErrNotFound}
		}
		return f.shards[f.shardOf[i]].TensorData(t)
	}
	if t.Offset > math.MaxInt64 || t.Size < 0 {
		return nil, formatErr(-1, ErrLayout, "tensor %q: bad offset %d or size %d", t.Name, t.Offset, t.Size)
	}
	start := f.DataOffset + int64(t.Offset)
	if start < f.DataOffset || t.Size > f.FileSize-start || start > f.FileSize {
		return nil, formatErr(-1, ErrLayout, "tensor %q: data [%d, +%d) lies outside the file (size %d)", t.Name, start, t.Size, f.FileSize)
	}
	end := start + t.Size
	if f.data != nil {
		return f.data[start:end:end], nil
	}
	if f.r == nil {
		return nil, formatErr(-1, ErrIO, "tensor %q: file is closed", t.Name)
	}
	buf := make([]byte, t.Size)
	n, err := f.r.ReadAt(buf, start)
	if n == len(buf) {
		return buf, nil
	}
	if err == nil || err == io.EOF {
		return nil, formatErr(start+int64(n), ErrTruncated, "tensor %q: file ends inside the data", t.Name)
	}
	return nil, &FormatError{Offset: start + int64(n), Msg: "tensor " + strconv.Quote(t.Name) + ": " + err.Error(), Err: ErrIO}
}
