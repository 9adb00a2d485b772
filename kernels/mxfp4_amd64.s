//go:build amd64 && !purego

#include "textflag.h"
#include "rowsum_amd64.h"
#include "q80x_amd64.h"

// MXFP4 dot products against Q8_0 activations: the AVX2 one- and
// four-token dots, which keep package quant's (ggml's generic) order and
// equal quant.DotMXFP4Q8_0 bit for bit, and the AVX-512 (VNNI) row-run
// dot, which sums in vector lanes.
//
// A block is 17 bytes: the E8M0 exponent e at 0, then 16 bytes of E2M1
// codes, value j in the low nibble of byte 1+j and value j+16 in the high
// one. A code stands for mxfp4Signed[code] (the E2M1 value doubled) times
// mxfp4Half[e] = 2^(e-128).

// mxfp4Signed is the doubled E2M1 table as signed bytes, twice (one copy
// per 128-bit lane of a VPSHUFB).
DATA mxfp4Signed<>+0(SB)/8, $0x0c08060403020100
DATA mxfp4Signed<>+8(SB)/8, $0xf4f8fafcfdfeff00
DATA mxfp4Signed<>+16(SB)/8, $0x0c08060403020100
DATA mxfp4Signed<>+24(SB)/8, $0xf4f8fafcfdfeff00
GLOBL mxfp4Signed<>(SB), RODATA|NOPTR, $32

// mxfp4Shifted is the doubled E2M1 table plus 12, 0..24 (unsigned bytes
// for VPDPBUSD).
DATA mxfp4Shifted<>+0(SB)/8, $0x181412100f0e0d0c
DATA mxfp4Shifted<>+8(SB)/8, $0x00040608090a0b0c
GLOBL mxfp4Shifted<>(SB), RODATA|NOPTR, $16

