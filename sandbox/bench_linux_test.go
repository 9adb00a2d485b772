package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lisa-llm/lisa/sandbox/seccomp"
)

const helperBench = "--test-bench"

// benchChild makes args[2] calls of args[1] ("gettid" or "futex", a
// wake on address 0) after installing the stages in args[0] ("none",
// "12"), and prints the nanoseconds per call.
func benchChild(args []string) int {
	runtime.LockOSThread()
	if len(args) != 3 {
		return 3
	}
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return 3
	}
	if args[0] != "none" {
		if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
			return 3
		}
		for _, st := range args[0] {
			p, err := seccomp.Compile(seccomp.Options{Arch: runtime.GOARCH, Stage: seccomp.Stage(st - '0'), SelfPid: os.Getpid()})
			if err != nil || p.Install(0) != nil {
				return 3
			}
		}
	}
	const futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
	start := time.Now()
	for i := 0; i < n; i++ {
		switch args[1] {
		case "futex":
			unix.RawSyscall6(unix.SYS_FUTEX, 0, futexWakePrivate, 1, 0, 0, 0) // EFAULT after the filter ran
		default:
			unix.RawSyscall(unix.SYS_GETTID, 0, 0, 0)
		}
	}
	fmt.Printf("%f\n", float64(time.Since(start).Nanoseconds())/float64(n))
	return 0
}

// BenchmarkSyscallFilter measures a syscall-heavy loop with seccomp stages
// 1 and 2 installed against no filter, in child processes (a filter cannot
// be removed). futex is the first rule of the program, gettid the 11th.
func BenchmarkSyscallFilter(b *testing.B) {
	for _, call := range []string{"futex", "gettid"} {
		for _, stages := range []string{"none", "12"} {
			b.Run(call+"/"+stages, func(b *testing.B) {
				out, err := exec.Command(os.Args[0], helperBench, stages, call, strconv.Itoa(max(b.N, 100000))).Output()
				if err != nil {
					b.Fatal(err)
				}
				ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(ns, "ns/syscall")
			})
		}
	}
}
