//go:build !cgo

package sandbox

const cgoEnabled = false
