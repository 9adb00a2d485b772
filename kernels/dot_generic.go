package kernels

import (
	"encoding/binary"
	"math"

	"github.com/lisa-llm/lisa/quant"
)

// Block sizes of the quantized weight formats, in bytes.
const (
	q8_0Bytes = quant.BlockQ8_0Bytes
	q4KBytes  = quant.BlockQ4_KBytes
	q6KBytes  = quant.BlockQ6_KBytes
)

// dotF32Generic returns Σ a[i]*b[i] accumulated in float32 in index order;
// len(b) must be at least len(a).
func dotF32Generic(a, b []float32) float32 {
	b = b[:len(a)]
	var s float32
	for i, v := range a {
		// The conversion rounds the product before the addition: Go may
		// fuse x*y+z into one multiply-add with a single rounding (it does
		// on arm64, never on amd64), which would make the sums differ by
		// architecture. Every float32(x*y) in this file is there for that;
		// products of two halves (F16, BF16) are exact in float32, so
		// fusing them changes nothing.
		s += float32(v * b[i])
	}
	return s
}

// dotF32WGeneric works like dotF32Generic with a given as little-endian
// float32 bytes (4*len(x) of them).
func dotF32WGeneric(w []byte, x []float32) float32 {
	w = w[:4*len(x)]
	var s float32
	for i, v := range x {
		s += float32(math.Float32frombits(binary.LittleEndian.Uint32(w[4*i:])) * v)
	}
	return s
}

// dotF16Generic returns Σ a[i]*b[i] of two half-precision vectors, each
// product taken in float32 and accumulated in float32.
func dotF16Generic(a, b []uint16) float32 {
	b = b[:len(a)]
	var s float32
	for i, h := range a {
		s += quant.F16ToF32(h) * quant.F16ToF32(b[i])
	}
	return s
}

// dotF16RowsGeneric sets out[j] to dotF16Generic of q and the len(q)
// halves at m[j*stride:], for every j of out.
func dotF16RowsGeneric(out []float32, m []uint16, stride int, q []uint16) {
	for j := range out {
		out[j] = dotF16Generic(m[j*stride:j*stride+len(q)], q)
	}
}

// dotF16WGeneric works like dotF16Generic with the weights as
// little-endian half-precision bytes (2*len(x) of them).
func dotF16WGeneric(w []byte, x []uint16) float32 {
	w = w[:2*len(x)]
	var s float32
	for i, h := range x {
		s += quant.F16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * quant.F16ToF32(h)
	}
	return s
}

// dotBF16Generic returns the dot product of little-endian bfloat16 weight
// bytes with bfloat16 activations, products and sum in float32.
func dotBF16Generic(w []byte, x []uint16) float32 {
	w = w[:2*len(x)]
	var s float32
	for i, h := range x {
		s += quant.BF16ToF32(binary.LittleEndian.Uint16(w[2*i:])) * quant.BF16ToF32(h)
	}
	return s
}

