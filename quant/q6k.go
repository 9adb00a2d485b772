package quant

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is treated as all zeros.
const groupMaxEps float32 = 1e-15

// makeQX fits x ≈ scale*l with l in [-nmax, nmax-1] as ggml's
// make_qx_quants does with rmse_type 1 and no importance weights: weights
// x², a first inverse scale -nmax/m (m the value of largest magnitude),
// then the 18 candidates -(nmax + 0.1*is)/m for is in ±1..±9, keeping the
// one with the best weighted fit. It writes l+nmax (0..2*nmax-1) to L and
// returns the scale.
func makeQX(x []float32, L []int8, nmax int32) float32 {
	L = L[:len(x)]
	var vmax, amax float32
	for _, v := range x {
		if a := absf(v); a > amax {
			amax, vmax = a, v
		}
	}
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fnmax := float32(nmax)
	iscale := -fnmax / vmax
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clamp(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l + nmax)
		w := v * v
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	var scale float32
	if sumL2 != 0 {
		scale = sumLX / sumL2
	}
	best := float32(scale * sumLX)
	for is := int32(-9); is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale = -(fnmax + float32(0.1*float32(is))) / vmax
		sumLX, sumL2 = 0, 0
		for _, v := range x {
			l := clamp(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			w := v * v
			fl := float32(l)
			sumLX += float32(float32(w*v) * fl)
			sumL2 += float32(float32(w*fl) * fl)
		}
		if sumL2 > 0 && float32(sumLX*sumLX) > float32(best*sumL2) {
			for i, v := range x {
				l := clamp(nearestInt(float32(iscale*v)), -nmax, nmax-1)
				L[i] = int8(l + nmax)
			}
			scale = sumLX / sumL2
			best = float32(scale * sumLX)
		}
	}
	return scale
}

// quantizeBlockQ6K quantizes 256 values into one 210-byte Q6_K block as
// quantize_row_q6_K_ref does.
func quantizeBlockQ6K(x []float32, blk []byte) {
	x = x[:QK_K]
	blk = blk[:BlockQ6_KBytes]
	var L [QK_K]int8
	var scales [QK_K / 16]float32
	var maxScale, maxAbsScale float32
	for ib := range QK_K / 16 {
		s := makeQX(x[16*ib:16*ib+16], L[16*ib:], 32)
		scales[ib] = s
		if a := absf(s); a > maxAbsScale {
			maxAbsScale, maxScale = a, s
		}
	}
	if maxAbsScale < groupMaxEps {
		clear(blk) // d = f16(0) = 0 too
		return
	}
	iscale := -128 / maxScale
	putF16(blk[208:], F32ToF16(1/iscale))
	sc := blk[192:208]
	for ib := range QK_K / 16 {
		sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
	}
	d := f16(blk[208:])
	for j := range QK_K / 16 {
		dj := float32(d * float32(int8(sc[j])))
		if dj == 0 {
			continue
		}
		for ii, v := range x[16*j : 16*j+16] {
			L[16*j+ii] = int8(clamp(nearestInt(v/dj), -32, 31) + 32)
		}
	}
	ql, qh := blk[0:128], blk[128:192]
	for j := 0; j < QK_K; j += 128 {
		for l := range 32 {
			q1, q2 := uint8(L[j+l]), uint8(L[j+l+32])
			q3, q4 := uint8(L[j+l+64]), uint8(L[j+l+96])
			ql[j/2+l] = q1&0xf | (q3&0xf)<<4
			ql[j/2+l+32] = q2&0xf | (q4&0xf)<<4
			qh[j/4+l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
		}
	}
}

// QuantizeQ6K quantizes src (a multiple of 256 values) into Q6_K bytes in
// dst (210 per block), byte-identical with quantize_row_q6_K_ref: each
// 16-value sub-block is fitted by makeQX (nmax 32); with s the fitted scale
// of largest magnitude and iscale = -128/s, d = f16(1/iscale), the int8
// scales are min(127, nearest_int(iscale*scale)) and every value is
// re-coded as clamp(nearest_int(x/(d*scale)), -32, 31) + 32. A block whose
// scales all fall below 1e-15 in magnitude is stored as all zeros.
func QuantizeQ6K(src []float32, dst []byte) {
	nb := len(src) / QK_K
	for i := range nb {
		quantizeBlockQ6K(src[QK_K*i:QK_K*(i+1)], dst[BlockQ6_KBytes*i:BlockQ6_KBytes*(i+1)])
	}
}

// Q6KCode returns the 6-bit code (0..63) of value k (0..255) of a Q6_K
// block from its ql and qh arrays: within each half of 128 values, values
// l, l+32, l+64 and l+96 (l < 32) share ql[l], ql[l+32] (low nibbles for the
// first two, high nibbles for the others) and qh[l] (two bits each).
func Q6KCode(ql, qh []byte, k int) uint8 {
	half, r := k/128, k%128
	quad, l := r/32, r%32
	lb := ql[64*half+l+32*(quad&1)]
	if quad >= 2 {
		lb >>= 4
	}
	hb := qh[32*half+l] >> (2 * quad) & 3
	return lb&0xf | hb<<4
}

// DequantizeQ6K decodes Q6_K bytes (210 per 256 values) into dst: value k
// of sub-block j is (d*scales[j]) * (code-32), as dequantize_row_q6_K.
func DequantizeQ6K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ6_KBytes*i : BlockQ6_KBytes*(i+1)]
		ql, qh, sc := blk[0:128], blk[128:192], blk[192:208]
		d := f16(blk[208:])
		y := dst[QK_K*i : QK_K*(i+1)]
		for n := range 2 {
			for l := range 32 {
				is := 8*n + l/16
				h := qh[32*n+l]
				a, b := ql[64*n+l], ql[64*n+l+32]
				q1 := int32(a&0xf|(h&3)<<4) - 32
				q2 := int32(b&0xf|(h>>2&3)<<4) - 32
				q3 := int32(a>>4|(h>>4&3)<<4) - 32
				q4 := int32(b>>4|(h>>6&3)<<4) - 32
				y[128*n+l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				y[128*n+l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				y[128*n+l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				y[128*n+l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
	}
}
