package gguf

import (
	"fmt"
	"syscall"
)

// allocModel returns size bytes of private anonymous memory advised to use
// transparent huge pages, and the function that unmaps it.
func allocModel(size int) ([]byte, func() error, error) {
	data, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, fmt.Errorf("gguf: %d bytes of memory for the model: %w", size, err)
	}
	// Advice only: without transparent huge pages (or with them set to
	// "never") the copy stays on 4 KiB pages.
	_ = syscall.Madvise(data, syscall.MADV_HUGEPAGE)
	return data, func() error { return syscall.Munmap(data) }, nil
}
