//go:build (!amd64 && !arm64) || purego

package kernels

// nativeTable returns nil: this build has no assembly paths.
func nativeTable(Path) *table { return nil }
