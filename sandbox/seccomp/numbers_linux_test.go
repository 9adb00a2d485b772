package seccomp

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// sysNumbers holds x/sys/unix's number of every call the lists name, for
// the architecture this test binary was built for.
var sysNumbers = map[string]int{
	"futex": unix.SYS_FUTEX, "read": unix.SYS_READ, "write": unix.SYS_WRITE,
	"epoll_pwait": unix.SYS_EPOLL_PWAIT, "nanosleep": unix.SYS_NANOSLEEP,
	"sched_yield": unix.SYS_SCHED_YIELD, "madvise": unix.SYS_MADVISE, "mmap": unix.SYS_MMAP,
	"munmap": unix.SYS_MUNMAP, "getpid": unix.SYS_GETPID, "gettid": unix.SYS_GETTID,
	"tgkill": unix.SYS_TGKILL, "rt_sigreturn": unix.SYS_RT_SIGRETURN,
	"rt_sigprocmask": unix.SYS_RT_SIGPROCMASK, "sigaltstack": unix.SYS_SIGALTSTACK,
	"clone": unix.SYS_CLONE, "exit": unix.SYS_EXIT, "exit_group": unix.SYS_EXIT_GROUP,
	"openat": unix.SYS_OPENAT, "clone3": unix.SYS_CLONE3, "fstat": unix.SYS_FSTAT,
	"pread64": unix.SYS_PREAD64, "close": unix.SYS_CLOSE, "fcntl": unix.SYS_FCNTL,
	"epoll_ctl": unix.SYS_EPOLL_CTL, "seccomp": unix.SYS_SECCOMP,
}

// TestNumbersMatchUnix checks the numbers the filter of the running
// architecture compares with (go-seccomp-bpf's tables) against
// golang.org/x/sys/unix's, which come from the kernel headers: natively on
// amd64 and, built with GOARCH=arm64 and run under qemu-aarch64 (make
// test-arm64), on arm64. A name missing from sysNumbers fails too, so a
// new rule must be added here.
func TestNumbersMatchUnix(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no allow-lists for %s", runtime.GOARCH)
	}
	a, err := LookupArch(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []Stage{StageLoading, StageServing} {
		rules, err := Rules(Options{Arch: runtime.GOARCH, Stage: st, SelfPid: selfPid})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rules {
			want, ok := sysNumbers[r.Name]
			if !ok {
				t.Errorf("%v rule %s: no x/sys/unix number in sysNumbers", st, r.Name)
				continue
			}
			if got, _ := a.Number(r.Name); got != want {
				t.Errorf("%s %s: filter uses %d, x/sys/unix says %d", runtime.GOARCH, r.Name, got, want)
			}
		}
	}
}
