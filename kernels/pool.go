package kernels

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// ErrClosed is returned by MatMul on a closed Pool.
var ErrClosed = errors.New("kernels: pool is closed")

// tileBytes bounds the weight bytes of one row tile of the multi-token
// path: small enough to stay in the first-level cache while every token
// column is multiplied by it.
const tileBytes = 32 << 10

// tokenBlockBytes bounds the activation bytes of the tokens that the
// quantized multi-token path multiplies every row tile of a piece by
// before it moves on to the next tokens: small enough that those
// activations stay in the second-level cache while the tiles go by, and
// the outputs they write (a few cache lines per token and tile) stay
// there too until the next tile fills the rest of the lines, instead of
// every tile streaming all of a long prompt's activations from the
// last-level cache. Measured with 512 tokens of Q4_K on the Zen 5 VM it
// saves 0-6% (5632-column products gain most).
const tokenBlockBytes = 256 << 10

// convertMin is the number of activation values from which the conversion
// to the partner format is split across the pool too.
const convertMin = 1 << 15

// chunksPerThread is how many pieces the rows phase of a product (other
// than the blocked one) is cut into per goroutine. The goroutines claim
// pieces one at a time, so one whose processor is slowed (another
// process, another virtual machine on the same host) takes fewer, and
// the product does not wait on it for a fixed half.
const chunksPerThread = 8

// serialBytes is the weight traffic (weight bytes times tokens) below
// which a MatMul runs on the calling goroutine alone: waking the workers
// would cost more than it saves.
const serialBytes = 128 << 10

// Phases of a pool job.
const (
	phaseConvert = iota // convert activations to the partner format
	phaseRows           // multiply weight rows
	phaseFunc           // run the function given to Run
)

// Pool is a fixed set of worker goroutines that MatMul and Run split work
// across. Threads()-1 goroutines are started by NewPool; the calling
// goroutine works alongside them. Between jobs a worker first
// spins for up to spinFor, watching the job counter, so that the next
// product of a decode step (microseconds later) starts without a wake-up
// through the scheduler; then it parks on a condition variable until the
// next job. A call creates no goroutine and, once the Pool's activation
// scratch has grown to the largest shape used, allocates nothing. Calls
// on one Pool are serialised; use one Pool per concurrent caller.
type Pool struct {
	mu      sync.Mutex
	threads int
	tab     *table
	exited  sync.WaitGroup
	closed  bool
	serial  int64 // serialBytes; tests lower it to exercise the split
	spin    int   // finishSpin; tests lower it to exercise the sleep
	job     job

	seq     atomic.Uint64 // job counter: a worker runs a job when it changes
	pending atomic.Int32  // workers still running the current job
	parked  atomic.Int32  // workers waiting on wake
	stop    atomic.Bool   // set by Close before the last seq change
	waiting atomic.Bool   // the caller sleeps on done until pending is 0
	wakeMu  sync.Mutex
	wake    *sync.Cond // signalled by start for parked workers
	done    *sync.Cond // signalled by the last worker for a sleeping caller
}

// spinFor is how long an idle worker watches for the next job before it
// parks. Decode steps issue a product every few microseconds; between
// steps (sampling, I/O) the workers park and cost nothing.
const spinFor = 200 * time.Microsecond

