package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// errProbeRefused means a probe was asked for outside a fully locked-down
// worker; probes run only inside the sandbox, after seccomp stage 2, and
// not in seccomp-log mode (where they would really happen).
var errProbeRefused = errors.New("sandbox: probes run only in a locked-down worker after seccomp stage 2, not in seccomp-log mode")

// runProbe attempts the forbidden action name. It returns only if the
// action did not kill the process: with the errno that denied it, or with
// an error describing that it succeeded.
func runProbe(rep *Report, name string, brokerPid int) ProbeResult {
	if !rep.serving || !rep.wc.Enabled || rep.wc.SeccompLog {
		return ProbeResult{Name: name, How: errProbeRefused.Error()}
	}
	err := probeCall(name, brokerPid)
	switch {
	case err == nil:
		return ProbeResult{Name: name, Blocked: false, How: "succeeded"}
	case errors.Is(err, errUnknownProbe):
		return ProbeResult{Name: name, Blocked: false, How: err.Error()}
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return ProbeResult{Name: name, Blocked: true, How: unix.ErrnoName(en)}
	}
	return ProbeResult{Name: name, Blocked: true, How: err.Error()}
}

var errUnknownProbe = errors.New("unknown probe")

// probeCall makes the system calls of one probe.
func probeCall(name string, brokerPid int) error {
	switch name {
	case "open /etc/passwd":
		return openProbe("/etc/passwd", unix.O_RDONLY)
	case "list /":
		return openProbe("/", unix.O_RDONLY|unix.O_DIRECTORY)
	case "read /proc":
		return openProbe("/proc/self/status", unix.O_RDONLY)
	case "open the model for writing":
		return openProbe(ModelPath, unix.O_RDWR)
	case "write the model":
		_, err := unix.Write(FDModel, []byte("x"))
		return err
	case "create a socket", "connect on loopback":
		return socketProbe(unix.AF_INET, &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}})
	case "connect to an abstract unix socket":
		return socketProbe(unix.AF_UNIX, &unix.SockaddrUnix{Name: "@lisa-probe"})
	case "fork", "clone without CLONE_THREAD":
		return rawProbe(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0)
	case "clone3":
		return rawProbe(unix.SYS_CLONE3, 0, 0, 0)
	case "exec":
		return unix.Exec(ModelPath, []string{ModelPath}, nil)
	case "ptrace":
		return rawProbe(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
	case "kill the broker's pid":
		return rawProbe(unix.SYS_KILL, uintptr(brokerPid), uintptr(unix.SIGKILL), 0)
	case "tgkill another tgid":
		return rawProbe(unix.SYS_TGKILL, 2, 2, uintptr(unix.SIGKILL))
	case "tkill":
		return rawProbe(unix.SYS_TKILL, uintptr(unix.Gettid()), 0, 0)
	case "prlimit", "setrlimit":
		return unix.Prlimit(0, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}, nil)
	case "setuid":
		return rawProbe(unix.SYS_SETUID, 0, 0, 0)
	case "setgid":
		return rawProbe(unix.SYS_SETGID, 0, 0, 0)
	case "mount":
		return unix.Mount("none", "/", "tmpfs", 0, "")
	case "umount2":
		return unix.Unmount(ModelPath, unix.MNT_DETACH)
	case "unshare":
		return rawProbe(unix.SYS_UNSHARE, unix.CLONE_NEWUSER, 0, 0)
	case "setns":
		return rawProbe(unix.SYS_SETNS, 0, 0, 0)
	case "mmap PROT_EXEC of the model":
		_, err := unix.Mmap(FDModel, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
		return err
	case "mprotect PROT_EXEC":
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		return unix.Mprotect(b, unix.PROT_READ|unix.PROT_EXEC)
	}
	return otherProbe(name)
}

// otherProbe covers the calls that take no meaningful argument.
func otherProbe(name string) error {
	nrs := map[string]uintptr{
		"keyctl": unix.SYS_KEYCTL, "bpf": unix.SYS_BPF, "perf_event_open": unix.SYS_PERF_EVENT_OPEN,
		"io_uring_setup": unix.SYS_IO_URING_SETUP, "userfaultfd": unix.SYS_USERFAULTFD,
		"process_vm_readv": unix.SYS_PROCESS_VM_READV,
	}
	nr, ok := nrs[name]
	if !ok {
		return fmt.Errorf("%w %q", errUnknownProbe, name)
	}
	return rawProbe(nr, 0, 0, 0)
}

func openProbe(path string, flags int) error {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

func socketProbe(domain int, sa unix.Sockaddr) error {
	fd, err := unix.Socket(domain, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, sa)
}

func rawProbe(nr, a1, a2, a3 uintptr) error {
	r, _, e := unix.RawSyscall(nr, a1, a2, a3)
	if e != 0 {
		return e
	}
	if nr == unix.SYS_CLONE && r == 0 {
		os.Exit(0) // the child of a fork that should not have happened
	}
	return nil
}
