//go:debug updatemaxprocs=0
//go:debug containermaxprocs=0

package sandbox

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary serve as its own worker and helper
// processes: the environment of a sandboxed worker is empty, so the mode
// is chosen by the first argument.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case WorkerFlag:
			os.Exit(ProbeWorker(os.Args[1:]))
		case helperFilter:
			os.Exit(filterChild(os.Args[2:]))
		case helperBroker:
			os.Exit(brokerChild(os.Args[2:]))
		case helperBench:
			os.Exit(benchChild(os.Args[2:]))
		}
	}
	if cgoEnabled {
		fmt.Fprintln(os.Stderr, "sandbox tests need a cgo-free test binary: run them with CGO_ENABLED=0")
		os.Exit(1)
	}
	os.Exit(m.Run())
}