// job is the work of one MatMul call, shared by the pool's goroutines.
type job struct {
	phase int
	out   []float32
	w     Matrix
	rb    int // bytes per weight row
	x     []float32
	n     int

	// Activation scratch in the partner formats, owned by the pool and
	// kept between calls.
	xh  []uint16
	q80 []quant.BlockQ8_0
	q81 []quant.BlockQ8_1
	q8k []quant.BlockQ8K

	// q80dx holds the Q8_0 block scales of every whole group of eight
	// tokens as float32, in the layout the eight-token dots take
	// (q80Scales): group g's are q80dx[g*8*nb : (g+1)*8*nb].
	q80dx []float32

	// prep holds a one-token product's activations prepared once for its
	// row-run dot (dots.prep), when the weight type's dots have a prep;
	// empty otherwise.
	prep []byte

	// The blocked product of F32, F16 and BF16 weights (gemm.go), used
	// when blocked is set: the activations as float32 rows and each
	// goroutine's weight tile. gemmMin is gemmMinTokens; tests change it.
	blocked bool
	gemmMin int
	xf      []float32
	gemm    []gemmPart

	// tokenBlock is tokenBlockBytes; tests lower it to make several token
	// blocks of a short prompt.
	tokenBlock int

	fn func(part int) // Run's function

	// The rows phase of a multi-token product outside the blocked one
	// hands out chunk rows at a time: next is the first row not yet
	// claimed. A one-token product's rows are cut into one region per
	// goroutine instead (claimRegion): regions[i] holds the rows of
	// goroutine i's region not yet claimed, the first in its low 32 bits
	// and the end in its high 32 bits.
	chunk   int
	next    atomic.Int64
	regions []atomic.Uint64

	// res holds each goroutine's results of a multi-token dot.
	res []partResult

	// The prompt tile path (qtile.go), used when qt is set: the
	// activations' codes and scales, and each goroutine's rewritten
	// weight rows.
	qt      bool
	qtSplit bool // the type's tile kernel takes qtx
	qtq     []int8
	qtx     []int8 // qtq split in nibbles (qtSplitActs)
	qts     []qtScale
	qtScr   [][]byte
}

// partResult is one goroutine's results of a multi-token dot, padded so
// that no two goroutines' results share a cache line (or the pair of
// lines the adjacent-line prefetcher fetches together). They are written
// after every dot, and sharing a line turned each write into a transfer
// between the cores: two threads multiplied a 512-token prompt by a
// 2048-column Q4_K matrix hardly faster than one.
type partResult struct {
	v [8]float32
	_ [128 - 32]byte
}

// NewPool starts a pool of threads goroutines in all (threads < 1 means 1)
// using the selected kernel path.
func NewPool(threads int) *Pool { return newPool(threads, dispatch.tab) }

// newPool starts a pool that uses the kernels of tab.
func newPool(threads int, tab *table) *Pool {
	threads = max(threads, 1)
	p := &Pool{threads: threads, tab: tab, serial: serialBytes, spin: finishSpin}
	p.wake = sync.NewCond(&p.wakeMu)
	p.done = sync.NewCond(&p.wakeMu)
	p.job.res = make([]partResult, threads)
	p.job.regions = make([]atomic.Uint64, threads)
	p.job.gemm = make([]gemmPart, threads)
	p.job.gemmMin = gemmMinTokens
	p.job.tokenBlock = tokenBlockBytes
	for i := 1; i < threads; i++ {
		p.exited.Add(1)
		go p.worker(i)
	}
	return p
}

// worker runs share part of every job until the pool closes.
func (p *Pool) worker(part int) {
	defer p.exited.Done()
	last := uint64(0)
	for {
		last = p.await(last)
		if p.stop.Load() {
			return
		}
		p.run(part)
		// The last worker wakes a caller that stopped spinning. A caller
		// sets waiting before it checks pending under wakeMu, so either it
		// sees 0 or this sees it waiting.
		if p.pending.Add(-1) == 0 && p.waiting.Load() {
			p.wakeMu.Lock()
			p.done.Broadcast()
			p.wakeMu.Unlock()
		}
	}
}

// await returns the job counter once it differs from last: it spins for
// up to spinFor, then parks until the caller's signal.
func (p *Pool) await(last uint64) uint64 {
	deadline := time.Now().Add(spinFor)
	for i := 0; ; i++ {
		if s := p.seq.Load(); s != last {
			return s
		}
		if i&255 == 255 && time.Now().After(deadline) {
			break
		}
	}
	p.wakeMu.Lock()
	p.parked.Add(1)
	for p.seq.Load() == last {
		p.wake.Wait()
	}
	p.parked.Add(-1)
	p.wakeMu.Unlock()
	return p.seq.Load()
}

