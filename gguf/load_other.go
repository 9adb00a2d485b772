//go:build !linux

package gguf

// allocModel returns size bytes of the Go heap for the model copy (other
// platforms get no huge-page advice); releasing it is left to the garbage
// collector once the File drops it.
func allocModel(size int) ([]byte, func() error, error) {
	return make([]byte, size), func() error { return nil }, nil
}

// adviseMapped gives no advice on other platforms (see load_linux.go).
func adviseMapped([]byte) {}
