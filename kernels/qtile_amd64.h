// The prompt tile kernels' addressing of their tokens
// (qtile_avx512_amd64.s, qtile_avx2_amd64.s).

// Token t's codes (QX) and scales (QS): token 0's at DI and R8, the
// next ones R11 (codes) and R9 (scales) bytes apart, R13 = 3·R11 and
// R10 = 3·R9; R12 and BX point at token 4's (eight-token kernels).
#define QX0(off) off(DI)
#define QX1(off) off(DI)(R11*1)
#define QX2(off) off(DI)(R11*2)
#define QX3(off) off(DI)(R13*1)
#define QX4(off) off(R12)
#define QX5(off) off(R12)(R11*1)
#define QX6(off) off(R12)(R11*2)
#define QX7(off) off(R12)(R13*1)
#define QS0(off) off(R8)
#define QS1(off) off(R8)(R9*1)
#define QS2(off) off(R8)(R9*2)
#define QS3(off) off(R8)(R10*1)
#define QS4(off) off(BX)
#define QS5(off) off(BX)(R9*1)
#define QS6(off) off(BX)(R9*2)
#define QS7(off) off(BX)(R10*1)
