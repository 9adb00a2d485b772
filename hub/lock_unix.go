//go:build unix

package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a waiting pull tries the lock again.
const lockPoll = 50 * time.Millisecond

// lockFile takes an exclusive flock on path, creating it, and returns the
// function that removes and releases it. It calls waiting once when
// another process or goroutine holds the lock, then polls until ctx ends.
// A holder removes the file before releasing it; a waiter that then wins
// the lock of the removed file sees that the path no longer names it and
// starts over on the new one.
func lockFile(ctx context.Context, path string, waiting func()) (func(), error) {
	for told := false; ; {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock: %w", err)
		}
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
			if err == nil || !errors.Is(err, unix.EWOULDBLOCK) {
				break
			}
			if !told && waiting != nil {
				waiting()
				told = true
			}
			select {
			case <-ctx.Done():
				f.Close()
				return nil, ctx.Err()
			case <-time.After(lockPoll):
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if sameFile(f, path) {
			return func() {
				os.Remove(path)
				f.Close() // releases the flock
			}, nil
		}
		f.Close()
	}
}

// sameFile reports whether path still names the open file f.
func sameFile(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// syscallNoFollow makes opening a partial download fail on a symbolic link.
const syscallNoFollow = unix.O_NOFOLLOW
