//go:build amd64 && !purego

#include "textflag.h"

// ggml's F32 dot product orders (ggmlf32.go) with AVX2+FMA: a 16-lane
// accumulator is a pair of YMM registers (lanes 0-7, 8-15), each product
// one VFMADD231PS lane, so the sums are f32Acc4Generic's and
// f32Acc1Generic's bit for bit.

// func f32Acc4AVX2(w *byte, x *float32, blocks int, acc *[64]float32)
TEXT ·f32Acc4AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ acc+24(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JEQ acc4done

acc4loop:
	// Accumulator j of a block of 64 is Y(2j), Y(2j+1): values 16j to 16j+15.
	VMOVUPS 0(SI), Y8
	VFMADD231PS 0(DI), Y8, Y0
	VMOVUPS 32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VMOVUPS 64(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VMOVUPS 96(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	VMOVUPS 128(SI), Y12
	VFMADD231PS 128(DI), Y12, Y4
	VMOVUPS 160(SI), Y13
	VFMADD231PS 160(DI), Y13, Y5
	VMOVUPS 192(SI), Y14
	VFMADD231PS 192(DI), Y14, Y6
	VMOVUPS 224(SI), Y15
	VFMADD231PS 224(DI), Y15, Y7
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNE acc4loop

acc4done:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

// func f32Acc1AVX2(w *byte, x *float32, blocks int, acc *[16]float32)
TEXT ·f32Acc1AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ blocks+16(FP), CX
	MOVQ acc+24(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	TESTQ CX, CX
	JEQ acc1done

acc1loop:
	VMOVUPS 0(SI), Y8
	VFMADD231PS 0(DI), Y8, Y0
	VMOVUPS 32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNE acc1loop

acc1done:
	VMOVUPS Y0, 0(DX)
	VMOVUPS Y1, 32(DX)
	VZEROUPPER
	RET
