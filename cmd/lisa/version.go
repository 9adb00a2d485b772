package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are stamped by the Makefile with -ldflags -X.
var (
	version = "dev"
	commit  = "unknown"
)

func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: lisa version")
		return 2
	}
	c := commit
	if c == "unknown" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	fmt.Fprintf(stdout, "lisa %s (commit %s, %s, %s/%s)\n", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
