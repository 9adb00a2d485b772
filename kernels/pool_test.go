package kernels

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// poolTypes are the weight types MatMul supports.
var poolTypes = []tensor.Type{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K,
	tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1, tensor.IQ4_NL, tensor.Q2_K, tensor.Q3_K, tensor.Q5_K, tensor.IQ4_XS,
	tensor.MXFP4}

// testMatrix returns a random rows×cols matrix of type t.
func testMatrix(t *testing.T, r *rand.Rand, typ tensor.Type, rows, cols int) Matrix {
	t.Helper()
	vals := randF32(r, rows*cols, 1)
	rb, err := typ.RowBytes(int64(cols))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, int(rb)*rows)
	if err := quant.Quantize(typ, vals, data); err != nil {
		t.Fatal(err)
	}
	m, err := NewMatrix(typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// refMatMul computes MatMul's result with quant's conversions and the
// generic dots, one token and one row at a time.
func refMatMul(w Matrix, x []float32, n int) []float32 {
	out := make([]float32, n*w.Rows)
	rb := w.rowBytes()
	for i := range n {
		xi := x[i*w.Cols : (i+1)*w.Cols]
		for r := range w.Rows {
			row := w.Data[r*rb : (r+1)*rb]
			out[i*w.Rows+r] = refDot(w.Type, row, xi)
		}
	}
	return out
}

// refDot converts x to the partner format of t and takes the generic dot.
func refDot(t tensor.Type, row []byte, x []float32) float32 {
	switch t {
	case tensor.F32:
		return dotF32WGeneric(row, x)
	case tensor.F16, tensor.BF16:
		h := make([]uint16, len(x))
		for i, v := range x {
			if t == tensor.F16 {
				h[i] = quant.F32ToF16(v)
			} else {
				h[i] = quant.F32ToBF16(v)
			}
		}
		if t == tensor.F16 {
			return dotF16WGeneric(row, h)
		}
		return dotBF16Generic(row, h)
	case tensor.Q8_0:
		q := make([]quant.BlockQ8_0, len(x)/32)
		quant.QuantizeRowQ8_0(x, q)
		return quant.DotQ8_0Q8_0(row, q)
	case tensor.Q4_K, tensor.Q6_K:
		q := make([]quant.BlockQ8K, len(x)/256)
		quant.QuantizeRowQ8K(x, q)
		if t == tensor.Q4_K {
			return dotQ4KGeneric(row, q)
		}
		return dotQ6KGeneric(row, q)
	case tensor.Q4_0, tensor.Q5_0, tensor.IQ4_NL, tensor.MXFP4:
		q := make([]quant.BlockQ8_0, len(x)/32)
		quant.QuantizeRowQ8_0(x, q)
		return map[tensor.Type]func([]byte, []quant.BlockQ8_0) float32{
			tensor.Q4_0: quant.DotQ4_0Q8_0, tensor.Q5_0: quant.DotQ5_0Q8_0, tensor.IQ4_NL: quant.DotIQ4NLQ8_0,
			tensor.MXFP4: quant.DotMXFP4Q8_0,
		}[t](row, q)
	case tensor.Q4_1, tensor.Q5_1:
		q := make([]quant.BlockQ8_1, len(x)/32)
		quant.QuantizeRowQ8_1(x, q)
		if t == tensor.Q4_1 {
			return quant.DotQ4_1Q8_1(row, q)
		}
		return quant.DotQ5_1Q8_1(row, q)
	case tensor.Q2_K, tensor.Q3_K, tensor.Q5_K, tensor.IQ4_XS:
		q := make([]quant.BlockQ8K, len(x)/256)
		quant.QuantizeRowQ8K(x, q)
		return map[tensor.Type]func([]byte, []quant.BlockQ8K) float32{
			tensor.Q2_K: quant.DotQ2KQ8K, tensor.Q3_K: quant.DotQ3KQ8K, tensor.Q5_K: quant.DotQ5KQ8K, tensor.IQ4_XS: quant.DotIQ4XSQ8K,
		}[t](row, q)
	}
	panic("unsupported type")
}

// matMulTol is the error allowed between MatMul and refMatMul for the
// float weight types, whose assembly dots sum in a different order, and
// for the quantized types' eight-token dots, which sum in vector lanes,
// and for the one-token dots of paths that reorder their sums (reordered); the other
// quantized products must match exactly.
const matMulTol = 1e-4

// batchRounds reports whether tab's n-token products of type typ may
// round differently from one-token ones: the eight-token dots do, and
// the four-token K-quant dots, which keep the generic twin's order, do on
// a path whose one-token dots reorder their sums.
func batchRounds(tab *table, typ tensor.Type, n int) bool {
	return batchTokens(tab, typ, n) > 0
}

// batchTokens returns how many of the first tokens of an n-token product
// of type typ on tab may round differently from a one-token product (see
// batchRounds): the tokens the product takes eight, or four, at a time,
// none where the path has a multi-token kernel (dots.xn).
func batchTokens(tab *table, typ tensor.Type, n int) int {
	k := typ == tensor.Q4_K || typ == tensor.Q6_K
	switch {
	case n >= qtMinTokens && tab.weights[typ].qtile != nil && tab.weights[typ].qtRepack != nil:
		return n // the prompt tile (qtile.go) takes every token
	case k && tab.q8k(typ).xn != nil:
		return 0 // every token equals its one-token dot (dots.xn)
	case k && reordered(tab, typ):
		return n / 4 * 4
	case n >= 8 && (tab.q8k(typ).x8 != nil || typ != tensor.Q8_0 && tab.q80(typ).x8 != nil):
		return n / 8 * 8
	}
	return 0
}

// TestMatMul checks every path, type and thread count against the
// reference, with row counts not divisible by the thread count.
func TestMatMul(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(8, 9))
		for _, typ := range poolTypes {
			cols := 512
			if typ.BlockSize() < 256 {
				cols = 96
			}
			for _, rows := range []int{1, 7, 13, 33} {
				w := testMatrix(t, r, typ, rows, cols)
				for _, n := range []int{1, 2, 5, 13} {
					x := randF32(r, n*cols, 2)
					want := refMatMul(w, x, n)
					for threads := 1; threads <= 4; threads++ {
						p := newPool(threads, tab)
						p.serial = 0
						out := make([]float32, n*rows)
						if err := p.MatMul(out, w, x, n); err != nil {
							t.Fatal(err)
						}
						p.Close()
						for i := range out {
							exact := typ != tensor.F32 && typ != tensor.F16 && typ != tensor.BF16 &&
								!batchRounds(tab, typ, n) && !reordered(tab, typ)
							if exact && !sameFloat(out[i], want[i]) || !near(out[i], want[i], matMulTol) {
								t.Fatalf("%s %dx%d n=%d threads=%d: out[%d] = %v, want %v",
									typ, rows, cols, n, threads, i, out[i], want[i])
							}
						}
					}
				}
			}
		}
	})
}

