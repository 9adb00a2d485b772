package quant

import (
	"encoding/binary"
	"math"
)

// signedMax returns the value of largest magnitude in x (the first one on
// ties) and its magnitude, as quantize_row_q4_0_ref and q5_0 scan.
func signedMax(x []float32) (vmax, amax float32) {
	for _, v := range x {
		if a := absf(v); amax < a {
			amax, vmax = a, v
		}
	}
	return vmax, amax
}

// QuantizeQ4_0 quantizes src into Q4_0 bytes (18 per 32 values) as
// quantize_row_q4_0_ref does: d = m/-8 with m the value of largest
// magnitude, code = min(15, int8(x/d + 8.5)) with x/d computed as x*(1/d).
func QuantizeQ4_0(src []float32, dst []byte) {
	nb := len(src) / QK4_0
	for i := range nb {
		x := src[QK4_0*i : QK4_0*(i+1)]
		blk := dst[BlockQ4_0Bytes*i : BlockQ4_0Bytes*(i+1)]
		vmax, _ := signedMax(x)
		d := vmax / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		for j := range QK4_0 / 2 {
			x0 := float32(x[j]*id) + 8.5
			x1 := float32(x[j+QK4_0/2]*id) + 8.5
			q0 := min(15, int8(truncInt32(x0)))
			q1 := min(15, int8(truncInt32(x1)))
			blk[2+j] = byte(q0) | byte(q1)<<4
		}
	}
}

// DequantizeQ4_0 decodes Q4_0 bytes into dst: value j of a block is
// float32(code-8) * d, with codes j and j+16 in the low and high nibbles of
// qs[j].
func DequantizeQ4_0(src []byte, dst []float32) {
	nb := len(dst) / QK4_0
	for i := range nb {
		blk := src[BlockQ4_0Bytes*i : BlockQ4_0Bytes*(i+1)]
		d := f16(blk)
		y := dst[QK4_0*i : QK4_0*(i+1)]
		for j := range QK4_0 / 2 {
			q := blk[2+j]
			y[j] = float32(int32(q&0xf)-8) * d
			y[j+QK4_0/2] = float32(int32(q>>4)-8) * d
		}
	}
}

// QuantizeQ5_0 quantizes src into Q5_0 bytes (22 per 32 values) as
// quantize_row_q5_0_ref does: d = m/-16, code = min(31, int8(x/d + 16.5)),
// the low four bits in qs and the fifth in qh.
func QuantizeQ5_0(src []float32, dst []byte) {
	nb := len(src) / QK5_0
	for i := range nb {
		x := src[QK5_0*i : QK5_0*(i+1)]
		blk := dst[BlockQ5_0Bytes*i : BlockQ5_0Bytes*(i+1)]
		vmax, _ := signedMax(x)
		d := vmax / -16
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(blk, F32ToF16(d))
		var qh uint32
		for j := range QK5_0 / 2 {
			x0 := float32(x[j]*id) + 16.5
			x1 := float32(x[j+QK5_0/2]*id) + 16.5
			q0 := uint8(min(31, int8(truncInt32(x0))))
			q1 := uint8(min(31, int8(truncInt32(x1))))
			blk[6+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0&0x10) >> 4 << j
			qh |= uint32(q1&0x10) >> 4 << (j + QK5_0/2)
		}
		binary.LittleEndian.PutUint32(blk[2:], qh)
	}
}

// DequantizeQ5_0 decodes Q5_0 bytes into dst: value j of a block is
// float32(code-16) * d.
func DequantizeQ5_0(src []byte, dst []float32) {
	nb := len(dst) / QK5_0
	for i := range nb {
		blk := src[BlockQ5_0Bytes*i : BlockQ5_0Bytes*(i+1)]
		d := f16(blk)
		qh := binary.LittleEndian.Uint32(blk[2:])
		y := dst[QK5_0*i : QK5_0*(i+1)]
		for j := range QK5_0 / 2 {
			q := blk[6+j]
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(int32(uint32(q&0xf)|h0)-16) * d
			y[j+QK5_0/2] = float32(int32(uint32(q>>4)|h1)-16) * d
		}
	}
}

