//go:build !linux

package gguf

import "os"

// readAnon is not implemented off Linux: LoadFile falls back to OpenFile.
func readAnon(*os.File, int64) ([]byte, func() error, error) {
	return nil, nil, errNoAnon
}
