package quant

import "encoding/binary"

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

// DotQ4_0Q8_0 returns the dot product of one row of Q4_0 weight blocks
// (18 bytes each) with len(x) Q8_0 blocks as ggml's generic
// ggml_vec_dot_q4_0_q8_0: per block the exact int32 sum of (code-8)*q8,
// then sum += (float32(isum)*dw)*dx in block order.
func DotQ4_0Q8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockQ4_0Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ4_0Bytes*i : BlockQ4_0Bytes*(i+1)]
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[2:18] {
			isum += (int32(q&0xf)-8)*int32(a[j]) + (int32(q>>4)-8)*int32(a[j+16])
		}
		sum += float32(float32(float32(isum)*f16(blk)) * F16ToF32(x[i].D))
	}
	return sum
}

// DotQ5_0Q8_0 returns the dot product of one row of Q5_0 weight blocks
// (22 bytes each) with len(x) Q8_0 blocks as ggml's generic
// ggml_vec_dot_q5_0_q8_0: per block sum += (dw*dx) * float32(isum).
func DotQ5_0Q8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockQ5_0Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ5_0Bytes*i : BlockQ5_0Bytes*(i+1)]
		qh := binary.LittleEndian.Uint32(blk[2:])
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[6:22] {
			c0 := int32(uint32(q&0xf)|(qh>>j<<4)&0x10) - 16
			c1 := int32(uint32(q>>4)|(qh>>(j+12))&0x10) - 16
			isum += c0*int32(a[j]) + c1*int32(a[j+16])
		}
		sum += float32(float32(f16(blk)*F16ToF32(x[i].D)) * float32(isum))
	}
	return sum
}

// DotQ4_1Q8_1 returns the dot product of one row of Q4_1 weight blocks
// (20 bytes each) with len(x) Q8_1 blocks as ggml's generic
// ggml_vec_dot_q4_1_q8_1: per block sum += (dw*dx)*float32(isum) +
// m*s, with isum the exact sum of code*q8 and s the activation block's
// stored d*Σq8 (which carries the weight's offset m).
func DotQ4_1Q8_1(w []byte, x []BlockQ8_1) float32 {
	w = w[:BlockQ4_1Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ4_1Bytes*i : BlockQ4_1Bytes*(i+1)]
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[4:20] {
			isum += int32(q&0xf)*int32(a[j]) + int32(q>>4)*int32(a[j+16])
		}
		sum += legacy1Term(blk, &x[i], isum)
	}
	return sum
}

// legacy1Term returns one block's term of the Q4_1 and Q5_1 dots:
// (dw*dx)*float32(isum) + mw*sx, each product rounded to float32.
func legacy1Term(blk []byte, b *BlockQ8_1, isum int32) float32 {
	t := float32(float32(f16(blk)*F16ToF32(b.D)) * float32(isum))
	return t + float32(f16(blk[2:])*F16ToF32(b.S))
}

// DotQ5_1Q8_1 returns the dot product of one row of Q5_1 weight blocks
// (24 bytes each) with len(x) Q8_1 blocks as ggml's generic
// ggml_vec_dot_q5_1_q8_1, in the float order of DotQ4_1Q8_1.
func DotQ5_1Q8_1(w []byte, x []BlockQ8_1) float32 {
	w = w[:BlockQ5_1Bytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ5_1Bytes*i : BlockQ5_1Bytes*(i+1)]
		qh := binary.LittleEndian.Uint32(blk[4:])
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[8:24] {
			c0 := int32(uint32(q&0xf) | (qh>>j<<4)&0x10)
			c1 := int32(uint32(q>>4) | (qh>>(j+12))&0x10)
			isum += c0*int32(a[j]) + c1*int32(a[j+16])
		}
		sum += legacy1Term(blk, &x[i], isum)
	}
	return sum
}

// DotIQ4NLQ8_0 returns the dot product of one row of IQ4_NL weight blocks
// (18 bytes each) with len(x) Q8_0 blocks as ggml's generic
// ggml_vec_dot_iq4_nl_q8_0: per block sum += (dx*dw) * float32(isum),
// isum the exact sum of codebook value times q8.
func DotIQ4NLQ8_0(w []byte, x []BlockQ8_0) float32 {
	w = w[:BlockIQ4_NLBytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockIQ4_NLBytes*i : BlockIQ4_NLBytes*(i+1)]
		a := &x[i].Qs
		var isum int32
		for j, q := range blk[2:18] {
			isum += int32(iq4Values[q&0xf])*int32(a[j]) + int32(iq4Values[q>>4])*int32(a[j+16])
		}
		d := float32(F16ToF32(x[i].D) * f16(blk))
		sum += float32(d * float32(isum))
	}
	return sum
}

// DotIQ4XSQ8K returns the dot product of one row of IQ4_XS weight blocks
// (136 bytes each) with len(x) Q8_K blocks as ggml's generic
// ggml_vec_dot_iq4_xs_q8_K: for each 32-value sub-block in order,
// sum += ((f16(d)*x.D) * float32(scale-32)) * float32(isum).
func DotIQ4XSQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockIQ4_XSBytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockIQ4_XSBytes*i : BlockIQ4_XSBytes*(i+1)]
		d4d8 := float32(f16(blk) * x[i].D)
		sh := binary.LittleEndian.Uint16(blk[2:])
		for ib := range QK_K / 32 {
			qs := blk[8+16*ib : 8+16*ib+16]
			a := x[i].Qs[32*ib : 32*ib+32]
			var isum int32
			for j, q := range qs {
				isum += int32(iq4Values[q&0xf])*int32(a[j]) + int32(iq4Values[q>>4])*int32(a[j+16])
			}
			dl := float32(d4d8 * float32(IQ4XSScale(sh, blk[4:8], ib)-32))
			sum += float32(dl * float32(isum))
		}
	}
	return sum
}

