package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/sandbox/seccomp"
)

// Helper modes of the test binary (see TestMain).
const (
	helperFilter = "--test-filter"
	helperBroker = "--test-broker"
)

// filterChild installs the real filters of the stages in args[0] ("1",
// "12", "12log") and makes one call: args[1] is its name, the rest its
// arguments ("self" is the pid, "tid" the thread id, "self+1", "self|hi"
// variants). It prints "ret=R errno=E" and exits 0, unless the kernel
// kills it first.
func filterChild(args []string) int {
	runtime.LockOSThread()
	if len(args) < 2 {
		return 3
	}
	pid, tid := os.Getpid(), unix.Gettid()
	vals := make([]uintptr, 6)
	for i, a := range args[2:] {
		v, err := argValue(a, pid, tid)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		vals[i] = v
	}
	a, err := seccomp.LookupArch(runtime.GOARCH)
	if err != nil {
		return 3
	}
	nr, ok := a.Number(args[1])
	if !ok {
		fmt.Fprintln(os.Stderr, "no call", args[1])
		return 3
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		fmt.Fprintln(os.Stderr, "no_new_privs:", e)
		return 3
	}
	log := strings.HasSuffix(args[0], "log")
	for _, st := range strings.TrimSuffix(args[0], "log") {
		p, err := seccomp.Compile(seccomp.Options{Arch: runtime.GOARCH, Stage: seccomp.Stage(st - '0'), SelfPid: pid, Log: log})
		if err == nil {
			err = p.Install(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "install:", err)
			return 3
		}
	}
	r, _, e := unix.Syscall6(uintptr(nr), vals[0], vals[1], vals[2], vals[3], vals[4], vals[5])
	if nr == unix.SYS_CLONE && r == 0 && e == 0 {
		unix.Exit(0) // a child that should not exist
	}
	fmt.Printf("ret=%d errno=%d\n", int64(r), int(e))
	return 0
}

func argValue(a string, pid, tid int) (uintptr, error) {
	switch a {
	case "self":
		return uintptr(pid), nil
	case "self+1":
		return uintptr(pid + 1), nil
	case "self|hi":
		return uintptr(pid) | 1<<32, nil
	case "tid":
		return uintptr(tid), nil
	}
	v, err := strconv.ParseInt(a, 0, 64)
	return uintptr(v), err
}

// outcome is what happened to a filter child.
type outcome struct {
	killed bool
	errno  syscall.Errno
	out    string
}

func runFilterChild(t *testing.T, stages, call string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{helperFilter, stages, call}, args...)...)
	cmd.Env = []string{}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() && ws.Signal() == syscall.SIGSYS {
			return outcome{killed: true}
		}
		t.Fatalf("%s %s%v: child failed: %v; stderr: %s", stages, call, args, err, stderr.String())
	}
	if err != nil {
		t.Fatalf("%s %s%v: %v", stages, call, args, err)
	}
	var r, e int
	if _, err := fmt.Sscanf(stdout.String(), "ret=%d errno=%d", &r, &e); err != nil {
		t.Fatalf("%s %s%v: bad output %q", stages, call, args, stdout.String())
	}
	return outcome{errno: syscall.Errno(e), out: stdout.String()}
}

// TestRealFilters installs the compiled filters in child processes and
// makes allowed and denied calls, both sides of every argument rule: only
// the kernel can show a wrong jump offset (DESIGN.md §2, the ADR in seeds/).
func TestRealFilters(t *testing.T) {
	for _, c := range realFilterCases() {
		if _, ok := mustArch(t).Number(c.call); !ok {
			continue
		}
		got := runFilterChild(t, c.stages, c.call, c.args...)
		switch {
		case c.want == kill && !got.killed:
			t.Errorf("stage %s: %s%v: not killed (%s)", c.stages, c.call, c.args, got.out)
		case c.want == allow && got.killed:
			t.Errorf("stage %s: %s%v: killed by SIGSYS, want allowed", c.stages, c.call, c.args)
		case c.want == allow && got.errno != c.errno:
			t.Errorf("stage %s: %s%v: errno %v, want %v", c.stages, c.call, c.args, got.errno, c.errno)
		}
	}
}

