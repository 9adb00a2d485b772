package gguf

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
)

// loadChunk is the most bytes one read system call copies.
const loadChunk = 8 << 20

// readAnon copies the first size bytes of fh into a private anonymous
// mapping advised to use transparent huge pages, and returns it with the
// function that unmaps it.
func readAnon(fh *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("gguf: file size %d cannot be held in memory", size)
	}
	data, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("gguf: %d bytes of memory for the model: %w", size, err)
	}
	free := func() error { return syscall.Munmap(data) }
	// Advice only: without transparent huge pages (or with them set to
	// "never") the copy stays on 4 KiB pages.
	_ = syscall.Madvise(data, syscall.MADV_HUGEPAGE)
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
