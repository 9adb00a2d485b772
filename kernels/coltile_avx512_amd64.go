//go:build amd64 && !purego

package kernels

import (
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// setColTileAVX512 installs the AVX-512 column tile kernels in t.
func setColTileAVX512(t *table) {
	t.colTile = colTileAVX512Go
	t.softmaxCols = softmaxColsAVX512Go
	t.foldCols = func(o []float32, ldo int, u []float32, ldu, rows int, a, b []float32) {
		n := len(a)
		o, u = o[:(rows-1)*ldo+n], u[:(rows-1)*ldu+n]
		foldColsAVX512(&o[0], ldo, &u[0], ldu, rows, &a[0], &b[0], n)
	}
	t.widenQ8_0 = func(dst []float32, src []byte) {
		if len(dst) == 0 {
			return
		}
		nb := len(dst) / quant.QK8_0
		src = src[:nb*quant.BlockQ8_0Bytes]
		widenQ8_0AVX512(&dst[0], &src[0], nb)
	}
}

// colTileAVX512Go works like colTileGeneric, in AVX-512 assembly: six
// rows of a against 64 columns of b at a time, then 16, then 8. colTile
// checked that every row and column it reads and writes lies inside a, b
// and c.
func colTileAVX512Go(c []float32, ldc int, a []float32, lda, ak, mr int, b []float32, ldb, n, k int) {
	if k == 0 {
		for i := range mr {
			clear(c[i*ldc : i*ldc+n])
		}
		return
	}
	for i := 0; i < mr; i += ColTileRows {
		ai, ci := a[i*lda:], c[i*ldc:]
		j := 0
		for ; j+64 <= n; j += 64 {
			colTile6x64AVX512(&ci[j], ldc, &ai[0], lda, ak, &b[j], ldb, k)
		}
		for ; j+16 <= n; j += 16 {
			colTile6x16AVX512(&ci[j], ldc, &ai[0], lda, ak, &b[j], ldb, k)
		}
		if j < n {
			colTile6x8AVX512(&ci[j], ldc, &ai[0], lda, ak, &b[j], ldb, k)
		}
	}
}

// softmaxColsAVX512Go works like softmaxColsGeneric, in AVX-512
// assembly; SoftmaxCols checked the shapes.
func softmaxColsAVX512Go(x []float32, ld, rows, n int, mx, sum []float32) {
	if rows == 0 {
		for j := range mx {
			mx[j], sum[j] = float32(math.Inf(-1)), 0
		}
		return
	}
	x = x[:(rows-1)*ld+n]
	softmaxColsAVX512(&x[0], ld, rows, n, &mx[0], &sum[0])
}

// colTile6x64AVX512 sets the 64 floats at c+i*ldc to the sums over t < k
// (k > 0) of a[i*lda+t*ak] times the 64 floats at b+t*ldb, for i < 6,
// each product rounded before it is added, in order of t. Strides are in
// floats.
//
//go:noescape
func colTile6x64AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)

// colTile6x16AVX512 is colTile6x64AVX512 for 16 columns.
//
//go:noescape
func colTile6x16AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)

// colTile6x8AVX512 is colTile6x64AVX512 for 8 columns.
//
//go:noescape
func colTile6x8AVX512(c *float32, ldc int, a *float32, lda, ak int, b *float32, ldb, k int)

// foldColsAVX512 is foldColsGeneric on rows > 0 rows of n columns (n > 0
// a multiple of 8) at o and u (row strides ldo and ldu floats), the
// factors n floats at a and b.
//
//go:noescape
func foldColsAVX512(o *float32, ldo int, u *float32, ldu, rows int, a, b *float32, n int)

// widenQ8_0AVX512 dequantizes nb Q8_0 blocks at src into 32*nb floats at
// dst, as quant.DequantizeQ8_0.
//
//go:noescape
func widenQ8_0AVX512(dst *float32, src *byte, nb int)

// softmaxColsAVX512 is softmaxColsGeneric on rows > 0 rows of n columns
// (n > 0 a multiple of 8) at x (row stride ld floats), writing n maxima
// at mx and sums at sum.
//
//go:noescape
func softmaxColsAVX512(x *float32, ld, rows, n int, mx, sum *float32)
