package quant

// makeQKX2Mad is makeQKX2 with use_mad set: the candidate fits are
// compared by weighted absolute rather than squared error, as
// quantize_row_q2_K_ref asks.
func makeQKX2Mad(x []float32, s *kqScratch, L []uint8, nmax int32, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	return makeQKX2Err(x, s, L, nmax, rmin, rdelta, nstep, true)
}

// QuantizeQ2K quantizes src (a multiple of 256 values) into Q2_K bytes in
// dst (84 per block) as quantize_row_q2_K_ref does: each 16-value
// sub-block is fitted by make_qkx2_quants (codes 0..3, weights |x|,
// absolute error, rmin -0.5, rdelta 0.1, 15 steps); the scales and mins
// are quantized to 4 bits against d = max scale/15 and dmin = max min/15,
// and every value is re-coded as clamp(nearest_int((x + dmin*m)/(d*sc)),
// 0, 3).
func QuantizeQ2K(src []float32, dst []byte) {
	var s kqScratch
	var L [QK_K]uint8
	var scales, mins [QK_K / 16]float32
	nb := len(src) / QK_K
	for i := range nb {
		x := src[QK_K*i : QK_K*(i+1)]
		blk := dst[BlockQ2_KBytes*i : BlockQ2_KBytes*(i+1)]
		sc := blk[0:16]
		var maxScale, maxMin float32
		for j := range QK_K / 16 {
			xs := x[16*j : 16*j+16]
			for l, v := range xs {
				s.weights[l] = absf(v)
			}
			scales[j], mins[j] = makeQKX2Mad(xs, &s, L[16*j:16*j+16], 3, -0.5, 0.1, 15)
			if scales[j] > maxScale {
				maxScale = scales[j]
			}
			if mins[j] > maxMin {
				maxMin = mins[j]
			}
		}
		clear(sc)
		if maxScale > 0 {
			iscale := 15 / maxScale
			for j := range sc {
				sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
			}
			putF16(blk[80:], F32ToF16(maxScale/15))
		} else {
			putF16(blk[80:], 0)
		}
		if maxMin > 0 {
			iscale := 15 / maxMin
			for j := range sc {
				sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
			}
			putF16(blk[82:], F32ToF16(maxMin/15))
		} else {
			putF16(blk[82:], 0)
		}
		d, dmin := f16(blk[80:]), f16(blk[82:])
		for j := range QK_K / 16 {
			dj := float32(d * float32(sc[j]&0xf))
			if dj == 0 {
				continue
			}
			dm := float32(dmin * float32(sc[j]>>4))
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = uint8(clamp(nearestInt((v+dm)/dj), 0, 3))
			}
		}
		qs := blk[16:80]
		for j := 0; j < QK_K; j += 128 {
			for l := range 32 {
				qs[j/4+l] = L[j+l] | L[j+l+32]<<2 | L[j+l+64]<<4 | L[j+l+96]<<6
			}
		}
	}
}

// DequantizeQ2K decodes Q2_K bytes (84 per 256 values) into dst: value l
// of 16-value sub-block j is (d*(sc[j]&15))*code - dmin*(sc[j]>>4), the
// 2-bit code of value 128*h + 32*s + l at bits 2*s of qs[32*h + l].
func DequantizeQ2K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ2_KBytes*i : BlockQ2_KBytes*(i+1)]
		sc, qs := blk[0:16], blk[16:80]
		d, dmin := f16(blk[80:]), f16(blk[82:])
		y := dst[QK_K*i : QK_K*(i+1)]
		for k := range QK_K {
			h, r := k/128, k%128
			s, l := r/32, r%32
			j := k / 16
			q := qs[32*h+l] >> (2 * s) & 3
			dl := float32(d * float32(sc[j]&0xf))
			ml := float32(dmin * float32(sc[j]>>4))
			y[k] = float32(dl*float32(q)) - ml
		}
	}
}

