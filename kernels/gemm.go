package kernels

import (
	"encoding/binary"
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// The register tile of the blocked matrix product: one micro-kernel call
// computes gemmR weight rows times gemmT tokens.
const (
	gemmR = 6
	gemmT = 4
)

// gemmMinTokens is the token count from which MatMul multiplies F32, F16
// and BF16 weights with the blocked product on a path that has one;
// fewer tokens take the one-row dots, which read each weight once and
// are bound by memory bandwidth anyway. Chosen with BenchmarkMatMulTokens.
const gemmMinTokens = 3

// gemmTileBytes bounds the float32 weights of one part's converted row
// tile: it stays in the second-level cache while every token is
// multiplied by it.
const gemmTileBytes = 256 << 10

// gemmChunk is the most columns one micro-kernel call sums: a group of
// gemmT tokens of that many float32 values (16 KiB) stays in the
// first-level cache while the rows of the tile stream past it from the
// second. Longer rows are summed in near-equal chunks whose results are
// added. With the operands streamed from L2 the AVX-512 kernel ran at
// ~110 GFLOP/cpu-s on 1024 columns and ~95 on 2048.
const gemmChunk = 1024

// gemmPart is one goroutine's scratch for the blocked product, padded so
// that the parts' result tiles do not share a cache line.
type gemmPart struct {
	wt  []float32              // the converted weight tile: rows of ld values
	acc [gemmR * gemmT]float32 // one micro-kernel result
	_   [64]byte               // keeps the next part's acc off acc's cache lines
}

// gemmLd returns the stride of the converted rows of cols values: a
// multiple of 16 floats, one 64-byte vector.
func gemmLd(cols int) int { return (cols + 15) &^ 15 }

// gemmTileRows returns the rows of one part's weight tile for row stride
// ld: a multiple of gemmR within gemmTileBytes, but no more than the
// (rounded up) rows a part of a rows-row matrix split threads ways gets.
func gemmTileRows(ld, rows, threads int) int {
	t := max(gemmR, gemmTileBytes/(4*ld)/gemmR*gemmR)
	per := (rows + threads - 1) / threads
	return min(t, max(gemmR, (per+gemmR-1)/gemmR*gemmR))
}

// useGEMM reports whether the job multiplies with the blocked product.
func (j *job) useGEMM(tab *table) bool {
	switch tab.weights[j.w.Type].partner {
	case partnerF32, partnerF16, partnerBF16:
		return tab.gemm != nil && j.n >= j.gemmMin
	}
	return false
}

// growGEMM sizes the blocked product's scratch: the activations as
// float32 rows of stride ld for n tokens rounded up to gemmT, and each
// part's weight tile.
func (j *job) growGEMM() {
	ld := gemmLd(j.w.Cols)
	j.xf = growSlice(j.xf, (j.n+gemmT-1)/gemmT*gemmT*ld)
	tr := gemmTileRows(ld, j.w.Rows, len(j.gemm))
	for i := range j.gemm {
		j.gemm[i].wt = growSlice(j.gemm[i].wt, tr*ld)
	}
}

// convertGEMM writes tokens t0..t1-1 of the activations to j.xf as the
// float32 values the weights' one-row dots multiply: for F16 weights each
// value rounded to half precision (through j.xh, which grow sizes as
// usual), for BF16 to bfloat16, for F32 as is.
func (j *job) convertGEMM(tab *table, t0, t1 int) {
	c, ld := j.w.Cols, gemmLd(j.w.Cols)
	x := j.x[t0*c : t1*c]
	switch tab.weights[j.w.Type].partner {
	case partnerF16:
		tab.f32ToF16(j.xh[t0*c:t1*c], x)
		for t := t0; t < t1; t++ {
			tab.f16ToF32(j.xf[t*ld:t*ld+c], j.xh[t*c:(t+1)*c])
		}
	case partnerBF16:
		for t := t0; t < t1; t++ {
			dst, src := j.xf[t*ld:t*ld+c], j.x[t*c:(t+1)*c]
			for i, v := range src {
				dst[i] = quant.BF16ToF32(quant.F32ToBF16(v))
			}
		}
	case partnerF32:
		for t := t0; t < t1; t++ {
			copy(j.xf[t*ld:t*ld+c], j.x[t*c:(t+1)*c])
		}
	}
}

// gemmRows computes the outputs of weight rows r0..r1-1 for every token
// with the blocked product, in part's scratch: a tile of rows is
// converted to float32 once, then multiplied by every group of gemmT
// tokens, gemmR rows at a time, in column chunks of at most gemmChunk.
// The tile's rows past r1 and the tokens past n are computed from stale
// scratch and dropped.
func (j *job) gemmRows(tab *table, part, r0, r1 int) {
	gp := &j.gemm[part]
	c, ld, rows, n, rb := j.w.Cols, gemmLd(j.w.Cols), j.w.Rows, j.n, j.rb
	widen := tab.widenF32
	switch tab.weights[j.w.Type].partner {
	case partnerF16:
		widen = tab.widenF16
	case partnerBF16:
		widen = tab.widenBF16
	}
	chunks := (c + gemmChunk - 1) / gemmChunk
	kc := (c/chunks + 15) &^ 15
	tr := len(gp.wt) / ld
	pfStep := kc / 16 * 64
	for r := r0; r < r1; r += tr {
		re := min(r+tr, r1)
		for i := r; i < re; i++ {
			widen(gp.wt[(i-r)*ld:(i-r)*ld+c], j.w.Data[i*rb:(i+1)*rb])
		}
		// While this tile is multiplied, the next one is prefetched.
		next := j.w.Data[re*rb : min(re+tr, r1)*rb]
		for k0 := 0; k0 < c; k0 += kc {
			k := min(kc, c-k0)
			for t := 0; t < n; t += gemmT {
				xs := j.xf[t*ld+k0 : (t+gemmT-1)*ld+k0+k]
				nt := min(gemmT, n-t)
				for rr := r; rr < re; rr += gemmR {
					o := (rr - r) * ld
					pf := next[:min(pfStep, len(next))]
					next = next[len(pf):]
					tab.gemm(gp.wt[o+k0:o+(gemmR-1)*ld+k0+k], ld, xs, ld, k, &gp.acc, pf)
					gemmStore(j.out[t*rows:], &gp.acc, rows, rr, min(gemmR, re-rr), nt, k0 > 0)
				}
			}
		}
	}
}

// gemmStore writes the nr×nt valid results of acc for rows r.. and tokens
// 0..nt-1 of out (token stride rows), adding them to what is there when
// add is set.
func gemmStore(out []float32, acc *[gemmR * gemmT]float32, rows, r, nr, nt int, add bool) {
	for t := range nt {
		o := out[t*rows+r : t*rows+r+nr]
		for i := range o {
			if add {
				o[i] += acc[i*gemmT+t]
			} else {
				o[i] = acc[i*gemmT+t]
			}
		}
	}
}

// gemmGeneric sets out[r*gemmT+t] to the float32 dot of the first k
// values of weight row r (w[r*ldw:]) with those of token t (x[t*ldx:]),
// for gemmR rows and gemmT tokens, summing in index order. It ignores the
// prefetch hint pf.
func gemmGeneric(w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32, _ []byte) {
	x0, x1 := x[:k], x[ldx:ldx+k]
	x2, x3 := x[2*ldx:2*ldx+k], x[3*ldx:3*ldx+k]
	for r := range gemmR {
		wr := w[r*ldw : r*ldw+k]
		var s0, s1, s2, s3 float32
		for i, v := range wr {
			// float32(…) rounds each product before its addition, which
			// keeps Go from fusing them into multiply-adds (it does on
			// arm64, never on amd64): the sums are the same everywhere.
			s0 += float32(v * x0[i])
			s1 += float32(v * x1[i])
			s2 += float32(v * x2[i])
			s3 += float32(v * x3[i])
		}
		out[r*gemmT], out[r*gemmT+1], out[r*gemmT+2], out[r*gemmT+3] = s0, s1, s2, s3
	}
}

// widenF16Generic converts the len(dst) little-endian half-precision
// values of w to float32.
func widenF16Generic(dst []float32, w []byte) {
	w = w[:2*len(dst)]
	for i := range dst {
		dst[i] = quant.F16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	}
}

// widenBF16Generic converts the len(dst) little-endian bfloat16 values of
// w to float32.
func widenBF16Generic(dst []float32, w []byte) {
	w = w[:2*len(dst)]
	for i := range dst {
		dst[i] = quant.BF16ToF32(binary.LittleEndian.Uint16(w[2*i:]))
	}
}

// widenF32Generic decodes the len(dst) little-endian float32 values of w.
func widenF32Generic(dst []float32, w []byte) {
	w = w[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:]))
	}
}