// Expected outcomes of a filter child's call.
const (
	allow = "allow" // not killed (the kernel may still refuse)
	kill  = "kill"
)

// filterCase is one call made under the real filters.
type filterCase struct {
	stages, call string
	args         []string
	want         string
	errno        syscall.Errno // exact errno for allow cases when non-zero
}

// realFilterCases lists the calls: every argument rule from both sides.
func realFilterCases() []filterCase {
	return []filterCase{
		{"12", "getpid", nil, allow, 0},
		{"12", "gettid", nil, allow, 0},
		{"12", "sched_yield", nil, allow, 0},
		{"12", "read", []string{"-1", "0", "0"}, allow, unix.EBADF},
		{"12", "write", []string{"-1", "0", "0"}, allow, unix.EBADF},
		{"12", "epoll_pwait", []string{"-1", "0", "1", "0", "0", "8"}, allow, unix.EBADF},
		{"12", "futex", []string{"0", "0", "0", "0"}, allow, unix.EFAULT},
		{"12", "nanosleep", []string{"0", "0"}, allow, unix.EFAULT},
		{"12", "madvise", []string{"0", "0", "0"}, allow, 0},
		{"12", "munmap", []string{"0", "0"}, allow, unix.EINVAL},
		{"12", "rt_sigprocmask", []string{"0", "0", "0", "8"}, allow, 0},
		{"12", "sigaltstack", []string{"0", "0"}, allow, 0},
		{"12", "tgkill", []string{"self", "tid", "0"}, allow, 0},
		{"12", "tgkill", []string{"self+1", "tid", "0"}, kill, 0},
		{"12", "tgkill", []string{"self|hi", "tid", "0"}, kill, 0},
		{"12", "tgkill", []string{"0", "tid", "0"}, kill, 0},
		{"12", "clone", []string{"0x10100"}, allow, unix.EINVAL}, // THREAD|VM, no SIGHAND: the kernel refuses
		{"12", "clone", []string{"0x10000"}, kill, 0},
		{"12", "clone", []string{"0x100"}, kill, 0},
		{"12", "clone", []string{"17"}, kill, 0}, // fork
		{"12", "mmap", []string{"0", "4096", "1", "0x22", "-1", "0"}, allow, 0},
		{"12", "mmap", []string{"0", "4096", "5", "0x22", "-1", "0"}, kill, 0},
		{"12", "mmap", []string{"0", "4096", "0", "0x22", "-1", "0"}, allow, 0},
		{"12", "mmap", []string{"0", "4096", "1", "0x1", "0", "0"}, allow, unix.ENODEV}, // shared read-only file (stdin: /dev/null)
		{"12", "mmap", []string{"0", "4096", "3", "0x1", "0", "0"}, kill, 0},            // ... writable
		{"12", "mmap", []string{"0", "0x40000000", "3", "0x21", "-1", "0"}, kill, 0},    // 1 GiB of shared anonymous memory
		{"1", "mmap", []string{"0", "0x40000000", "3", "0x21", "-1", "0"}, kill, 0},     // ... while loading too
		{"12", "mmap", []string{"0", "0x40000000", "3", "0x122", "-1", "0"}, kill, 0},   // MAP_GROWSDOWN, not counted by RLIMIT_DATA
		{"12", "mmap", []string{"0", "4096", "3", "0x8022", "-1", "0"}, kill, 0},        // MAP_POPULATE
		{"12", "mremap", []string{"0", "4096", "0x40000000", "1", "0"}, kill, 0},
		{"1", "mremap", []string{"0", "4096", "0x40000000", "1", "0"}, kill, 0},
		{"1", "memfd_create", []string{"0", "0"}, kill, 0},
		{"12", "shmget", []string{"0", "0x40000000", "0"}, kill, 0},
		{"1", "setrlimit", []string{"7", "0"}, kill, 0},
		{"12", "openat", []string{"-100", "0", "0"}, allow, unix.EACCES}, // EFAULT without the filter
		{"12", "clone3", []string{"0", "0"}, allow, unix.ENOSYS},         // EINVAL without the filter
		{"12", "kill", []string{"self", "0"}, kill, 0},
		{"12", "tkill", []string{"tid", "0"}, kill, 0},
		{"12", "prlimit64", []string{"0", "7", "0", "0"}, kill, 0},
		{"12", "socket", []string{"2", "1", "0"}, kill, 0},
		{"12", "connect", []string{"-1", "0", "0"}, kill, 0},
		{"12", "bind", []string{"-1", "0", "0"}, kill, 0},
		{"12", "execve", []string{"0", "0", "0"}, kill, 0},
		{"12", "execveat", []string{"-1", "0", "0", "0", "0"}, kill, 0},
		{"12", "mount", []string{"0", "0", "0", "0", "0"}, kill, 0},
		{"12", "umount2", []string{"0", "0"}, kill, 0},
		{"12", "unshare", []string{"0"}, kill, 0},
		{"12", "setns", []string{"-1", "0"}, kill, 0},
		{"12", "ptrace", []string{"-1", "0", "0", "0"}, kill, 0},
		{"12", "process_vm_readv", []string{"0", "0", "0", "0", "0", "0"}, kill, 0},
		{"12", "process_vm_writev", []string{"0", "0", "0", "0", "0", "0"}, kill, 0},
		{"12", "setuid", []string{"0"}, kill, 0},
		{"12", "setresuid", []string{"-1", "-1", "-1"}, kill, 0},
		{"12", "keyctl", []string{"-1"}, kill, 0},
		{"12", "bpf", []string{"-1", "0", "0"}, kill, 0},
		{"12", "perf_event_open", []string{"0", "0", "0", "0", "0"}, kill, 0},
		{"12", "io_uring_setup", []string{"0", "0"}, kill, 0},
		{"12", "userfaultfd", []string{"-1"}, kill, 0},
		{"12", "getppid", nil, kill, 0},
		{"12", "seccomp", []string{"1", "0", "0"}, kill, 0},
		{"12", "fstat", []string{"-1", "0"}, kill, 0},
		{"1", "seccomp", []string{"1", "0", "0"}, allow, unix.EFAULT},
		{"1", "seccomp", []string{"2", "0", "0"}, kill, 0},
		{"1", "mprotect", []string{"0", "0", "1"}, kill, 0},
		{"1", "getrandom", []string{"0", "0", "0"}, kill, 0},
		{"1", "epoll_create1", []string{"-1"}, kill, 0},
		{"1", "eventfd2", []string{"0", "-1"}, kill, 0},
		{"1", "epoll_ctl", []string{"-1", "1", "-1", "0"}, allow, unix.EFAULT},
		{"1", "fcntl", []string{"-1", "1"}, allow, unix.EBADF},
		{"1", "fstat", []string{"-1", "0"}, allow, unix.EBADF},
		{"1", "pread64", []string{"-1", "0", "0", "0"}, allow, unix.EBADF},
		{"1", "close", []string{"-1"}, allow, unix.EBADF},
		{"1", "openat", []string{"-100", "0", "0"}, allow, unix.EACCES},
		{"1", "kill", []string{"self", "0"}, kill, 0},
		{"1", "socket", []string{"2", "1", "0"}, kill, 0},
		{"12log", "getppid", nil, allow, 0},
		{"12log", "kill", []string{"self", "0"}, allow, 0},
		{"12log", "openat", []string{"-100", "0", "0"}, allow, unix.EACCES},
	}
}

func mustArch(t *testing.T) *seccomp.Arch {
	t.Helper()
	a, err := seccomp.LookupArch(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