// start publishes the current job to the workers, waking parked ones.
// A worker parks only after adding itself to parked and then seeing the
// old counter, so after the counter changes here either the worker sees
// the new value or this sees it parked and signals.
func (p *Pool) start() {
	p.pending.Store(int32(p.threads - 1))
	p.seq.Add(1)
	if p.parked.Load() > 0 {
		p.wakeMu.Lock()
		p.wake.Broadcast()
		p.wakeMu.Unlock()
	}
}

// finish waits for the workers to complete the current job. They run
// the same share of work as the caller, so it spins for a while; if the
// workers are slow (another process took their processor), it sleeps
// until the last one signals.
func (p *Pool) finish() {
	for i := 0; i < p.spin; i++ {
		if p.pending.Load() == 0 {
			return
		}
	}
	p.wakeMu.Lock()
	// This writes waiting and then reads pending; the last worker writes
	// pending and then reads waiting. Both may see the old value only if
	// a read passes the other thread's write. Go's atomics forbid that,
	// but qemu-user's arm64 on an x86 host lets a load pass an earlier
	// store-release (about 1 in 30000 such pairs): a Store here
	// slept forever under the CI's emulated arm64 tests. A swap is a
	// read-modify-write, which every emulator keeps in order.
	p.waiting.Swap(true)
	for p.pending.Load() != 0 {
		p.done.Wait()
	}
	p.waiting.Store(false)
	p.wakeMu.Unlock()
}

// finishSpin is how many times finish checks the workers before it
// sleeps (some tens of microseconds).
const finishSpin = 1 << 14

// Threads returns the number of goroutines, the caller's included, that
// share each MatMul.
func (p *Pool) Threads() int { return p.threads }

// Close stops the pool's goroutines and waits for them to exit. Later
// MatMul calls return ErrClosed; Close may be called more than once.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	p.stop.Store(true)
	p.start()
	p.exited.Wait()
	clear(p.job.gemm)
	p.job = job{res: p.job.res, gemm: p.job.gemm, gemmMin: p.job.gemmMin, tokenBlock: p.job.tokenBlock, regions: p.job.regions}
}

// MatMul computes out[i*w.Rows + r] = dot(row r of w, x[i*w.Cols:(i+1)*w.Cols])
// for the n token rows of x (n == 1 is a matrix-vector product). x is first
// converted once to the partner format of w.Type, then the rows of w are
// split across the pool (small products run on the calling goroutine
// alone). It returns ErrUnsupportedType (wrapped) or a
// *LengthError when the type, the sizes of w, len(x) != n*w.Cols or
// len(out) != n*w.Rows do not fit, and ErrClosed after Close.
func (p *Pool) MatMul(out []float32, w Matrix, x []float32, n int) error {
	if err := w.check("matmul"); err != nil {
		return err
	}
	if n < 0 {
		return &LengthError{Pkg: "kernels", Op: "matmul", Type: w.Type, Field: "n", Len: int64(n), Want: -1}
	}
	nx, err := tensor.MulInt64(int64(n), int64(w.Cols))
	if err != nil {
		return fmt.Errorf("kernels: matmul: x: %w", err)
	}
	if int64(len(x)) != nx {
		return &LengthError{Pkg: "kernels", Op: "matmul", Type: w.Type, Field: "x", Len: int64(len(x)), Want: nx}
	}
	no, err := tensor.MulInt64(int64(n), int64(w.Rows))
	if err != nil {
		return fmt.Errorf("kernels: matmul: out: %w", err)
	}
	if int64(len(out)) != no {
		return &LengthError{Pkg: "kernels", Op: "matmul", Type: w.Type, Field: "out", Len: int64(len(out)), Want: no}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	if n == 0 || w.Rows == 0 {
		return nil
	}
	j := &p.job
	j.out, j.w, j.rb, j.x, j.n = out, w, w.rowBytes(), x, n
	j.grow(p.tab)
	j.qt = !j.blocked && j.qtUse(p.tab)
	j.qtSplit = j.qt && p.tab.weights[w.Type].qtSplit
	if j.qt {
		j.qtGrow(p.tab, p.threads)
	}
	if traffic, err := tensor.MulInt64(int64(len(w.Data)), int64(n)); err == nil && traffic < p.serial || p.threads == 1 {
		j.convert(p.tab, 0, n)
		j.rows(p.tab, 0, 0, w.Rows)
	} else {
		if n*w.Cols >= convertMin {
			p.parallel(phaseConvert)
		} else {
			j.convert(p.tab, 0, n)
		}
		if n == 1 {
			j.splitRegions(p.threads)
		} else {
			j.chunk = j.chunkRows(p.threads)
			j.next.Store(0)
		}
		p.parallel(phaseRows)
	}
	j.out, j.x, j.w.Data = nil, nil, nil
	return nil
}

// parallel runs phase on every goroutine of the pool and waits for all.
func (p *Pool) parallel(phase int) {
	p.job.phase = phase
	p.start()
	p.run(0)
	p.finish()
}

// Run calls f(part) once for each part 0..Threads()-1, part 0 on the
// calling goroutine and the others on the pool's workers, and returns
// when every call has returned. f must not call back into the Pool. It
// returns ErrClosed after Close. Run allocates nothing (f itself should be
// made once, not per call).
func (p *Pool) Run(f func(part int)) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.job.fn = f
	if p.threads == 1 {
		f(0)
	} else {
		p.parallel(phaseFunc)
	}
	p.job.fn = nil
	return nil
}

