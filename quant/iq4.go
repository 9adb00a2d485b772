package quant

import "encoding/binary"

// iq4Values is the non-linear 4-bit codebook of IQ4_NL and IQ4_XS
// (ggml's kvalues_iq4nl): code c stands for iq4Values[c] times the scale.
var iq4Values = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// bestIndexIQ4 returns the code whose value is nearest x, as ggml's
// best_index_int8 does (ties go to the larger value; a NaN gives 15).
func bestIndexIQ4(x float32) uint8 {
	v := &iq4Values
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	ml, mu := 0, 15
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(v[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if x-float32(v[mu-1]) < float32(v[mu])-x {
		return uint8(mu - 1)
	}
	return uint8(mu)
}

// iq4Fit holds the state of quantize_row_iq4_nl_impl across the blocks
// of one call: the codes of the values, which an all-zero 32-value block
// of IQ4_NL leaves as they were (ggml then stores the previous block's
// codes; here the first block's start as zeros).
type iq4Fit struct {
	l      [QK_K]uint8
	weight [32]float32
	scales [QK_K / 32]float32
}

// fitBlock fits one 32-value block xb (codes into lb) as
// quantize_row_iq4_nl_impl's inner loop does without importance weights:
// weights x², a first scale max/(∓127), then, for ntry > 0, the 2*ntry+1
// candidate inverse scales (itry - 127)/max. It returns the scale, or 0
// with lb untouched when the block is all (near) zeros.
func (f *iq4Fit) fitBlock(xb []float32, lb []uint8, ntry int) float32 {
	xb, lb = xb[:32], lb[:32]
	var amax, vmax float32
	for j, v := range xb {
		f.weight[j] = float32(v * v)
		if a := absf(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < groupMaxEps {
		return 0
	}
	v0 := float32(iq4Values[0])
	d := vmax / v0
	if ntry > 0 {
		d = -vmax / v0
	}
	id := 1 / d
	var sumQX, sumQ2 float32
	for j, v := range xb {
		l := bestIndexIQ4(float32(id * v))
		lb[j] = l
		q := float32(iq4Values[l])
		wq := float32(f.weight[j] * q)
		sumQX += float32(wq * v)
		sumQ2 += float32(wq * q)
	}
	d = sumQX / sumQ2
	best := float32(d * sumQX)
	for itry := -ntry; itry <= ntry; itry++ {
		id = (float32(itry) + v0) / vmax
		sumQX, sumQ2 = 0, 0
		for j, v := range xb {
			q := float32(iq4Values[bestIndexIQ4(float32(id*v))])
			wq := float32(f.weight[j] * q)
			sumQX += float32(wq * v)
			sumQ2 += float32(wq * q)
		}
		if sumQ2 > 0 && float32(sumQX*sumQX) > float32(best*sumQ2) {
			d = sumQX / sumQ2
			best = float32(d * sumQX)
		}
	}
	return d
}

// packIQ4 writes the 4-bit codes of 32*len(q)/16 values: values j and
// j+16 of each 32 share q[16*i+j] (low and high nibble).
func packIQ4(q []byte, l []uint8) {
	for i := range len(q) / 16 {
		for j := range 16 {
			q[16*i+j] = l[32*i+j] | l[32*i+16+j]<<4
		}
	}
}

// QuantizeIQ4NL quantizes src into IQ4_NL bytes (18 per 32 values) as
// quantize_row_iq4_nl_ref does: per block the weighted least-squares
// scale d of the codebook fit from the first guess max/-127 (no further
// candidates), stored as f16, and the codes of that first fit.
func QuantizeIQ4NL(src []float32, dst []byte) {
	var f iq4Fit
	nb := len(src) / QK4_NL
	for i := range nb {
		blk := dst[BlockIQ4_NLBytes*i : BlockIQ4_NLBytes*(i+1)]
		d := f.fitBlock(src[QK4_NL*i:QK4_NL*(i+1)], f.l[:32], -1)
		putF16(blk, F32ToF16(d))
		packIQ4(blk[2:18], f.l[:32])
	}
}

// DequantizeIQ4NL decodes IQ4_NL bytes into dst: value j of a block is
// d * iq4Values[code].
func DequantizeIQ4NL(src []byte, dst []float32) {
	nb := len(dst) / QK4_NL
	for i := range nb {
		blk := src[BlockIQ4_NLBytes*i : BlockIQ4_NLBytes*(i+1)]
		d := f16(blk)
		y := dst[QK4_NL*i : QK4_NL*(i+1)]
		for j, q := range blk[2:18] {
			y[j] = d * float32(iq4Values[q&0xf])
			y[j+16] = d * float32(iq4Values[q>>4])
		}
	}
}

// IQ4XSScale returns the 6-bit scale (0..63, stored with a bias of 32) of
// 32-value sub-block ib (0..7) of an IQ4_XS block from its scales_h
// (little-endian uint16) and scales_l bytes.
func IQ4XSScale(scalesH uint16, scalesL []byte, ib int) int32 {
	lo := scalesL[ib/2] >> (4 * (ib % 2)) & 0xf
	hi := uint8(scalesH>>(2*ib)) & 3
	return int32(lo | hi<<4)
}

// QuantizeIQ4XS quantizes src (a multiple of 256 values) into IQ4_XS
// bytes (136 per block) as quantize_row_iq4_xs_ref does: each 32-value
// sub-block is fitted as in IQ4_NL with 15 candidate scales; with s the
// fitted scale of largest magnitude, d = f16(-s/32), the 6-bit scales are
// clamp(nearest_int(scale/d), -32, 31) + 32 and every value is re-coded
// against d*(scale-32) (d before its rounding to f16).
func QuantizeIQ4XS(src []float32, dst []byte) {
	var f iq4Fit
	nb := len(src) / QK_K
	for i := range nb {
		x := src[QK_K*i : QK_K*(i+1)]
		blk := dst[BlockIQ4_XSBytes*i : BlockIQ4_XSBytes*(i+1)]
		var maxScale, amaxScale float32
		for ib := range QK_K / 32 {
			d := f.fitBlock(x[32*ib:32*ib+32], f.l[32*ib:32*ib+32], 7)
			f.scales[ib] = d
			if a := absf(d); a > amaxScale {
				amaxScale, maxScale = a, d
			}
		}
		d := -maxScale / 32
		putF16(blk, F32ToF16(d))
		var id float32
		if d != 0 {
			id = 1 / d
		}
		var sh uint16
		sl := blk[4:8]
		clear(sl)
		for ib := range QK_K / 32 {
			l := clamp(nearestInt(float32(id*f.scales[ib])), -32, 31)
			dl := float32(d * float32(l))
			var idl float32
			if dl != 0 {
				idl = 1 / dl
			}
			for j, v := range x[32*ib : 32*ib+32] {
				f.l[32*ib+j] = bestIndexIQ4(float32(idl * v))
			}
			l += 32
			sl[ib/2] |= byte(l&0xf) << (4 * (ib % 2))
			sh |= uint16(l>>4) << (2 * ib)
		}
		binary.LittleEndian.PutUint16(blk[2:], sh)
		packIQ4(blk[8:136], f.l[:])
	}
}

// DequantizeIQ4XS decodes IQ4_XS bytes (136 per 256 values) into dst:
// value j of sub-block ib is (d*(scale-32)) * iq4Values[code].
func DequantizeIQ4XS(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockIQ4_XSBytes*i : BlockIQ4_XSBytes*(i+1)]
		d := f16(blk)
		sh := binary.LittleEndian.Uint16(blk[2:])
		y := dst[QK_K*i : QK_K*(i+1)]
		for ib := range QK_K / 32 {
			dl := float32(d * float32(IQ4XSScale(sh, blk[4:8], ib)-32))
			qs := blk[8+16*ib : 8+16*ib+16]
			yb := y[32*ib : 32*ib+32]
			for j, q := range qs {
				yb[j] = float32(dl * float32(iq4Values[q&0xf]))
				yb[j+16] = float32(dl * float32(iq4Values[q>>4]))
			}
		}
	}
}
