package quant_test

import (
	"fmt"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

func ExampleQuantize() {
	src := make([]float32, 256)
	for i := range src {
		src[i] = float32(i%32-16) / 16
	}
	raw := make([]byte, 144) // one Q4_K block
	if err := quant.Quantize(tensor.Q4_K, src, raw); err != nil {
		fmt.Println(err)
		return
	}
	back := make([]float32, len(src))
	if err := quant.Dequantize(tensor.Q4_K, raw, back); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f %.3f %.3f\n", back[0], back[16], back[31])
	// Output: -0.970 0.031 0.906
}

func ExampleDequantize_lengthError() {
	err := quant.Dequantize(tensor.Q8_0, make([]byte, 30), make([]float32, 32))
	fmt.Println(err)
	// Output: quant: dequantize Q8_0: src holds 30 bytes, want 34
}

func ExampleF32ToF16() {
	fmt.Printf("%#04x %#04x %#04x\n", quant.F32ToF16(1), quant.F32ToF16(65520), quant.F32ToF16(5.96e-8))
	// Output: 0x3c00 0x7c00 0x0001
}
