package gguf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// loadChunk is the most bytes one read system call copies.
const loadChunk = 8 << 20

// LoadFile reads the whole GGUF file fh into private anonymous memory and
// parses it there: unlike OpenFile's shared mapping, the tensor data is a
// copy that nobody else can change after it was validated, and on Linux
// it is backed by transparent huge pages where the kernel offers them
// (madvise mode). A decode step streams every weight once per token, and
// from such memory the weight kernels stream about 30% faster than from
// the page cache's 4 KiB pages (TinyLlama-shaped Q4_K_M, two threads,
// 20.3 → 26.7 tokens/s, measured side by side; see bench/README.md). The
// cost is the time to read the file once (the page cache is read at
// memory speed) and that the copy's pages are the process's own (its
// resident size is the file's, as a fully touched mapping's is).
//
// The header is parsed from fh first, so a file that is not a valid GGUF
// is refused before any of it is copied. It does not close fh. Off Linux
// the copy lives on the Go heap, without huge-page advice.
//
// A shard of a split file is refused, as by OpenFile; LoadSplit loads the
// shards together.
func LoadFile(fh *os.File, lim Limits) (*File, error) {
	return loadShard(fh, lim, true)
}

// loadFile is LoadFile for one file or one shard.
func loadFile(fh *os.File, lim Limits) (*File, error) { return loadShard(fh, lim, false) }

// loadShard is LoadFile; whole refuses a shard of a split file before
// anything is copied.
func loadShard(fh *os.File, lim Limits, whole bool) (*File, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file", fh.Name())
	}
	size := st.Size()
	head, err := Parse(fh, size, lim)
	if err != nil {
		return nil, err
	}
	if whole {
		if err := checkWhole(head, fh.Name()); err != nil {
			return nil, err
		}
	}
	data, free, err := readModel(fh, size)
	if err != nil {
		return nil, err
	}
	f, err := ParseBytes(data, lim)
	if err != nil {
		free()
		return nil, err
	}
	f.unmap = free
	return f, nil
}

// Load opens the GGUF file at path and reads it into memory with
// LoadFile; the file is closed before it returns. The first shard of a
// split file is loaded with all its shards, as Open opens them.
func Load(path string, lim Limits) (*File, error) {
	return openPathSplit(path, lim, loadFile)
}

// readModel copies the first size bytes of fh into memory from allocModel
// and returns it with the function that releases it. A file that shrinks
// meanwhile is an ErrTruncated *FormatError at the offset it ended.
func readModel(fh *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("gguf: file size %d cannot be held in memory", size)
	}
	data, free, err := allocModel(int(size))
	if err != nil {
		return nil, nil, err
	}
	for off := int64(0); off < size; {
		end := min(off+loadChunk, size)
		n, err := fh.ReadAt(data[off:end], off)
		off += int64(n)
		if off < end {
			free()
			if err == nil || errors.Is(err, io.EOF) {
				return nil, nil, formatErr(off, ErrTruncated, "file shrank to %d bytes while being read (was %d)", off, size)
			}
			return nil, nil, &FormatError{Offset: off, Msg: "reading the file into memory: " + err.Error(), Err: ErrIO}
		}
	}
	return data, free, nil
}
