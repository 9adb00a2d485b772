package quant

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// supportedTypes lists every type Dequantize and Quantize handle.
func supportedTypes() []tensor.Type {
	return []tensor.Type{
		tensor.F32, tensor.F16, tensor.BF16, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
		tensor.Q8_0, tensor.Q8_1, tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
		tensor.Q8_K, tensor.IQ4_NL, tensor.IQ4_XS, tensor.MXFP4,
	}
}

func TestBlockSizes(t *testing.T) {
	cases := []struct {
		name       string
		got, want  int
		typ        tensor.Type
		blockSize  int
		checkTable bool
	}{
		{"BlockQ8_0 struct", int(reflect.TypeFor[BlockQ8_0]().Size()), 34, tensor.Q8_0, QK8_0, true},
		{"BlockQ8_1 struct", int(reflect.TypeFor[BlockQ8_1]().Size()), 36, tensor.Q8_1, QK8_1, true},
		{"BlockQ8K struct", int(reflect.TypeFor[BlockQ8K]().Size()), 292, tensor.Q8_K, QK_K, true},
		{"F32", acceptedBytes(tensor.F32), 4, tensor.F32, 1, true},
		{"F16", acceptedBytes(tensor.F16), 2, tensor.F16, 1, true},
		{"BF16", acceptedBytes(tensor.BF16), 2, tensor.BF16, 1, true},
		{"Q4_0", BlockQ4_0Bytes, 18, tensor.Q4_0, QK4_0, true},
		{"Q5_0", BlockQ5_0Bytes, 22, tensor.Q5_0, QK5_0, true},
		{"Q4_1", BlockQ4_1Bytes, 20, tensor.Q4_1, QK4_1, true},
		{"Q5_1", BlockQ5_1Bytes, 24, tensor.Q5_1, QK5_1, true},
		{"Q2_K", BlockQ2_KBytes, 84, tensor.Q2_K, QK_K, true},
		{"Q3_K", BlockQ3_KBytes, 110, tensor.Q3_K, QK_K, true},
		{"IQ4_NL", BlockIQ4_NLBytes, 18, tensor.IQ4_NL, QK4_NL, true},
		{"IQ4_XS", BlockIQ4_XSBytes, 136, tensor.IQ4_XS, QK_K, true},
		{"MXFP4", BlockMXFP4Bytes, 17, tensor.MXFP4, QKMXFP4, true},
		{"Q8_0", BlockQ8_0Bytes, 34, tensor.Q8_0, QK8_0, true},
		{"Q8_1", BlockQ8_1Bytes, 36, tensor.Q8_1, QK8_1, true},
		{"Q4_K", BlockQ4_KBytes, 144, tensor.Q4_K, QK_K, true},
		{"Q5_K", BlockQ5_KBytes, 176, tensor.Q5_K, QK_K, true},
		{"Q6_K", BlockQ6_KBytes, 210, tensor.Q6_K, QK_K, true},
		{"Q8_K", BlockQ8_KBytes, 292, tensor.Q8_K, QK_K, true},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
		if c.typ.BlockBytes() != c.want || c.typ.BlockSize() != c.blockSize {
			t.Errorf("%s: tensor table says %d values in %d bytes, want %d in %d",
				c.name, c.typ.BlockSize(), c.typ.BlockBytes(), c.blockSize, c.want)
		}
	}
	// What Quantize and Dequantize accept for one block must be the
	// tensor table's block size, for every type they handle.
	for _, typ := range supportedTypes() {
		if got := acceptedBytes(typ); got != typ.BlockBytes() {
			t.Errorf("%s: Quantize and Dequantize take %d bytes per block, the table says %d", typ, got, typ.BlockBytes())
		}
	}
	if o := reflect.TypeFor[BlockQ8K]().Field(2).Offset; o != 260 {
		t.Errorf("BlockQ8K.Bsums at offset %d, want 260", o)
	}
	if o := reflect.TypeFor[BlockQ8_0]().Field(1).Offset; o != 2 {
		t.Errorf("BlockQ8_0.Qs at offset %d, want 2", o)
	}
}

// acceptedBytes returns the one byte length that both Quantize and
// Dequantize accept for one block of typ, or -1.
func acceptedBytes(typ tensor.Type) int {
	found := -1
	vals := make([]float32, typ.BlockSize())
	for n := 1; n <= 512; n++ {
		b := make([]byte, n)
		if Quantize(typ, vals, b) == nil && Dequantize(typ, b, vals) == nil {
			if found >= 0 {
				return -1
			}
			found = n
		}
	}
	return found
}

