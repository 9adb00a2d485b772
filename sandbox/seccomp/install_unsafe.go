//go:build linux

package seccomp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Filter flags for Install.
const (
	// FlagTSync applies the filter to every thread of the process.
	FlagTSync = unix.SECCOMP_FILTER_FLAG_TSYNC
	// FlagLog has the kernel log every action other than allow.
	FlagLog = unix.SECCOMP_FILTER_FLAG_LOG
)

// Install loads p into the kernel for every thread of the calling process
// (FlagTSync is always added). no_new_privs must already be set.
func (p *Program) Install(flags uint) error {
	raw, err := p.Raw()
	if err != nil {
		return err
	}
	if len(raw) == 0 || len(raw) > 4096 {
		return fmt.Errorf("seccomp: program of %d instructions", len(raw))
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		uintptr(flags|FlagTSync), uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("seccomp: install %d instructions: %w", len(raw), errno)
	}
	if r1 != 0 {
		return fmt.Errorf("seccomp: install: thread %d could not be synchronised", r1)
	}
	return nil
}
