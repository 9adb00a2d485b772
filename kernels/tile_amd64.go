//go:build amd64 && !purego

package kernels

// tileGEMM runs tab's blocked product kernel (tab.gemm, gemmGeneric where
// that is nil) on one register tile for DotTile. It calls the kernel
// directly rather than through the table's function value, so that out,
// DotTile's accumulator, stays on its stack: through a function value the
// compiler cannot tell that out does not escape and moved it to the heap,
// 96 bytes every call. TestTileGEMMMatchesTable keeps the switch in step
// with the tables.
func tileGEMM(tab *table, w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32) {
	switch {
	case tab.gemm == nil:
		gemmGeneric(w, ldw, x, ldx, k, out, nil)
	case tab.path == AVX512:
		gemmAVX512Go(w, ldw, x, ldx, k, out, nil)
	case tab.path == AVX2:
		gemmAVX2Go(w, ldw, x, ldx, k, out, nil)
	default:
		gemmGeneric(w, ldw, x, ldx, k, out, nil)
	}
}
