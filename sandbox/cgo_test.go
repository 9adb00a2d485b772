//go:build cgo

package sandbox

// cgoEnabled is true in a cgo test binary, which cannot lock down.
const cgoEnabled = true
