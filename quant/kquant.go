package quant

// ScaleMinK4 returns the 6-bit scale and min of sub-block j (0..7) from
// the 12 packed scale bytes of a Q4_K or Q5_K block: sub-blocks 0..3 keep
// theirs in the low six bits of bytes j and j+4; sub-blocks 4..7 keep the
// low four bits in byte j+4 (scale low nibble, min high nibble) and the top
// two bits in the high bits of bytes j-4 (scale) and j (min).
func ScaleMinK4(j int, scales []byte) (sc, m uint8) {
	if j < 4 {
		return scales[j] & 63, scales[j+4] & 63
	}
	sc = scales[j+4]&0xf | (scales[j-4]>>6)<<4
	m = scales[j+4]>>4 | (scales[j]>>6)<<4
	return sc, m
}

// packScalesK4 packs eight 6-bit scales and mins into 12 bytes, the
// inverse of ScaleMinK4.
func packScalesK4(dst []byte, ls, lm *[8]uint8) {
	dst = dst[:12]
	clear(dst)
	for j := range 8 {
		if j < 4 {
			dst[j] = ls[j]
			dst[j+4] = lm[j]
			continue
		}
		dst[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
		dst[j-4] |= (ls[j] >> 4) << 6
		dst[j] |= (lm[j] >> 4) << 6
	}
}

// kqScratch is the working memory of one make_qkx2_quants call.
type kqScratch struct {
	weights [32]float32
	laux    [32]uint8
}

// makeQKX2 fits x ≈ scale*L - theMin with L in [0, nmax] by weighted least
// squares, as ggml's make_qkx2_quants (use_mad false): a first guess from
// the range, then nstep+1 candidate inverse scales (rmin + rdelta*is +
// nmax)/(max-min), each refined by the closed-form fit and kept when its
// weighted squared error is lower. It writes the codes to L.
func makeQKX2(x []float32, s *kqScratch, L []uint8, nmax int32, rmin, rdelta float32, nstep int) (scale, theMin float32) {
	return makeQKX2Err(x, s, L, nmax, rmin, rdelta, nstep, false)
}

// makeQKX2Err is makeQKX2 comparing the fits by weighted absolute error
// when mad is set (make_qkx2_quants' use_mad), squared error otherwise.
func makeQKX2Err(x []float32, s *kqScratch, L []uint8, nmax int32, rmin, rdelta float32, nstep int, mad bool) (scale, theMin float32) {
	n := len(x)
	w := s.weights[:n]
	L = L[:n]
	laux := s.laux[:n]
	vmin, vmax := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < n; i++ {
		if x[i] < vmin {
			vmin = x[i]
		}
		if x[i] > vmax {
			vmax = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if vmin > 0 {
		vmin = 0
	}
	if vmax == vmin {
		clear(L)
		return 0, -vmin
	}
	fnmax := float32(nmax)
	iscale := fnmax / (vmax - vmin)
	scale = 1 / iscale
	var bestMad float32
	for i, v := range x {
		l := nearestInt(float32(iscale * (v - vmin)))
		L[i] = uint8(clamp(l, 0, nmax))
		diff := float32(scale*float32(L[i])) + vmin - v
		if mad {
			diff = absf(diff)
		} else {
			diff = diff * diff
		}
		bestMad += float32(w[i] * diff)
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fnmax) / (vmax - vmin)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clamp(nearestInt(float32(iscale*(v-vmin))), 0, nmax)
			laux[i] = uint8(l)
			fl := float32(l)
			wl := float32(w[i] * fl)
			sumL += wl
			sumL2 += float32(wl * fl)
			sumXL += float32(wl * v)
		}
		d := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(d > 0) {
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / d
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / d
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var e float32
		for i, v := range x {
			diff := float32(thisScale*float32(laux[i])) + thisMin - v
			if mad {
				diff = absf(diff)
			} else {
				diff = diff * diff
			}
			e += float32(w[i] * diff)
		}
		if e < bestMad {
			copy(L, laux)
			bestMad = e
			scale, vmin = thisScale, thisMin
		}
	}
	return scale, -vmin
}

// kSuperBlock holds the per-sub-block fit of one Q4_K or Q5_K block.
type kSuperBlock struct {
	scratch kqScratch
	l       [QK_K]uint8
	scales  [8]float32
	mins    [8]float32
}

// fit quantizes 256 values into the 12 scale bytes, d and dmin (written to
// hdr[0:16]) and the codes in k.l, as quantize_row_q4_K_ref (nmax 15,
// rmin -1, nstep 20) and quantize_row_q5_K_ref (nmax 31, rmin -0.5, nstep
// 15) do; both use rdelta 0.1.
func (k *kSuperBlock) fit(x []float32, hdr []byte, nmax int32, rmin float32, nstep int) {
	x = x[:QK_K]
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrtf(sumX2 / 32)
		for l, v := range xs {
			k.scratch.weights[l] = avX + absf(v)
		}
		k.scales[j], k.mins[j] = makeQKX2(xs, &k.scratch, k.l[32*j:], nmax, rmin, 0.1, nstep)
		if k.scales[j] > maxScale {
			maxScale = k.scales[j]
		}
		if k.mins[j] > maxMin {
			maxMin = k.mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	var ls, lm [8]uint8
	for j := range 8 {
		ls[j] = min(63, uint8(nearestInt(float32(invScale*k.scales[j]))))
		lm[j] = min(63, uint8(nearestInt(float32(invMin*k.mins[j]))))
	}
	hdr = hdr[:16]
	putF16(hdr[0:], F32ToF16(maxScale/63))
	putF16(hdr[2:], F32ToF16(maxMin/63))
	packScalesK4(hdr[4:16], &ls, &lm)
	d, dmin := f16(hdr[0:]), f16(hdr[2:])
	for j := range 8 {
		sc, m := ScaleMinK4(j, hdr[4:16])
		dj := float32(d * float32(sc))
		if dj == 0 {
			continue
		}
		dm := float32(dmin * float32(m))
		for i, v := range x[32*j : 32*j+32] {
			k.l[32*j+i] = uint8(clamp(nearestInt((v+dm)/dj), 0, nmax))
		}
	}
}

// QuantizeQ4K quantizes src (a multiple of 256 values) into Q4_K bytes in
// dst (144 per block), byte-identical with quantize_row_q4_K_ref: each
// 32-value sub-block is fitted by makeQKX2 with weights av+|x| (av the
// sub-block's RMS), the eight scales and mins are quantized to 6 bits
// against d = max scale/63 and dmin = max min/63, and every value is then
// re-coded as clamp(nearest_int((x + dmin*m)/(d*sc)), 0, 15).
func QuantizeQ4K(src []float32, dst []byte) {
	var k kSuperBlock
	nb := len(src) / QK_K
	for i := range nb {
		blk := dst[BlockQ4_KBytes*i : BlockQ4_KBytes*(i+1)]
		k.fit(src[QK_K*i:QK_K*(i+1)], blk, 15, -1, 20)
		qs := blk[16:144]
		for j := 0; j < QK_K; j += 64 {
			for l := range 32 {
				qs[j/2+l] = k.l[j+l] | k.l[j+l+32]<<4
			}
		}
	}
}

// DequantizeQ4K decodes Q4_K bytes (144 per 256 values) into dst: for
// sub-block j with 6-bit scale sc and min m, value = (d*sc)*q - dmin*m,
// where q is the low nibble of qs[32*(j/2)+l] for even j and the high
// nibble for odd j.
func DequantizeQ4K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ4_KBytes*i : BlockQ4_KBytes*(i+1)]
		d, dmin := f16(blk[0:]), f16(blk[2:])
		scales := blk[4:16]
		y := dst[QK_K*i : QK_K*(i+1)]
		for j := range 4 {
			q := blk[16+32*j : 16+32*j+32]
			sc, m := ScaleMinK4(2*j, scales)
			d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
			sc, m = ScaleMinK4(2*j+1, scales)
			d2, m2 := float32(d*float32(sc)), float32(dmin*float32(m))
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l, b := range q {
				lo[l] = float32(d1*float32(b&0xf)) - m1
				hi[l] = float32(d2*float32(b>>4)) - m2
			}
		}
	}
}

