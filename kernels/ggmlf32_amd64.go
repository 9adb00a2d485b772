//go:build amd64 && !purego

package kernels

// f32Acc4AVX2 works like f32Acc4Generic on blocks blocks of 64 values at
// w and x.
//
//go:noescape
func f32Acc4AVX2(w *byte, x *float32, blocks int, acc *[64]float32)

// f32Acc1AVX2 works like f32Acc1Generic on blocks blocks of 16 values at
// w and x.
//
//go:noescape
func f32Acc1AVX2(w *byte, x *float32, blocks int, acc *[16]float32)

// f32Acc4 is f32Acc4Generic, in AVX2+FMA assembly on the avx2 and avx512
// paths; len(x) is a positive multiple of 64 and w holds 4·len(x) bytes.
func f32Acc4(w []byte, x []float32, acc *[64]float32) {
	if p := dispatch.tab.path; p != AVX2 && p != AVX512 {
		f32Acc4Generic(w, x, acc)
		return
	}
	_ = w[4*len(x)-1]
	f32Acc4AVX2(&w[0], &x[0], len(x)/64, acc)
}

// f32Acc1 is f32Acc1Generic, in AVX2+FMA assembly on the avx2 and avx512
// paths; len(x) is a positive multiple of 16 and w holds 4·len(x) bytes.
func f32Acc1(w []byte, x []float32, acc *[16]float32) {
	if p := dispatch.tab.path; p != AVX2 && p != AVX512 {
		f32Acc1Generic(w, x, acc)
		return
	}
	_ = w[4*len(x)-1]
	f32Acc1AVX2(&w[0], &x[0], len(x)/16, acc)
}