// mxfp4Half holds the float32 bits of 2^(e-128) for every exponent byte
// e (ggml's GGML_E8M0_TO_FP32_HALF: subnormal for 0 and 1, 2^127 for 255).
DATA mxfp4Half<>+0(SB)/8, $0x0040000000200000
DATA mxfp4Half<>+8(SB)/8, $0x0100000000800000
DATA mxfp4Half<>+16(SB)/8, $0x0200000001800000
DATA mxfp4Half<>+24(SB)/8, $0x0300000002800000
DATA mxfp4Half<>+32(SB)/8, $0x0400000003800000
DATA mxfp4Half<>+40(SB)/8, $0x0500000004800000
DATA mxfp4Half<>+48(SB)/8, $0x0600000005800000
DATA mxfp4Half<>+56(SB)/8, $0x0700000006800000
DATA mxfp4Half<>+64(SB)/8, $0x0800000007800000
DATA mxfp4Half<>+72(SB)/8, $0x0900000008800000
DATA mxfp4Half<>+80(SB)/8, $0x0a00000009800000
DATA mxfp4Half<>+88(SB)/8, $0x0b0000000a800000
DATA mxfp4Half<>+96(SB)/8, $0x0c0000000b800000
DATA mxfp4Half<>+104(SB)/8, $0x0d0000000c800000
DATA mxfp4Half<>+112(SB)/8, $0x0e0000000d800000
DATA mxfp4Half<>+120(SB)/8, $0x0f0000000e800000
DATA mxfp4Half<>+128(SB)/8, $0x100000000f800000
DATA mxfp4Half<>+136(SB)/8, $0x1100000010800000
DATA mxfp4Half<>+144(SB)/8, $0x1200000011800000
DATA mxfp4Half<>+152(SB)/8, $0x1300000012800000
DATA mxfp4Half<>+160(SB)/8, $0x1400000013800000
DATA mxfp4Half<>+168(SB)/8, $0x1500000014800000
DATA mxfp4Half<>+176(SB)/8, $0x1600000015800000
DATA mxfp4Half<>+184(SB)/8, $0x1700000016800000
DATA mxfp4Half<>+192(SB)/8, $0x1800000017800000
DATA mxfp4Half<>+200(SB)/8, $0x1900000018800000
DATA mxfp4Half<>+208(SB)/8, $0x1a00000019800000
DATA mxfp4Half<>+216(SB)/8, $0x1b0000001a800000
DATA mxfp4Half<>+224(SB)/8, $0x1c0000001b800000
DATA mxfp4Half<>+232(SB)/8, $0x1d0000001c800000
DATA mxfp4Half<>+240(SB)/8, $0x1e0000001d800000
DATA mxfp4Half<>+248(SB)/8, $0x1f0000001e800000
DATA mxfp4Half<>+256(SB)/8, $0x200000001f800000
DATA mxfp4Half<>+264(SB)/8, $0x2100000020800000
DATA mxfp4Half<>+272(SB)/8, $0x2200000021800000
DATA mxfp4Half<>+280(SB)/8, $0x2300000022800000
DATA mxfp4Half<>+288(SB)/8, $0x2400000023800000
DATA mxfp4Half<>+296(SB)/8, $0x2500000024800000
DATA mxfp4Half<>+304(SB)/8, $0x2600000025800000
DATA mxfp4Half<>+312(SB)/8, $0x2700000026800000
DATA mxfp4Half<>+320(SB)/8, $0x2800000027800000
DATA mxfp4Half<>+328(SB)/8, $0x2900000028800000
DATA mxfp4Half<>+336(SB)/8, $0x2a00000029800000
DATA mxfp4Half<>+344(SB)/8, $0x2b0000002a800000
DATA mxfp4Half<>+352(SB)/8, $0x2c0000002b800000
DATA mxfp4Half<>+360(SB)/8, $0x2d0000002c800000
DATA mxfp4Half<>+368(SB)/8, $0x2e0000002d800000
DATA mxfp4Half<>+376(SB)/8, $0x2f0000002e800000
DATA mxfp4Half<>+384(SB)/8, $0x300000002f800000
DATA mxfp4Half<>+392(SB)/8, $0x3100000030800000
DATA mxfp4Half<>+400(SB)/8, $0x3200000031800000
DATA mxfp4Half<>+408(SB)/8, $0x3300000032800000
DATA mxfp4Half<>+416(SB)/8, $0x3400000033800000
DATA mxfp4Half<>+424(SB)/8, $0x3500000034800000
DATA mxfp4Half<>+432(SB)/8, $0x3600000035800000
DATA mxfp4Half<>+440(SB)/8, $0x3700000036800000
DATA mxfp4Half<>+448(SB)/8, $0x3800000037800000
DATA mxfp4Half<>+456(SB)/8, $0x3900000038800000
DATA mxfp4Half<>+464(SB)/8, $0x3a00000039800000
DATA mxfp4Half<>+472(SB)/8, $0x3b0000003a800000
DATA mxfp4Half<>+480(SB)/8, $0x3c0000003b800000
DATA mxfp4Half<>+488(SB)/8, $0x3d0000003c800000
DATA mxfp4Half<>+496(SB)/8, $0x3e0000003d800000
DATA mxfp4Half<>+504(SB)/8, $0x3f0000003e800000
DATA mxfp4Half<>+512(SB)/8, $0x400000003f800000
DATA mxfp4Half<>+520(SB)/8, $0x4100000040800000
DATA mxfp4Half<>+528(SB)/8, $0x4200000041800000
DATA mxfp4Half<>+536(SB)/8, $0x4300000042800000
DATA mxfp4Half<>+544(SB)/8, $0x4400000043800000
DATA mxfp4Half<>+552(SB)/8, $0x4500000044800000
DATA mxfp4Half<>+560(SB)/8, $0x4600000045800000
DATA mxfp4Half<>+568(SB)/8, $0x4700000046800000
DATA mxfp4Half<>+576(SB)/8, $0x4800000047800000
DATA mxfp4Half<>+584(SB)/8, $0x4900000048800000
DATA mxfp4Half<>+592(SB)/8, $0x4a00000049800000
DATA mxfp4Half<>+600(SB)/8, $0x4b0000004a800000
DATA mxfp4Half<>+608(SB)/8, $0x4c0000004b800000
DATA mxfp4Half<>+616(SB)/8, $0x4d0000004c800000
DATA mxfp4Half<>+624(SB)/8, $0x4e0000004d800000
DATA mxfp4Half<>+632(SB)/8, $0x4f0000004e800000
DATA mxfp4Half<>+640(SB)/8, $0x500000004f800000
DATA mxfp4Half<>+648(SB)/8, $0x5100000050800000
DATA mxfp4Half<>+656(SB)/8, $0x5200000051800000
DATA mxfp4Half<>+664(SB)/8, $0x5300000052800000
DATA mxfp4Half<>+672(SB)/8, $0x5400000053800000
DATA mxfp4Half<>+680(SB)/8, $0x5500000054800000
DATA mxfp4Half<>+688(SB)/8, $0x5600000055800000
DATA mxfp4Half<>+696(SB)/8, $0x5700000056800000
DATA mxfp4Half<>+704(SB)/8, $0x5800000057800000
DATA mxfp4Half<>+712(SB)/8, $0x5900000058800000
DATA mxfp4Half<>+720(SB)/8, $0x5a00000059800000
DATA mxfp4Half<>+728(SB)/8, $0x5b0000005a800000
DATA mxfp4Half<>+736(SB)/8, $0x5c0000005b800000
DATA mxfp4Half<>+744(SB)/8, $0x5d0000005c800000
DATA mxfp4Half<>+752(SB)/8, $0x5e0000005d800000
DATA mxfp4Half<>+760(SB)/8, $0x5f0000005e800000
DATA mxfp4Half<>+768(SB)/8, $0x600000005f800000
DATA mxfp4Half<>+776(SB)/8, $0x6100000060800000
DATA mxfp4Half<>+784(SB)/8, $0x6200000061800000
DATA mxfp4Half<>+792(SB)/8, $0x6300000062800000
DATA mxfp4Half<>+800(SB)/8, $0x6400000063800000
DATA mxfp4Half<>+808(SB)/8, $0x6500000064800000
DATA mxfp4Half<>+816(SB)/8, $0x6600000065800000
DATA mxfp4Half<>+824(SB)/8, $0x6700000066800000
DATA mxfp4Half<>+832(SB)/8, $0x6800000067800000
DATA mxfp4Half<>+840(SB)/8, $0x6900000068800000
DATA mxfp4Half<>+848(SB)/8, $0x6a00000069800000
DATA mxfp4Half<>+856(SB)/8, $0x6b0000006a800000
DATA mxfp4Half<>+864(SB)/8, $0x6c0000006b800000
DATA mxfp4Half<>+872(SB)/8, $0x6d0000006c800000
DATA mxfp4Half<>+880(SB)/8, $0x6e0000006d800000
DATA mxfp4Half<>+888(SB)/8, $0x6f0000006e800000
DATA mxfp4Half<>+896(SB)/8, $0x700000006f800000
DATA mxfp4Half<>+904(SB)/8, $0x7100000070800000
DATA mxfp4Half<>+912(SB)/8, $0x7200000071800000
DATA mxfp4Half<>+920(SB)/8, $0x7300000072800000
DATA mxfp4Half<>+928(SB)/8, $0x7400000073800000
DATA mxfp4Half<>+936(SB)/8, $0x7500000074800000
DATA mxfp4Half<>+944(SB)/8, $0x7600000075800000
DATA mxfp4Half<>+952(SB)/8, $0x7700000076800000
DATA mxfp4Half<>+960(SB)/8, $0x7800000077800000
DATA mxfp4Half<>+968(SB)/8, $0x7900000078800000
DATA mxfp4Half<>+976(SB)/8, $0x7a00000079800000
DATA mxfp4Half<>+984(SB)/8, $0x7b0000007a800000
DATA mxfp4Half<>+992(SB)/8, $0x7c0000007b800000
DATA mxfp4Half<>+1000(SB)/8, $0x7d0000007c800000
DATA mxfp4Half<>+1008(SB)/8, $0x7e0000007d800000
DATA mxfp4Half<>+1016(SB)/8, $0x7f0000007e800000
GLOBL mxfp4Half<>(SB), RODATA|NOPTR, $1024

