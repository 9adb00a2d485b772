//go:build amd64 && !purego

package kernels

// setGEMMAVX2 installs the AVX2+FMA blocked matrix product and weight
// conversions in t. The conversions take multiples of eight values in
// assembly and the rest with their generic twins.
func setGEMMAVX2(t *table) {
	t.gemm = gemmAVX2Go
	t.widenF16 = func(dst []float32, w []byte) {
		n8 := len(dst) &^ 7
		if n8 > 0 {
			w = w[:2*len(dst)]
			widenF16AVX2(&dst[0], &w[0], n8)
		}
		widenF16Generic(dst[n8:], w[2*n8:])
	}
	t.widenBF16 = func(dst []float32, w []byte) {
		n8 := len(dst) &^ 7
		if n8 > 0 {
			w = w[:2*len(dst)]
			widenBF16AVX2(&dst[0], &w[0], n8)
		}
		widenBF16Generic(dst[n8:], w[2*n8:])
	}
	t.widenF32 = func(dst []float32, w []byte) {
		n8 := len(dst) &^ 7
		if n8 > 0 {
			w = w[:4*len(dst)]
			widenF32AVX2(&dst[0], &w[0], n8)
		}
		widenF32Generic(dst[n8:], w[4*n8:])
	}
}

// gemmAVX2Go works like gemmGeneric, in AVX2+FMA assembly: two calls of
// a three-row kernel, for rows 0-2 and 3-5. It checks that the rows and
// tokens it reads lie inside w and x, and prefetches like gemmAVX512Go:
// each call the next 2k bytes of pf, 16 bytes per eight columns.
func gemmAVX2Go(w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32, pf []byte) {
	if k <= 0 {
		*out = [gemmR * gemmT]float32{}
		return
	}
	if ldw < k || ldx < k {
		panic("kernels: gemm stride shorter than the row")
	}
	w = w[:(gemmR-1)*ldw+k]
	x = x[:(gemmT-1)*ldx+k]
	var p0, p1 *byte
	if half := k / 8 * 16; len(pf) > 0 && len(pf) >= 2*half {
		p0, p1 = &pf[0], &pf[min(half, len(pf)-1)]
	}
	o := (*[gemmR * gemmT / 2]float32)(out[:])
	gemm3x4AVX2(&w[0], ldw, &x[0], ldx, k, o, p0)
	o = (*[gemmR * gemmT / 2]float32)(out[gemmR*gemmT/2:])
	gemm3x4AVX2(&w[3*ldw], ldw, &x[0], ldx, k, o, p1)
}

// gemm3x4AVX2 sets out[r*4+t] to the dot of the first k values of three
// weight rows at w (stride ldw floats) with four tokens at x (stride
// ldx), with the sums in eight lanes per result added at the end. It
// reads only those values (the last k%8 with masked loads) and prefetches
// the 16k/8 bytes from pf, or from x when pf is nil.
//
//go:noescape
func gemm3x4AVX2(w *float32, ldw int, x *float32, ldx, k int, out *[gemmR * gemmT / 2]float32, pf *byte)

// widenF16AVX2 works like widenF16Generic on n values, n a multiple of 8
// (NaN payloads aside), reading 2n bytes at w and writing n floats at dst.
//
//go:noescape
func widenF16AVX2(dst *float32, w *byte, n int)

// widenBF16AVX2 works like widenBF16Generic on n values, n a multiple of
// 8, reading 2n bytes at w and writing n floats at dst.
//
//go:noescape
func widenBF16AVX2(dst *float32, w *byte, n int)

// widenF32AVX2 works like widenF32Generic on n values, n a multiple of 8,
// reading 4n bytes at w and writing n floats at dst.
//
//go:noescape
func widenF32AVX2(dst *float32, w *byte, n int)
