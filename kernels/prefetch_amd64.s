//go:build amd64 && !purego

#include "textflag.h"

// func prefetchT0(p *byte, n, stride int)
TEXT ·prefetchT0(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ stride+16(FP), BX
	TESTQ CX, CX
	JLE done
	LEAQ (SI)(CX*1), DX

loop:
	PREFETCHT0 (SI)
	ADDQ BX, SI
	CMPQ SI, DX
	JB loop

done:
	RET
