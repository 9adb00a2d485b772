package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// errProbeRefused means a probe was asked for outside a locked-down
// worker; probes run only inside the sandbox, at their phase, and not in
// seccomp-log mode (where they would really happen).
var errProbeRefused = errors.New("sandbox: probes run only in a locked-down worker at their phase, not in seccomp-log mode")

// Probe targets.
const (
	// bombThreads is the thread bomb's goal: far past any pids limit the
	// broker sets by default, far below what hurts the host.
	bombThreads = 512
	// abstractProbeName is the abstract unix socket the probe worker
	// listens on before Landlock, for the scope probe.
	abstractProbeName = "@lisa-probe-scope"
)

// probeEnv is what a probe may use besides its name: the broker's pid,
// the model's host path, the worker's memory limit, and what the probe
// worker prepared before Landlock.
type probeEnv struct {
	brokerPid   int
	hostModel   string
	memoryLimit int64
	child       int // a process forked before Landlock (signal scope), 0 if none
}

// errSkipped marks a probe this kernel cannot exercise.
var errSkipped = errors.New("skipped")

// runProbe attempts the forbidden action of spec at its phase. It returns
// only if the action did not kill the process: with the errno that denied
// it, or saying that it succeeded.
func runProbe(rep *Report, spec probeSpec, phase string, env probeEnv) ProbeResult {
	r := ProbeResult{Name: spec.name, Phase: spec.phase, Evidence: "the worker's reply"}
	locked := rep.wc.Enabled && !rep.wc.SeccompLog && rep.locked
	if !locked || phase != spec.phase || (phase == PhaseServing && !rep.serving) {
		r.How = errProbeRefused.Error()
		return r
	}
	err := probeCall(spec.name, env)
	var en syscall.Errno
	switch {
	case err == nil:
		r.How = "succeeded"
	case errors.Is(err, errSkipped):
		r.Blocked, r.How = true, err.Error()
	case errors.Is(err, errUnknownProbe):
		r.How = err.Error()
	case errors.As(err, &en):
		r.Blocked, r.How = true, unix.ErrnoName(en)
	default:
		r.Blocked, r.How = true, err.Error()
	}
	return r
}

var errUnknownProbe = errors.New("unknown probe")

// probeCall makes the system calls of one probe.
func probeCall(name string, env probeEnv) error {
	switch name {
	case "open /etc/passwd":
		return openProbe("/etc/passwd", unix.O_RDONLY)
	case "list /", "list / past seccomp (Landlock)":
		return openProbe("/", unix.O_RDONLY|unix.O_DIRECTORY)
	case "read /proc":
		return openProbe("/proc/self/status", unix.O_RDONLY)
	case "open the model for writing":
		return openProbe(ModelPath, unix.O_RDWR)
	case "write the model":
		_, err := unix.Write(FDModel, []byte("x"))
		return err
	case "create a socket", "connect on loopback", "TCP connect past socket (Landlock network rule)":
		return socketProbe(unix.AF_INET, &unix.SockaddrInet4{Port: 1, Addr: [4]byte{127, 0, 0, 1}})
	case "connect to an abstract unix socket":
		return socketProbe(unix.AF_UNIX, &unix.SockaddrUnix{Name: "@lisa-probe"})
	case "connect to an abstract unix socket past seccomp (Landlock scope)":
		if err := needABI(6); err != nil {
			return err
		}
		return socketProbe(unix.AF_UNIX, &unix.SockaddrUnix{Name: abstractProbeName})
	case "signal a process outside the domain (Landlock scope)":
		if err := needABI(6); err != nil {
			return err
		}
		if env.child <= 0 {
			return errors.New("setup: no child process")
		}
		return unix.Kill(env.child, 0)
	case "UDP to the host's loopback past seccomp (network namespace)":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Sendto(fd, []byte("lisa probe"), 0, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}})
	case "stat a host file past seccomp (root)":
		var st unix.Stat_t
		return unix.Stat(env.hostModel, &st)
	case "create a socket while loading":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "fork", "clone without CLONE_THREAD":
		return rawProbe(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0)
	case "clone3":
		return rawProbe(unix.SYS_CLONE3, 0, 0, 0)
	case "exec":
		return unix.Exec(ModelPath, []string{ModelPath}, nil)
	case "ptrace":
		return rawProbe(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
	case "kill the broker's pid":
		return rawProbe(unix.SYS_KILL, uintptr(env.brokerPid), uintptr(unix.SIGKILL), 0)
	case "tgkill another tgid":
		return rawProbe(unix.SYS_TGKILL, 2, 2, uintptr(unix.SIGKILL))
	case "tkill":
		return rawProbe(unix.SYS_TKILL, uintptr(unix.Gettid()), 0, 0)
	case "prlimit":
		return unix.Prlimit(0, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}, nil)
	case "setrlimit":
		// setrlimit itself, not the prlimit64 the Go wrappers use.
		lim := unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}
		_, _, e := unix.RawSyscall(unix.SYS_SETRLIMIT, unix.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0)
		runtime.KeepAlive(&lim)
		return errnoErr(e)
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
	return memoryProbe(name, env)
}