// run does share part of the current phase.
func (p *Pool) run(part int) {
	j := &p.job
	switch j.phase {
	case phaseConvert:
		j.convert(p.tab, j.n*part/p.threads, j.n*(part+1)/p.threads)
	case phaseRows:
		if j.blocked {
			j.rows(p.tab, part, j.w.Rows*part/p.threads, j.w.Rows*(part+1)/p.threads)
			return
		}
		if j.n == 1 {
			for {
				r0, r1 := j.claimRegion(part, p.threads)
				if r0 >= r1 {
					return
				}
				j.rows(p.tab, part, r0, r1)
			}
		}
		for {
			r0 := int(j.next.Add(int64(j.chunk))) - j.chunk
			if r0 >= j.w.Rows {
				return
			}
			j.rows(p.tab, part, r0, min(r0+j.chunk, j.w.Rows))
		}
	case phaseFunc:
		j.fn(part)
	}
}

// splitRegions cuts a one-token product's rows into threads regions of
// about equal size for claimRegion, each starting at a multiple of
// minPieceRows.
func (j *job) splitRegions(threads int) {
	rows := int64(j.w.Rows)
	start := func(i int) int64 { return rows * int64(i) / int64(threads) &^ (minPieceRows - 1) }
	for i := range threads {
		lo, hi := start(i), start(i+1)
		if i == threads-1 {
			hi = rows
		}
		j.regions[i].Store(uint64(hi)<<32 | uint64(lo))
	}
}

// claimRegion claims the next piece of a one-token product's rows for
// goroutine part. Each goroutine takes pieces from the front of its own
// region, each half of what is left of it rounded up to a multiple of
// minPieceRows (or what is left), so that its pieces follow each other
// in memory:
// the row runs' software prefetches, which run ahead of the piece being
// multiplied, and the processor's stream prefetchers carry on into its
// next piece, instead of fetching rows that another goroutine multiplies
// while this one starts a cold stream elsewhere. A goroutine whose region
// is done takes pieces from the back of the others', again half of what
// is left each time, so that one whose processor is slowed (another
// process, another virtual machine on the same host) is helped, and the
// goroutines finish together. A piece that starts at a multiple of
// minPieceRows keeps its rows in the row runs' groups of eight and its
// outputs in whole cache lines. It returns r0 >= r1 when no rows are left.
//
// Against guided pieces from one shared counter (each a quarter of the
// rows left, so that the two goroutines' pieces alternated along the
// matrix), with both called alternately in one pool at two threads on
// weights streamed from DRAM (2048×5632, 512 MiB of copies, the Zen 4
// VM), a product took 2.5-4% less time: the median ratios of four runs,
// two in each order, were Q4_0 0.963, Q8_0 0.976, Q5_0 0.962 and Q4_K
// 0.964 (single runs 0.91-1.01; guided against itself 0.99-1.016).
func (j *job) claimRegion(part, threads int) (int, int) {
	for k := range threads {
		r := &j.regions[(part+k)%threads]
		for {
			cur := r.Load()
			lo, hi := int64(uint32(cur)), int64(cur>>32)
			left := hi - lo
			if left <= 0 {
				break
			}
			size := min(left, max(minPieceRows, (left/2+minPieceRows-1)&^(minPieceRows-1)))
			r0, r1, next := lo, lo+size, uint64(hi)<<32|uint64(lo+size)
			if k > 0 {
				r0, r1, next = hi-size, hi, uint64(hi-size)<<32|uint64(lo)
			}
			if r.CompareAndSwap(cur, next) {
				return int(r0), int(r1)
			}
		}
	}
	return 0, 0
}

