//go:build !linux

package main

import "runtime"

// hostChecks reports the one fact that matters off Linux: the worker's
// sandbox is built from Linux namespaces, Landlock and seccomp.
func hostChecks() []check {
	return []check{{Name: "sandbox", Status: statusFail, Detail: "the worker sandbox exists only on Linux, this is " + runtime.GOOS,
		Fix: "run lisa serve on Linux (sandbox_enabled: false runs it unsandboxed, for development only)"}}
}

// tryNamespaces fails: there are no namespaces off Linux.
func tryNamespaces() error { return errNoNamespaces }

// errNoNamespaces is tryNamespaces's error off Linux.
var errNoNamespaces = errUnsupported("user namespaces exist only on Linux")

type errUnsupported string

func (e errUnsupported) Error() string { return string(e) }
