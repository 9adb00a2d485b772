package kernels

import (
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// Column tiles: a matrix product and a softmax for attention laid out
// with the query rows along the vector lanes.
//
// In a tile of attention the query rows of a block (the heads sharing a
// KV head, for a few tokens) are many and the keys a tile holds are many,
// but each dot product is only a head dimension long. Laid out as
// S[key][row] = Σ_d K[key][d]·Qᵀ[d][row] and O[d][row] = Σ_key
// Vᵀ[d][key]·P[key][row], both products take one operand as broadcast
// scalars straight from the cache's layout (keys by position, values
// transposed) and the other as vectors of rows, and every sum runs down
// its own lane: no horizontal additions, and a row's bits never depend on
// the rows beside it. The softmax of such a tile is per lane as well.
//
// Each product is rounded to float32 before it is added (no fused
// multiply-add), in order of the summation index, so that the assembly
// paths and the Go twins give the same bits on every CPU.

// ColTileRows is how many rows of a ColTile takes at a time; ColTileLanes
// the multiple its column count must be (half a 512-bit vector: a
// decoding step's query heads of one KV head are often eight).
const (
	ColTileRows  = 6
	ColTileLanes = 8
)

// HasColTile reports whether the selected path has assembly ColTile and
// SoftmaxCols kernels (the Go twins are always there, but slower than
// the other layout's products on a path without them).
func HasColTile() bool { return dispatch.tab.colTile != nil }

// ColTile sets c[i*ldc+j] to the sum over t < k of a[i*lda+t*ak]·b[t*ldb+j]
// for i < RoundTile(m, ColTileRows) and j < n, each product rounded to
// float32 and added in order of t (starting from +0). a's rows are
// usually runs (ak = 1) but may be columns (lda = 1, ak the row length:
// a matrix read transposed). n must be a multiple of ColTileLanes; a and
// c must hold RoundTile(m, ColTileRows) rows of their strides (the
// padding rows are computed from whatever they hold). It panics when a
// shape is invalid or an operand too short.
func ColTile(c []float32, ldc int, a []float32, lda, ak, m int, b []float32, ldb, n, k int) {
	colTile(dispatch.tab, c, ldc, a, lda, ak, m, b, ldb, n, k)
}

// colTile is ColTile on path tab.
func colTile(tab *table, c []float32, ldc int, a []float32, lda, ak, m int, b []float32, ldb, n, k int) {
	if m <= 0 || n <= 0 {
		return
	}
	mr := RoundTile(m, ColTileRows)
	if n%ColTileLanes != 0 || k < 0 || lda < 0 || ak < 0 || ldc < n || (k > 0 && ldb < n) || len(c) < (mr-1)*ldc+n ||
		(k > 0 && (len(a) <= (mr-1)*lda+(k-1)*ak || len(b) < (k-1)*ldb+n)) {
		panic("kernels: ColTile: invalid shape or operand shorter than its tiles")
	}
	f := tab.colTile
	if f == nil {
		f = colTileGeneric
	}
	f(c, ldc, a, lda, ak, mr, b, ldb, n, k)
}

// colTileGeneric is ColTile's loop for mr rows (a multiple of
// ColTileRows), the shapes checked.
func colTileGeneric(c []float32, ldc int, a []float32, lda, ak, mr int, b []float32, ldb, n, k int) {
	for i := range mr {
		cr := c[i*ldc : i*ldc+n]
		clear(cr)
		for t := range k {
			av := a[i*lda+t*ak]
			br := b[t*ldb : t*ldb+n]
			for j, bv := range br {
				// float32(…) keeps Go from fusing the multiply-add.
				cr[j] += float32(av * bv)
			}
		}
	}
}

// FoldCols sets o[i*ldo+j] to o[i*ldo+j]·a[j] + u[i*ldu+j]·b[j], each
// product rounded before the addition, for i < rows and j < len(a) (a
// multiple of ColTileLanes): an attention tile's outputs u folded into
// the running ones o, a factor pair per column. It panics when a shape is
// invalid or a slice too short.
func FoldCols(o []float32, ldo int, u []float32, ldu, rows int, a, b []float32) {
	n := len(a)
	if rows <= 0 || n == 0 {
		return
	}
	if n%ColTileLanes != 0 || len(b) < n || ldo < n || ldu < n || len(o) < (rows-1)*ldo+n || len(u) < (rows-1)*ldu+n {
		panic("kernels: FoldCols: invalid shape or slice too short")
	}
	f := dispatch.tab.foldCols
	if f == nil {
		f = foldColsGeneric
	}
	f(o, ldo, u, ldu, rows, a, b[:n])
}

// foldColsGeneric is FoldCols' loop, the shapes checked.
func foldColsGeneric(o []float32, ldo int, u []float32, ldu, rows int, a, b []float32) {
	n := len(a)
	for i := range rows {
		or, ur := o[i*ldo:i*ldo+n], u[i*ldu:i*ldu+n]
		for j, x := range ur {
			or[j] = float32(or[j]*a[j]) + float32(x*b[j])
		}
	}
}

// WidenQ8_0 dequantizes the len(dst)/32 Q8_0 blocks at the start of src
// into dst as quant.DequantizeQ8_0 does (each code times its block's
// scale, one rounding): the keys or values of a Q8_0 cache tile. It
// panics when len(dst) is not a multiple of 32 or src is too short.
func WidenQ8_0(dst []float32, src []byte) {
	nb := len(dst) / quant.QK8_0
	if len(dst)%quant.QK8_0 != 0 || len(src) < nb*quant.BlockQ8_0Bytes {
		panic("kernels: WidenQ8_0: length not whole blocks")
	}
	if f := dispatch.tab.widenQ8_0; f != nil {
		f(dst, src[:nb*quant.BlockQ8_0Bytes])
		return
	}
	quant.DequantizeQ8_0(src[:nb*quant.BlockQ8_0Bytes], dst)
}

// SoftmaxCols takes the rows×n scores at x (row i at x[i*ld:], n a
// multiple of ColTileLanes) as n columns and replaces each by its
// exponentials against the column's largest value: mx[j] is that largest
// value (scanned in row order, a NaN or equal value replacing the one
// kept: "m = v unless m > v"), x[i*ld+j] becomes expf(x[i*ld+j]-mx[j])
// and sum[j] the float32 sum of the column's exponentials in row order.
// -Inf scores (masked keys) give 0; a column of -Inf gives NaN. Every
// path gives the same bits. It panics when a shape is invalid or a slice
// too short.
func SoftmaxCols(x []float32, ld, rows, n int, mx, sum []float32) {
	if n%ColTileLanes != 0 || rows < 0 || ld < n || len(mx) < n || len(sum) < n || (rows > 0 && len(x) < (rows-1)*ld+n) {
		panic("kernels: SoftmaxCols: invalid shape or slice too short")
	}
	softmaxCols(dispatch.tab, x, ld, rows, n, mx, sum)
}

// softmaxCols is SoftmaxCols on path tab, the shapes checked.
func softmaxCols(tab *table, x []float32, ld, rows, n int, mx, sum []float32) {
	if n == 0 {
		return
	}
	f := tab.softmaxCols
	if f == nil {
		f = softmaxColsGeneric
	}
	f(x, ld, rows, n, mx[:n], sum[:n])
}

// softmaxColsGeneric is SoftmaxCols' loop, the shapes checked.
func softmaxColsGeneric(x []float32, ld, rows, n int, mx, sum []float32) {
	inf := float32(math.Inf(-1))
	for j := range mx {
		mx[j], sum[j] = inf, 0
	}
	for i := range rows {
		for j, v := range x[i*ld : i*ld+n] {
			if !(mx[j] > v) {
				mx[j] = v
			}
		}
	}
	for i := range rows {
		r := x[i*ld : i*ld+n]
		for j, v := range r {
			e := expf(v - mx[j])
			r[j] = e
			sum[j] += e
		}
	}
}
