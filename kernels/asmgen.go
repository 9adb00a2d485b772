package kernels

// The arm64 assembly is generated on any host (this file has no build
// constraint, so go generate runs it everywhere and make asm-check
// compares it there too).
//go:generate go run ./_arm64gen -dir .
