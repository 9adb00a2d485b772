package kernels

import (
	"encoding/binary"
	"math"
)

// The F32 dot products in the summation orders of llama.cpp's CPU build,
// for the products a model computes on F32 weights (the router of a
// mixture of experts, F32 models): with activations that are never
// rounded to a coarser format, only the same order keeps the results
// within float32 ulps of llama.cpp's. Each product is a float32 fused
// multiply-add with one rounding, as the vector instructions compute it;
// the pure-Go path emulates that exactly (fmaF32), so every path gives
// the same bits.

// DotF32GGML returns the dot product of the little-endian float32 weight
// row w (4·len(x) bytes; it panics if w is shorter) with x in the order
// of ggml_vec_dot_f32: four 16-lane fused accumulators over the whole
// blocks of 64 values, summed (0+2)+(1+3) lane by lane, the lanes as a
// tree of halves, then the tail's products added one at a time, each
// rounded before its addition.
func DotF32GGML(w []byte, x []float32) float32 {
	n := len(x)
	w = w[:4*n]
	nb := n &^ 63
	var acc [64]float32
	if nb > 0 {
		f32Acc4(w[:4*nb], x[:nb], &acc)
	}
	var s [16]float32
	for k := range s {
		s[k] = (acc[k] + acc[32+k]) + (acc[16+k] + acc[48+k])
	}
	sum := reduceHalves16(&s)
	for i := nb; i < n; i++ {
		// The conversion rounds the product: Go may fuse x*y+z on
		// arm64, and ggml adds the tail unfused.
		sum += float32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * x[i])
	}
	return sum
}

// DotF32Lanes16 returns the dot product of the little-endian float32
// weight row w (4·len(x) bytes; it panics if w is shorter) with x in the
// order of llamafile's tinyBLAS, which ggml uses for batches of two or
// more tokens: one 16-lane fused accumulator, value i into lane i%16, the
// lanes summed as a tree of halves.
func DotF32Lanes16(w []byte, x []float32) float32 {
	n := len(x)
	w = w[:4*n]
	nb := n &^ 15
	var acc [16]float32
	if nb > 0 {
		f32Acc1(w[:4*nb], x[:nb], &acc)
	}
	for i := nb; i < n; i++ {
		acc[i-nb] = fmaF32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])), x[i], acc[i-nb])
	}
	return reduceHalves16(&acc)
}

// reduceHalves16 sums 16 lanes as a tree of halves: lanes i and i+8,
// then i and i+4 of those, then (0+2)+(1+3).
func reduceHalves16(x *[16]float32) float32 {
	var t [8]float32
	for i := range t {
		t[i] = x[i+8] + x[i]
	}
	var u [4]float32
	for i := range u {
		u[i] = t[i+4] + t[i]
	}
	return (u[0] + u[2]) + (u[1] + u[3])
}

// f32Acc4Generic sets acc[16j+k] to the fused sum over the blocks of 64
// values of w·x (w little-endian float32) of value 16j+k of each block.
func f32Acc4Generic(w []byte, x []float32, acc *[64]float32) {
	*acc = [64]float32{}
	w = w[:4*len(x)]
	for i := 0; i+64 <= len(x); i += 64 {
		for k := range 64 {
			acc[k] = fmaF32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*(i+k):])), x[i+k], acc[k])
		}
	}
}

// f32Acc1Generic sets acc[k] to the fused sum over the blocks of 16
// values of w·x (w little-endian float32) of value k of each block.
func f32Acc1Generic(w []byte, x []float32, acc *[16]float32) {
	*acc = [16]float32{}
	w = w[:4*len(x)]
	for i := 0; i+16 <= len(x); i += 16 {
		for k := range 16 {
			acc[k] = fmaF32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*(i+k):])), x[i+k], acc[k])
		}
	}
}

// fmaF32 returns a*b+c rounded once to float32, as a float32 fused
// multiply-add instruction does. The product is exact in float64; the
// sum is rounded to odd in float64 (53 bits, more than twice float32's 24
// plus two), from which rounding to float32 is correct: rounding the
// float64 sum to nearest first would round twice and miss by an ulp when
// the first rounding lands on a float32 halfway point.
func fmaF32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	cc := float64(c)
	s := p + cc
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	// The exact error of the sum (Knuth's TwoSum).
	bv := s - p
	e := (p - (s - bv)) + (cc - bv)
	if e != 0 {
		if bits := math.Float64bits(s); bits&1 == 0 {
			// Round to odd: to the neighbour on e's side.
			if (e > 0) == (s > 0) {
				bits++
			} else {
				bits--
			}
			s = math.Float64frombits(bits)
		}
	}
	return float32(s)
}
