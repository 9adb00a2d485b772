//go:build !unix

package engine

import "time"

// cpuTime is unavailable here: benchmarks report zero CPU time.
func cpuTime() time.Duration { return 0 }
