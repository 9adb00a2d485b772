//go:build !linux

package seccomp

import "errors"

// Filter flags for Install (no effect off Linux).
const (
	// FlagTSync applies the filter to every thread of the process.
	FlagTSync = 1
	// FlagLog has the kernel log every action other than allow.
	FlagLog = 2
)

// Install fails: seccomp filters exist only on Linux.
func (p *Program) Install(flags uint) error {
	return errors.New("seccomp: filters are supported only on Linux")
}
