//go:build amd64 && !purego

package kernels

// setGEMMAVX512 installs the AVX-512 blocked matrix product and weight
// conversions in t.
func setGEMMAVX512(t *table) {
	t.gemm = gemmAVX512Go
	t.widenF16 = func(dst []float32, w []byte) {
		if len(dst) == 0 {
			return
		}
		w = w[:2*len(dst)]
		widenF16AVX512(&dst[0], &w[0], len(dst))
	}
	t.widenBF16 = func(dst []float32, w []byte) {
		if len(dst) == 0 {
			return
		}
		w = w[:2*len(dst)]
		widenBF16AVX512(&dst[0], &w[0], len(dst))
	}
	t.widenF32 = func(dst []float32, w []byte) {
		if len(dst) == 0 {
			return
		}
		w = w[:4*len(dst)]
		widenF32AVX512(&dst[0], &w[0], len(dst))
	}
	setColTileAVX512(t)
}

// gemmAVX512Go works like gemmGeneric, in AVX-512 assembly. It checks
// that the rows and tokens it reads lie inside w and x. It prefetches
// the first k/16 cache lines of pf to the second-level cache while it
// computes, or of x if pf is shorter.
func gemmAVX512Go(w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32, pf []byte) {
	if k <= 0 {
		*out = [gemmR * gemmT]float32{}
		return
	}
	if ldw < k || ldx < k {
		panic("kernels: gemm stride shorter than the row")
	}
	w = w[:(gemmR-1)*ldw+k]
	x = x[:(gemmT-1)*ldx+k]
	var p *byte
	if len(pf) > 0 && len(pf) >= k/16*64 {
		p = &pf[0]
	}
	gemm6x4AVX512(&w[0], ldw, &x[0], ldx, k, out, p)
}

// gemm6x4AVX512 works like gemmGeneric on six weight rows at w (stride
// ldw floats) and four tokens at x (stride ldx), k values each, with the
// sums in sixteen lanes per result added at the end. It reads only the
// first k values of each row and token (the last k%16 with masked loads).
// It prefetches the k/16 cache lines from pf, or from x when pf is nil.
//
//go:noescape
func gemm6x4AVX512(w *float32, ldw int, x *float32, ldx, k int, out *[gemmR * gemmT]float32, pf *byte)

// widenF16AVX512 works like widenF16Generic on n values (NaN payloads
// aside), reading 2n bytes at w and writing n floats at dst.
//
//go:noescape
func widenF16AVX512(dst *float32, w *byte, n int)

// widenBF16AVX512 works like widenBF16Generic on n values, reading 2n
// bytes at w and writing n floats at dst.
//
//go:noescape
func widenBF16AVX512(dst *float32, w *byte, n int)

// widenF32AVX512 works like widenF32Generic on n values, reading 4n bytes
// at w and writing n floats at dst.
//
//go:noescape
func widenF32AVX512(dst *float32, w *byte, n int)
