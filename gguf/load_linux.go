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

// adviseMapped advises the kernel to map the model file's pages with
// transparent huge pages where the page cache holds them in 2 MiB
// folios (and to read them in such folios on a fault): a token's
// products stream gigabytes of weights, and on 4 KiB pages every page
// misses the TLB (a page walk, its table entries mostly out of cache
// after the weights went by) and stops the hardware prefetchers. The
// mapping stays a read-only view of the page cache, so no memory is
// added; the advice is dropped where the kernel cannot follow it.
func adviseMapped(data []byte) {
	_ = syscall.Madvise(data, syscall.MADV_HUGEPAGE)
}
