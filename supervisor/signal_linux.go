package supervisor

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName returns a signal's name, such as "SIGSYS".
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
