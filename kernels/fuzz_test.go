package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// FuzzQuantDot feeds arbitrary weight blocks and activation codes to every
// quantized dot of every path. Input: byte 0 picks the format (Q8_0, Q4_K,
// Q6_K), byte 1 the block count (1..16), bytes 2..5 the activation scale;
// the rest fills the weight blocks and then the activation codes (zero when
// short). Every path's one-token dot must equal the generic twin (bit for
// bit, or within nearTwin's tolerance on a path that reorders its sums),
// its Q8_0 multi-token dots and its four-token K-quant dots its
// one-token dot bit for bit; when the result is finite it must be
// within tolerance of quant's reference.
func FuzzQuantDot(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0x80, 0x3f, 0x00, 0x3c, 1, 2, 3})
	f.Add([]byte{1, 3, 0, 0, 0x80, 0x3f, 0xff, 0x7b, 0xff, 0x7b, 0xff, 0xff, 0xff})
	f.Add([]byte{2, 16, 0x00, 0x00, 0x80, 0x7f, 0x80, 0x80, 0x80})
	f.Add([]byte{1, 2, 0x01, 0x00, 0x00, 0x00, 0x00, 0x7c, 0x00, 0xfe})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 6 {
			return
		}
		kind, nb := int(data[0]%3), 1+int(data[1]%16)
		xd := math.Float32frombits(binary.LittleEndian.Uint32(data[2:]))
		rest := data[6:]
		size := [3]int{q8_0Bytes, q4KBytes, q6KBytes}[kind]
		w := make([]byte, nb*size)
		rest = rest[copy(w, rest):]
		if kind == 0 {
			x := make([]quant.BlockQ8_0, nb*8)
			w = make([]byte, nb*8*q8_0Bytes)
			copy(w, data[6:])
			for i := range x {
				x[i].D = quant.F32ToF16(xd)
				for k := range x[i].Qs {
					if n := 32*i + k; n < len(rest) {
						x[i].Qs[k] = int8(rest[n])
					}
				}
			}
			want := dotQ8_0Generic(w, x)
			if ref := quant.DotQ8_0Q8_0(w, x); !sameFloat(want, ref) {
				t.Fatalf("generic %v, reference %v", want, ref)
			}
			abs := absTermsQ8_0(w, x)
			// Eight tokens of nb blocks each, from the same codes.
			var o4 [4]float32
			var o8 [8]float32
			for _, p := range nativePaths() {
				tab := tableFor(p)
				got := tab.dotQ8_0(w, x)
				if !nearTwin(tab, tensor.Q8_0, got, want, len(x), abs) {
					t.Fatalf("%s: got %v, generic %v", p, got, want)
				}
				tab.dotQ80x4(w[:nb*q8_0Bytes], x[:4*nb], nb, &o4)
				tab.dotQ80x8(w[:nb*q8_0Bytes], x, scalesQ8_0x8(x, nb), nb, &o8)
				for tok := range 8 {
					one := tab.dotQ8_0(w[:nb*q8_0Bytes], x[tok*nb:(tok+1)*nb])
					if !sameFloat(o8[tok], one) || tok < 4 && !sameFloat(o4[tok], one) {
						t.Fatalf("%s token %d: eight-token %v, four-token %v, one-token %v", p, tok, o8[tok], o4[tok], one)
					}
				}
			}
			return
		}
		x := q8KFromBytes(nb, xd, rest)
		q6 := kind == 2
		want := generic(q6)(w, x)
		x4 := fourTokens(x)
		typ, abs := tensor.Q4_K, absTermsK(q6, w, x)
		if q6 {
			typ = tensor.Q6_K
		}
		for _, p := range nativePaths() {
			dot, dot4 := tableFor(p).dotQ4K, tableFor(p).dotQ4Kx4
			if q6 {
				dot, dot4 = tableFor(p).dotQ6K, tableFor(p).dotQ6Kx4
			}
			got := dot(w, x)
			if !nearTwin(tableFor(p), typ, got, want, nb, abs) {
				t.Fatalf("%s: got %v, generic %v", p, got, want)
			}
			if tableFor(p).q8k(typ).xn != nil {
				// The lane-summing one-token kernel and its Go twin.
				if tw := dotKLanesGo(q6, w, x); !sameFloat(got, tw) {
					t.Fatalf("%s: got %v, lane twin %v", p, got, tw)
				}
			}
			if tableFor(p).q8k(typ).x4 == nil {
				continue // the prompt tile takes its multi-token products
			}
			var o4 [4]float32
			dot4(w, x4, nb, &o4)
			for tok := range 4 {
				if w1 := dot(w, x4[tok*nb:(tok+1)*nb]); !sameFloat(o4[tok], w1) {
					t.Fatalf("%s four-token dot, token %d: got %v, one-token %v", p, tok, o4[tok], w1)
				}
			}
		}
		ref := quant.DotQ4KQ8K
		if q6 {
			ref = quant.DotQ6KQ8K
		}
		r := ref(w, x)
		if math.IsInf(abs, 0) || math.IsNaN(abs) || abs > math.MaxFloat32/4 || math.IsNaN(float64(r)) || math.IsInf(float64(r), 0) {
			return
		}
		if !near(want, r, float64(nb+16)*quantDotEps*abs+1e-37) {
			t.Fatalf("generic %v, reference %v", want, r)
		}
	})
}

// fourTokens returns four tokens' activations made from x: x itself, x
// with its codes negated (saturating), x with its scale halved and x with
// its codes rotated by one.
func fourTokens(x []quant.BlockQ8K) []quant.BlockQ8K {
	nb := len(x)
	out := make([]quant.BlockQ8K, 4*nb)
	for i, b := range x {
		out[i] = b
		n, h, r := b, b, b
		h.D = b.D / 2
		for k, q := range b.Qs {
			n.Qs[k] = -max(q, -127)
			r.Qs[k] = b.Qs[(k+1)%len(b.Qs)]
		}
		fixBsums(&n)
		fixBsums(&r)
		out[nb+i], out[2*nb+i], out[3*nb+i] = n, h, r
	}
	return out
}
