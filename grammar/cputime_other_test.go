//go:build !unix

package grammar

import "time"

// cpuTime is unavailable here: benchmarks report zero CPU time.
func cpuTime() time.Duration { return 0 }
