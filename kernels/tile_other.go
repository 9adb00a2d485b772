//go:build !amd64 || purego

package kernels

// tileGEMM runs the blocked product kernel on one register tile for
// DotTile: on this build every path's (tab.gemm) is gemmGeneric, called
// directly so that out stays on DotTile's stack (see tile_amd64.go).
func tileGEMM(_ *table, w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32) {
	gemmGeneric(w, ldw, x, ldx, k, out, nil)
}
