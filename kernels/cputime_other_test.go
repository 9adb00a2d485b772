//go:build !linux

package kernels

import "time"

// cpuTime returns 0: CPU time is only measured on Linux.
func cpuTime() time.Duration { return 0 }