DATA mxfp4PairIdx<>+0(SB)/8, $0x0000000000000000
DATA mxfp4PairIdx<>+8(SB)/8, $0x0000000000000000
DATA mxfp4PairIdx<>+16(SB)/8, $0x0000000000000000
DATA mxfp4PairIdx<>+24(SB)/8, $0x0000000000000000
DATA mxfp4PairIdx<>+32(SB)/8, $0x0000000100000001
DATA mxfp4PairIdx<>+40(SB)/8, $0x0000000100000001
DATA mxfp4PairIdx<>+48(SB)/8, $0x0000000100000001
DATA mxfp4PairIdx<>+56(SB)/8, $0x0000000100000001
DATA mxfp4PairIdx<>+64(SB)/8, $0x0000000200000002
DATA mxfp4PairIdx<>+72(SB)/8, $0x0000000200000002
DATA mxfp4PairIdx<>+80(SB)/8, $0x0000000200000002
DATA mxfp4PairIdx<>+88(SB)/8, $0x0000000200000002
DATA mxfp4PairIdx<>+96(SB)/8, $0x0000000300000003
DATA mxfp4PairIdx<>+104(SB)/8, $0x0000000300000003
DATA mxfp4PairIdx<>+112(SB)/8, $0x0000000300000003
DATA mxfp4PairIdx<>+120(SB)/8, $0x0000000300000003
DATA mxfp4PairIdx<>+128(SB)/8, $0x0000000400000004
DATA mxfp4PairIdx<>+136(SB)/8, $0x0000000400000004
DATA mxfp4PairIdx<>+144(SB)/8, $0x0000000400000004
DATA mxfp4PairIdx<>+152(SB)/8, $0x0000000400000004
DATA mxfp4PairIdx<>+160(SB)/8, $0x0000000500000005
DATA mxfp4PairIdx<>+168(SB)/8, $0x0000000500000005
DATA mxfp4PairIdx<>+176(SB)/8, $0x0000000500000005
DATA mxfp4PairIdx<>+184(SB)/8, $0x0000000500000005
DATA mxfp4PairIdx<>+192(SB)/8, $0x0000000600000006
DATA mxfp4PairIdx<>+200(SB)/8, $0x0000000600000006
DATA mxfp4PairIdx<>+208(SB)/8, $0x0000000600000006
DATA mxfp4PairIdx<>+216(SB)/8, $0x0000000600000006
DATA mxfp4PairIdx<>+224(SB)/8, $0x0000000700000007
DATA mxfp4PairIdx<>+232(SB)/8, $0x0000000700000007
DATA mxfp4PairIdx<>+240(SB)/8, $0x0000000700000007
DATA mxfp4PairIdx<>+248(SB)/8, $0x0000000700000007
GLOBL mxfp4PairIdx<>(SB), RODATA|NOPTR, $256

