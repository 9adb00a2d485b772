//go:build !linux

package main

import "io"

// isTerminal reports false: terminal detection is implemented for Linux
// only, and without it progress stays off.
func isTerminal(io.Writer) bool { return false }
