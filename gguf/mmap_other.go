//go:build !unix

package gguf

import (
	"errors"
	"os"
)

// mmapFile reports that this platform has no memory mapping; the reader
// falls back to reading tensor data on demand.
func mmapFile(*os.File, int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("gguf: memory mapping is not supported on this platform")
}