// minMax returns the smallest and largest of x as quantize_row_q4_1_ref
// and q5_1 scan them (starting from ±FLT_MAX, so a NaN is never taken).
func minMax(x []float32) (vmin, vmax float32) {
	vmin, vmax = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < vmin {
			vmin = v
		}
		if v > vmax {
			vmax = v
		}
	}
	return vmin, vmax
}

// QuantizeQ4_1 quantizes src into Q4_1 bytes (20 per 32 values) as
// quantize_row_q4_1_ref does: d = (max-min)/15 and m = min as f16, code =
// min(15, int8((x-min)*(1/d) + 0.5)).
func QuantizeQ4_1(src []float32, dst []byte) {
	nb := len(src) / QK4_1
	for i := range nb {
		x := src[QK4_1*i : QK4_1*(i+1)]
		blk := dst[BlockQ4_1Bytes*i : BlockQ4_1Bytes*(i+1)]
		vmin, vmax := minMax(x)
		d := (vmax - vmin) / 15
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, F32ToF16(d))
		putF16(blk[2:], F32ToF16(vmin))
		for j := range QK4_1 / 2 {
			x0 := float32((x[j]-vmin)*id) + 0.5
			x1 := float32((x[j+QK4_1/2]-vmin)*id) + 0.5
			q0 := uint8(min(15, int8(truncInt32(x0))))
			q1 := uint8(min(15, int8(truncInt32(x1))))
			blk[4+j] = q0 | q1<<4
		}
	}
}

// DequantizeQ4_1 decodes Q4_1 bytes into dst: value j of a block is
// code*d + m, the product rounded before the sum.
func DequantizeQ4_1(src []byte, dst []float32) {
	nb := len(dst) / QK4_1
	for i := range nb {
		blk := src[BlockQ4_1Bytes*i : BlockQ4_1Bytes*(i+1)]
		d, m := f16(blk), f16(blk[2:])
		y := dst[QK4_1*i : QK4_1*(i+1)]
		for j := range QK4_1 / 2 {
			q := blk[4+j]
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+QK4_1/2] = float32(float32(q>>4)*d) + m
		}
	}
}

// QuantizeQ5_1 quantizes src into Q5_1 bytes (24 per 32 values) as
// quantize_row_q5_1_ref does: d = (max-min)/31 and m = min as f16, code =
// uint8((x-min)*(1/d) + 0.5), its low four bits in qs and the fifth in qh.
func QuantizeQ5_1(src []float32, dst []byte) {
	nb := len(src) / QK5_1
	for i := range nb {
		x := src[QK5_1*i : QK5_1*(i+1)]
		blk := dst[BlockQ5_1Bytes*i : BlockQ5_1Bytes*(i+1)]
		vmin, vmax := minMax(x)
		d := (vmax - vmin) / 31
		var id float32
		if d != 0 {
			id = 1 / d
		}
		putF16(blk, F32ToF16(d))
		putF16(blk[2:], F32ToF16(vmin))
		var qh uint32
		for j := range QK5_1 / 2 {
			x0 := float32((x[j]-vmin)*id) + 0.5
			x1 := float32((x[j+QK5_1/2]-vmin)*id) + 0.5
			// C's (uint8_t) of a float: x86-64 converts through int32.
			q0, q1 := uint8(truncInt32(x0)), uint8(truncInt32(x1))
			blk[8+j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0&0x10) >> 4 << j
			qh |= uint32(q1&0x10) >> 4 << (j + QK5_1/2)
		}
		binary.LittleEndian.PutUint32(blk[4:], qh)
	}
}

// DequantizeQ5_1 decodes Q5_1 bytes into dst: value j of a block is
// code*d + m with the five-bit code.
func DequantizeQ5_1(src []byte, dst []float32) {
	nb := len(dst) / QK5_1
	for i := range nb {
		blk := src[BlockQ5_1Bytes*i : BlockQ5_1Bytes*(i+1)]
		d, m := f16(blk), f16(blk[2:])
		qh := binary.LittleEndian.Uint32(blk[4:])
		y := dst[QK5_1*i : QK5_1*(i+1)]
		for j := range QK5_1 / 2 {
			q := blk[8+j]
			h0 := (qh >> j << 4) & 0x10
			h1 := (qh >> (j + 12)) & 0x10
			y[j] = float32(float32(uint32(q&0xf)|h0)*d) + m
			y[j+QK5_1/2] = float32(float32(uint32(q>>4)|h1)*d) + m
		}
	}
}
