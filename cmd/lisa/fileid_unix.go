//go:build unix

package main

import (
	"fmt"
	"io/fs"
	"syscall"
)

// fileID is the device and inode of the file st describes: a file
// replaced by another (a new copy renamed over it) has another, whatever
// its size and time.
func fileID(st fs.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", sys.Dev, sys.Ino)
	}
	return "-"
}
