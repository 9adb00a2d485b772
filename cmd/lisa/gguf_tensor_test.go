package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/tensor"
)

// TestGGUFTensorReference checks `lisa gguf tensor` against llama.cpp:
// shared/ref/quant holds the first 64 rows of two tensors of
// small-110m-q4_k_m.gguf as llama-quantize wrote them and as llama.cpp
// dequantizes them. The raw output must start with those bytes and the
// --f32 output with those float32 values, bit for bit.
func TestGGUFTensorReference(t *testing.T) {
	model := shared.Model(t, "small-110m-q4_k_m.gguf")
	dir := t.TempDir()
	for _, c := range []struct{ tensor, ref string }{
		{"blk.0.attn_q.weight", "q4_K.blk.0.attn_q.weight"},     // Q4_K, 64 × 768
		{"blk.0.ffn_down.weight", "q6_K.blk.0.ffn_down.weight"}, // Q6_K, 64 × 2048
	} {
		t.Run(c.tensor, func(t *testing.T) {
			for _, o := range []struct{ flag, suffix string }{{"", ".quant.bin"}, {"--f32", ".dequant.f32.bin"}} {
				want, err := os.ReadFile(shared.Path(t, filepath.Join("ref", "quant", c.ref+o.suffix)))
				if err != nil {
					t.Fatal(err)
				}
				out := filepath.Join(dir, c.ref+o.suffix)
				args := []string{"gguf", "tensor", model, c.tensor, "-o", out}
				if o.flag != "" {
					args = append(args, o.flag)
				}
				if code, _, errs := runCLI(args...); code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, errs)
				}
				got, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) <= len(want) {
					t.Fatalf("%s output: %d bytes, the reference alone has %d", o.suffix, len(got), len(want))
				}
				if i := firstDiff(got[:len(want)], want); i >= 0 {
					t.Errorf("%s output differs from llama.cpp's at byte %d of %d", o.suffix, i, len(want))
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestGGUFTensorTypes checks `lisa gguf tensor` on a synthetic file: raw
// bytes for any type, --f32 for F16 and BF16 values that are exact, and a
// one-line refusal to dequantize a type package quant does not handle.
func TestGGUFTensorTypes(t *testing.T) {
	w := gguf.NewWriter()
	f16 := []byte{0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x01, 0x00} // 1, -2, +Inf, 2^-24
	bf16 := []byte{0x80, 0x3f, 0x00, 0xc0}                        // 1, -2
	iq2 := bytes.Repeat([]byte{0x5a}, tensor.IQ2_XXS.BlockBytes())
	for _, x := range []struct {
		name string
		typ  tensor.Type
		n    uint64
		data []byte
	}{{"h", tensor.F16, 4, f16}, {"b", tensor.BF16, 2, bf16}, {"q", tensor.IQ2_XXS, 256, iq2}} {
		if err := w.AddTensor(x.name, x.typ, []uint64{x.n}, x.data); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "types.gguf")
	writeFile(t, path, w)
	out := filepath.Join(dir, "out")
	f32s := func(vals ...float32) []byte {
		b := make([]byte, 0, 4*len(vals))
		for _, v := range vals {
			u := math.Float32bits(v)
			b = append(b, byte(u), byte(u>>8), byte(u>>16), byte(u>>24))
		}
		return b
	}
	for _, c := range []struct {
		args []string
		want []byte
	}{
		{[]string{"h", "--f32"}, f32s(1, -2, float32(math.Inf(1)), float32(math.Ldexp(1, -24)))},
		{[]string{"b", "--f32"}, f32s(1, -2)},
		{[]string{"h"}, f16},
		{[]string{"q"}, iq2},
	} {
		args := append([]string{"gguf", "tensor", path, c.args[0], "-o", out}, c.args[1:]...)
		if code, _, errs := runCLI(args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs)
		}
		if got, _ := os.ReadFile(out); !bytes.Equal(got, c.want) {
			t.Errorf("%v: got % x, want % x", c.args, got, c.want)
		}
	}
	code, _, errs := runCLI("gguf", "tensor", path, "q", "--f32", "-o", out)
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, `tensor "q": cannot dequantize type IQ2_XXS`) {
		t.Errorf("--f32 of IQ2_XXS: exit %d, stderr %q", code, errs)
	}
}
