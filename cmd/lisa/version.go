package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/lisa-llm/lisa/kernels"
)

// version and commit are stamped by the Makefile with -ldflags -X.
var (
	version = "dev"
	commit  = "unknown"
)

// runVersion prints the version and commit, the Go version, the kernel
// path chosen on this CPU and the sandbox features the host offers (the
// same checks as lisa doctor, one line each).
func runVersion(args []string, stdout, stderr io.Writer) int {
	pos, status, done := parseCommand("version", flag.NewFlagSet("version", flag.ContinueOnError), args, false, stdout, stderr)
	if done {
		return status
	}
	if len(pos) != 0 {
		return badUsage(stderr, "version", fmt.Sprintf("unexpected argument %q", pos[0]))
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
	fmt.Fprintf(stdout, "kernels: %s\n", kernels.Describe())
	fmt.Fprintln(stdout, "sandbox features of this host:")
	for _, f := range versionFeatures() {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	return 0
}