DATA mxfp4EIdx<>+0(SB)/8, $0x0019001100080000
DATA mxfp4EIdx<>+8(SB)/8, $0x003b0033002a0022
DATA mxfp4EIdx<>+16(SB)/8, $0x0000000000000000
DATA mxfp4EIdx<>+24(SB)/8, $0x0000000000000000
DATA mxfp4EIdx<>+32(SB)/8, $0x0000000000000000
DATA mxfp4EIdx<>+40(SB)/8, $0x0000000000000000
DATA mxfp4EIdx<>+48(SB)/8, $0x0000000000000000
DATA mxfp4EIdx<>+56(SB)/8, $0x0000000000000000
GLOBL mxfp4EIdx<>(SB), RODATA|NOPTR, $64

// MXFP4NIB leaves the 32 codes of the block at AX, as signed doubled
// E2M1 values, in Y2 (values 0..15 in the lower half, 16..31 in the
// upper). Y0 holds 0x0f bytes, Y7 mxfp4Signed.
#define MXFP4NIB \
	VMOVDQU     1(AX), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y0, Y2, Y2 \
	VPSHUFB     Y2, Y7, Y2

// func dotMXFP4AVX2(w *byte, x *quant.BlockQ8_0, nb int) float32
TEXT ·dotMXFP4AVX2(SB), NOSPLIT, $0-28
	MOVQ         w+0(FP), AX
	MOVQ         x+8(FP), CX
	MOVQ         nb+16(FP), DX
	LEAQ         mxfp4Half<>(SB), R8
	MOVL         $0x0f0f0f0f, BX
	VMOVD        BX, X0
	VPBROADCASTD X0, Y0
	VMOVDQU      mxfp4Signed<>(SB), Y7
	VXORPS       X1, X1, X1
	TESTQ        DX, DX
	JE           mxone_done

mxone_loop:
	PREFETCHT0   2176(AX)
	MXFP4NIB
	VPMOVSXBW    X2, Y4
	VEXTRACTI128 $1, Y2, X3
	VPMOVSXBW    X3, Y3
	VPMOVSXBW    2(CX), Y5
	VPMOVSXBW    18(CX), Y6
	VPMADDWD     Y5, Y4, Y5
	VPMADDWD     Y6, Y3, Y6
	VPADDD       Y6, Y5, Y5
	VEXTRACTI128 $1, Y5, X2
	VPADDD       X5, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPADDD       X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPADDD       X3, X2, X2
	VCVTDQ2PS    X2, X2
	// d = f16(x.D) * 2^(e-128), then sum += d * isum: quant's order.
	MOVWLZX      (CX), BX
	VMOVD        BX, X3
	VCVTPH2PS    X3, X3
	MOVBLZX      (AX), BX
	VMULSS       (R8)(BX*4), X3, X3
	VMULSS       X3, X2, X2
	VADDSS       X2, X1, X1
	ADDQ         $17, AX
	ADDQ         $34, CX
	DECQ         DX
	JNZ          mxone_loop

mxone_done:
	VZEROUPPER
	MOVSS X1, ret+24(FP)
	RET

// func dotMXFP4x4AVX2(w *byte, x *quant.BlockQ8_0, nb int, out *[4]float32)
TEXT ·dotMXFP4x4AVX2(SB), NOSPLIT, $0-32
	MOVQ         w+0(FP), AX
	MOVQ         x+8(FP), CX
	MOVQ         nb+16(FP), DX
	IMUL3Q       $34, DX, BX
	LEAQ         (BX)(BX*2), SI
	LEAQ         mxfp4Half<>(SB), R8
	MOVL         $0x0f0f0f0f, DI
	VMOVD        DI, X0
	VPBROADCASTD X0, Y0
	VMOVDQU      mxfp4Signed<>(SB), Y7
	VXORPS       X1, X1, X1
	TESTQ        DX, DX
	JE           mxfour_done