// QuantizeQ5K quantizes src (a multiple of 256 values) into Q5_K bytes in
// dst (176 per block) with the algorithm of quantize_row_q5_K_ref: as
// QuantizeQ4K but with 5-bit codes (nmax 31) and the search constants rmin
// -0.5, rdelta 0.1, nstep 15; the fifth bits go to qh.
func QuantizeQ5K(src []float32, dst []byte) {
	var k kSuperBlock
	nb := len(src) / QK_K
	for i := range nb {
		blk := dst[BlockQ5_KBytes*i : BlockQ5_KBytes*(i+1)]
		k.fit(src[QK_K*i:QK_K*(i+1)], blk, 31, -0.5, 15)
		qh, qs := blk[16:48], blk[48:176]
		clear(qh)
		m1, m2 := uint8(1), uint8(2)
		for n := 0; n < QK_K; n += 64 {
			for j := range 32 {
				l1, l2 := k.l[n+j], k.l[n+j+32]
				if l1 > 15 {
					l1 -= 16
					qh[j] |= m1
				}
				if l2 > 15 {
					l2 -= 16
					qh[j] |= m2
				}
				qs[n/2+j] = l1 | l2<<4
			}
			m1 <<= 2
			m2 <<= 2
		}
	}
}

// DequantizeQ5K decodes Q5_K bytes (176 per 256 values) into dst: as
// DequantizeQ4K with a fifth code bit (16) taken from bit j of qh[l] for
// sub-block j.
func DequantizeQ5K(src []byte, dst []float32) {
	nb := len(dst) / QK_K
	for i := range nb {
		blk := src[BlockQ5_KBytes*i : BlockQ5_KBytes*(i+1)]
		d, dmin := f16(blk[0:]), f16(blk[2:])
		scales, qh := blk[4:16], blk[16:48]
		y := dst[QK_K*i : QK_K*(i+1)]
		for j := range 4 {
			q := blk[48+32*j : 48+32*j+32]
			sc, m := ScaleMinK4(2*j, scales)
			d1, m1 := float32(d*float32(sc)), float32(dmin*float32(m))
			sc, m = ScaleMinK4(2*j+1, scales)
			d2, m2 := float32(d*float32(sc)), float32(dmin*float32(m))
			u1, u2 := uint8(1)<<(2*j), uint8(2)<<(2*j)
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l, b := range q {
				c1, c2 := uint32(b&0xf), uint32(b>>4)
				if qh[l]&u1 != 0 {
					c1 += 16
				}
				if qh[l]&u2 != 0 {
					c2 += 16
				}
				lo[l] = float32(d1*float32(c1)) - m1
				hi[l] = float32(d2*float32(c2)) - m2
			}
		}
	}
}
