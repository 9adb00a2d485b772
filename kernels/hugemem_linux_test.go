package kernels

import (
	"syscall"
	"testing"
)

// weightMemory returns n bytes of memory for a benchmark's weights as
// the model loader allocates a model it copies (gguf's allocModel):
// private anonymous memory advised to use transparent huge pages, unmapped
// when b ends. Go's heap stays on 4 KiB pages where transparent huge pages
// are set to "madvise", and on those every 4 KiB of weights streamed is a
// TLB miss and stops the hardware prefetchers, which a decode step on the
// loaded model does not pay.
func weightMemory(b testing.TB, n int) []byte {
	data, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		b.Fatalf("%d bytes of weight memory: %v", n, err)
	}
	_ = syscall.Madvise(data, syscall.MADV_HUGEPAGE)
	b.Cleanup(func() { _ = syscall.Munmap(data) })
	return data
}
