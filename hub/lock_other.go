//go:build !unix

package hub

import (
	"context"
	"errors"
)

// lockFile is not implemented without flock: pulls refuse to run rather
// than risk two writing one partial file.
func lockFile(context.Context, string, func()) (func(), error) {
	return nil, errors.New("lisa pull needs flock, which this system lacks")
}

// syscallNoFollow is 0 where O_NOFOLLOW is not known.
const syscallNoFollow = 0