mxfour_loop:
	PREFETCHT0   2176(AX)
	MXFP4NIB
	VPMOVSXBW    X2, Y4
	VEXTRACTI128 $1, Y2, X3
	VPMOVSXBW    X3, Y3
	VPMOVSXBW    2(CX), Y5
	VPMOVSXBW    18(CX), Y6
	VPMADDWD     Y5, Y4, Y5
	VPMADDWD     Y6, Y3, Y6
	VPADDD       Y6, Y5, Y5
	VPMOVSXBW    2(CX)(BX*1), Y6
	VPMOVSXBW    18(CX)(BX*1), Y8
	VPMADDWD     Y6, Y4, Y6
	VPMADDWD     Y8, Y3, Y8
	VPADDD       Y8, Y6, Y6
	VPMOVSXBW    2(CX)(BX*2), Y8
	VPMOVSXBW    18(CX)(BX*2), Y9
	VPMADDWD     Y8, Y4, Y8
	VPMADDWD     Y9, Y3, Y9
	VPADDD       Y9, Y8, Y8
	VPMOVSXBW    2(CX)(SI*1), Y9
	VPMOVSXBW    18(CX)(SI*1), Y10
	VPMADDWD     Y9, Y4, Y9
	VPMADDWD     Y10, Y3, Y10
	VPADDD       Y10, Y9, Y9
	// The four tokens' exact sums in the four lanes of X2.
	VPHADDD      Y6, Y5, Y5
	VPHADDD      Y9, Y8, Y8
	VPHADDD      Y8, Y5, Y5
	VEXTRACTI128 $1, Y5, X2
	VPADDD       X2, X5, X2
	VCVTDQ2PS    X2, X2
	// d = f16(x.D) * 2^(e-128) per token, then sum += d * isum, lane by
	// lane as the one-token dot does it.
	MOVWLZX      (CX), DI
	VMOVD        DI, X3
	MOVWLZX      (CX)(BX*1), DI
	VPINSRW      $1, DI, X3, X3
	MOVWLZX      (CX)(BX*2), DI
	VPINSRW      $2, DI, X3, X3
	MOVWLZX      (CX)(SI*1), DI
	VPINSRW      $3, DI, X3, X3
	VCVTPH2PS    X3, X3
	MOVBLZX      (AX), DI
	VBROADCASTSS (R8)(DI*4), X4
	VMULPS       X4, X3, X3
	VMULPS       X3, X2, X2
	VADDPS       X2, X1, X1
	ADDQ         $17, AX
	ADDQ         $34, CX
	DECQ         DX
	JNZ          mxfour_loop

mxfour_done:
	MOVQ    out+24(FP), AX
	VMOVUPS X1, (AX)
	VZEROUPPER
	RET

// MXRA addresses the current row (SI).
#define MXRA(off) off(SI)

// MXSCALE leaves in dst the eight scale products dx·2^(e-128) of the
// eight blocks at row(0), dx at (R10): the exponent bytes (at a stride of
// 17) picked by one two-table word permute of the blocks' first 128
// bytes and a per-word shift, then 2^(e-128)'s bits made in the lanes,
// (e-1)<<23, or 0x200000<<e for e < 2. Clobbers Z10, Y12, K1.
#define MXSCALE(row, dst) \
	VMOVDQU64 row(0), Z10 \
	VPERMT2W  row(64), Z21, Z10 \
	VPSRLVW   X22, X10, X10 \
	VPMOVZXWD X10, Y10 \
	VPANDD    Y26, Y10, Y10 \
	VPSUBD    Y20, Y10, Y12 \
	VPSLLD    $23, Y12, Y12 \
	VPCMPUD   $1, Y23, Y10, K1 \
	VPSLLVD   Y10, Y25, K1, Y12 \
	VMULPS    (R10), Y12, dst

// MXONE does one block, the weights at SI, the activations at DI, its
// activation scale at (R10), into Y0.
#define MXONE \
	VMOVDQU     1(SI), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y15, Y2, Y2 \
	VPSHUFB     Y2, Y11, Y2 \
	VPXOR       Y5, Y5, Y5 \
	VPDPBUSD    2(DI), Y2, Y5 \
	VPXOR       Y6, Y6, Y6 \
	VPDPBUSD    2(DI), Y13, Y6 \
	VPSUBD      Y6, Y5, Y5 \
	VCVTDQ2PS   Y5, Y5 \
	MOVBLZX     (SI), AX \
	VMOVSS      (R8)(AX*4), X6 \
	VMULSS      (R10), X6, X6 \
	VBROADCASTSS X6, Y6 \
	VFMADD231PS Y6, Y5, Y0

// Eight-token dot, for prompt processing: out[t] is the dot of the nb
// blocks at w with token t's nb blocks at x[t*nb:], dx the tokens' block
// scales as float32 (q80Scales's layout: the eight tokens' scales of a
// block together), nb >= 1. Each weight block is unpacked once into its
// signed doubled E2M1 values s and multiplied with the eight tokens, two
// per 512-bit register: VPDPBUSD takes the activations offset to x+128
// (x XOR 0x80) as its unsigned operand, and the weight-only correction
// 128·Σs, computed once per block, is subtracted, which leaves the exact
// Σ x·s of each lane for every byte. The lanes are converted and fused-
// multiply-added with 2^(e-128) times the token's block scale into float
// lanes, half a register per token, reduced at the end.

#define MXT_0(off) off(DI)
#define MXT_1(off) off(DI)(R11*1)
#define MXT_2(off) off(DI)(R11*2)
#define MXT_3(off) off(DI)(R13*1)
#define MXT_4(off) off(R12)
#define MXT_5(off) off(R12)(R11*1)
#define MXT_6(off) off(R12)(R11*2)
#define MXT_7(off) off(R12)(R13*1)

// MXX8PAIR multiplies the values in Z2 (both halves) with tokens a and b,
// accumulating into acc with the scale products permuted by idx.
#define MXX8PAIR(ta, tb, idx, acc) \
	VMOVDQU      ta(2), Y11 \
	VINSERTI64X4 $1, tb(2), Z11, Z11 \
	VPXORD       Z14, Z11, Z11 \
	VPXORD       Z12, Z12, Z12 \
	VPDPBUSD     Z2, Z11, Z12 \
	VPSUBD       Z9, Z12, Z12 \
	VCVTDQ2PS    Z12, Z12 \
	VPERMPS      Z10, idx, Z11 \
	VFMADD231PS  Z11, Z12, acc

