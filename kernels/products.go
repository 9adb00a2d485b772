package kernels

import (
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// Products runs a set of independent matrix products as one job of a
// Pool: a mixture of experts multiplies each token by several small
// matrices (Qwen3-30B-A3B: eight experts' gate and up products of 768
// rows, then their down products, per layer), and one MatMul each would
// wake the workers, split a few hundred rows and wait at a barrier for
// every one of them, with a goroutine idle at each product's tail. Here
// the products' activation conversions and rows are pieces of one job,
// claimed in order by the pool's goroutines; a product's rows wait only
// for its own conversion. A product added right after another with the
// same activations (the same x slice, the same weight type: an expert's
// gate and up products, or all of a decode step's experts) multiplies
// that product's converted activations instead of converting them again.
//
// Every output is computed by the same kernels on the same converted
// activations as MatMul computes it for that product alone (the pieces of
// a multi-token product keep MatMul's tile alignment), so the results are
// MatMul's bit for bit, whatever the thread count and the other products
// of the set. Only the quantized weight types are taken (ProductsSupport):
// the float types' prompt products take a blocked path of their own.
//
// The converted activations of a run live in arenas sized by the run's
// products together, so the scratch is bounded by the largest set's
// rows. A Products is for one goroutine at a time; after Run (or Reset)
// it holds no reference to the products' slices.
type Products struct {
	jobs []*job // jobs[:n] are the products added since the last run
	n    int

	// Arenas of the activations in the partner formats (and the tile
	// path's layout), cut into the jobs' fields at Run.
	q80   []quant.BlockQ8_0
	q80dx []float32
	prep  []byte
	q81   []quant.BlockQ8_1
	q8k   []quant.BlockQ8K
	qtq   []int8
	qtx   []int8
	qts   []qtScale

	// Per goroutine, shared by the jobs (a goroutine works on one piece
	// at a time): the multi-token dots' results and the tile path's
	// rewritten rows.
	res   []partResult
	qtScr [][]byte

	// The run's pieces: pieces[:conv] convert tokens of one product,
	// the rest multiply rows of one. pending[j] counts product j's
	// conversion pieces not yet done. src[j] is the product whose
	// converted activations product j multiplies: j itself, or the
	// product added just before it when both take the same activations
	// (a mixture of experts' gate and up products of one expert), which
	// are then converted once.
	pieces  []piece
	conv    int
	pending []atomic.Int32
	src     []int32
	next    atomic.Int64
	tab     *table
	fn      func(part int)
}

// piece is a range of tokens (conversion) or rows of product job.
type piece struct {
	job    int32
	lo, hi int32
}

// onePieceBytes is the weight bytes of one claimed piece of a one-token
// product: small enough that the goroutines finish a set together
// (a piece is a few microseconds), large enough that claiming costs
// nothing.
const onePieceBytes = 64 << 10

// prefetchBytes is how far ahead of a one-token product's dots its
// weights are prefetched: a decode step streams each weight once, and a
// mapped file's 4 KiB pages miss the TLB at every page and stop the
// hardware prefetchers there, so the next pages are touched while the
// current ones are multiplied.
const prefetchBytes = 8 << 10

// prefetchStride is the distance between the prefetched lines: one line
// a page (the dot kernels prefetch the lines within a page themselves).
// Measured on a mapped Qwen3-MoE-shaped file, two threads, interleaved
// A/B on a loaded machine: CPU per decode token 10.5 ms with it, 11.6 ms
// without a prefetch, 13.2 ms prefetching every line (the instructions
// cost more than they save).
const prefetchStride = 4096

// NewProducts returns an empty set of products.
func NewProducts() *Products {
	s := &Products{}
	s.fn = s.work
	return s
}

// ProductsSupport reports whether Products multiplies weights of type t:
// the types whose activations are quantized (Q8_0, Q8_1 or Q8_K
// partners).
func ProductsSupport(t tensor.Type) bool {
	if !supported(t) {
		return false
	}
	switch dispatch.tab.weights[t].partner {
	case partnerQ8_0, partnerQ8_1, partnerQ8K:
		return true
	}
	return false
}

// Add adds out = w·x for the n token rows of x to the set, checked as
// MatMul checks them; it returns ErrUnsupportedType (wrapped) for a type
// ProductsSupport refuses. The slices must stay unchanged until Run
// returns; distinct products may share x but not out.
func (s *Products) Add(out []float32, w Matrix, x []float32, n int) error {
	if err := w.check("products"); err != nil {
		return err
	}
	if !ProductsSupport(w.Type) {
		return fmt.Errorf("kernels: products: %s: %w", w.Type, ErrUnsupportedType)
	}
	if n < 0 {
		return &LengthError{Pkg: "kernels", Op: "products", Type: w.Type, Field: "n", Len: int64(n), Want: -1}
	}
	nx, err := tensor.MulInt64(int64(n), int64(w.Cols))
	if err != nil {
		return fmt.Errorf("kernels: products: x: %w", err)
	}
	if int64(len(x)) != nx {
		return &LengthError{Pkg: "kernels", Op: "products", Type: w.Type, Field: "x", Len: int64(len(x)), Want: nx}
	}
	no, err := tensor.MulInt64(int64(n), int64(w.Rows))
	if err != nil {
		return fmt.Errorf("kernels: products: out: %w", err)
	}
	if int64(len(out)) != no {
		return &LengthError{Pkg: "kernels", Op: "products", Type: w.Type, Field: "out", Len: int64(len(out)), Want: no}
	}
	if n == 0 || w.Rows == 0 {
		return nil
	}
	if s.n == len(s.jobs) {
		s.jobs = append(s.jobs, &job{})
	}
	j := s.jobs[s.n]
	j.out, j.w, j.rb, j.x, j.n = out, w, w.rowBytes(), x, n
	j.tokenBlock, j.gemmMin, j.blocked = tokenBlockBytes, gemmMinTokens, false
	s.n++
	return nil
}

// Len returns the number of products added since the last run.
func (s *Products) Len() int { return s.n }

// Reset drops the products added since the last run.
func (s *Products) Reset() {
	for _, j := range s.jobs[:s.n] {
		j.out, j.x, j.w = nil, nil, Matrix{}
	}
	s.n = 0
}

// Run computes the products added since the last run on p's goroutines
// (on the calling one alone when they are small) and empties the set. It
// returns ErrClosed after p is closed.
func (s *Products) Run(p *Pool) error {
	defer s.Reset()
	if s.n == 0 {
		return nil
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	threads := p.Threads()
	s.tab = p.tab
	s.prepare(threads)
	var traffic int64
	for _, j := range s.jobs[:s.n] {
		traffic += int64(len(j.w.Data)) * int64(j.n)
	}
	s.next.Store(0)
	if threads == 1 || traffic < p.serial {
		s.work(0)
		return nil
	}
	return p.Run(s.fn)
}

// sameActivations reports whether jobs a and b convert the same
// activations into the same scratch layout: the same weight type (so the
// same partner format, tile layout and eight-token scales), the same x.
func sameActivations(a, b *job) bool {
	return a.w.Type == b.w.Type && a.n == b.n && len(a.x) == len(b.x) && len(a.x) > 0 && &a.x[0] == &b.x[0]
}

// prepare cuts the arenas into the jobs' activation scratch and lists the
// run's pieces.
func (s *Products) prepare(threads int) {
	jobs := s.jobs[:s.n]
	s.src = growSlice(s.src, len(jobs))
	for i, j := range jobs {
		s.src[i] = int32(i)
		if i > 0 && sameActivations(j, jobs[s.src[i-1]]) {
			s.src[i] = s.src[i-1]
		}
	}
	var nq80, ndx, nprep, nq81, nq8k, nqtq, nqtx, nqts int
	for i, j := range jobs {
		j.qt = j.qtUse(s.tab)
		j.qtSplit = j.qt && s.tab.weights[j.w.Type].qtSplit
		if int(s.src[i]) != i {
			continue // shares an earlier product's scratch
		}
		nv := j.n * j.w.Cols
		switch s.tab.weights[j.w.Type].partner {
		case partnerQ8_0:
			nq80 += nv / quant.QK8_0
			ndx += j.n / 8 * 8 * (j.w.Cols / quant.QK8_0)
			nprep += prepBytes(s.tab, j.w, j.n)
		case partnerQ8_1:
			nq81 += nv / quant.QK8_1
		case partnerQ8K:
			nq8k += nv / quant.QK_K
		}
		if j.qt {
			nqtq += nv
			nqts += nv / 32
		}
		if j.qtSplit {
			nqtx += 2 * nv
		}
	}
	s.q80, s.q80dx, s.q81, s.q8k = growSlice(s.q80, nq80), growSlice(s.q80dx, ndx), growSlice(s.q81, nq81), growSlice(s.q8k, nq8k)
	s.prep = growSlice(s.prep, nprep)
	s.qtq, s.qtx, s.qts = growSlice(s.qtq, nqtq), growSlice(s.qtx, nqtx), growSlice(s.qts, nqts)
	if len(s.res) < threads {
		s.res = make([]partResult, threads)
	}
	if len(s.qtScr) < threads {
		s.qtScr = make([][]byte, threads)
	}
	if len(s.pending) < len(jobs) {
		s.pending = make([]atomic.Int32, len(jobs))
	}
	nq80, ndx, nprep, nq81, nq8k, nqtq, nqtx, nqts = 0, 0, 0, 0, 0, 0, 0, 0
	cut := func(off *int, n int) (int, int) { o := *off; *off += n; return o, o + n }
	s.pieces = s.pieces[:0]
	for i, j := range jobs {
		nv := j.n * j.w.Cols
		j.res = s.res
		shared := int(s.src[i]) != i
		if shared {
			// The earlier product's converted activations (cut above:
			// src points backwards), and no conversion of its own.
			o := jobs[s.src[i]]
			j.xh, j.q80, j.q80dx, j.prep, j.q81, j.q8k, j.qtq, j.qtx, j.qts = o.xh, o.q80, o.q80dx, o.prep, o.q81, o.q8k, o.qtq, o.qtx, o.qts
		} else {
			j.xh, j.q80, j.q80dx, j.prep, j.q81, j.q8k, j.qtq, j.qtx, j.qts = nil, nil, nil, nil, nil, nil, nil, nil, nil
			switch s.tab.weights[j.w.Type].partner {
			case partnerQ8_0:
				a, b := cut(&nq80, nv/quant.QK8_0)
				j.q80 = s.q80[a:b:b]
				a, b = cut(&ndx, j.n/8*8*(j.w.Cols/quant.QK8_0))
				j.q80dx = s.q80dx[a:b:b]
				a, b = cut(&nprep, prepBytes(s.tab, j.w, j.n))
				j.prep = s.prep[a:b:b]
			case partnerQ8_1:
				a, b := cut(&nq81, nv/quant.QK8_1)
				j.q81 = s.q81[a:b:b]
			case partnerQ8K:
				a, b := cut(&nq8k, nv/quant.QK_K)
				j.q8k = s.q8k[a:b:b]
			}
			if j.qt {
				a, b := cut(&nqtq, nv)
				j.qtq = s.qtq[a:b:b]
				a, b = cut(&nqts, nv/32)
				j.qts = s.qts[a:b:b]
			}
			if j.qtSplit {
				a, b := cut(&nqtx, 2*nv)
				j.qtx = s.qtx[a:b:b]
			}
		}
		if j.qt {
			// The goroutines' tile scratch is shared by the jobs and
			// grows here, before any of them runs (the activations'
			// slices are already cut to size).
			j.qtScr = s.qtScr
			j.qtGrow(s.tab, threads)
		}
		if shared {
			s.pending[i].Store(0)
			continue
		}
		// Conversion pieces of about convertMin values.
		per := max(1, convertMin/j.w.Cols)
		k := int32(0)
		for t := 0; t < j.n; t += per {
			s.pieces = append(s.pieces, piece{job: int32(i), lo: int32(t), hi: int32(min(t+per, j.n))})
			k++
		}
		s.pending[i].Store(k)
	}
	s.conv = len(s.pieces)
	for i, j := range jobs {
		// A one-token piece's outputs are whole cache lines (16 rows),
		// so that two goroutines' pieces never write the same line.
		chunk := (max(minPieceRows, onePieceBytes/j.rb) + 15) &^ 15
		if j.n > 1 {
			chunk = j.chunkRows(threads)
		}
		for r := 0; r < j.w.Rows; r += chunk {
			s.pieces = append(s.pieces, piece{job: int32(i), lo: int32(r), hi: int32(min(r+chunk, j.w.Rows))})
		}
	}
}

// work claims and runs pieces until none are left: part is the calling
// goroutine's index in the pool.
func (s *Products) work(part int) {
	for {
		i := int(s.next.Add(1)) - 1
		if i >= len(s.pieces) {
			return
		}
		pc := s.pieces[i]
		j := s.jobs[pc.job]
		lo, hi := int(pc.lo), int(pc.hi)
		if i < s.conv {
			j.convert(s.tab, lo, hi)
			s.pending[pc.job].Add(-1)
			continue
		}
		// Every conversion piece was claimed before this one: wait for
		// the product's to finish (another goroutine is running it).
		for spin, src := 0, s.src[pc.job]; s.pending[src].Load() != 0; spin++ {
			if spin&255 == 255 {
				runtime.Gosched()
			}
		}
		if j.n > 1 {
			j.rows(s.tab, part, lo, hi)
			continue
		}
		rb := j.rb
		if s.tab.weights[j.w.Type].wholePieces() {
			// One call of the row-run dot for the piece, its pages
			// touched first: the kernel's per-call work (the Q8_0
			// partners' activation scales) is paid once a piece, and
			// its own prefetches run ahead within and across the pages.
			prefetch(j.w.Data[lo*rb:hi*rb], prefetchStride)
			j.rows(s.tab, part, lo, hi)
			continue
		}
		step := max(1, prefetchBytes/rb)
		prefetch(j.w.Data[lo*rb:min(lo+step, hi)*rb], prefetchStride)
		for r := lo; r < hi; r += step {
			e := min(r+step, hi)
			if e < hi {
				prefetch(j.w.Data[e*rb:min(e+step, hi)*rb], prefetchStride)
			}
			j.rows(s.tab, part, r, e)
		}
	}
}
