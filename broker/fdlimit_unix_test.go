//go:build unix

package broker_test

import (
	"syscall"
	"testing"
)

// needFDs makes sure the process may open n more file descriptors,
// raising the soft limit up to the hard one if needed, or skips.
func needFDs(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	want := n + 256
	if rl.Cur >= want {
		return
	}
	if rl.Max < want {
		t.Skipf("the hard file descriptor limit is %d; this test needs %d", rl.Max, want)
	}
	rl.Cur = want
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("cannot raise the file descriptor limit to %d: %v", want, err)
	}
}