// f16At decodes the little-endian half-precision value at b[0:2].
func f16At(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

// dotQ8_0Generic returns the dot product of Q8_0 weight bytes (34 per
// block) with len(x) Q8_0 activation blocks. Per block the 32 code
// products are summed exactly in int32, then sum += float32(isum) *
// (dw*dx) in block order with every operation rounded to float32: the
// same arithmetic as quant.DotQ8_0Q8_0 and every assembly path.
func dotQ8_0Generic(w []byte, x []quant.BlockQ8_0) float32 {
	w = w[:q8_0Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[q8_0Bytes*i : q8_0Bytes*(i+1)]
		q := blk[2 : 2+32]
		var isum int32
		for j, a := range &x[i].Qs {
			isum += int32(int8(q[j])) * int32(a)
		}
		dd := float32(f16At(blk) * quant.F16ToF32(x[i].D))
		sum = float32(sum + float32(float32(isum)*dd))
	}
	return sum
}

// q4KInts returns the exact integer sums of one Q4_K block against one
// Q8_K block: isum = Σ_j scale[j] * Σ_k q4*q8 over the eight 32-value
// sub-blocks, and mins = Σ_j min[j] * (bsums[2j] + bsums[2j+1]).
func q4KInts(blk []byte, b *quant.BlockQ8K) (isum, mins int32) {
	blk = blk[:q4KBytes]
	scales, qs := blk[4:16], blk[16:144]
	for j := range 8 {
		sc, m := quant.ScaleMinK4(j, scales)
		mins += int32(m) * (int32(b.Bsums[2*j]) + int32(b.Bsums[2*j+1]))
		q := qs[32*(j/2) : 32*(j/2)+32]
		a := b.Qs[32*j : 32*j+32]
		shift := 4 * uint(j&1)
		var s int32
		for k, v := range q {
			s += int32(v>>shift&0xf) * int32(a[k])
		}
		isum += int32(sc) * s
	}
	return isum, mins
}

// dotQ4KGeneric returns the dot product of Q4_K weight bytes (144 per
// block) with len(x) Q8_K blocks. Per block, with isum and mins the exact
// integer sums of q4KInts, d = f16(d)*x.D and m = f16(dmin)*x.D:
// sum = (sum + d*float32(isum)) - m*float32(mins), every operation rounded
// to float32 and no fused multiply-add, as every assembly path does.
func dotQ4KGeneric(w []byte, x []quant.BlockQ8K) float32 {
	w = w[:q4KBytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[q4KBytes*i : q4KBytes*(i+1)]
		isum, mins := q4KInts(blk, &x[i])
		d := float32(f16At(blk[0:]) * x[i].D)
		m := float32(f16At(blk[2:]) * x[i].D)
		sum = float32(sum + float32(d*float32(isum)))
		sum = float32(sum - float32(m*float32(mins)))
	}
	return sum
}

// q6KInts returns the exact integer sum of one Q6_K block against one Q8_K
// block: Σ_j scales[j] * Σ_k (code-32)*q8 over the sixteen 16-value
// sub-blocks, computed as Σ_j scales[j] * (Σ_k code*q8 - 32*bsums[j]).
func q6KInts(blk []byte, b *quant.BlockQ8K) int32 {
	blk = blk[:q6KBytes]
	ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
	var sub [16]int32
	for half := range 2 {
		l4, h2 := ql[64*half:64*half+64], qh[32*half:32*half+32]
		a := b.Qs[128*half : 128*half+128]
		for l := range 32 {
			h := h2[l]
			c0 := int32(l4[l]&0xf | (h&3)<<4)
			c1 := int32(l4[l+32]&0xf | (h>>2&3)<<4)
			c2 := int32(l4[l]>>4 | (h>>4&3)<<4)
			c3 := int32(l4[l+32]>>4 | (h>>6&3)<<4)
			s := 8*half + l/16
			sub[s] += c0 * int32(a[l])
			sub[s+2] += c1 * int32(a[l+32])
			sub[s+4] += c2 * int32(a[l+64])
			sub[s+6] += c3 * int32(a[l+96])
		}
	}
	var isum int32
	for j, s := range sub {
		isum += int32(int8(sc[j])) * (s - 32*int32(b.Bsums[j]))
	}
	return isum
}

// dotQ6KGeneric returns the dot product of Q6_K weight bytes (210 per
// block) with len(x) Q8_K blocks: per block sum += (f16(d)*x.D) *
// float32(isum), with isum from q6KInts, every operation rounded to
// float32, as every assembly path does.
func dotQ6KGeneric(w []byte, x []quant.BlockQ8K) float32 {
	w = w[:q6KBytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[q6KBytes*i : q6KBytes*(i+1)]
		isum := q6KInts(blk, &x[i])
		d := float32(f16At(blk[208:]) * x[i].D)
		sum = float32(sum + float32(d*float32(isum)))
	}
	return sum
}

// dotQ4Kx4Generic sets out[t] to dotQ4KGeneric of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for four tokens.
func dotQ4Kx4Generic(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	for t := range out {
		out[t] = dotQ4KGeneric(w, x[t*nb:(t+1)*nb])
	}
}

// dotQ6Kx4Generic sets out[t] to dotQ6KGeneric of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for four tokens.
func dotQ6Kx4Generic(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32) {
	x = x[:4*nb]
	for t := range out {
		out[t] = dotQ6KGeneric(w, x[t*nb:(t+1)*nb])
	}
}

// dotQ8_0x4Generic sets out[t] to dotQ8_0Generic of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for four tokens.
func dotQ8_0x4Generic(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32) {
	x = x[:4*nb]
	for t := range out {
		out[t] = dotQ8_0Generic(w, x[t*nb:(t+1)*nb])
	}
}

// q80Scales sets dst[b*8+k] to the scale of block b of x, one token's
// len(x) Q8_0 blocks, as float32, for the token k (0..7) of a group of
// eight: dst is the group's dx of the eight-token Q8_0 dots.
func q80Scales(dst []float32, x []quant.BlockQ8_0, k int) {
	dst = dst[:8*len(x)]
	for b, blk := range x {
		dst[b*8+k] = quant.F16ToF32(blk.D)
	}
}

// dotQ8_0x8Generic sets out[t] to dotQ8_0Generic of w with token t's nb
// blocks x[t*nb:(t+1)*nb], for eight tokens.
func dotQ8_0x8Generic(w []byte, x []quant.BlockQ8_0, _ []float32, nb int, out *[8]float32) {
	x = x[:8*nb]
	for t := range out {
		out[t] = dotQ8_0Generic(w, x[t*nb:(t+1)*nb])
	}
}

// f16ToF32Generic converts len(dst) half-precision values to float32.
func f16ToF32Generic(dst []float32, src []uint16) {
	src = src[:len(dst)]
	for i, h := range src {
		dst[i] = quant.F16ToF32(h)
	}
}

// f32ToF16Generic converts len(dst) float32 values to half precision,
// rounding to nearest even.
func f32ToF16Generic(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = quant.F32ToF16(f)
	}
}

// axpyF16Generic adds a*v[i] to dst[i] for each i, v in half precision.
func axpyF16Generic(dst []float32, a float32, v []uint16) {
	v = v[:len(dst)]
	for i, h := range v {
		dst[i] += float32(a * quant.F16ToF32(h))
	}
}
