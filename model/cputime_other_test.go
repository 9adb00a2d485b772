//go:build !linux

package model

import "time"

// cpuTime is 0 where the process's CPU time is not read: the benchmarks
// then report only their wall-clock figures.
func cpuTime() time.Duration { return 0 }