// minPieceRows is the smallest piece claimRegion hands out while a
// region has that many rows left, a power of two: 16 rows are a cache
// line of outputs.
const minPieceRows = 16

// chunkRows returns the rows of one claimed piece of the rows phase for
// threads goroutines: about chunksPerThread pieces each, rounded up to
// whole tiles of the multi-token loops so that no tile is cut.
func (j *job) chunkRows(threads int) int {
	tile := max(1, tileBytes/j.rb)
	if j.qt {
		tile = qtRows
	}
	per := (j.w.Rows + threads*chunksPerThread - 1) / (threads * chunksPerThread)
	return (per + tile - 1) / tile * tile
}

// grow sizes the scratch of the partner format for the current job.
func (j *job) grow(tab *table) {
	if j.blocked = j.useGEMM(tab); j.blocked {
		j.growGEMM()
	}
	nv := j.n * j.w.Cols
	j.prep = j.prep[:0]
	switch tab.weights[j.w.Type].partner {
	case partnerF16, partnerBF16:
		j.xh = growSlice(j.xh, nv)
	case partnerQ8_0:
		j.q80 = growSlice(j.q80, nv/quant.QK8_0)
		j.q80dx = growSlice(j.q80dx, j.n/8*8*(j.w.Cols/quant.QK8_0))
		j.prep = growSlice(j.prep, prepBytes(tab, j.w, j.n))
	case partnerQ8_1:
		j.q81 = growSlice(j.q81, nv/quant.QK8_1)
	case partnerQ8K:
		j.q8k = growSlice(j.q8k, nv/quant.QK_K)
		j.prep = growSlice(j.prep, prepBytes(tab, j.w, j.n))
	}
}

// prepBytes returns the scratch of the activations of a product of n
// tokens with w prepared once for its row-run dot (dots.prep): only a
// one-token product on a path whose dots have a prep has one.
func prepBytes(tab *table, w Matrix, n int) int {
	wk := &tab.weights[w.Type]
	switch {
	case n != 1:
		return 0
	case wk.partner == partnerQ8_0 && wk.q80.prep != nil:
		return wk.q80.prepLen(w.Cols / quant.QK8_0)
	case wk.partner == partnerQ8K && wk.q8k.prep != nil:
		return wk.q8k.prepLen(w.Cols / quant.QK_K)
	}
	return 0
}

