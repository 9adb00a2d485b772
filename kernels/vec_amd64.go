//go:build amd64 && !purego

package kernels

//go:generate go run -C _asm . -out ../avx2_amd64.s -stubs ../avx2_amd64_stubs.go -pkg kernels

// setVecAVX2 installs the AVX2 float vector kernels in t.
func setVecAVX2(t *table) {
	t.dotF32 = func(a, b []float32) float32 {
		if len(a) == 0 {
			return 0
		}
		b = b[:len(a)]
		return dotF32AVX2(&a[0], &b[0], len(a))
	}
	t.dotF32W = func(w []byte, x []float32) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:4*len(x)]
		return dotF32WAVX2(&w[0], &x[0], len(x))
	}
	t.dotF16 = func(a, b []uint16) float32 {
		if len(a) == 0 {
			return 0
		}
		b = b[:len(a)]
		return dotF16AVX2(&a[0], &b[0], len(a))
	}
	t.dotF16Rows = func(out []float32, m []uint16, stride int, q []uint16) {
		if len(out) == 0 {
			return
		}
		if len(q) == 0 {
			clear(out)
			return
		}
		m = m[:(len(out)-1)*stride+len(q)]
		dotF16RowsAVX2(&out[0], &m[0], stride, len(out), &q[0], len(q))
	}
	t.dotF16W = func(w []byte, x []uint16) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:2*len(x)]
		return dotF16WAVX2(&w[0], &x[0], len(x))
	}
	t.dotBF16 = func(w []byte, x []uint16) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:2*len(x)]
		return dotBF16AVX2(&w[0], &x[0], len(x))
	}
	t.f16ToF32 = func(dst []float32, src []uint16) {
		if len(dst) == 0 {
			return
		}
		src = src[:len(dst)]
		f16ToF32AVX2(&dst[0], &src[0], len(dst))
	}
	t.f32ToF16 = func(dst []uint16, src []float32) {
		if len(dst) == 0 {
			return
		}
		src = src[:len(dst)]
		f32ToF16AVX2(&dst[0], &src[0], len(dst))
	}
	t.expSubSum = func(x []float32, m float32) float64 {
		n8 := len(x) &^ 7
		var s float64
		if n8 > 0 {
			s = expSubSumAVX2(&x[0], n8, m)
		}
		return s + expSubSumGeneric(x[n8:], m)
	}
	t.siluMul = func(dst, gate, up []float32) {
		n8 := len(gate) &^ 7
		if n8 > 0 {
			up, dst = up[:n8], dst[:n8]
			siluMulAVX2(&dst[0], &gate[0], &up[0], n8)
		}
		siluMulGeneric(dst[n8:], gate[n8:], up[n8:])
	}
	t.axpyF16 = func(dst []float32, a float32, v []uint16) {
		if len(dst) == 0 {
			return
		}
		v = v[:len(dst)]
		axpyF16AVX2(&dst[0], a, &v[0], len(dst))
	}
}