// MXX8HALVES stores the sums of the lower and upper eight lanes of acc
// (accy, accx its low halves) to lo and hi. Clobbers Z11, Z12.
#define MXX8HALVES(acc, accy, accx, lo, hi) \
	VEXTRACTF64X4 $1, acc, Y11 \
	VEXTRACTF128  $1, accy, X12 \
	VADDPS        X12, accx, accx \
	VMOVHLPS      accx, X12, X12 \
	VADDPS        X12, accx, accx \
	VMOVSHDUP     accx, X12 \
	VADDSS        X12, accx, accx \
	VMOVSS        accx, lo \
	VEXTRACTF128  $1, Y11, X12 \
	VADDPS        X12, X11, X11 \
	VMOVHLPS      X11, X12, X12 \
	VADDPS        X12, X11, X11 \
	VMOVSHDUP     X11, X12 \
	VADDSS        X12, X11, X11 \
	VMOVSS        X11, hi

// func dotMXFP4x8AVX512(w *byte, x *quant.BlockQ8_0, dx *float32, nb int, out *[8]float32)
TEXT ·dotMXFP4x8AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ dx+16(FP), R8
	MOVQ nb+24(FP), CX
	IMUL3Q $34, CX, R11
	LEAQ (R11)(R11*2), R13
	LEAQ (DI)(R11*4), R12
	LEAQ mxfp4Half<>(SB), R9
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Y15
	MOVL $0x80808080, AX
	VPBROADCASTD AX, Z14
	VMOVDQU mxfp4Signed<>(SB), Y13
	VMOVDQU64 mxfp4PairIdx<>+0(SB), Z16
	VMOVDQU64 mxfp4PairIdx<>+64(SB), Z17
	VMOVDQU64 mxfp4PairIdx<>+128(SB), Z18
	VMOVDQU64 mxfp4PairIdx<>+192(SB), Z19
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

mxx8loop:
	VMOVDQU     1(SI), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y15, Y2, Y2
	VPSHUFB     Y2, Y13, Y2
	VINSERTI64X4 $1, Y2, Z2, Z2
	VPXORD Z9, Z9, Z9
	VPDPBUSD Z2, Z14, Z9
	MOVBLZX 0(SI), AX
	VBROADCASTSS (R9)(AX*4), Y10
	VMULPS 0(R8), Y10, Y10
	MXX8PAIR(MXT_0, MXT_1, Z16, Z4)
	MXX8PAIR(MXT_2, MXT_3, Z17, Z5)
	MXX8PAIR(MXT_4, MXT_5, Z18, Z6)
	MXX8PAIR(MXT_6, MXT_7, Z19, Z7)
	ADDQ $17, SI
	ADDQ $34, DI
	ADDQ $34, R12
	ADDQ $32, R8
	DECQ CX
	JNZ mxx8loop
	MOVQ out+32(FP), AX
	MXX8HALVES(Z4, Y4, X4, 0(AX), 4(AX))
	MXX8HALVES(Z5, Y5, X5, 8(AX), 12(AX))
	MXX8HALVES(Z6, Y6, X6, 16(AX), 20(AX))
	MXX8HALVES(Z7, Y7, X7, 24(AX), 28(AX))
	VZEROUPPER
	RET

// The one-row row-run dot (dotMXFP4RowsAVX512), as the IQ4_NL one in
// newq_avx512_amd64.s: once per product (mxfp4PrepAVX512, below; the
// pool's prep) the activations of every whole group of eight blocks are
// brought into the codes' order and stored with their offset lanes, and
// each row then takes eight blocks per iteration,
// four per 512-bit register: blocks 0, 2, 4 and 6 (whose qs bytes start
// at odd offsets 1, 35, 69, 103) by one word permute of bytes 1-128 of
// the group, blocks 1, 3, 5 and 7 (at 18, 52, 86, 120) by one of bytes
// 8-135, each block's 16 qs bytes in one 128-bit lane. The mask and a
// shift of four split them into values 0-15 and 16-31, both looked up in
// mxfp4Shifted; both VPDPBUSDs of a block add to the same lanes, which
// start from -12·Σx, so a block's four lanes hold the exact Σ value·x of
// its 32 values, and every four blocks need one conversion and one
// fused multiply-add, with the scale products dx·2^(e-128) spread four
// lanes each. Per four blocks and row that is 18 instructions, the
// scales' included, against 31 of the two-row kernel this replaced
// (which took two blocks per register and redid the activation work for
// every pair of rows; BenchmarkMXFP4Rows), and one row at a time streams
// better from memory (see the IQ4_NL kernel's note). The last nb%8
// blocks go one at a time (MXONE).

