package quant

// DotQ8_0Q8_0 returns the dot product of one row of Q8_0 weight blocks
// (raw bytes, 34 per block) with len(x) Q8_0 activation blocks, as ggml's
// reference ggml_vec_dot_q8_0_q8_0: per block the exact int32 sum of the 32
// code products, then sum += float32(isum) * (dw*dx) in block order, with
// dw and dx the blocks' f16 scales and no fused multiply-add. w must hold
// at least 34*len(x) bytes (it panics otherwise).
func DotQ8_0Q8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockQ8_0Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ8_0Bytes*i : BlockQ8_0Bytes*(i+1)]
		q := blk[2 : 2+QK8_0 : 2+QK8_0]
		a := &x[i].Qs
		var s0, s1, s2, s3 int32
		for j := 0; j < QK8_0; j += 4 {
			s0 += int32(int8(q[j])) * int32(a[j])
			s1 += int32(int8(q[j+1])) * int32(a[j+1])
			s2 += int32(int8(q[j+2])) * int32(a[j+2])
			s3 += int32(int8(q[j+3])) * int32(a[j+3])
		}
		dd := f16(blk) * F16ToF32(x[i].D)
		sum += float32(float32(s0+s1+s2+s3) * dd)
	}
	return sum
}

// DotQ4KQ8K returns the dot product of one row of Q4_K weight blocks (raw
// bytes, 144 per block) with len(x) Q8_K activation blocks, as ggml's
// reference ggml_vec_dot_q4_K_q8_K computes it. Per block: eight int32
// lanes acc[l] accumulate sc[j] * (q4*q8) over the values k ≡ l (mod 8) of
// every 32-value sub-block j; the integer mins term is Σ bsums[j]*m[j/2]
// over the 16 bsums. Then, in this order and without fused multiply-add,
// lane[l] += (f16(d)*x.D) * float32(acc[l]) for each l, and
// sum -= (f16(dmin)*x.D) * float32(mins). At the end the eight lanes are
// added to sum in order 0..7. w must hold at least 144*len(x) bytes.
func DotQ4KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ4_KBytes*len(x)]
	var lanes [8]float32
	var sum float32
	for i := range x {
		blk := w[BlockQ4_KBytes*i : BlockQ4_KBytes*(i+1)]
		scales := blk[4:16]
		xb := &x[i]
		var acc [8]int32
		var mins int32
		for j := 0; j < 8; j += 2 {
			sc0, m0 := ScaleMinK4(j, scales)
			sc1, m1 := ScaleMinK4(j+1, scales)
			mins += (int32(xb.Bsums[2*j])+int32(xb.Bsums[2*j+1]))*int32(m0) +
				(int32(xb.Bsums[2*j+2])+int32(xb.Bsums[2*j+3]))*int32(m1)
			q := blk[16+16*j : 16+16*j+32 : 16+16*j+32]
			a := xb.Qs[32*j : 32*j+32 : 32*j+32]
			b := xb.Qs[32*j+32 : 32*j+64 : 32*j+64]
			var lo, hi [8]int32
			for g := 0; g < 32; g += 8 {
				qg, ag, bg := q[g:g+8:g+8], a[g:g+8:g+8], b[g:g+8:g+8]
				for l := range 8 {
					lo[l] += int32(qg[l]&0xf) * int32(ag[l])
					hi[l] += int32(qg[l]>>4) * int32(bg[l])
				}
			}
			for l := range 8 {
				acc[l] += int32(sc0)*lo[l] + int32(sc1)*hi[l]
			}
		}
		d := float32(f16(blk[0:]) * xb.D)
		for l := range lanes {
			lanes[l] += float32(d * float32(acc[l]))
		}
		dmin := float32(f16(blk[2:]) * xb.D)
		sum -= float32(dmin * float32(mins))
	}
	for _, v := range lanes {
		sum += v
	}
	return sum
}

// DotQ6KQ8K returns the dot product of one row of Q6_K weight blocks (raw
// bytes, 210 per block) with len(x) Q8_K activation blocks, as ggml's
// reference ggml_vec_dot_q6_K_q8_K computes it. Per block: eight int32
// lanes acc[l] accumulate scales[j] * ((code-32)*q8) over the values
// k ≡ l (mod 8) of every 16-value sub-block j. Then, without fused
// multiply-add, lane[l] += (f16(d)*x.D) * float32(acc[l]); at the end the
// eight lanes are added in order 0..7 to a zero sum. w must hold at least
// 210*len(x) bytes.
func DotQ6KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ6_KBytes*len(x)]
	var lanes [8]float32
	for i := range x {
		blk := w[BlockQ6_KBytes*i : BlockQ6_KBytes*(i+1)]
		sc := blk[192:208:208]
		xb := &x[i]
		var acc [8]int32
		for n := range 2 {
			ql := blk[64*n : 64*n+64 : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32 : 128+32*n+32]
			q8 := xb.Qs[128*n : 128*n+128 : 128*n+128]
			s := sc[8*n : 8*n+8 : 8*n+8]
			// Values l, l+32, l+64 and l+96 share ql and qh bytes; each
			// 16-value group has its own scale.
			for g := 0; g < 32; g += 8 {
				var p1, p2, p3, p4 [8]int32
				for l := range 8 {
					k := g + l
					a, b, h := ql[k], ql[k+32], qh[k]
					p1[l] = (int32(a&0xf|(h&3)<<4) - 32) * int32(q8[k])
					p2[l] = (int32(b&0xf|(h>>2&3)<<4) - 32) * int32(q8[k+32])
					p3[l] = (int32(a>>4|(h>>4&3)<<4) - 32) * int32(q8[k+64])
					p4[l] = (int32(b>>4|(h>>6&3)<<4) - 32) * int32(q8[k+96])
				}
				is := g / 16
				s1, s2 := int32(int8(s[is])), int32(int8(s[is+2]))
				s3, s4 := int32(int8(s[is+4])), int32(int8(s[is+6]))
				for l := range 8 {
					acc[l] += s1*p1[l] + s2*p2[l] + s3*p3[l] + s4*p4[l]
				}
			}
		}
		d := float32(f16(blk[208:]) * xb.D)
		for l := range lanes {
			lanes[l] += float32(d * float32(acc[l]))
		}
	}
	var sum float32
	for _, v := range lanes {
		sum += v
	}
	return sum
}
