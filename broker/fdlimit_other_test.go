//go:build !unix

package broker_test

import "testing"

// needFDs does nothing where there is no RLIMIT_NOFILE.
func needFDs(*testing.T, uint64) {}