// mxfp4Qs0 and mxfp4Qs1 pick the qs words of blocks 0, 2, 4, 6 out of
// bytes 1-128 of eight 17-byte blocks and of blocks 1, 3, 5, 7 out of
// bytes 8-135.
DATA mxfp4Qs0<>+0(SB)/8, $0x0003000200010000
DATA mxfp4Qs0<>+8(SB)/8, $0x0007000600050004
DATA mxfp4Qs0<>+16(SB)/8, $0x0014001300120011
DATA mxfp4Qs0<>+24(SB)/8, $0x0018001700160015
DATA mxfp4Qs0<>+32(SB)/8, $0x0025002400230022
DATA mxfp4Qs0<>+40(SB)/8, $0x0029002800270026
DATA mxfp4Qs0<>+48(SB)/8, $0x0036003500340033
DATA mxfp4Qs0<>+56(SB)/8, $0x003a003900380037
GLOBL mxfp4Qs0<>(SB), RODATA|NOPTR, $64

DATA mxfp4Qs1<>+0(SB)/8, $0x0008000700060005
DATA mxfp4Qs1<>+8(SB)/8, $0x000c000b000a0009
DATA mxfp4Qs1<>+16(SB)/8, $0x0019001800170016
DATA mxfp4Qs1<>+24(SB)/8, $0x001d001c001b001a
DATA mxfp4Qs1<>+32(SB)/8, $0x002a002900280027
DATA mxfp4Qs1<>+40(SB)/8, $0x002e002d002c002b
DATA mxfp4Qs1<>+48(SB)/8, $0x003b003a00390038
DATA mxfp4Qs1<>+56(SB)/8, $0x003f003e003d003c
GLOBL mxfp4Qs1<>(SB), RODATA|NOPTR, $64

// mxfp4Spread spreads scale lanes 0, 2, 4, 6 four lanes each (the first
// 64 bytes), then lanes 1, 3, 5, 7.
DATA mxfp4Spread<>+0(SB)/8, $0x0000000000000000
DATA mxfp4Spread<>+8(SB)/8, $0x0000000000000000
DATA mxfp4Spread<>+16(SB)/8, $0x0000000200000002
DATA mxfp4Spread<>+24(SB)/8, $0x0000000200000002
DATA mxfp4Spread<>+32(SB)/8, $0x0000000400000004
DATA mxfp4Spread<>+40(SB)/8, $0x0000000400000004
DATA mxfp4Spread<>+48(SB)/8, $0x0000000600000006
DATA mxfp4Spread<>+56(SB)/8, $0x0000000600000006
DATA mxfp4Spread<>+64(SB)/8, $0x0000000100000001
DATA mxfp4Spread<>+72(SB)/8, $0x0000000100000001
DATA mxfp4Spread<>+80(SB)/8, $0x0000000300000003
DATA mxfp4Spread<>+88(SB)/8, $0x0000000300000003
DATA mxfp4Spread<>+96(SB)/8, $0x0000000500000005
DATA mxfp4Spread<>+104(SB)/8, $0x0000000500000005
DATA mxfp4Spread<>+112(SB)/8, $0x0000000700000007
DATA mxfp4Spread<>+120(SB)/8, $0x0000000700000007
GLOBL mxfp4Spread<>(SB), RODATA|NOPTR, $128

// MX1NIB leaves the codes of four blocks, their qs words picked by idx
// out of bytes win..win+127 of the group at SI, as u = value + 12 in Z2
// (values 0-15) and Z3 (16-31).
#define MX1NIB(win, idx) \
	VMOVDQU64 win(SI), Z2 \
	VPERMT2W  win+64(SI), idx, Z2 \
	VPSRLW    $4, Z2, Z3 \
	VPANDD    Z15, Z2, Z2 \
	VPANDD    Z15, Z3, Z3 \
	VPSHUFB   Z2, Z11, Z2 \
	VPSHUFB   Z3, Z11, Z3

// MX1SCR takes the scratch (mxfp4PrepAVX512's) in R9 and nb in R12 and
// leaves in R9 the activations of the whole groups (aligned up to 64
// bytes) and in R10 the nb activation scales as float32, after them.
#define MX1SCR \
	ADDQ $63, R9 \
	ANDQ $-64, R9 \
	MOVQ R12, R10 \
	SHRQ $3, R10 \
	IMUL3Q $384, R10, R10 \
	ADDQ R9, R10

// func mxfp4PrepAVX512(x *quant.BlockQ8_0, nb int, scr *byte)
//
// mxfp4PrepAVX512 does the activation work of the MXFP4 row-run dot once
// per product: for every whole group of eight of the nb blocks at x (nb
// >= 1), the activations in the codes' order with their offset lanes
// (-12·Σx), blocks 0, 2, 4, 6 (their qs at 2, 70, 138, 206) and then 1,
// 3, 5, 7 (at 36, 104, 172, 240), 384 bytes a group, and then all nb
// activation scales as float32, into scr (MX1SCR's layout,
// q80ScrBytes(nb) bytes hold it).
TEXT ·mxfp4PrepAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), R11
	MOVQ nb+8(FP), R12
	MOVQ scr+16(FP), R9
	MX1SCR
	MOVL $0x0c0c0c0c, AX
	VPBROADCASTD AX, Z13
	VPXORD Z24, Z24, Z24
	MOVQ R11, DI
	MOVQ R12, CX