// memoryProbe covers the probes that try to grow past the memory and
// thread limits. Mappings are kept (never touched): the broker reads the
// worker's VmData to judge.
func memoryProbe(name string, env probeEnv) error {
	past := uintptr(pastTheCap(env.memoryLimit))
	switch name {
	case "map shared memory past the cap":
		return mmapProbe(past, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	case "map private memory past the cap":
		return mmapProbe(past, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	case "grow a mapping with mremap":
		p, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		if e != 0 {
			return fmt.Errorf("setup: %w", e)
		}
		_, _, e = unix.RawSyscall6(unix.SYS_MREMAP, p, 4096, past, unix.MREMAP_MAYMOVE, 0, 0)
		return errnoErr(e)
	case "memfd_create":
		name := []byte("lisa-probe\x00")
		_, _, e := unix.RawSyscall(unix.SYS_MEMFD_CREATE, uintptr(unsafe.Pointer(&name[0])), 0, 0)
		runtime.KeepAlive(name)
		return errnoErr(e)
	case "fcntl F_SETOWN on the IPC socket":
		// SIGIO to a chosen process: a signal path around kill's rules.
		return rawProbe(unix.SYS_FCNTL, FDIPC, unix.F_SETOWN, uintptr(unix.Getpid()))
	case "thread bomb":
		return threadBomb(bombThreads)
	}
	return otherProbe(name)
}

// pastTheCap is how much the memory probes map: past the memory limit
// and past RLIMIT_AS (limit + model + reserve).
func pastTheCap(memoryLimit int64) int64 {
	return 2*max(memoryLimit, 512<<20) + asReserve
}

// threadBomb holds n OS threads at once: each goroutine locks its thread
// and sleeps in a system call. Past a pids limit the runtime cannot
// create a thread and the worker dies ("failed to create new OS thread").
func threadBomb(n int) error {
	var up atomic.Int32
	for i := 0; i < n; i++ {
		go func() {
			runtime.LockOSThread()
			up.Add(1)
			ts := unix.Timespec{Sec: 10}
			unix.Nanosleep(&ts, nil)
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for int(up.Load()) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d threads started", up.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func mmapProbe(size uintptr, prot, flags int) error {
	_, _, e := unix.RawSyscall6(unix.SYS_MMAP, 0, size, uintptr(prot), uintptr(flags), ^uintptr(0), 0)
	return errnoErr(e)
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

// needABI skips a probe of a Landlock feature the kernel lacks.
func needABI(want int) error {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil || abi < want {
		return fmt.Errorf("%w: needs Landlock ABI %d, the kernel has %d", errSkipped, want, abi)
	}
	return nil
}

func errnoErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
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
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child of a fork that should not have happened
	}
	return nil
}

// prepareScopeProbes makes, before Landlock, what the scope probes need
// outside the worker's Landlock domain: a listening abstract unix socket
// and a child process that waits to be killed. It runs in the worker's
// own namespaces, so neither is reachable from outside.
func prepareScopeProbes(env *probeEnv) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("scope probe listener: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: abstractProbeName}); err != nil {
		return fmt.Errorf("scope probe listener: %w", err)
	}
	if err := unix.Listen(fd, 4); err != nil {
		return fmt.Errorf("scope probe listener: %w", err)
	}
	// A raw fork: the child only sleeps, on raw system calls, until the
	// parent-death signal (the worker's exit) kills it.
	r, _, e := unix.RawSyscall(unix.SYS_CLONE, uintptr(unix.SIGCHLD), 0, 0)
	if e != 0 {
		return fmt.Errorf("scope probe child: %w", e)
	}
	if r == 0 {
		unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0)
		for {
			unix.RawSyscall6(unix.SYS_PPOLL, 0, 0, 0, 0, 0, 0)
		}
	}
	env.child = int(r)
	return nil
}