// makeQ3 fits x ≈ scale*l with l in [-nmax, nmax-1] as ggml's
// make_q3_quants does with do_rmse: a first guess from the value of
// largest magnitude, then up to five passes that move single codes when
// that improves the weighted (x²) fit. It writes l+nmax to L.
func makeQ3(x []float32, L []int8, nmax int32) float32 {
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
	iscale := -float32(nmax) / vmax
	var sumLX, sumL2 float32
	for i, v := range x {
		l := clamp(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		w := float32(v * v)
		fl := float32(l)
		sumLX += float32(float32(w*v) * fl)
		sumL2 += float32(float32(w*fl) * fl)
	}
	for range 5 {
		changed := false
		for i, v := range x {
			w := float32(v * v)
			fl := float32(L[i])
			slx := sumLX - float32(float32(w*v)*fl)
			if !(slx > 0) {
				continue
			}
			sl2 := sumL2 - float32(float32(w*fl)*fl)
			nl := clamp(nearestInt(float32(v*sl2)/slx), -nmax, nmax-1)
			if nl == int32(L[i]) {
				continue
			}
			fn := float32(nl)
			slx += float32(float32(w*v) * fn)
			sl2 += float32(float32(w*fn) * fn)
			if sl2 > 0 && float32(float32(slx*slx)*sumL2) > float32(float32(sumLX*sumLX)*sl2) {
				L[i] = int8(nl)
				sumLX, sumL2 = slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	return sumLX / sumL2
}

// q3KScale returns the 6-bit scale (0..63, stored with a bias of 32) of
// 16-value sub-block j (0..15) from the 12 packed scale bytes of a Q3_K
// block: the low four bits in byte j (j < 8, low nibble) or j-8 (high
// nibble), the top two at bits 2*(j/4) of byte 8 + j%4.
func q3KScale(sc []byte, j int) int32 {
	var lo byte
	if j < 8 {
		lo = sc[j] & 0xf
	} else {
		lo = sc[j-8] >> 4
	}
	hi := sc[8+j%4] >> (2 * (j / 4)) & 3
	return int32(lo | hi<<4)
}

// QuantizeQ3K quantizes src (a multiple of 256 values) into Q3_K bytes in
// dst (110 per block) as quantize_row_q3_K_ref does: each 16-value
// sub-block is fitted by make_q3_quants (codes -4..3); with s the fitted
// scale of largest magnitude, the 6-bit scales are clamp(nearest_int(
// -32/s*scale), -32, 31) + 32 and d = f16(s/-32); every value is then
// re-coded as clamp(nearest_int(x/(d*(scale-32))), -4, 3) + 4, its third
// bit going to hmask.
func QuantizeQ3K(src []float32, dst []byte) {
	var L [QK_K]int8
	var scales [QK_K / 16]float32
	nb := len(src) / QK_K
	for i := range nb {
		x := src[QK_K*i : QK_K*(i+1)]
		blk := dst[BlockQ3_KBytes*i : BlockQ3_KBytes*(i+1)]
		hmask, qs, sc := blk[0:32], blk[32:96], blk[96:108]
		var maxScale, amax float32
		for j := range QK_K / 16 {
			scales[j] = makeQ3(x[16*j:16*j+16], L[16*j:16*j+16], 4)
			if a := absf(scales[j]); a > amax {
				amax, maxScale = a, scales[j]
			}
		}
		clear(sc)
		if maxScale != 0 {
			iscale := -32 / maxScale
			for j := range QK_K / 16 {
				l := int32(int8(nearestInt(float32(iscale * scales[j]))))
				l = clamp(l, -32, 31) + 32
				if j < 8 {
					sc[j] = byte(l & 0xf)
				} else {
					sc[j-8] |= byte(l&0xf) << 4
				}
				sc[j%4+8] |= byte(l>>4) << (2 * (j / 4))
			}
			putF16(blk[108:], F32ToF16(1/iscale))
		} else {
			putF16(blk[108:], 0)
		}
		dAll := f16(blk[108:])
		for j := range QK_K / 16 {
			d := float32(dAll * float32(int8(q3KScale(sc, j)-32)))
			if d == 0 {
				continue
			}
			for ii, v := range x[16*j : 16*j+16] {
				L[16*j+ii] = int8(clamp(nearestInt(v/d), -4, 3) + 4)
			}
		}
		clear(hmask)
		for j := range QK_K {
			if L[j] > 3 {
				hmask[j%32] |= 1 << (j / 32)
				L[j] -= 4
			}
		}
		for j := 0; j < QK_K; j += 128 {
			for l := range 32 {
				qs[j/4+l] = uint8(L[j+l]) | uint8(L[j+l+32])<<2 | uint8(L[j+l+64])<<4 | uint8(L[j+l+96])<<6
			}
		}
	}
}

// DequantizeQ3K decodes Q3_K bytes (110 per 256 values) into dst: value
// k of 16-value sub-block j is (d*(scale-32)) * (code - 4*(1-hbit)), with
// the 2-bit code laid out as in Q2_K and hbit bit k/32 of hmask[k%32].
func DequantizeQ3K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ3_KBytes*i : BlockQ3_KBytes*(i+1)]
		hmask, qs, sc := blk[0:32], blk[32:96], blk[96:108]
		d := f16(blk[108:])
		y := dst[QK_K*i : QK_K*(i+1)]
		for k := range QK_K {
			h, r := k/128, k%128
			s, l := r/32, r%32
			q := int32(qs[32*h+l] >> (2 * s) & 3)
			if hmask[l]>>(k/32)&1 == 0 {
				q -= 4
			}
			dl := float32(d * float32(q3KScale(sc, k/16)-32))
			y[k] = float32(dl * float32(q))
		}
	}
}
