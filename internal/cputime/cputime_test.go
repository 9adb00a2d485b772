package cputime

import (
	"runtime"
	"testing"
	"time"
)

// TestProcessCounts: busy work shows as CPU time on a platform that
// reports it, and the count never goes back.
func TestProcessCounts(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("no CPU time on " + runtime.GOOS)
	}
	before := Process()
	x := 1.0
	for deadline := time.Now().Add(50 * time.Millisecond); time.Now().Before(deadline); {
		for range 1000 {
			x = x*1.0000001 + 1e-9
		}
	}
	after := Process()
	if after <= before || after-before < 10*time.Millisecond {
		t.Errorf("50 ms of busy work counted %v of CPU time (%v then %v; x %g)", after-before, before, after, x)
	}
}
