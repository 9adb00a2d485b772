//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropPrivileges empties every capability set on every thread, sets
// no_new_privs on every thread and makes the process not dumpable. It
// needs a cgo-free binary (syscall.AllThreadsSyscall). hostNS says a test
// switched the namespaces off: an unprivileged worker in the host's user
// namespace cannot shrink its bounding set (EPERM), which no_new_privs
// makes moot there.
func dropPrivileges(hostNS bool) error {
	for c := uintptr(0); c < 64; c++ {
		_, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0)
		if e == unix.EINVAL {
			break // past the kernel's last capability
		}
		if e == unix.EPERM && hostNS {
			break
		}
		if e == unix.ENOTSUP {
			return errors.New("sandbox: cannot change every thread's privileges: the binary was built with cgo (build with CGO_ENABLED=0)")
		}
		if e != 0 {
			return fmt.Errorf("sandbox: drop capability %d from the bounding set: %w", c, e)
		}
	}
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT,
		unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox: clear ambient capabilities: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, e := syscall.AllThreadsSyscall(unix.SYS_CAPSET,
		uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&hdr)
	runtime.KeepAlive(&data)
	if e != 0 {
		return fmt.Errorf("sandbox: clear capability sets: %w", e)
	}
	if _, _, e := syscall.AllThreadsSyscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("sandbox: set no_new_privs: %w", e)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: set not dumpable: %w", err)
	}
	return checkNoCapabilities()
}

// checkNoCapabilities reads back the calling thread's capability sets.
func checkNoCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: read back capabilities: %w", err)
	}
	for _, d := range data {
		if d.Effective|d.Permitted|d.Inheritable != 0 {
			return errors.New("sandbox: capabilities remain after dropping them")
		}
	}
	return nil
}
