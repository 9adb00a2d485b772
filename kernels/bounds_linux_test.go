package kernels

import (
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
)

// TestMatMulStaysInBounds multiplies, on every path and for every weight
// type, a matrix whose bytes end right where an unreadable page begins,
// as the last tensor of a mapped model file may end at the file's last
// page: a kernel that loads past its matrix (a group of blocks read ahead,
// a vector load wider than the row's end) faults and stops the test
// binary. Prefetches do not fault, so they may run ahead. The results are
// checked against the same matrix in ordinary memory too. The shapes give
// every kernel its loops and its leftovers: rows not a multiple of eight,
// nine blocks of 256 values (groups of eight blocks and a tail of one),
// and one token, a few, and more than the multi-token kernels take at once.
func TestMatMulStaysInBounds(t *testing.T) {
	const rows, cols = 21, 9 * 256
	page := os.Getpagesize()
	forEachPath(t, func(t *testing.T, tab *table) {
		p := newPool(2, tab)
		defer p.Close()
		p.serial = 0 // split even these small products across the pool
		r := rand.New(rand.NewPCG(31, 7))
		for _, typ := range poolTypes {
			m := testMatrix(t, r, typ, rows, cols)
			size := (len(m.Data) + page - 1) / page * page
			mem, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Munmap(mem) })
			if err := syscall.Mprotect(mem[size:], syscall.PROT_NONE); err != nil {
				t.Fatal(err)
			}
			edge := m
			edge.Data = mem[size-len(m.Data) : size]
			copy(edge.Data, m.Data)
			for _, n := range []int{1, 3, 8, 19} {
				x := randF32(r, n*cols, 1)
				want, got := make([]float32, n*rows), make([]float32, n*rows)
				if err := p.MatMul(want, m, x, n); err != nil {
					t.Fatal(err)
				}
				if err := p.MatMul(got, edge, x, n); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !sameFloat(got[i], want[i]) {
						t.Fatalf("%s n=%d: output %d is %v at the page's end, %v elsewhere", typ, n, i, got[i], want[i])
					}
				}
			}
		}
	})
}
