//go:build !linux

package kernels

import "testing"

// weightMemory returns n bytes of memory for a benchmark's weights (Go's
// heap where the loader's transparent huge pages do not exist).
func weightMemory(_ testing.TB, n int) []byte { return make([]byte, n) }
