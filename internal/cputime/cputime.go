// Package cputime measures the CPU time a process has used, for
// benchmarks that report CPU time per operation beside the wall clock: on
// a machine shared with other work, CPU time moves less than elapsed time.
package cputime

import "time"

// Process returns the CPU time (user and system) this process has used,
// or 0 where the platform does not report it.
func Process() time.Duration { return process() }
