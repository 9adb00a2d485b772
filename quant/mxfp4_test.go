package quant

import (
	"bytes"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestMXFP4Adversarial checks MXFP4 against ggml on the sets only MXFP4
// has (see testdata/gen/gen.sh): its own adversarial rows (subnormals,
// powers of two and their predecessors, ±FLT_MAX, ties, ±0, Inf, NaN)
// quantized byte for byte and dequantized bit for bit, and the dots of
// rows carrying every exponent byte with the Q8_0 activation rows.
func TestMXFP4Adversarial(t *testing.T) {
	in := f32s(t, mustGz(t, "mxfp4.adv.input.f32.bin"))
	want := mustGz(t, "mxfp4.adv.quant.bin")
	rb := refCols / QKMXFP4 * BlockMXFP4Bytes
	rows := len(in) / refCols
	if rows != 6 || len(want) != rows*rb {
		t.Fatalf("%d input rows and %d quantized bytes", rows, len(want))
	}
	got := make([]byte, rb)
	for r := range rows {
		if err := Quantize(tensor.MXFP4, in[r*refCols:(r+1)*refCols], got); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < rb; b += BlockMXFP4Bytes {
			g, w := got[b:b+BlockMXFP4Bytes], want[r*rb+b:r*rb+b+BlockMXFP4Bytes]
			if !bytes.Equal(g, w) {
				t.Errorf("row %d block %d (input %v):\n got %x\nwant %x", r, b/BlockMXFP4Bytes,
					in[r*refCols+b/BlockMXFP4Bytes*32:][:32], g, w)
			}
		}
	}
	v := make([]float32, rows*refCols)
	if err := Dequantize(tensor.MXFP4, want, v); err != nil {
		t.Fatal(err)
	}
	compareF32Bits(t, "dequantize adversarial", v, mustGz(t, "mxfp4.adv.dequant.f32.bin"))

	hostile := mustGz(t, "mxfp4.hostile2.bin")
	for e := range 256 {
		if hostile[e*BlockMXFP4Bytes] != byte(e) {
			t.Fatalf("hostile block %d has exponent %d, want every exponent in turn", e, hostile[e*BlockMXFP4Bytes])
		}
	}
	act := decodeQ8_0(mustGz(t, "mxfp4.act.bin"))
	nx := refCols / QK8_0
	var dots []float32
	for i := range len(hostile) / rb {
		for j := range len(act) / nx {
			dots = append(dots, DotMXFP4Q8_0(hostile[i*rb:(i+1)*rb], act[j*nx:(j+1)*nx]))
		}
	}
	compareF32Bits(t, "dot hostile", dots, mustGz(t, "mxfp4.hostile2.dot.f32.bin"))
}

// TestMXFP4Exponent checks the exponent choice where floorf(log2f(x))
// is decided by log2f's rounding: the floats just below 2^k whose log2f
// rounds up to k. roundUp[k+148] is how many there are below 2^k, counted
// with glibc's log2f for k = -148..128 (for k = 128, below and at FLT_MAX).
func TestMXFP4Exponent(t *testing.T) {
	roundUp := []int{
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 5, 11, 11, 22, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44,
		22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 5, 5, 5, 5, 5, 5, 5, 5, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 5, 5, 5, 5, 5, 5, 5, 5,
		11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22, 22,
		44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44, 44,
	}
	if len(roundUp) != 277 {
		t.Fatalf("table has %d entries", len(roundUp))
	}
	for i, n := range roundUp {
		k := i - 148
		x := float32(math.MaxFloat32)
		if k < 128 {
			x = math.Nextafter32(float32(math.Ldexp(1, k)), 0)
		}
		wantUp := uint8(k - 2 + 127)
		wantDown := uint8(k - 3 + 127)
		// The n floats below 2^k (FLT_MAX included for k = 128) give k, the next one k-1.
		for j := range n + 1 {
			want := wantUp
			if j == n {
				want = wantDown
			}
			if got := mxfp4Exponent(x); got != want {
				t.Errorf("2^%d less %d ulps (%g): exponent %d, want %d", k, j+1, x, got, want)
			}
			x = math.Nextafter32(x, 0)
		}
	}
	for _, c := range []struct {
		x    float32
		want uint8
	}{
		{0, 0}, {float32(math.NaN()), 0}, {float32(math.Inf(1)), 0}, {1, 125},
		{math.SmallestNonzeroFloat32, uint8(256 - 24)}, {6, 127},
	} {
		if got := mxfp4Exponent(c.x); got != c.want {
			t.Errorf("exponent of %g = %d, want %d", c.x, got, c.want)
		}
	}
}

// TestE8M0Half checks the scale of every exponent byte against 2^(e-128).
func TestE8M0Half(t *testing.T) {
	for e := range 256 {
		if got, want := E8M0Half(uint8(e)), float32(math.Ldexp(1, e-128)); got != want {
			t.Errorf("E8M0Half(%d) = %g, want %g", e, got, want)
		}
	}
}

// FuzzDotMXFP4 feeds random weight and activation bytes to DotMXFP4Q8_0:
// it must not panic and must equal the block-by-block sum in block order,
// each block's term the exact integer sum of its dequantized codes.
func FuzzDotMXFP4(f *testing.F) {
	f.Add(make([]byte, 2*(BlockMXFP4Bytes+BlockQ8_0Bytes)))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb := len(data) / (BlockMXFP4Bytes + BlockQ8_0Bytes)
		w := data[:nb*BlockMXFP4Bytes]
		x := decodeQ8_0(data[nb*BlockMXFP4Bytes : nb*(BlockMXFP4Bytes+BlockQ8_0Bytes)])
		vals := make([]float32, QKMXFP4)
		var want float32
		for b := range nb {
			blk := w[b*BlockMXFP4Bytes : (b+1)*BlockMXFP4Bytes]
			DequantizeMXFP4(blk, vals)
			half := E8M0Half(blk[0])
			var isum int32
			for j, v := range vals {
				c := MXFP4Values[blk[1+j%16]>>(4*(j/16))&0xf]
				if v != float32(float32(c)*half) {
					t.Fatalf("block %d value %d: %g, code value %d", b, j, v, c)
				}
				isum += int32(c) * int32(x[b].Qs[j])
			}
			want += float32(float32(F16ToF32(x[b].D)*half) * float32(isum))
		}
		if got := DotMXFP4Q8_0(w, x); !sameBits(got, want) {
			t.Fatalf("%d blocks: dot %g, block sum %g", nb, got, want)
		}
	})
}