// growSlice returns s resized to n elements, reallocating only when its
// capacity is too small.
func growSlice[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// convert converts the activations of tokens t0..t1-1 to the partner format.
func (j *job) convert(tab *table, t0, t1 int) {
	if j.blocked {
		j.convertGEMM(tab, t0, t1)
		return
	}
	c := j.w.Cols
	x := j.x[t0*c : t1*c]
	wk := &tab.weights[j.w.Type]
	switch wk.partner {
	case partnerF16:
		tab.f32ToF16(j.xh[t0*c:t1*c], x)
	case partnerBF16:
		for i, v := range x {
			j.xh[t0*c+i] = quant.F32ToBF16(v)
		}
	case partnerQ8_0:
		nb := c / quant.QK8_0
		if j.qt {
			j.qtConvert(partnerQ8_0, tab.qtQuant, t0, t1)
			break
		}
		tab.quantQ8_0(x, j.q80[t0*nb:t1*nb])
		if len(j.prep) > 0 {
			// One token: its row-run dots read the prepared scratch.
			wk.q80.prep(j.q80[:nb], j.prep)
		}
		if wk.q80.x8 == nil {
			break
		}
		for t := t0; t < min(t1, j.n/8*8); t++ {
			g := t / 8
			q80Scales(j.q80dx[g*8*nb:(g+1)*8*nb], j.q80[t*nb:(t+1)*nb], t%8)
		}
	case partnerQ8_1:
		nb := c / quant.QK8_1
		tab.quantQ8_1(x, j.q81[t0*nb:t1*nb])
	case partnerQ8K:
		nb := c / quant.QK_K
		tab.quantQ8K(x, j.q8k[t0*nb:t1*nb])
		if len(j.prep) > 0 {
			// One token: its row-run dots read the prepared scratch.
			wk.q8k.prep(j.q8k[:nb], j.prep)
		}
		if j.qt {
			j.qtConvert(partnerQ8K, nil, t0, t1)
		}
	}
}

// rows computes the outputs of weight rows r0..r1-1 for every token.
func (j *job) rows(tab *table, part, r0, r1 int) {
	if r0 >= r1 {
		return
	}
	if j.blocked {
		j.gemmRows(tab, part, r0, r1)
		return
	}
	if j.qt {
		j.qtRowsRun(tab, part, r0, r1)
		return
	}
	wk := &tab.weights[j.w.Type]
	switch wk.partner {
	case partnerF32:
		tiled(j, r0, r1, j.x, j.w.Cols, tab.dotF32W)
	case partnerF16:
		tiled(j, r0, r1, j.xh, j.w.Cols, tab.dotF16W)
	case partnerBF16:
		tiled(j, r0, r1, j.xh, j.w.Cols, tab.dotBF16)
	case partnerQ8_0:
		tiledQ(j, r0, r1, &j.res[part].v, j.q80, j.q80dx, j.w.Cols/quant.QK8_0, quant.BlockQ8_0Bytes, &wk.q80)
	case partnerQ8_1:
		tiledQ(j, r0, r1, &j.res[part].v, j.q81, nil, j.w.Cols/quant.QK8_1, quant.BlockQ8_1Bytes, &wk.q81)
	case partnerQ8K:
		tiledQ(j, r0, r1, &j.res[part].v, j.q8k, nil, j.w.Cols/quant.QK_K, quant.BlockQ8_KBytes, &wk.q8k)
	}
}

// tiledQ works like tiled for the quantized types. On a path with a
// multi-token kernel d.xn it takes up to xnTokens tokens at a time with
// it, over a tile's rows. Otherwise it takes eight tokens at a time with
// d.x8 (when the path has one; two rows at a time with d.x8r2 when it has
// that too), then four with d.x4 (when it has one; its results equal four
// one-token dots, see dots) and the rest with d.one, or d.rows over a
// tile's rows when the path has a row-run dot (equal to d.one row by
// row). A one-token product on a path with a row-run dot takes all its
// rows in one call. res is the calling
// goroutine's own result buffer; blockBytes is the size of one X; dx is
// the eight-token groups' block scales for dot8 (job.q80dx), or nil.
//
// The tokens are taken in blocks of a multiple of eight (j.tokenBlock
// bytes of activations): every row tile of r0..r1 is multiplied by one block
// before the next block starts. A token is multiplied by the same kernel
// whatever the blocking, so the results do not depend on it.
func tiledQ[X any](j *job, r0, r1 int, res *[8]float32, xs []X, dx []float32, nb, blockBytes int, d *dots[X]) {
	rb, rows, data, out := j.rb, j.w.Rows, j.w.Data, j.out
	dot, dotRows, dot4, dot8 := d.one, d.rows, d.x4, d.x8
	if j.n == 1 && dotRows != nil {
		if len(j.prep) > 0 {
			d.prepRows(data[r0*rb:r1*rb], xs[:nb], j.prep, out[r0:r1])
			return
		}
		dotRows(data[r0*rb:r1*rb], xs[:nb], out[r0:r1])
		return
	}
	o4 := (*[4]float32)(res[:4])
	tile := max(1, tileBytes/rb)
	tb := max(8, j.tokenBlock/(nb*blockBytes)/8*8)
	for t0 := 0; t0 < j.n; t0 += tb {
		t1 := min(t0+tb, j.n)
		for r := r0; r < r1; r += tile {
			re := min(r+tile, r1)
			if d.xn != nil {
				// Up to xnTokens tokens per call, each equal to its
				// one-token dot whatever the group.
				for t := t0; t < t1; t += xnTokens {
					k := min(xnTokens, t1-t)
					d.xn(data[r*rb:re*rb], xs[t*nb:(t+k)*nb], nb, re-r, k, out[t*rows+r:], rows)
				}
				continue
			}
			t := t0
			for ; dot8 != nil && t+8 <= t1; t += 8 {
				xa := xs[t*nb : (t+8)*nb]
				var dxa []float32
				if dx != nil {
					dxa = dx[t*nb : (t+8)*nb] // t is a multiple of eight
				}
				o := out[t*rows : (t+8)*rows]
				rr := r
				for ; d.x8r2 != nil && rr+2 <= re; rr += 2 {
					d.x8r2(data[rr*rb:(rr+2)*rb], xa, dxa, nb, o[rr:], rows)
				}
				for ; rr < re; rr++ {
					dot8(data[rr*rb:(rr+1)*rb], xa, dxa, nb, res)
					v := *res
					o[rr], o[rows+rr], o[2*rows+rr], o[3*rows+rr] = v[0], v[1], v[2], v[3]
					o[4*rows+rr], o[5*rows+rr], o[6*rows+rr], o[7*rows+rr] = v[4], v[5], v[6], v[7]
				}
			}
			for ; dot4 != nil && t+4 <= t1; t += 4 {
				xa := xs[t*nb : (t+4)*nb]
				o := out[t*rows : (t+4)*rows]
				for rr := r; rr < re; rr++ {
					dot4(data[rr*rb:(rr+1)*rb], xa, nb, o4)
					v := *o4
					o[rr], o[rows+rr], o[2*rows+rr], o[3*rows+rr] = v[0], v[1], v[2], v[3]
				}
			}
			for ; t < t1; t++ {
				xa := xs[t*nb : (t+1)*nb]
				o := out[t*rows : (t+1)*rows]
				if dotRows != nil {
					// The tile's rows in one call (each equal to dot's):
					// a row-run kernel's per-call work (the Q8_0-partner
					// ones convert the activation scales) is not paid per
					// row.
					dotRows(data[r*rb:re*rb], xa, o[r:re])
					continue
				}
				for rr := r; rr < re; rr++ {
					o[rr] = dot(data[rr*rb:(rr+1)*rb], xa)
				}
			}
		}
	}
}

// tiled multiplies weight rows r0..r1-1 by the n activation rows of xs
// (per elements each) with dot, a tile of rows at a time: each tile is
// reused from cache by every token before the next is read.
func tiled[X any](j *job, r0, r1 int, xs []X, per int, dot func([]byte, []X) float32) {
	rb, rows, data, out := j.rb, j.w.Rows, j.w.Data, j.out
	tile := max(1, tileBytes/rb)
	for r := r0; r < r1; r += tile {
		re := min(r+tile, r1)
		for t := range j.n {
			xa := xs[t*per : (t+1)*per]
			o := out[t*rows : (t+1)*rows]
			for rr := r; rr < re; rr++ {
				o[rr] = dot(data[rr*rb:(rr+1)*rb], xa)
			}
		}
	}
}