mx1dx:
	MOVWLZX   0(DI), AX
	VMOVD     AX, X2
	VCVTPH2PS X2, X2
	VMOVSS    X2, (R10)
	ADDQ      $34, DI
	ADDQ      $4, R10
	DECQ      CX
	JNZ       mx1dx
	MOVQ R11, DI
	MOVQ R9, BX
	MOVQ R12, CX
	SHRQ $3, CX
	JZ   mx1prepdone
mx1prep:
	Q80X4(2, 70, 138, 206, Z4, Z5, Z28)
	VMOVDQA64 Z4, 0(BX)
	VMOVDQA64 Z5, 64(BX)
	VMOVDQA64 Z28, 128(BX)
	Q80X4(36, 104, 172, 240, Z4, Z5, Z28)
	VMOVDQA64 Z4, 192(BX)
	VMOVDQA64 Z5, 256(BX)
	VMOVDQA64 Z28, 320(BX)
	ADDQ $272, DI
	ADDQ $384, BX
	DECQ CX
	JNZ  mx1prep
mx1prepdone:
	VZEROUPPER
	RET

// func dotMXFP4RowsAVX512(w *byte, x *quant.BlockQ8_0, nb, rows int, out *float32, scr *byte)
//
// For each of rows weight rows of nb blocks at w, out[r] is its dot with
// the nb activation blocks at x (nb, rows >= 1), whose activation work
// mxfp4PrepAVX512 did into scr. A row's result does not depend on the
// others of the run.
TEXT ·dotMXFP4RowsAVX512(SB), NOSPLIT, $ROWS8_FRAME-48
	ROWS8_ARGS
	MOVQ scr+40(FP), R9
	MX1SCR
	LEAQ mxfp4Half<>(SB), R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z15
	MOVL $0x0c0c0c0c, AX
	VPBROADCASTD AX, Z13
	VBROADCASTI32X4 mxfp4Shifted<>(SB), Z11
	VMOVDQU64 mxfp4Qs0<>(SB), Z18
	VMOVDQU64 mxfp4Qs1<>(SB), Z19
	VMOVDQU64 mxfp4Spread<>+0(SB), Z16
	VMOVDQU64 mxfp4Spread<>+64(SB), Z17
	VMOVDQU64 mxfp4EIdx<>(SB), Z21
	MOVQ $0x0008000000080000, AX
	VMOVQ AX, X22
	VPBROADCASTQ X22, X22
	MOVL $1, AX
	VPBROADCASTD AX, Y20
	MOVL $2, AX
	VPBROADCASTD AX, Y23
	MOVL $0x00200000, AX
	VPBROADCASTD AX, Y25
	MOVL $0xff, AX
	VPBROADCASTD AX, Y26

mx1row:
	TESTQ R13, R13
	JZ   mx1end
	// The scales' address (R10, after the groups) again for every row.
	MOVQ R11, DI
	MOVQ R12, R10
	SHRQ $3, R10
	IMUL3Q $384, R10, R10
	ADDQ R9, R10
	MOVQ R9, BX
	MOVQ R12, CX
	VPXORD Z0, Z0, Z0
	CMPQ CX, $8
	JLT  mx1tail
mx1loop8:
	// Prefetches into L1 32 iterations ahead and into L2 96 ahead, as
	// the Q4_0/Q5_0 row runs (newq_avx512_amd64.s). The L2 set: in
	// BenchmarkMatVecStreamPair against the Q8_0 kernel, three
	// alternating rounds on a Zen 4 VM, MXFP4 went from 0.88 / 1.00 /
	// 0.98 to 0.94 / 1.04 / 1.02 at one thread (two threads: noise).
	ROWS_PREFETCH(4352, 13056)
	MXSCALE(MXRA, Y1)
	VPERMPS Z1, Z16, Z27
	VPERMPS Z1, Z17, Z29
	MX1NIB(1, Z18)
	Q80N_DOT(0(BX), 64(BX), 128(BX), Z27, Z0)
	MX1NIB(8, Z19)
	Q80N_DOT(192(BX), 256(BX), 320(BX), Z29, Z0)
	ADDQ $136, SI
	ADDQ $272, DI
	ADDQ $384, BX
	ADDQ $32, R10
	SUBQ $8, CX
	CMPQ CX, $8
	JGE  mx1loop8
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS Y1, Y0, Y0
mx1tail:
	TESTQ CX, CX
	JZ   mx1done
mx1loop1:
	MXONE
	ADDQ $17, SI
	ADDQ $34, DI
	ADDQ $4, R10
	DECQ CX
	JNZ  mx1loop1
mx1done:
	ROWEND_Y0(mx1row, mx1kept, mx1adv, mx1next)
mx1end:
	VZEROUPPER
	RET
