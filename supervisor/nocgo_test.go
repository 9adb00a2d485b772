//go:build !cgo

package supervisor

// cgoEnabled is false in a cgo-free build.
const cgoEnabled = false
