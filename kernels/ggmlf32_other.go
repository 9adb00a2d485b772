//go:build !amd64 || purego

package kernels

// f32Acc4 is f32Acc4Generic (no assembly in this build).
func f32Acc4(w []byte, x []float32, acc *[64]float32) { f32Acc4Generic(w, x, acc) }

// f32Acc1 is f32Acc1Generic (no assembly in this build).
func f32Acc1(w []byte, x []float32, acc *[16]float32) { f32Acc1Generic(w, x, acc) }
