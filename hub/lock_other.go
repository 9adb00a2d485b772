//go:build !unix

package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// lockPoll is how often a waiting pull tries the lock again.
const lockPoll = 50 * time.Millisecond

// lockFile takes the lock on path by creating it exclusively (no flock
// here) and returns the function that removes it. It calls waiting once
// when the file exists, then polls until ctx ends. A pull that crashed
// leaves the file behind: the error then names it, to delete by hand.
func lockFile(ctx context.Context, path string, waiting func()) (func(), error) {
	for told := false; ; {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock: %w", err)
		}
		if !told && waiting != nil {
			waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s (delete it if no pull is running): %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// syscallNoFollow is 0 where O_NOFOLLOW is not known.
const syscallNoFollow = 0
