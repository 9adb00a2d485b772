package kernels

import (
	"math"
)

// mustLen panics when two slices an op pairs element by element differ in
// length: that is a bug in the caller, never a property of a model file,
// whose shapes are validated before any kernel runs.
func mustLen(op string, a, b int) {
	if a != b {
		panic("kernels: " + op + ": slice lengths differ")
	}
}

// DotF32 returns the dot product of a and b, accumulated in float32 (the
// assembly paths keep several partial sums and fuse multiply-adds, so the
// result may differ from index-order summation in the last bits). It panics
// if the lengths differ.
func DotF32(a, b []float32) float32 {
	mustLen("DotF32", len(a), len(b))
	return dispatch.tab.dotF32(a, b)
}

// DotF16 returns the dot product of two half-precision vectors, each
// element widened to float32 and the products accumulated in float32 as
// ggml's SIMD path does. It panics if the lengths differ.
func DotF16(a, b []uint16) float32 {
	mustLen("DotF16", len(a), len(b))
	return dispatch.tab.dotF16(a, b)
}

// DotF16Rows sets out[j] to DotF16 of q and the len(q) halves at
// m[j*stride:], for every j of out: the scores of one query against rows
// of a key cache (or of weights against a transposed value cache), with
// one call instead of one per row. Each result equals DotF16's bit for
// bit. It panics if stride is negative or m is shorter than the last row's
// end.
func DotF16Rows(out []float32, m []uint16, stride int, q []uint16) {
	if stride < 0 {
		panic("kernels: DotF16Rows: negative stride")
	}
	if len(out) > 0 && (len(out)-1)*stride+len(q) > len(m) {
		panic("kernels: DotF16Rows: rows past the end of m")
	}
	dispatch.tab.dotF16Rows(out, m, stride, q)
}

// F16ToF32Row converts the half-precision values in src to float32 in dst.
// It panics if the lengths differ.
func F16ToF32Row(dst []float32, src []uint16) {
	mustLen("F16ToF32Row", len(dst), len(src))
	dispatch.tab.f16ToF32(dst, src)
}

// F32ToF16Row converts src to half precision in dst, rounding to nearest
// even; values beyond the half range become infinities and NaNs stay NaNs
// (the payload may differ between paths). It panics if the lengths differ.
func F32ToF16Row(dst []uint16, src []float32) {
	mustLen("F32ToF16Row", len(dst), len(src))
	dispatch.tab.f32ToF16(dst, src)
}

// AxpyF16 adds a*v[i] to dst[i] for every i, with v in half precision (a
// row of an F16 value cache in attention). It panics if the lengths differ.
func AxpyF16(dst []float32, a float32, v []uint16) {
	mustLen("AxpyF16", len(dst), len(v))
	dispatch.tab.axpyF16(dst, a, v)
}

// RMSNorm writes x normalised by its root mean square and multiplied by
// weight into dst, as ggml does: the sum of squares accumulated in float64
// (each square rounded to float32), scale = 1/sqrt(mean+eps) in float32,
// then dst[i] = (x[i]*scale)*weight[i]. dst may alias x. It panics if the
// lengths differ; an empty x leaves dst empty.
func RMSNorm(dst, x, weight []float32, eps float32) {
	mustLen("RMSNorm", len(dst), len(x))
	mustLen("RMSNorm", len(weight), len(x))
	if len(x) == 0 {
		return
	}
	var sum float64
	for _, v := range x {
		sum += float64(float32(v * v))
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(float32(mean+eps))))
	for i, v := range x {
		dst[i] = float32(v*scale) * weight[i]
	}
}

// Softmax replaces x by its softmax: the maximum is subtracted, each
// exponential taken in float32 (within about an ulp, see expf) and summed
// in float64 (in index order on the generic path, in eight lanes on the
// assembly paths), then every value is
// multiplied by float32(1/sum), as ggml does. Entries equal to -Inf (masked
// positions) become 0. An empty x is left alone.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := float32(math.Inf(-1))
	for _, v := range x {
		if v > mx {
			mx = v
		}
	}
	sum := dispatch.tab.expSubSum(x, mx)
	Scale(x, float32(1/sum))
}

// ExpSubSum sets x[i] = e^(x[i]-m) (as Softmax takes it) and returns the
// sum of the results accumulated in float64 as Softmax does: the
// unnormalised half of a softmax, for attention that normalises once
// over several tiles of scores (online softmax). Every path gives the same
// exponentials; the sum's order is the path's.
func ExpSubSum(x []float32, m float32) float64 {
	if len(x) == 0 {
		return 0
	}
	return dispatch.tab.expSubSum(x, m)
}

// expSubSumGeneric sets x[i] = expf(x[i]-m) and returns the sum of the
// results accumulated in float64 in index order.
func expSubSumGeneric(x []float32, m float32) float64 {
	var sum float64
	for i, v := range x {
		e := expf(v - m)
		x[i] = e
		sum += float64(e)
	}
	return sum
}

// SiLUMul writes silu(gate[i]) * up[i] into dst, silu(v) = v/(1+e^-v)
// with e^-v taken in float32 within about an ulp (see expf). dst
// may alias gate or up. It panics if the lengths differ.
func SiLUMul(dst, gate, up []float32) {
	mustLen("SiLUMul", len(dst), len(gate))
	mustLen("SiLUMul", len(up), len(gate))
	dispatch.tab.siluMul(dst, gate, up)
}

// siluMulGeneric is the loop of SiLUMul; every path gives the same bits.
func siluMulGeneric(dst, gate, up []float32) {
	up, dst = up[:len(gate)], dst[:len(gate)]
	for i, g := range gate {
		s := g / float32(1+expf(-g))
		dst[i] = s * up[i]
	}
}

// Add writes a[i]+b[i] into dst; dst may alias a or b. It panics if the
// lengths differ.
func Add(dst, a, b []float32) {
	mustLen("Add", len(dst), len(a))
	mustLen("Add", len(b), len(a))
	for i, v := range a {
		dst[i] = v + b[i]
	}
}

// Scale multiplies every element of x by s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}
