//go:build !amd64 || purego

package kernels

// prefetch does nothing in this build: the hint is amd64 assembly.
func prefetch([]byte, int) {}
