package quant

import (
	"math"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// fuzzType picks a supported type from a fuzzer byte.
func fuzzType(sel byte) tensor.Type {
	types := supportedTypes()
	return types[int(sel)%len(types)]
}

// FuzzDequantize feeds random bytes as every supported type: Dequantize
// must never panic, must reject partial blocks with an error, and must
// agree bit for bit with dequantizing block by block.
func FuzzDequantize(f *testing.F) {
	f.Add([]byte{}, byte(0))
	f.Add(make([]byte, 2*BlockQ4_KBytes), byte(6))
	f.Fuzz(func(t *testing.T, data []byte, sel byte) {
		typ := fuzzType(sel)
		bb, bs := typ.BlockBytes(), typ.BlockSize()
		nb := len(data) / bb
		out := make([]float32, nb*bs)
		err := Dequantize(typ, data, out)
		if (len(data)%bb == 0) != (err == nil) {
			t.Fatalf("%s, %d bytes: error %v", typ, len(data), err)
		}
		data = data[:nb*bb]
		if err := Dequantize(typ, data, out); err != nil {
			t.Fatalf("%s, %d whole blocks: %v", typ, nb, err)
		}
		one := make([]float32, bs)
		for b := range nb {
			if err := Dequantize(typ, data[b*bb:(b+1)*bb], one); err != nil {
				t.Fatal(err)
			}
			for j, v := range one {
				if math.Float32bits(v) != math.Float32bits(out[b*bs+j]) {
					t.Fatalf("%s block %d value %d: %#08x alone, %#08x in the row", typ, b, j,
						math.Float32bits(v), math.Float32bits(out[b*bs+j]))
				}
			}
		}
	})
}

// FuzzQuantize feeds random float32 rows (any bit patterns) to every
// supported type: Quantize must never panic, must be deterministic, and
// for finite inputs of moderate size the dequantized values must stay
// within twice the block's largest magnitude of the input.
func FuzzQuantize(f *testing.F) {
	f.Add(make([]byte, 4*QK_K), byte(8))
	f.Fuzz(func(t *testing.T, data []byte, sel byte) {
		typ := fuzzType(sel)
		bs := typ.BlockSize()
		n := len(data) / 4 / QK_K * QK_K
		if n == 0 {
			n = len(data) / 4 / bs * bs
		}
		src := make([]float32, n)
		DequantizeF32(data[:4*n], src)
		q := make([]byte, n/bs*typ.BlockBytes())
		if err := Quantize(typ, src, q); err != nil {
			t.Fatal(err)
		}
		q2 := make([]byte, len(q))
		if err := Quantize(typ, src, q2); err != nil || string(q) != string(q2) {
			t.Fatalf("%s: not deterministic (%v)", typ, err)
		}
		y := make([]float32, n)
		if err := Dequantize(typ, q, y); err != nil {
			t.Fatal(err)
		}
		blk := max(bs, 32)
		for b := 0; b+blk <= n; b += blk {
			var amax float64
			finite := true
			for _, v := range src[b : b+blk] {
				finite = finite && math.Abs(float64(v)) < 6e4
				amax = math.Max(amax, math.Abs(float64(v)))
			}
			if !finite {
				continue
			}
			for i := b; i < b+blk; i++ {
				if e := math.Abs(float64(y[i]) - float64(src[i])); !(e <= 2*amax+1e-4) {
					t.Fatalf("%s value %d: %g became %g (block max %g)", typ, i, src[i], y[i], amax)
				}
			}
		}
	})
}

// FuzzDot feeds random weight bytes and random activation blocks to the
// three reference dots and checks them against the one-value-at-a-time
// transcriptions of ggml's loops, bit for bit.
func FuzzDot(f *testing.F) {
	f.Add(make([]byte, BlockQ6_KBytes+BlockQ8_KBytes), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, nb uint8) {
		n := int(nb%4) + 1
		need := n * (BlockQ6_KBytes + BlockQ8_KBytes + 8*BlockQ8_0Bytes)
		if len(data) < need {
			data = append(data, make([]byte, need-len(data))...)
		}
		xk := make([]BlockQ8K, n)
		for i := range xk {
			ReadBlockQ8K(data[i*BlockQ8_KBytes:], &xk[i])
		}
		data = data[n*BlockQ8_KBytes:]
		x0 := make([]BlockQ8_0, 8*n)
		for i := range x0 {
			ReadBlockQ8_0(data[i*BlockQ8_0Bytes:], &x0[i])
		}
		// The weights reuse the remaining bytes; Q4_K and Q8_0 rows are
		// not longer than the Q6_K row.
		w := data[8*n*BlockQ8_0Bytes:]
		cases := []struct {
			name      string
			got, want float32
		}{
			{"Q8_0", DotQ8_0Q8_0(w, x0[:min(len(x0), len(w)/BlockQ8_0Bytes)]), simpleDotQ8_0Q8_0(w, x0[:min(len(x0), len(w)/BlockQ8_0Bytes)])},
			{"Q4_K", DotQ4KQ8K(w, xk), simpleDotQ4KQ8K(w, xk)},
			{"Q6_K", DotQ6KQ8K(w, xk), simpleDotQ6KQ8K(w, xk)},
		}
		for _, c := range cases {
			if !sameDot(c.got, c.want) {
				t.Fatalf("%s: %#08x, simple %#08x", c.name, math.Float32bits(c.got), math.Float32bits(c.want))
			}
		}
	})
}