func TestSupported(t *testing.T) {
	want := map[tensor.Type]bool{}
	for _, typ := range supportedTypes() {
		want[typ] = true
	}
	for typ := tensor.Type(0); typ < 45; typ++ {
		if got := Supported(typ); got != want[typ] {
			t.Errorf("Supported(%s) = %v, want %v", typ, got, want[typ])
		}
	}
}

func TestLengthErrors(t *testing.T) {
	cases := []struct {
		name     string
		typ      tensor.Type
		vals     int
		nbytes   int
		field    string
		sentinel error
	}{
		{"partial block", tensor.Q8_0, 33, 34, "dst", ErrLength},
		{"short bytes", tensor.Q4_K, 256, 143, "src", ErrLength},
		{"long bytes", tensor.Q6_K, 256, 211, "src", ErrLength},
		{"f16 odd", tensor.F16, 3, 5, "src", ErrLength},
		{"unsupported", tensor.IQ2_XS, 256, 74, "", ErrUnsupported},
		{"unknown", tensor.Type(1000), 1, 1, "", ErrUnsupported},
		{"zero is fine", tensor.Q4_K, 0, 0, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Dequantize(c.typ, make([]byte, c.nbytes), make([]float32, c.vals))
			if !errors.Is(err, c.sentinel) || (c.sentinel == nil && err != nil) {
				t.Fatalf("Dequantize: %v, want %v", err, c.sentinel)
			}
			var le *LengthError
			if c.field != "" {
				if !errors.As(err, &le) || le.Field != c.field || le.Op != "dequantize" {
					t.Fatalf("Dequantize: %#v, want a LengthError on %s", err, c.field)
				}
			}
			qerr := Quantize(c.typ, make([]float32, c.vals), make([]byte, c.nbytes))
			if !errors.Is(qerr, c.sentinel) || (c.sentinel == nil && qerr != nil) {
				t.Fatalf("Quantize: %v, want %v", qerr, c.sentinel)
			}
			if c.field != "" {
				wantField := map[string]string{"dst": "src", "src": "dst"}[c.field]
				if !errors.As(qerr, &le) || le.Field != wantField || le.Op != "quantize" {
					t.Fatalf("Quantize: %#v, want a LengthError on %s", qerr, wantField)
				}
				if le.Error() == "" {
					t.Fatal("empty message")
				}
			}
		})
	}
}

// roundTripBound is the largest error allowed, relative to the block's
// largest magnitude, after quantizing smooth random data.
func roundTripBound() map[tensor.Type]float64 {
	return map[tensor.Type]float64{
		tensor.F32: 0, tensor.F16: 1.0 / 2048, tensor.BF16: 1.0 / 256,
		tensor.Q8_0: 1.0 / 127, tensor.Q8_1: 1.0 / 127, tensor.Q8_K: 1.0 / 127,
		tensor.Q4_0: 1.0 / 8, tensor.Q5_0: 1.0 / 16,
		tensor.Q4_K: 0.15, tensor.Q5_K: 0.08, tensor.Q6_K: 0.04,
		tensor.Q4_1: 1.0 / 15, tensor.Q5_1: 1.0 / 31, tensor.Q2_K: 0.5, tensor.Q3_K: 0.3,
		tensor.IQ4_NL: 0.15, tensor.IQ4_XS: 0.2,
		// MXFP4's scale is a power of two two octaves below the largest
		// magnitude: values up to 2^(k+1) clip to 1.5*2^k.
		tensor.MXFP4: 0.26,
	}
}

func TestRoundTrip(t *testing.T) {
	bound := roundTripBound()
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 4 * QK_K
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(rng.NormFloat64()) * 0.02
	}
	for _, typ := range supportedTypes() {
		t.Run(typ.String(), func(t *testing.T) {
			nb := n / typ.BlockSize() * typ.BlockBytes()
			q := make([]byte, nb)
			if err := Quantize(typ, src, q); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, n)
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatal(err)
			}
			bs := typ.BlockSize()
			if bs == 1 {
				bs = 32
			}
			var sq, sqErr float64
			for b := 0; b < n; b += bs {
				var amax float64
				for _, v := range src[b : b+bs] {
					amax = math.Max(amax, math.Abs(float64(v)))
				}
				for i := b; i < b+bs; i++ {
					e := math.Abs(float64(y[i]) - float64(src[i]))
					if e > bound[typ]*amax*1.0001 {
						t.Fatalf("value %d: %g became %g (block max %g)", i, src[i], y[i], amax)
					}
					sq += float64(src[i]) * float64(src[i])
					sqErr += e * e
				}
			}
			t.Logf("%s: relative RMS error %.5f", typ, math.Sqrt(sqErr/sq))
			// Quantizing the dequantized values again must be stable for
			// the symmetric 8-bit formats and the float formats.
			switch typ {
			case tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q8_K:
				q2 := make([]byte, nb)
				if err := Quantize(typ, y, q2); err != nil {
					t.Fatal(err)
				}
				if string(q2) != string(q) {
					t.Error("quantizing the dequantized values changed the bytes")
				}
			}
		})
	}
}

