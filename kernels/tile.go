package kernels

// TileRows and TileCols are DotTile's register tile: it takes the rows of
// a TileRows at a time and those of b TileCols at a time.
const (
	TileRows = gemmR
	TileCols = gemmT
)

// RoundTile returns n rounded up to a multiple of m (TileRows or
// TileCols): the rows DotTile reads of an operand with n rows.
func RoundTile(n, m int) int { return (n + m - 1) / m * m }

// DotTile sets out[t*ldo+r] to the float32 dot product of the first k
// values of a[r*lda:] and b[t*ldb:], for r < rows and t < cols, with the
// blocked matrix product's register tile (gemm.go): a tile of attention
// keys against the query rows that share it, or of transposed values
// against their weights. Each result is summed in an order that depends
// only on k and the kernel path, never on rows, cols or where its row
// and column fall in a register tile, so it is the same bits however the
// operands are grouped. a must hold RoundTile(rows, TileRows) rows and b
// RoundTile(cols, TileCols) rows of their strides (at least k values
// each): the padding rows are read and their results dropped. It panics
// when an operand or out is too short.
func DotTile(out []float32, ldo int, a []float32, lda, rows int, b []float32, ldb, cols, k int) {
	dotTile(dispatch.tab, out, ldo, a, lda, rows, b, ldb, cols, k)
}

// dotTile is DotTile on path tab.
func dotTile(tab *table, out []float32, ldo int, a []float32, lda, rows int, b []float32, ldb, cols, k int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	ra, cb := RoundTile(rows, gemmR), RoundTile(cols, gemmT)
	if k < 0 || lda < k || ldb < k || len(a) < (ra-1)*lda+k || len(b) < (cb-1)*ldb+k || len(out) < (cols-1)*ldo+rows {
		panic("kernels: DotTile: operand shorter than its tiles")
	}
	var acc [gemmR * gemmT]float32
	for r0 := 0; r0 < rows; r0 += gemmR {
		nr := min(gemmR, rows-r0)
		for t0 := 0; t0 < cols; t0 += gemmT {
			tileGEMM(tab, a[r0*lda:], lda, b[t0*ldb:], ldb, k, &acc)
			for t := range min(gemmT, cols-t0) {
				o := out[(t0+t)*ldo+r0:][:nr]
				for r := range o {
					o[r] = acc[r*gemmT+t]
				}
			}
		}
	}
}
