//go:build !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/quant"
)

// TestDotF16FHM checks the FMLAL half dots against the FCVTL ones bit for
// bit (same lanes, same accumulators, exact products, one rounding per
// sum): random halves of several magnitudes, subnormals, infinities, NaNs,
// every length up to 130 and a few long ones, and unaligned weight bytes.
// It needs a CPU with FEAT_FHM (qemu -cpu max has it).
func TestDotF16FHM(t *testing.T) {
	if !detect().fhm {
		t.Skip("no FEAT_FHM (asimdfhm) on this CPU: the FMLAL dots are not used here")
	}
	r := rand.New(rand.NewPCG(16, 61))
	lengths := []int{1000, 2048, 4099}
	for n := 1; n <= 130; n++ {
		lengths = append(lengths, n)
	}
	for kind := range 4 {
		for _, n := range lengths {
			a, b := randF16(r, n+1, 4)[1:], randF16(r, n+3, 4)[3:]
			switch kind {
			case 1: // wide magnitudes: sums that round
				for i := range a {
					a[i] = quant.F32ToF16(float32(r.NormFloat64()) * float32(int(1)<<r.IntN(14)))
				}
			case 2: // subnormal halves
				for i := range a {
					a[i] = uint16(r.IntN(0x400)) | uint16(r.IntN(2))<<15
				}
			case 3: // an infinity and a NaN
				a[r.IntN(n)] = 0x7c00
				if n > 2 {
					b[r.IntN(n)] = 0x7e01
				}
			}
			name := fmt.Sprintf("kind %d n=%d", kind, n)
			if got, want := dotF16FHM(&a[0], &b[0], n), dotF16NEON(&a[0], &b[0], n); !sameFloat(got, want) {
				t.Errorf("%s: FMLAL %v, FCVTL %v", name, got, want)
			}
			wb := make([]byte, 2*n+1)
			for i, h := range a {
				wb[1+2*i], wb[2+2*i] = byte(h), byte(h>>8)
			}
			if got, want := dotF16WFHM(&wb[1], &b[0], n), dotF16WNEON(&wb[1], &b[0], n); !sameFloat(got, want) {
				t.Errorf("%s weights: FMLAL %v, FCVTL %v", name, got, want)
			}
		}
	}
}