// DotQ2KQ8K returns the dot product of one row of Q2_K weight blocks (84
// bytes each) with len(x) Q8_K blocks as ggml's generic
// ggml_vec_dot_q2_K_q8_K: per block the exact sums isum = Σ_j
// (sc[j]&15) * Σ code*q8 and mins = Σ_j (sc[j]>>4) * bsums[j], then
// sum += (x.D*f16(d))*float32(isum) - (x.D*f16(dmin))*float32(mins).
func DotQ2KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ2_KBytes*len(x)]
	var sum float32
	for i := range x {
		blk := w[BlockQ2_KBytes*i : BlockQ2_KBytes*(i+1)]
		sc, qs := blk[0:16:16], blk[16:80:80]
		b := &x[i]
		var mins, isum int32
		for j, s := range sc {
			mins += int32(b.Bsums[j]) * int32(s>>4)
		}
		// Value 128*h + 32*s + l has its code at bits 2s of qs[32h+l] and
		// belongs to sub-block 8h + 2s + l/16.
		for h := range 2 {
			q := qs[32*h : 32*h+32 : 32*h+32]
			for s := range 4 {
				a := b.Qs[128*h+32*s : 128*h+32*s+32 : 128*h+32*s+32]
				shift := uint(2 * s)
				var lo, hi int32
				for l := range 16 {
					lo += int32(q[l]>>shift&3) * int32(a[l])
					hi += int32(q[l+16]>>shift&3) * int32(a[l+16])
				}
				isum += int32(sc[8*h+2*s]&0xf)*lo + int32(sc[8*h+2*s+1]&0xf)*hi
			}
		}
		dall := float32(b.D * f16(blk[80:]))
		dmin := float32(b.D * f16(blk[82:]))
		sum += float32(dall*float32(isum)) - float32(dmin*float32(mins))
	}
	return sum
}

// DotQ3KQ8K returns the dot product of one row of Q3_K weight blocks (110
// bytes each) with len(x) Q8_K blocks as ggml's generic
// ggml_vec_dot_q3_K_q8_K: eight int32 lanes acc[l] sum (scale-32)*code*q8
// over the values k ≡ l (mod 8) of each block; then lane[l] +=
// (f16(d)*x.D) * float32(acc[l]), and at the end the lanes are added in
// order 0..7 to a zero sum.
func DotQ3KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ3_KBytes*len(x)]
	var lanes [8]float32
	var scales [16]int32
	for i := range x {
		blk := w[BlockQ3_KBytes*i : BlockQ3_KBytes*(i+1)]
		hmask, qs, sc := blk[0:32:32], blk[32:96:96], blk[96:108:108]
		for j := range scales {
			scales[j] = q3KScale(sc, j) - 32
		}
		b := &x[i]
		var acc [8]int32
		// Value 128*h + 32*s + l: code bits 2s of qs[32h+l], high bit
		// 4h+s of hmask[l], sub-block 8h + 2s + l/16, lane l%8.
		for h := range 2 {
			q := qs[32*h : 32*h+32 : 32*h+32]
			for s := range 4 {
				a := b.Qs[128*h+32*s : 128*h+32*s+32 : 128*h+32*s+32]
				shift, hb := uint(2*s), uint(4*h+s)
				for half := range 2 {
					scale := scales[8*h+2*s+half]
					for g := 16 * half; g < 16*half+16; g += 8 {
						for l := range 8 {
							k := g + l
							c := int32(q[k]>>shift&3) - 4 + 4*int32(hmask[k]>>hb&1)
							acc[l] += scale * c * int32(a[k])
						}
					}
				}
			}
		}
		d := float32(f16(blk[108:]) * b.D)
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

// DotQ5KQ8K returns the dot product of one row of Q5_K weight blocks (176
// bytes each) with len(x) Q8_K blocks as ggml's generic
// ggml_vec_dot_q5_K_q8_K, in the order of DotQ4KQ8K: eight int32 lanes of
// scale*code*q8 over k ≡ l (mod 8), sum -= (f16(dmin)*x.D)*mins per block,
// lane[l] += (f16(d)*x.D)*acc[l], and the lanes added to sum at the end.
func DotQ5KQ8K(w []byte, x []BlockQ8K) float32 {
	w = w[:BlockQ5_KBytes*len(x)]
	var lanes [8]float32
	var sum float32
	for i := range x {
		blk := w[BlockQ5_KBytes*i : BlockQ5_KBytes*(i+1)]
		scales, qh, qs := blk[4:16], blk[16:48], blk[48:176]
		b := &x[i]
		var acc [8]int32
		var mins int32
		for j := range 8 {
			sc, m := ScaleMinK4(j, scales)
			mins += (int32(b.Bsums[2*j]) + int32(b.Bsums[2*j+1])) * int32(m)
			q := qs[32*(j/2) : 32*(j/2)+32]
			a := b.Qs[32*j : 32*j+32]
			shift := 4 * uint(j&1)
			for l, v := range q {
				c := int32(v >> shift & 0xf)
				if qh[l]>>j&1 != 0 {
					c += 16
				}
				acc[l%8] += int32(sc) * c * int32(a[l])
			}
		}
		d := float32(f16(blk[0:]) * b.D)
		for l := range lanes {
			lanes[l] += float32(d * float32(acc[l]))
		}
		dmin := float32(f16(blk[2:]) * b.D)
		sum -= float32(dmin * float32(mins))
	}
	for _, v := range lanes {
		sum += v
	}
	return sum
}
