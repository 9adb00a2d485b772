//go:build !linux

package supervisor

import (
	"strconv"
	"syscall"
)

// signalName returns the signal's number as text: names are known on
// Linux only, where workers run.
func signalName(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) }