func TestQuantizeRowQ8Forms(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src := make([]float32, 2*QK_K)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
	}
	src[3] = 0
	clear(src[QK_K : QK_K+QK_K]) // an all-zero Q8_K block
	t.Run("Q8_0", func(t *testing.T) {
		blocks := make([]BlockQ8_0, len(src)/QK8_0)
		QuantizeRowQ8_0(src, blocks)
		raw := make([]byte, len(blocks)*BlockQ8_0Bytes)
		QuantizeQ8_0(src, raw)
		for i := range blocks {
			var b BlockQ8_0
			ReadBlockQ8_0(raw[i*BlockQ8_0Bytes:], &b)
			if b != blocks[i] {
				t.Fatalf("block %d: struct %+v, bytes %+v", i, blocks[i], b)
			}
			out := make([]byte, BlockQ8_0Bytes)
			PutBlockQ8_0(out, &b)
			if string(out) != string(raw[i*BlockQ8_0Bytes:(i+1)*BlockQ8_0Bytes]) {
				t.Fatalf("block %d: PutBlockQ8_0 differs", i)
			}
		}
	})
	t.Run("Q8_K", func(t *testing.T) {
		blocks := make([]BlockQ8K, len(src)/QK_K)
		QuantizeRowQ8K(src, blocks)
		raw := make([]byte, len(blocks)*BlockQ8_KBytes)
		QuantizeQ8K(src, raw)
		for i := range blocks {
			var b BlockQ8K
			ReadBlockQ8K(raw[i*BlockQ8_KBytes:], &b)
			if b != blocks[i] {
				t.Fatalf("block %d: struct and bytes differ", i)
			}
			for j, s := range b.Bsums {
				var sum int
				for _, q := range b.Qs[16*j : 16*j+16] {
					sum += int(q)
				}
				if int(s) != sum {
					t.Fatalf("block %d: bsums[%d] = %d, want %d", i, j, s, sum)
				}
			}
		}
		if blocks[1] != (BlockQ8K{}) {
			t.Error("an all-zero block did not quantize to zeros")
		}
		// The value of largest magnitude maps to ∓127 exactly.
		var amax float32
		idx := 0
		for j, v := range src[:QK_K] {
			if absf(v) > amax {
				amax, idx = absf(v), j
			}
		}
		if q := blocks[0].Qs[idx]; q != 127 && q != -127 {
			t.Errorf("largest value coded %d, want ±127", q)
		}
	})
}

func TestScaleMinK4(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 1000 {
		var ls, lm [8]uint8
		for j := range 8 {
			ls[j], lm[j] = uint8(rng.IntN(64)), uint8(rng.IntN(64))
		}
		var packed [12]byte
		packScalesK4(packed[:], &ls, &lm)
		for j := range 8 {
			if sc, m := ScaleMinK4(j, packed[:]); sc != ls[j] || m != lm[j] {
				t.Fatalf("sub-block %d: got (%d,%d), want (%d,%d)", j, sc, m, ls[j], lm[j])
			}
		}
	}
}

func TestQ6KCode(t *testing.T) {
	// A block with d = 1 and all scales 1 dequantizes to code-32.
	rng := rand.New(rand.NewPCG(13, 14))
	blk := make([]byte, BlockQ6_KBytes)
	for i := range 192 {
		blk[i] = byte(rng.Uint32())
	}
	for i := 192; i < 208; i++ {
		blk[i] = 1
	}
	putF16(blk[208:], F32ToF16(1))
	y := make([]float32, QK_K)
	DequantizeQ6K(blk, y)
	for k := range QK_K {
		if c := Q6KCode(blk[:128], blk[128:192], k); float32(int(c)-32) != y[k] {
			t.Fatalf("value %d: code %d, dequantized %g", k, c, y[k])
		}
	}
}

// TestZeroBlocks checks that all-zero input gives all-zero blocks and
// (signed) zero output for every type.
func TestZeroBlocks(t *testing.T) {
	for _, typ := range supportedTypes() {
		n := QK_K
		src := make([]float32, n)
		q := make([]byte, n/typ.BlockSize()*typ.BlockBytes())
		for i := range q {
			q[i] = 0xAA
		}
		if err := Quantize(typ, src, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, n)
		for i := range y {
			y[i] = 1
		}
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%s: value %d = %g after zero input", typ, i, v)
			}
		}
	}
}