// TestMatMulTokensEqualSingle checks that one n-token MatMul equals n
// one-token calls, bit for bit, including the parallel conversion path;
// where the path's multi-token dots round in their own order
// (batchTokens) the results must agree within matMulTol, and float
// weights multiplied with an
// assembly blocked product within dotTol.
func TestMatMulTokensEqualSingle(t *testing.T) {
	forEachPath(t, func(t *testing.T, tab *table) {
		r := rand.New(rand.NewPCG(10, 11))
		p := newPool(3, tab)
		p.serial = 0
		defer p.Close()
		for _, tokenBlock := range []int{tokenBlockBytes, 1} {
			// 1: blocks of eight tokens, so that a piece's tiles go by
			// several token blocks.
			p.job.tokenBlock = tokenBlock
			tokensEqualSingle(t, r, p, tab)
		}
	})
}

// tokensEqualSingle runs TestMatMulTokensEqualSingle's checks on p.
func tokensEqualSingle(t *testing.T, r *rand.Rand, p *Pool, tab *table) {
	t.Helper()
	for _, typ := range poolTypes {
		rows, cols, n := 37, 512, 70 // 70*512 values: converted in parallel
		w := testMatrix(t, r, typ, rows, cols)
		x := randF32(r, n*cols, 1)
		all := make([]float32, n*rows)
		if err := p.MatMul(all, w, x, n); err != nil {
			t.Fatal(err)
		}
		one := make([]float32, rows)
		for i := range n {
			if err := p.MatMul(one, w, x[i*cols:(i+1)*cols], 1); err != nil {
				t.Fatal(err)
			}
			for k, v := range one {
				if i < batchTokens(tab, typ, n) {
					if !near(all[i*rows+k], v, matMulTol) {
						t.Fatalf("%s token %d row %d: batched %v, single %v", typ, i, k, all[i*rows+k], v)
					}
				} else if !sameFloat(v, all[i*rows+k]) && !blockedNear(tab, w, x, n, i*rows+k, v, all[i*rows+k]) {
					t.Fatalf("%s token %d row %d: batched %v, single %v", typ, i, k, all[i*rows+k], v)
				}
			}
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	good := testMatrix(t, r, tensor.Q4_K, 4, 256)
	p := NewPool(2)
	cases := []struct {
		name string
		w    Matrix
		x    []float32
		out  []float32
		n    int
		want error
	}{
		{"type", Matrix{Type: tensor.IQ2_XS, Rows: 4, Cols: 256, Data: make([]byte, 4*74)}, make([]float32, 256), make([]float32, 4), 1, ErrUnsupportedType},
		{"data", Matrix{Type: tensor.Q4_K, Rows: 4, Cols: 256, Data: make([]byte, 100)}, make([]float32, 256), make([]float32, 4), 1, ErrLength},
		{"cols", Matrix{Type: tensor.Q4_K, Rows: 4, Cols: 100, Data: nil}, make([]float32, 100), make([]float32, 4), 1, ErrLength},
		{"rows", Matrix{Type: tensor.Q4_K, Rows: -1, Cols: 256, Data: nil}, make([]float32, 256), nil, 1, ErrLength},
		{"x", good, make([]float32, 255), make([]float32, 4), 1, ErrLength},
		{"out", good, make([]float32, 256), make([]float32, 5), 1, ErrLength},
		{"n", good, nil, nil, -1, ErrLength},
		{"huge-n", good, nil, nil, 1 << 62, tensor.ErrOverflow},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := p.MatMul(c.out, c.w, c.x, c.n); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	if err := p.MatMul(nil, good, nil, 0); err != nil {
		t.Fatalf("n=0: %v", err)
	}
	p.Close()
	p.Close()
	if err := p.MatMul(make([]float32, 4), good, make([]float32, 256), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: got %v, want ErrClosed", err)
	}
	var le *LengthError
	if _, err := NewMatrix(tensor.Q4_K, 2, 256, make([]byte, 10)); !errors.As(err, &le) || le.Field != "data" || le.Want != 288 {
		t.Fatalf("NewMatrix: got %v", err)
	}
	if _, err := NewMatrix(tensor.Q4_K, MaxRows+1, 256, nil); !errors.As(err, &le) || le.Field != "rows" {
		t.Fatalf("NewMatrix of MaxRows+1 rows: got %v", err)
	}
}

// TestMatMulNoAllocs checks that MatMul allocates nothing once its
// scratch has grown.
func TestMatMulNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 15))
	p := NewPool(2)
	p.serial = 0
	defer p.Close()
	for _, typ := range poolTypes {
		w := testMatrix(t, r, typ, 64, 512)
		for _, n := range []int{1, 5, 80} {
			x := randF32(r, n*512, 1)
			out := make([]float32, n*64)
			allocs := testing.AllocsPerRun(20, func() {
				if err := p.MatMul(out, w, x, n); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s n=%d: %v allocations per call", typ, n, allocs)
			}
		}
	}
}

func TestPoolThreads(t *testing.T) {
	for _, c := range []struct{ in, want int }{{-1, 1}, {0, 1}, {1, 1}, {4, 4}} {
		p := NewPool(c.in)
		if got := p.Threads(); got != c.want {
			t.Errorf("NewPool(%d).Threads() = %d, want %d", c.in, got, c.want)
		}
		p.Close()
	}
}

// TestPoolConcurrentCalls checks that MatMul calls from several
// goroutines on one Pool are serialised and each gets its own result.
func TestPoolConcurrentCalls(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 17))
	w := testMatrix(t, r, tensor.Q4_K, 40, 512)
	p := NewPool(2)
	p.serial = 0
	defer p.Close()
	xs := [][]float32{randF32(r, 3*512, 1), randF32(r, 3*512, 1), randF32(r, 3*512, 1)}
	// Each call's result alone, first: the concurrent calls must repeat it
	// bit for bit.
	want := make([][]float32, len(xs))
	for i, x := range xs {
		want[i] = make([]float32, 3*40)
		if err := p.MatMul(want[i], w, x, 3); err != nil {
			t.Fatal(err)
		}
		if ref := refMatMul(w, x, 3); !slices.EqualFunc(want[i], ref, func(a, b float32) bool { return near(a, b, matMulTol) }) {
			t.Fatalf("call %d alone differs from the reference", i)
		}
	}
	errs := make(chan error, len(xs))
	for i, x := range xs {
		go func() {
			out := make([]float32, 3*40)
			for range 20 {
				if err := p.MatMul(out, w, x, 3); err != nil {
					errs <- err
					return
				}
				for k := range out {
					if !sameFloat(out[k], want[i][k]) {
						errs <- errors.New("a concurrent call got another call's result")
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range xs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPoolSleepingFinish runs many jobs with the caller always going to
// sleep in finish (no spinning), so that the last worker's wake-up races
// the caller's going to sleep every time. A lost wake-up leaves a Run
// that never returns: the test fails after a minute instead of hanging.
// (The one such loss seen so far, under qemu-user's arm64, needs a load
// to pass a store in a window of nanoseconds; it struck once in a whole
// CI run, and this test does not reproduce it on demand. finish's
// comment says why the swap closes it.)
func TestPoolSleepingFinish(t *testing.T) {
	// How long to wait for the jobs (which take seconds) before calling a
	// wake-up lost.
	const sleepingFinishWait = time.Minute
	const jobs = 10000
	p := NewPool(3)
	p.spin = 0
	var ran [3]int
	var sink [3]uint32
	done := make(chan error, 1)
	go func() {
		for i := range jobs {
			// The workers' shares take varied times, so that their ends
			// fall before, during and after the caller's going to sleep.
			work := func(part int) {
				ran[part]++
				for k := range (i*7919 + part*104729) % 512 {
					sink[part] += uint32(k)
				}
			}
			if err := p.Run(work); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(sleepingFinishWait):
		// The pool is left as it is: its caller sleeps holding the
		// pool's lock, so Close would wait for ever.
		t.Fatalf("a Run did not return in %v: a worker's wake-up was lost", sleepingFinishWait)
	}
	for part, n := range ran {
		if n != jobs {
			t.Errorf("part %d ran %d of %d jobs", part, n, jobs)
		}
	}
}

// TestClaimRegion checks that the claims of a one-token product's rows
// hand out every row exactly once: each goroutine's pieces from its own
// region one after another from the region's start, at multiples of
// minPieceRows, every piece at least minPieceRows but the last one taken
// from a region. The goroutines claim at once; or in turns, the last one
// claiming three times for every other's claim, so that it helps with
// the others' regions while they still take from them; or only the first
// claims (a worker whose processor is taken) and must get every row.
func TestClaimRegion(t *testing.T) {
	for _, tc := range []struct{ rows, threads int }{{1, 2}, {15, 2}, {16, 2}, {17, 3}, {40, 2}, {256, 2}, {5632, 2}, {5, 8}, {32000, 4}} {
		for _, mode := range []string{"at once", "in turns", "one"} {
			claimers := tc.threads
			if mode == "one" {
				claimers = 1
			}
			j := &job{w: Matrix{Rows: tc.rows}, n: 1, regions: make([]atomic.Uint64, tc.threads)}
			j.splitRegions(tc.threads)
			got := make([][][2]int, claimers)
			claim := func(g int) bool {
				r0, r1 := j.claimRegion(g, tc.threads)
				if r0 >= r1 {
					return false
				}
				got[g] = append(got[g], [2]int{r0, r1})
				return true
			}
			if mode == "in turns" {
				for more := true; more; {
					more = false
					for g := range claimers {
						for range 1 + 2*(g/(claimers-1)) {
							more = claim(g) || more
						}
					}
				}
			} else {
				var wg sync.WaitGroup
				for g := range claimers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for claim(g) {
						}
					}()
				}
				wg.Wait()
			}
			bound := func(i int) int { // where region i starts
				if i == tc.threads {
					return tc.rows
				}
				return tc.rows * i / tc.threads &^ (minPieceRows - 1)
			}
			region := func(r int) int { // the region row r is in
				for i := range tc.threads {
					if r < bound(i+1) {
						return i
					}
				}
				return -1
			}
			var all [][2]int
			for g, ps := range got {
				next := bound(g)
				for _, p := range ps {
					if region(p[0]) == g {
						if p[0] != next || p[0]%minPieceRows != 0 {
							t.Fatalf("%+v, %s: goroutine %d's own piece %v after row %d", tc, mode, g, p, next)
						}
						next = p[1]
					}
				}
				all = append(all, ps...)
			}
			slices.SortFunc(all, func(a, b [2]int) int { return a[0] - b[0] })
			next, small := 0, map[int]int{}
			for i, p := range all {
				switch {
				case p[0] != next:
					t.Fatalf("%+v, %s: piece %d starts at %d, want %d", tc, mode, i, p[0], next)
				case p[1] <= p[0] || region(p[1]-1) != region(p[0]):
					t.Fatalf("%+v, %s: piece %v is empty or spans two regions", tc, mode, p)
				case p[1]-p[0] < minPieceRows:
					if small[region(p[0])]++; small[region(p[0])] > 1 {
						t.Fatalf("%+v, %s: a second piece of fewer than %d rows in region %d: %v", tc, mode, minPieceRows, region(p[0]), p)
					}
				}
				next = p[1]
			}
			if next != tc.rows {
				t.Fatalf("%+v, %s: pieces end at %d", tc, mode, next)
			}
		}
	}
}

// TestSupportedTypes checks that every type MatMul multiplies has a row
// on every path and a partner format the conversion handles, and that
// the set is what the tests multiply.
func TestSupportedTypes(t *testing.T) {
	want := map[tensor.Type]bool{}
	for _, typ := range poolTypes {
		want[typ] = true
	}
	got := SupportedTypes()
	if len(got) != len(want) {
		t.Errorf("SupportedTypes() = %v, want %v", got, poolTypes)
	}
	for _, typ := range got {
		if !want[typ] {
			t.Errorf("SupportedTypes() has %s, which the tests do not multiply", typ)
		}
	}
	forEachPath(t, func(t *testing.T, tab *table) {
		for _, typ := range poolTypes {
			wk := tab.weights[typ]
			ok := false
			switch wk.partner {
			case partnerF32, partnerF16, partnerBF16:
				ok = true
			case partnerQ8_0:
				ok = wk.q80.one != nil
			case partnerQ8_1:
				ok = wk.q81.one != nil
			case partnerQ8K:
				ok = wk.q8k.one != nil
			}
			if !ok {
				t.Errorf("%s: partner %d without a one-token dot", typ, wk.partner)
			}
		}
	})
}
