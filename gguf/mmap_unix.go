//go:build unix

package gguf

import (
	"errors"
	"math"
	"os"
	"syscall"
)

// mmapFile maps the first size bytes of fh read-only and shared.
func mmapFile(fh *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, errors.New("gguf: size not mappable")
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	adviseMapped(data)
	return data, func() error { return syscall.Munmap(data) }, nil
}
