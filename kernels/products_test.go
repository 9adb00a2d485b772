package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/tensor"
)

// TestProductsEqualMatMul runs sets of products of the quantized types
// (one-token ones and multi-token ones of the sizes a mixture of experts
// gives, some sharing their activations) on every path and thread count,
// split across the pool and on the caller alone: each output must be the
// bits MatMul gives for that product alone.
func TestProductsEqualMatMul(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(21, 22))
		for _, typ := range poolTypes {
			if !ProductsSupport(typ) {
				continue
			}
			for _, threads := range []int{1, 2, 3} {
				for _, serial := range []int64{0, 1 << 40} {
					t.Run(fmt.Sprintf("%s/threads%d/serial%v", typ, threads, serial != 0), func(t *testing.T) {
						productsEqualMatMul(t, r, newPool(threads, tab), typ, serial)
					})
				}
			}
		}
	})
}

func productsEqualMatMul(t *testing.T, r *rand.Rand, p *Pool, typ tensor.Type, serial int64) {
	defer p.Close()
	p.serial = serial
	const cols = 512
	s := NewProducts()
	for _, ns := range [][]int{{1, 1, 1}, {3, 8, 17, 40, 1, 2}} {
		type prod struct {
			w   Matrix
			x   []float32
			n   int
			out []float32
		}
		var ps []prod
		for i, n := range ns {
			rows := []int{64, 100, 16}[i%3]
			x := randF32(r, n*cols, 1)
			if i%2 == 1 && ps[i-1].n == n {
				x = ps[i-1].x // gate and up share their activations
			}
			ps = append(ps, prod{w: testMatrix(t, r, typ, rows, cols), x: x, n: n, out: make([]float32, n*rows)})
		}
		for round := range 2 { // the second reuses the scratch
			for _, q := range ps {
				clear(q.out)
				if err := s.Add(q.out, q.w, q.x, q.n); err != nil {
					t.Fatal(err)
				}
			}
			if s.Len() != len(ps) {
				t.Fatalf("Len %d after %d products", s.Len(), len(ps))
			}
			if err := s.Run(p); err != nil {
				t.Fatal(err)
			}
			if s.Len() != 0 {
				t.Fatalf("Len %d after Run", s.Len())
			}
			for i, q := range ps {
				want := make([]float32, len(q.out))
				if err := p.MatMul(want, q.w, q.x, q.n); err != nil {
					t.Fatal(err)
				}
				for k, v := range want {
					if math.Float32bits(v) != math.Float32bits(q.out[k]) {
						t.Fatalf("round %d product %d (n=%d): output %d is %g, MatMul %g", round, i, q.n, k, q.out[k], v)
					}
				}
			}
		}
	}
}

func TestProductsErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	s := NewProducts()
	w := testMatrix(t, r, tensor.Q8_0, 8, 64)
	f := testMatrix(t, r, tensor.F16, 8, 64)
	var le *LengthError
	for _, tc := range []struct {
		name string
		err  error
		want func(error) bool
	}{
		{"float type", s.Add(make([]float32, 8), f, make([]float32, 64), 1), func(e error) bool { return errors.Is(e, ErrUnsupportedType) }},
		{"short x", s.Add(make([]float32, 8), w, make([]float32, 63), 1), func(e error) bool { return errors.As(e, &le) && le.Field == "x" }},
		{"long out", s.Add(make([]float32, 9), w, make([]float32, 64), 1), func(e error) bool { return errors.As(e, &le) && le.Field == "out" }},
		{"negative n", s.Add(nil, w, nil, -1), func(e error) bool { return errors.As(e, &le) && le.Field == "n" }},
	} {
		if !tc.want(tc.err) {
			t.Errorf("%s: got %v", tc.name, tc.err)
		}
	}
	if s.Len() != 0 {
		t.Errorf("refused products were added: Len %d", s.Len())
	}
	p := NewPool(2)
	p.Close()
	if err := s.Add(make([]float32, 8), w, make([]float32, 64), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(p); !errors.Is(err, ErrClosed) {
		t.Errorf("Run on a closed pool: %v, want ErrClosed", err)
	}
	if s.Len() != 0 {
		t.Errorf("Len %d after a failed Run", s.Len())
	}
}

func TestProductsNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	p := NewPool(2)
	p.serial = 0
	defer p.Close()
	s := NewProducts()
	for _, typ := range []tensor.Type{tensor.Q4_K, tensor.Q6_K, tensor.Q8_0} {
		w := testMatrix(t, r, typ, 64, 512)
		for _, n := range []int{1, 5, 40} {
			x := randF32(r, n*512, 1)
			o1, o2 := make([]float32, n*64), make([]float32, n*64)
			run := func() {
				if err := s.Add(o1, w, x, n); err != nil {
					t.Fatal(err)
				}
				if err := s.Add(o2, w, x, n); err != nil {
					t.Fatal(err)
				}
				if err := s.Run(p); err != nil {
					t.Fatal(err)
				}
			}
			run()
			if allocs := testing.AllocsPerRun(20, run); allocs != 0 {
				t.Errorf("%s n=%d: %v allocations per run", typ, n, allocs)
			}
		}
	}
}
