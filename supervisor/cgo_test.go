//go:build cgo

package supervisor

// cgoEnabled is true in a cgo build: the sandbox cannot lock such a
// worker down (its all-threads system calls need CGO_ENABLED=0).
const cgoEnabled = true
