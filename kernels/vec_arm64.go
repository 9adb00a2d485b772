//go:build arm64 && !purego

package kernels

// setVecNEON installs the ASIMD float vector kernels (vec_arm64.s) in t:
// the dots of float32, half and bfloat16 vectors, the half conversions and
// axpyF16. Every arm64 path uses them: they need nothing past ARMv8.0 but
// for the half dots, which use FMLAL where the CPU has it (fhm; the same
// sums bit for bit as widening with FCVTL, in half the instructions).
func setVecNEON(t *table, fhm bool) {
	dotF16, dotF16W := dotF16NEON, dotF16WNEON
	if fhm {
		dotF16, dotF16W = dotF16FHM, dotF16WFHM
	}
	t.dotF32 = func(a, b []float32) float32 {
		if len(a) == 0 {
			return 0
		}
		b = b[:len(a)]
		return dotF32NEON(&a[0], &b[0], len(a))
	}
	t.dotF32W = func(w []byte, x []float32) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:4*len(x)]
		return dotF32WNEON(&w[0], &x[0], len(x))
	}
	t.dotF16 = func(a, b []uint16) float32 {
		if len(a) == 0 {
			return 0
		}
		b = b[:len(a)]
		return dotF16(&a[0], &b[0], len(a))
	}
	// The row dots are the one-row kernel per row, so that each equals
	// dotF16 bit for bit (TestDotF16Rows).
	t.dotF16Rows = func(out []float32, m []uint16, stride int, q []uint16) {
		if len(q) == 0 {
			clear(out)
			return
		}
		for j := range out {
			r := m[j*stride : j*stride+len(q)]
			out[j] = dotF16(&r[0], &q[0], len(q))
		}
	}
	t.dotF16W = func(w []byte, x []uint16) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:2*len(x)]
		return dotF16W(&w[0], &x[0], len(x))
	}
	t.dotBF16 = func(w []byte, x []uint16) float32 {
		if len(x) == 0 {
			return 0
		}
		w = w[:2*len(x)]
		return dotBF16NEON(&w[0], &x[0], len(x))
	}
	t.f16ToF32 = func(dst []float32, src []uint16) {
		if len(dst) == 0 {
			return
		}
		src = src[:len(dst)]
		f16ToF32NEON(&dst[0], &src[0], len(dst))
	}
	t.f32ToF16 = func(dst []uint16, src []float32) {
		if len(dst) == 0 {
			return
		}
		src = src[:len(dst)]
		f32ToF16NEON(&dst[0], &src[0], len(dst))
	}
	t.axpyF16 = func(dst []float32, a float32, v []uint16) {
		if len(dst) == 0 {
			return
		}
		v = v[:len(dst)]
		axpyF16NEON(&dst[0], a, &v[0], len(dst))
	}
}

// dotF32NEON returns Σ a[i]*b[i] over n (>= 0) float32 values, in four
// float32x4 lanes.
//
//go:noescape
func dotF32NEON(a, b *float32, n int) float32

// dotF32WNEON works like dotF32NEON with a as little-endian float32 bytes.
//
//go:noescape
func dotF32WNEON(w *byte, x *float32, n int) float32

// dotF16NEON returns Σ a[i]*b[i] over n halves, widened to float32.
//
//go:noescape
func dotF16NEON(a, b *uint16, n int) float32

// dotF16WNEON works like dotF16NEON with the weights as little-endian
// half bytes.
//
//go:noescape
func dotF16WNEON(w *byte, x *uint16, n int) float32

// dotF16FHM works like dotF16NEON with FMLAL (FEAT_FHM), bit for bit.
//
//go:noescape
func dotF16FHM(a, b *uint16, n int) float32

// dotF16WFHM works like dotF16WNEON with FMLAL (FEAT_FHM), bit for bit.
//
//go:noescape
func dotF16WFHM(w *byte, x *uint16, n int) float32

// dotBF16NEON returns the dot of n little-endian bfloat16 weights at w with
// n bfloat16 values at x, in float32.
//
//go:noescape
func dotBF16NEON(w *byte, x *uint16, n int) float32

// axpyF16NEON adds a*v[i] to dst[i] for n values, as axpyF16Generic.
//
//go:noescape
func axpyF16NEON(dst *float32, a float32, v *uint16, n int)

// f16ToF32NEON converts n halves to float32, as quant.F16ToF32.
//
//go:noescape
func f16ToF32NEON(dst *float32, src *uint16, n int)

// f32ToF16NEON converts n float32 values to halves, as quant.F32ToF16
// (NaN payloads aside).
//
//go:noescape
func f32ToF16NEON(dst *uint16, src *float32, n int)
