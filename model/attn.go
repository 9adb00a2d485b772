package model

import (
	"math"
	"sync/atomic"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/quant"
)

// Tiled attention over the KV cache (flash-decoding style).
//
// The per-head path (Runner.head) reads a head's whole key and value
// prefix once per query head: with grouped-query attention the query
// heads of one KV head read the same keys and values again, and at a
// depth of thousands of positions that is memory traffic, not
// arithmetic. Here one job takes a block of query rows (the query heads
// of one KV head for a few tokens of one sequence) and walks the keys in
// tiles of attnChunk positions: each key tile and value tile is loaded
// once and used by every row of the block while it sits in L1/L2.
//
// Per row and tile the scores are K·q with q rounded to F16 (as for the
// per-head path and ggml), soft-capped and scaled, soft-maxed within the
// tile (kernels.ExpSubSum against the tile's own maximum, normalised by
// the tile's sum) and rounded to F16 for the weights×values dot products;
// the tile's (max, sum, output) is then folded into the row's running
// (max, sum, output) in tile order (online softmax, foldTile). A row of
// at most attnChunk keys is thereby the per-head path's softmax exactly,
// rounded where ggml rounds it.
//
// Determinism: tiles start at absolute multiples of attnChunk, and a
// row's arithmetic depends only on its position, its window and the
// cache, never on which rows share its job, how many jobs there are or
// which thread runs them. Splitting a row's tiles over several jobs
// (when a step has too few rows to keep the threads busy: one decoding
// token) stores each tile's partial result and folds them afterwards in
// the same tile order with the same fold, so the bits equal the unsplit
// ones: no result changes with the thread count or with how a prompt is
// cut into batches.
//
// Q8_0 keys and values are dequantized one tile at a time (into F16, the
// keys row-major and the values transposed) by the job, once for all its
// rows, and then go through the same F16 dot products.
//
// With gemmGroup or more query heads per KV head a job runs as matrix
// products instead: on a path with column tiles (kernels.ColTile:
// AVX-512) with the query rows along the vector lanes (tileJobCols), which
// reads keys and values as the cache lays them out and needs no
// horizontal sums, otherwise with DotTile's register tiles
// (tileJobGEMM). The form is a property of the model and the kernel path,
// never of the batch.

// attnChunk is how many key positions one tile covers. 256 keys of a
// 128-wide head are 64 KiB of F16 keys and values: they stay in L2 while
// a block's rows use them.
const attnChunk = 256

// gemmGroup is the least number of query heads per KV head for which a
// job runs as two small matrix products (tileJobGEMM: the keys and values
// widened to float32 once per tile for all the rows, the products in the
// blocked product's register tiles) instead of one F16 dot product per
// row and key (tileJob). It is a property of the model, never of the
// batch, so that a row's bits do not depend on the rows beside it; with
// fewer heads per KV head a decoding step has too few rows to fill the
// register tile.
const gemmGroup = 4

// tileRows is about how many query rows one job takes (rounded to whole
// tokens of a KV head's query heads); colRows the same for the column
// form, whose widened key and value tiles are the part of its work that
// does not grow with the rows (at 64 rows they were a fifth of a
// 512-token prompt's attention at depth 4096, read from the last-level
// cache once per job).
const (
	tileRows = 64
	colRows  = 128
)

// jobTokens returns how many tokens of one sequence a job takes with grp
// query heads per KV head, in the column form when cols is set.
func jobTokens(grp int, cols bool) int {
	if cols {
		return max(1, colRows/grp)
	}
	return max(1, tileRows/grp)
}

// partialBudget bounds the float32s the split mode's partial results may
// take (4 MiB); a step that needs more runs unsplit.
const partialBudget = 1 << 20

// tileJob is one block of query rows against a range of key tiles.
type tileJob struct {
	seq    int32 // the sequence
	g      int32 // the KV head
	t0, t1 int32 // its tokens: tiledAttn.tok[t0:t1]
	c0, c1 int32 // its key tiles [c0, c1)
}

// tileScratch is one worker's scratch (no allocation per step).
type tileScratch struct {
	q16  []uint16  // the job's query rows rounded to F16, rows×hd
	m, l []float32 // per row: running maximum and sum
	o    []float32 // per row: running output, rows×hd
	sc   []float32 // one row's scores of one tile
	p16  []uint16  // the same, exponentiated and rounded to F16
	oc   []float32 // one row's output of one tile, hd
	kt   []uint16  // Q8_0 keys of one tile dequantized, attnChunk×hd
	vt   []uint16  // Q8_0 values of one tile dequantized and transposed, hd×attnChunk
	f, t []float32 // dequantization scratch, attnChunk×hd each

	// The matrix-product form (tiledAttn.gemm): queries, keys, transposed
	// values and weights widened to float32, scores and outputs.
	qf, kf, vf, s, of []float32
	ms                []float32 // per row: the tile's maximum and sum
}

// tiledAttn is the Runner's state for the tiled attention of one layer.
type tiledAttn struct {
	tok    []int32 // the batch's indices grouped by sequence, batch order within one
	count  []int32 // per sequence: tokens in the batch (counting sort)
	jobs   []tileJob
	next   atomic.Int64 // the next job to claim
	split  bool         // jobs hold one tile each and store partials
	gemm   bool         // the matrix-product form of a job (tileJobGEMM)
	cols   bool         // the matrix-product form with the rows along the lanes (tileJobCols)
	nChunk int          // tiles per row in part (split mode)
	part   []float32    // split mode: per (token, head, tile): max, sum, output[hd]
	scr    []tileScratch
	runFn  func(w int) // claims jobs (made once: no allocation per layer)
	l      int
	b      Batch
	p      attnParams
}

// newTiledAttn sizes the tiled attention's state for r.
func (r *Runner) newTiledAttn() {
	cfg := r.m.Config
	c := r.c
	hd, grp := cfg.HeadDim, cfg.NHead/cfg.NHeadKV
	rows := jobTokens(grp, grp >= gemmGroup && kernels.HasColTile()) * grp
	at := &r.at
	at.tok = make([]int32, r.maxBatch)
	at.count = make([]int32, c.nSeq)
	at.jobs = make([]tileJob, 0, r.maxBatch*cfg.NHeadKV)
	nChunk := (c.nCtx + attnChunk - 1) / attnChunk
	if need := int64(r.maxBatch) * int64(cfg.NHead) * int64(nChunk) * int64(hd+2); need <= partialBudget {
		at.part = make([]float32, need)
	} else {
		at.part = make([]float32, partialBudget)
	}
	// Split jobs are one per (block, KV head, tile): bounded by the
	// partials' rows times tiles.
	at.jobs = make([]tileJob, 0, max(r.maxBatch*cfg.NHeadKV, len(at.part)/(hd+2)))
	at.scr = make([]tileScratch, max(r.pool.Threads(), 1))
	q8 := c.tk == KVQ8_0 || c.tv == KVQ8_0
	at.gemm = grp >= gemmGroup
	at.cols = at.gemm && kernels.HasColTile()
	for w := range at.scr {
		s := &at.scr[w]
		*s = tileScratch{q16: make([]uint16, rows*hd), m: make([]float32, rows), l: make([]float32, rows),
			sc: make([]float32, attnChunk), p16: make([]uint16, attnChunk), oc: make([]float32, hd)}
		if at.gemm {
			g := newGemmScratch(rows, hd)
			s.qf, s.of, s.ms = make([]float32, g.qf), make([]float32, g.of), make([]float32, g.ms)
			s.s, s.o = make([]float32, g.s), make([]float32, g.o)
			s.kf, s.vf = make([]float32, g.kf), make([]float32, g.vf)
			if c.tv == KVQ8_0 && !at.cols { // dequantQ8_0T's scales
				s.f = make([]float32, attnChunk*hd)
			}
			continue
		}
		s.o = make([]float32, rows*hd)
		if q8 {
			s.kt = make([]uint16, attnChunk*hd)
			s.vt = make([]uint16, attnChunk*hd)
			s.f = make([]float32, attnChunk*hd)
			s.t = make([]float32, attnChunk*hd)
		}
	}
	at.runFn = func(w int) {
		for {
			k := int(at.next.Add(1) - 1)
			if k >= len(at.jobs) {
				return
			}
			if at.cols {
				r.tileJobCols(&at.scr[w], at.jobs[k])
			} else if at.gemm {
				r.tileJobGEMM(&at.scr[w], at.jobs[k])
			} else {
				r.tileJob(&at.scr[w], at.jobs[k])
			}
		}
	}
}

// AttnScratchBytes returns the bytes of attention scratch NewRunner
// makes for a model of configuration cfg over a cache of nCtx positions
// per sequence with keys of type tk and values of type tv, for batches of
// up to maxBatch tokens on threads pool threads: each worker's per-head
// rows and tiles and the tiled path's partial results and jobs (what a
// memory estimate must count beside the activations).
func AttnScratchBytes(cfg Config, tk, tv KVType, nCtx, maxBatch, threads int) float64 {
	maxBatch = min(max(maxBatch, 1), MaxBatch)
	threads = max(threads, 1)
	hd, grp := cfg.HeadDim, max(cfg.NHead/max(cfg.NHeadKV, 1), 1)
	rows := jobTokens(grp, grp >= gemmGroup && kernels.HasColTile()) * grp
	const f32, u16, i32, job = 4, 2, 4, 24 // bytes of a float32, a uint16, an int32 and a tileJob
	nChunk := (nCtx + attnChunk - 1) / attnChunk
	part := min(int64(maxBatch)*int64(cfg.NHead)*int64(nChunk)*int64(hd+2), partialBudget)
	b := float64(part)*f32 + float64(maxBatch*i32) + // partials and the tokens by sequence
		float64(max(maxBatch*cfg.NHeadKV, int(part)/(hd+2))*job) // the jobs
	per := rows*hd*u16 + 2*rows*f32 + attnChunk*(f32+u16) + hd*f32
	switch {
	case grp >= gemmGroup:
		g := newGemmScratch(rows, hd)
		per += (g.qf + g.s + g.of + g.o + g.ms + g.kf + g.vf) * f32
		if tv == KVQ8_0 && !kernels.HasColTile() {
			per += attnChunk * hd * f32
		}
	case tk == KVQ8_0 || tv == KVQ8_0:
		per += 2*attnChunk*hd*u16 + 2*attnChunk*hd*f32 + rows*hd*f32
	default:
		per += rows * hd * f32
	}
	// The per-head path's rows: scores and weights over the context.
	per += nCtx*(f32+u16) + hd*u16
	return b + float64(threads)*float64(per)
}

// gemmScratch is the float32 count of each of the matrix-product form's
// buffers for blocks of rows query rows of head dimension hd, sized for
// both of its layouts: DotTile's (tileJobGEMM: query rows padded to
// TileCols, keys and dimensions to TileRows) and ColTile's (tileJobCols:
// the rows along the lanes, padded to colLd, keys and dimensions to
// ColTileRows). Each count of the second is at least the first's.
type gemmScratch struct {
	qf, s, of, o, ms, kf, vf int
}

// newGemmScratch returns the buffer sizes for rows query rows of head
// dimension hd.
func newGemmScratch(rows, hd int) gemmScratch {
	ld := colLd(rows)
	kr := max(kernels.RoundTile(attnChunk, kernels.TileRows), kernels.RoundTile(attnChunk, kernels.ColTileRows))
	dr := max(kernels.RoundTile(hd, kernels.TileRows), kernels.RoundTile(hd, kernels.ColTileRows))
	return gemmScratch{
		qf: hd * ld,        // queries: transposed, hd rows of ld lanes
		s:  kr * ld,        // scores and weights: a row of lanes per key
		of: dr * ld,        // a tile's outputs: a row of lanes per dimension
		o:  hd * ld,        // running outputs, the same
		ms: 2 * ld,         // per lane: the tile's maximum and sum
		kf: kr * hd,        // keys widened
		vf: dr * attnChunk, // values widened, transposed
	}
}

// colLd returns the lanes a column tile of rows query rows takes: rows
// rounded up to whole vectors.
func colLd(rows int) int { return kernels.RoundTile(rows, kernels.ColTileLanes) }

// useTiled reports whether the layers' attention runs tiled: always for
// Q8_0 caches, never for F32 ones (whose keys and values the per-head
// path reads unrounded), and for F16 caches unless the runner reproduces
// ggml's attention orders (F32 models: the per-head path is ggml's) or a
// test or benchmark asked for the per-head path.
func (r *Runner) useTiled() bool {
	c := r.c
	switch {
	case c.tk == KVQ8_0 || c.tv == KVQ8_0:
		return true
	case c.tk == KVF32 || c.tv == KVF32:
		return false
	}
	return !r.exactAttn && !r.perHead
}

// first returns the first position a query at position p sees.
func (ap attnParams) first(p int) int {
	if ap.window > 0 {
		return max(0, p+1-ap.window)
	}
	return 0
}

// tiledAttention computes the attention of the n batch rows of layer l
// (queries in r.q, keys and values of this step already stored) into
// r.att.
func (r *Runner) tiledAttention(l int, b Batch, n int, ap attnParams) error {
	cfg := r.m.Config
	at := &r.at
	hd, grp := cfg.HeadDim, cfg.NHead/cfg.NHeadKV
	perJob := jobTokens(grp, at.cols)
	// Group the batch's tokens by sequence (a counting sort, stable).
	clear(at.count)
	for i := range n {
		at.count[b.Seq[i]]++
	}
	var sum int32
	for s, k := range at.count {
		at.count[s] = sum
		sum += k
	}
	for i := range n {
		s := b.Seq[i]
		at.tok[at.count[s]] = int32(i)
		at.count[s]++
	}
	// The blocks: runs of up to perJob tokens of one sequence.
	maxN, work := 0, 0
	at.jobs = at.jobs[:0]
	blocks := 0
	for t0 := 0; t0 < n; {
		s := b.Seq[at.tok[t0]]
		t1 := t0 + 1
		for t1 < n && t1-t0 < perJob && b.Seq[at.tok[t1]] == s {
			t1++
		}
		lo, hi := math.MaxInt, 0
		for _, i := range at.tok[t0:t1] {
			p := int(b.Pos[i])
			lo, hi = min(lo, ap.first(p)), max(hi, p+1)
			work += (p + 1 - ap.first(p)) * cfg.NHead * hd * 2
		}
		maxN = max(maxN, hi)
		for g := range cfg.NHeadKV {
			at.jobs = append(at.jobs, tileJob{seq: s, g: int32(g), t0: int32(t0), t1: int32(t1),
				c0: int32(lo / attnChunk), c1: int32((hi + attnChunk - 1) / attnChunk)})
		}
		blocks++
		t0 = t1
	}
	threads := len(at.scr)
	if work < r.attnMin {
		threads = 1
	}
	// Too few jobs for the threads: one job per tile instead, when the
	// partials fit (the results are the same bits either way).
	at.nChunk = (maxN + attnChunk - 1) / attnChunk
	at.split = false
	if threads > 1 && len(at.jobs) < 4*threads && at.nChunk > 1 {
		need := n * cfg.NHead * at.nChunk * (hd + 2)
		nj := 0
		for _, j := range at.jobs {
			nj += int(j.c1 - j.c0)
		}
		if need <= len(at.part) && nj <= cap(at.jobs) {
			at.split = true
			k := len(at.jobs)
			at.jobs = at.jobs[:nj]
			// Expand in place from the back (each job into its tiles).
			for src, dst := k-1, nj; src >= 0; src-- {
				j := at.jobs[src]
				for c := j.c1 - 1; c >= j.c0; c-- {
					dst--
					at.jobs[dst] = tileJob{seq: j.seq, g: j.g, t0: j.t0, t1: j.t1, c0: c, c1: c + 1}
				}
			}
		}
	}
	at.l, at.b, at.p = l, b, ap
	defer func() { at.b = Batch{} }()
	at.next.Store(0)
	if threads == 1 {
		at.runFn(0)
	} else if err := r.pool.Run(at.runFn); err != nil {
		return err
	}
	if !at.split {
		return nil
	}
	// The fold is a few multiply-adds per tile and output: on the caller,
	// without a second start of the pool.
	for row := range n * cfg.NHead {
		r.reduceRow(row)
	}
	return nil
}

// expf32 is e^x for the fold's rescaling factors.
func expf32(x float32) float32 { return float32(math.Exp(float64(x))) }

// foldTile folds one tile's (m, l, o) into a row's running (M, L, O):
// m is the tile's largest score, l the sum of its exponentials against m
// and o its output with the weights normalised by l (so that they are
// rounded to F16 as ggml rounds a softmax's, and a row of one tile is
// exactly the softmax of the per-head path); O stays a normalised
// average. The products are rounded before they are added so that no
// platform fuses them (Go does on arm64): the bits must not depend on the
// CPU.
func foldTile(M, L *float32, O []float32, m, l float32, o []float32) {
	if math.IsInf(float64(*M), -1) {
		*M, *L = m, l
		copy(O, o)
		return
	}
	nm := max(*M, m)
	a, b := float32(*L*expf32(*M-nm)), float32(l*expf32(m-nm))
	sum := a + b
	a, b = a/sum, b/sum
	O = O[:len(o)]
	for d, v := range o {
		O[d] = float32(O[d]*a) + float32(v*b)
	}
	*M, *L = nm, sum
}

// tileJob runs one job with worker scratch ws.
func (r *Runner) tileJob(ws *tileScratch, j tileJob) {
	cfg := r.m.Config
	c, at := r.c, &r.at
	hd, qd, grp := cfg.HeadDim, cfg.QDim(), cfg.NHead/cfg.NHeadKV
	l, b, ap := at.l, at.b, at.p
	s, g := int(j.seq), int(j.g)
	toks := at.tok[j.t0:j.t1]
	rows := len(toks) * grp
	for ti, i := range toks {
		for hh := range grp {
			ri, h := ti*grp+hh, g*grp+hh
			kernels.F32ToF16Row(ws.q16[ri*hd:(ri+1)*hd], r.q[int(i)*qd+h*hd:int(i)*qd+(h+1)*hd])
		}
	}
	if !at.split {
		for ri := range rows {
			ws.m[ri], ws.l[ri] = float32(math.Inf(-1)), 0
		}
	}
	uLo, uHi := math.MaxInt, 0
	for _, i := range toks {
		p := int(b.Pos[i])
		uLo, uHi = min(uLo, ap.first(p)), max(uHi, p+1)
	}
	oc := ws.oc[:hd]
	for ch := int(j.c0); ch < int(j.c1); ch++ {
		cs, ce := ch*attnChunk, (ch+1)*attnChunk
		ua, ub := max(cs, uLo), min(ce, uHi)
		if ua >= ub {
			continue
		}
		if c.tk == KVQ8_0 {
			o := c.keyOff(l, s, g, ua)
			f := ws.f[:(ub-ua)*hd]
			quant.DequantizeQ8_0(c.kq[o:o+(ub-ua)*c.kRow], f)
			kernels.F32ToF16Row(ws.kt[:len(f)], f)
		}
		if c.tv == KVQ8_0 {
			o := c.valRowOff(l, s, g, ua)
			// Transposed with a row stride of attnChunk, converted at once.
			t := ws.t[:hd*attnChunk]
			dequantQ8_0T(t, attnChunk, c.vq[o:o+(ub-ua)*c.vRow], ub-ua, hd, ws.f)
			kernels.F32ToF16Row(ws.vt[:hd*attnChunk], t)
		}
		for ti, i := range toks {
			p := int(b.Pos[i])
			a, e := max(cs, ap.first(p)), min(ce, p+1)
			if a >= e {
				continue
			}
			for hh := range grp {
				ri := ti*grp + hh
				sc := ws.sc[:e-a]
				q16 := ws.q16[ri*hd : (ri+1)*hd]
				if c.tk == KVQ8_0 {
					kernels.DotF16Rows(sc, ws.kt[(a-ua)*hd:], hd, q16)
				} else {
					kernels.DotF16Rows(sc, c.k16[c.keyOff(l, s, g, a):], hd, q16)
				}
				mx, sum := ap.softmax(sc)
				p16 := ws.p16[:e-a]
				kernels.F32ToF16Row(p16, sc)
				if c.tv == KVQ8_0 {
					kernels.DotF16Rows(oc, ws.vt[a-ua:], attnChunk, p16)
				} else {
					kernels.DotF16Rows(oc, c.v16[c.valOff(l, s, g*hd)+a:], c.nCtx, p16)
				}
				if at.split {
					h := g*grp + hh
					pt := at.part[((int(i)*cfg.NHead+h)*at.nChunk+ch)*(hd+2):][:hd+2]
					pt[0], pt[1] = mx, sum
					copy(pt[2:], oc)
				} else {
					foldTile(&ws.m[ri], &ws.l[ri], ws.o[ri*hd:(ri+1)*hd], mx, sum, oc)
				}
			}
		}
	}
	if at.split {
		return
	}
	r.tileOut(ws, toks, g)
}

// tileOut copies the finished rows of a job (tokens toks, KV head g) to
// r.att, folding in the sink logit of each query head when the layer has
// them.
func (r *Runner) tileOut(ws *tileScratch, toks []int32, g int) {
	cfg := r.m.Config
	hd, qd, grp := cfg.HeadDim, cfg.QDim(), cfg.NHead/cfg.NHeadKV
	sinks := r.at.p.sinks
	for ti, i := range toks {
		for hh := range grp {
			ri, h := ti*grp+hh, g*grp+hh
			dst := r.att[int(i)*qd+h*hd : int(i)*qd+(h+1)*hd]
			copy(dst, ws.o[ri*hd:(ri+1)*hd])
			if sinks != nil {
				kernels.Scale(dst, sinkScale(ws.m[ri], ws.l[ri], sinks[h]))
			}
		}
	}
}

// sinkScale is the factor that folds a sink logit into an attention row
// whose scores have largest value M and exponential sum L (against M):
// the row's weights divided by the sum with e^sink added, as ggml's
// soft_max with sinks normalises them. The product is rounded before the
// addition so that no platform fuses the two.
func sinkScale(M, L, sink float32) float32 {
	nm := max(M, sink)
	a := float32(L * expf32(M-nm))
	return a / (a + expf32(sink-nm))
}

// softmaxSink is the softmax of one row of scores with a sink logit that
// joins the denominator, as ggml's soft_max with sinks: the exponentials
// against the larger of the row's maximum and the sink, divided by their
// sum plus e^(sink-max).
func softmaxSink(x []float32, sink float32) {
	mx := max(maxOf(x), sink)
	s := kernels.ExpSubSum(x, mx) + float64(expf32(sink-mx))
	kernels.Scale(x, float32(1/s))
}

// softmax soft-caps and scales one row's scores of one tile and turns
// them into its softmax in place, as the per-head path (kernels.Softmax)
// does; it returns the largest score and the exponentials' sum.
func (ap attnParams) softmax(sc []float32) (mx, sum float32) {
	if ap.softcap != 0 {
		kernels.Softcap(sc, ap.softcap)
	}
	if ap.scale != 1 {
		kernels.Scale(sc, ap.scale)
	}
	mx = maxOf(sc)
	s := kernels.ExpSubSum(sc, mx)
	kernels.Scale(sc, float32(1/s))
	return mx, float32(s)
}

// tileJobGEMM runs one job as tileJob does, with the products as small
// matrix products (kernels.DotTile): per tile the keys are widened (or
// dequantized) to float32 once and multiplied by all the job's query rows
// (rounded to F16, as ggml rounds them, then scaled), and the transposed
// values by all the rows' weights. The weights stay in float32 and
// unnormalised (the tile's output is divided by their sum instead): two
// passes over a row's scores (maximum, exponentials) besides the
// products. Scores, weights and values are indexed from the tile's first
// position, with zero weights before a row's window and after its last
// key, so that a row's summation lanes do not depend on the other rows.
func (r *Runner) tileJobGEMM(ws *tileScratch, j tileJob) {
	cfg := r.m.Config
	c, at := r.c, &r.at
	hd, qd, grp := cfg.HeadDim, cfg.QDim(), cfg.NHead/cfg.NHeadKV
	const C = attnChunk
	l, b, ap := at.l, at.b, at.p
	s, g := int(j.seq), int(j.g)
	toks := at.tok[j.t0:j.t1]
	rows := len(toks) * grp
	// Without a soft cap the scale goes into the queries, once per job.
	preScale := ap.softcap == 0 && ap.scale != 1
	for ti, i := range toks {
		for hh := range grp {
			ri, h := ti*grp+hh, g*grp+hh
			q16 := ws.q16[ri*hd : (ri+1)*hd]
			kernels.F32ToF16Row(q16, r.q[int(i)*qd+h*hd:int(i)*qd+(h+1)*hd])
			qf := ws.qf[ri*hd : (ri+1)*hd]
			kernels.F16ToF32Row(qf, q16)
			if preScale {
				kernels.Scale(qf, ap.scale)
			}
		}
	}
	rowAp := ap
	if preScale {
		rowAp.scale = 1
	}
	if !at.split {
		for ri := range rows {
			ws.m[ri], ws.l[ri] = float32(math.Inf(-1)), 0
		}
	}
	uLo, uHi := math.MaxInt, 0
	for _, i := range toks {
		p := int(b.Pos[i])
		uLo, uHi = min(uLo, ap.first(p)), max(uHi, p+1)
	}
	for ch := int(j.c0); ch < int(j.c1); ch++ {
		cs, ce := ch*C, (ch+1)*C
		ua, ub := max(cs, uLo), min(ce, uHi)
		if ua >= ub {
			continue
		}
		nk, kv := ub-ua, ub-cs
		// Scores: s[row*C + key-cs].
		kf := ws.kf[:nk*hd]
		if o := c.keyOff(l, s, g, ua); c.tk == KVQ8_0 {
			quant.DequantizeQ8_0(c.kq[o:o+nk*c.kRow], kf)
		} else {
			kernels.F16ToF32Row(kf, c.k16[o:o+nk*hd])
		}
		kernels.DotTile(ws.s[ua-cs:], C, ws.kf, hd, nk, ws.qf, hd, rows, hd)
		// Values transposed: vf[d*C + pos-cs].
		if c.tv == KVQ8_0 {
			o := c.valRowOff(l, s, g, cs)
			dequantQ8_0T(ws.vf, C, c.vq[o:o+kv*c.vRow], kv, hd, ws.f)
		} else {
			for d := range hd {
				o := c.valOff(l, s, g*hd+d) + cs
				kernels.F16ToF32Row(ws.vf[d*C:d*C+kv], c.v16[o:o+kv])
			}
		}
		// Weights, in place of the scores.
		for ti, i := range toks {
			p := int(b.Pos[i])
			a, e := max(cs, ap.first(p)), min(ce, p+1)
			if a >= e {
				continue // the rows' outputs are computed and dropped
			}
			for hh := range grp {
				ri := ti*grp + hh
				row := ws.s[ri*C : ri*C+kv]
				mx, sum := rowAp.weights(row[a-cs : e-cs])
				clear(row[:a-cs])
				clear(row[e-cs:])
				ws.ms[2*ri], ws.ms[2*ri+1] = mx, sum
			}
		}
		kernels.DotTile(ws.of, hd, ws.vf, C, hd, ws.s, C, rows, kv)
		for ti, i := range toks {
			p := int(b.Pos[i])
			if max(cs, ap.first(p)) >= min(ce, p+1) {
				continue
			}
			for hh := range grp {
				ri := ti*grp + hh
				mx, sum := ws.ms[2*ri], ws.ms[2*ri+1]
				oc := ws.of[ri*hd : (ri+1)*hd]
				kernels.Scale(oc, 1/sum)
				if at.split {
					h := g*grp + hh
					pt := at.part[((int(i)*cfg.NHead+h)*at.nChunk+ch)*(hd+2):][:hd+2]
					pt[0], pt[1] = mx, sum
					copy(pt[2:], oc)
				} else {
					foldTile(&ws.m[ri], &ws.l[ri], ws.o[ri*hd:(ri+1)*hd], mx, sum, oc)
				}
			}
		}
	}
	if at.split {
		return
	}
	r.tileOut(ws, toks, g)
}

// tileJobCols runs one job as tileJobGEMM does, with the query rows along
// the vector lanes (kernels.ColTile, kernels.SoftmaxCols): the queries
// are transposed once per job (rounded to F16 as ggml rounds them, then
// scaled), and per tile the scores are S[key][row] = Σ_d K[key][d]·Qᵀ[d][row]
// with the keys widened (or dequantized) to float32 as they lie in the
// cache, and the outputs O[d][row] = Σ_key Vᵀ[d][key]·P[key][row] with
// the values widened as the cache keeps them, transposed. The keys outside
// a row's window or past its position get -Inf scores, so weight 0; the
// sums run over the tile's keys in order from the job's first, and the
// leading and trailing zero weights leave a row's sums unchanged: its bits
// depend neither on the rows beside it nor on the job. The softmax is per
// lane (unnormalised weights, the tile's maximum and sum), and foldCoef
// folds each tile into the row's running (maximum, sum, output) in tile
// order, here and in the split mode's reduceRow alike.
func (r *Runner) tileJobCols(ws *tileScratch, j tileJob) {
	cfg := r.m.Config
	c, at := r.c, &r.at
	hd, qd, grp := cfg.HeadDim, cfg.QDim(), cfg.NHead/cfg.NHeadKV
	const C = attnChunk
	l, b, ap := at.l, at.b, at.p
	s, g := int(j.seq), int(j.g)
	toks := at.tok[j.t0:j.t1]
	rows := len(toks) * grp
	ld := colLd(rows)
	// Without a soft cap the scale goes into the queries, once per job.
	preScale := ap.softcap == 0 && ap.scale != 1
	qt := ws.qf[:hd*ld]
	for ti, i := range toks {
		for hh := range grp {
			ri, h := ti*grp+hh, g*grp+hh
			q16, qf := ws.q16[:hd], ws.oc[:hd]
			kernels.F32ToF16Row(q16, r.q[int(i)*qd+h*hd:int(i)*qd+(h+1)*hd])
			kernels.F16ToF32Row(qf, q16)
			if preScale {
				kernels.Scale(qf, ap.scale)
			}
			for d, v := range qf {
				qt[d*ld+ri] = v
			}
		}
	}
	for d := range hd {
		clear(qt[d*ld+rows : (d+1)*ld])
	}
	if !at.split {
		for ri := range rows {
			ws.m[ri], ws.l[ri] = float32(math.Inf(-1)), 0
		}
		clear(ws.o[:hd*ld])
	}
	uLo, uHi := math.MaxInt, 0
	for _, i := range toks {
		p := int(b.Pos[i])
		uLo, uHi = min(uLo, ap.first(p)), max(uHi, p+1)
	}
	inf := float32(math.Inf(-1))
	mx, sum := ws.ms[:ld], ws.ms[ld:2*ld]
	for ch := int(j.c0); ch < int(j.c1); ch++ {
		cs, ce := ch*C, (ch+1)*C
		ua, ub := max(cs, uLo), min(ce, uHi)
		if ua >= ub {
			continue
		}
		nk := ub - ua
		// Scores: ws.s[(key-ua)*ld + row].
		if o := c.keyOff(l, s, g, ua); c.tk == KVQ8_0 {
			kernels.WidenQ8_0(ws.kf[:nk*hd], c.kq[o:o+nk*c.kRow])
		} else {
			kernels.F16ToF32Row(ws.kf[:nk*hd], c.k16[o:o+nk*hd])
		}
		kernels.ColTile(ws.s, ld, ws.kf, hd, 1, nk, qt, ld, ld, hd)
		if !preScale && (ap.softcap != 0 || ap.scale != 1) {
			for k := range nk {
				row := ws.s[k*ld : k*ld+ld]
				if ap.softcap != 0 {
					kernels.Softcap(row, ap.softcap)
				}
				if ap.scale != 1 {
					kernels.Scale(row, ap.scale)
				}
			}
		}
		// The keys each token does not see, masked (after the soft cap,
		// which would turn -Inf into -cap).
		for ti, i := range toks {
			p := int(b.Pos[i])
			a, e := max(cs, ap.first(p)), min(ce, p+1)
			if a >= e {
				continue // the token sees no key here: its lanes are dropped
			}
			for k := ua; k < a; k++ {
				row := ws.s[(k-ua)*ld+ti*grp:][:grp]
				for x := range row {
					row[x] = inf
				}
			}
			for k := e; k < ub; k++ {
				row := ws.s[(k-ua)*ld+ti*grp:][:grp]
				for x := range row {
					row[x] = inf
				}
			}
		}
		kernels.SoftmaxCols(ws.s, ld, nk, ld, mx, sum)
		// Values: F16 ones as the cache keeps them, transposed
		// (ws.vf[d*C + key-ua]); Q8_0 ones by position (ws.vf[(key-ua)*hd
		// + d]), read transposed by the product.
		if c.tv == KVQ8_0 {
			o := c.valRowOff(l, s, g, ua)
			kernels.WidenQ8_0(ws.vf[:nk*hd], c.vq[o:o+nk*c.vRow])
			kernels.ColTile(ws.of, ld, ws.vf, 1, hd, hd, ws.s, ld, ld, nk)
		} else {
			for d := range hd {
				o := c.valOff(l, s, g*hd+d) + ua
				kernels.F16ToF32Row(ws.vf[d*C:d*C+nk], c.v16[o:o+nk])
			}
			kernels.ColTile(ws.of, ld, ws.vf, C, 1, hd, ws.s, ld, ld, nk)
		}
		if at.split {
			for ti, i := range toks {
				p := int(b.Pos[i])
				if max(cs, ap.first(p)) >= min(ce, p+1) {
					continue
				}
				for hh := range grp {
					ri, h := ti*grp+hh, g*grp+hh
					pt := at.part[((int(i)*cfg.NHead+h)*at.nChunk+ch)*(hd+2):][:hd+2]
					pt[0], pt[1] = mx[ri], sum[ri]
					for d := range hd {
						pt[2+d] = ws.of[d*ld+ri]
					}
				}
			}
			continue
		}
		// The fold's factors replace the tile's maxima and sums.
		all := true
		for ti, i := range toks {
			p := int(b.Pos[i])
			if max(cs, ap.first(p)) >= min(ce, p+1) {
				all = false
				continue
			}
			for ri := ti * grp; ri < (ti+1)*grp; ri++ {
				mx[ri], sum[ri], ws.m[ri], ws.l[ri] = foldCoef(ws.m[ri], ws.l[ri], mx[ri], sum[ri])
			}
		}
		if all {
			// Every lane at once (the padding lanes' outputs are dropped).
			kernels.FoldCols(ws.o, ld, ws.of, ld, hd, mx, sum)
			continue
		}
		for d := range hd {
			o, u := ws.o[d*ld:d*ld+rows], ws.of[d*ld:d*ld+rows]
			for ti, i := range toks {
				p := int(b.Pos[i])
				if max(cs, ap.first(p)) >= min(ce, p+1) {
					continue
				}
				for ri := ti * grp; ri < (ti+1)*grp; ri++ {
					o[ri] = float32(o[ri]*mx[ri]) + float32(u[ri]*sum[ri])
				}
			}
		}
	}
	if at.split {
		return
	}
	sinks := ap.sinks
	for ti, i := range toks {
		for hh := range grp {
			ri, h := ti*grp+hh, g*grp+hh
			dst := r.att[int(i)*qd+h*hd : int(i)*qd+(h+1)*hd]
			for d := range dst {
				dst[d] = ws.o[d*ld+ri]
			}
			if sinks != nil {
				kernels.Scale(dst, sinkScale(ws.m[ri], ws.l[ri], sinks[h]))
			}
		}
	}
}

// foldCoef returns the factors a and b that fold a tile's scores of
// largest value m and exponential sum l (against m), with unnormalised
// output u, into a row's running output O (normalised, zero before the
// first tile), maximum M (-Inf before it) and sum L (0) as O·a + u·b,
// and the new maximum and sum. The first tile gives a = 0 and b = 1/l.
// Of the two rescaling factors one is e^0 = 1: one exponential per row
// and tile. The products are rounded before they are added so that no
// platform fuses them.
func foldCoef(M, L, m, l float32) (a, b, nm, sum float32) {
	ea, eb := float32(1), float32(1)
	if m > M {
		nm, ea = m, expf32(M-m)
	} else {
		nm, eb = M, expf32(m-M)
	}
	a = float32(L * ea)
	sum = a + float32(l*eb)
	return a / sum, eb / sum, nm, sum
}

// dequantQ8_0T dequantizes n rows of Q8_0 blocks (hd values each, rows
// of hd/32 blocks in src) into dst transposed: value d of row j at
// dst[d*ld+j]. The writes run along dst's rows; the reads stride over
// src's rows, which sit in the first-level cache. scales needs
// n*hd/32 values.
func dequantQ8_0T(dst []float32, ld int, src []byte, n, hd int, scales []float32) {
	nb := hd / quant.QK8_0
	rb := nb * quant.BlockQ8_0Bytes
	src = src[:n*rb]
	sc := scales[:nb*n]
	for j := range n {
		for b := range nb {
			o := j*rb + b*quant.BlockQ8_0Bytes
			sc[b*n+j] = quant.F16ToF32(uint16(src[o]) | uint16(src[o+1])<<8)
		}
	}
	for d := range hd {
		b := d / quant.QK8_0
		off := b*quant.BlockQ8_0Bytes + 2 + d%quant.QK8_0
		row := dst[d*ld : d*ld+n]
		bs := sc[b*n : b*n+n]
		for j := range row {
			row[j] = float32(int8(src[j*rb+off])) * bs[j]
		}
	}
}

// weights soft-caps and scales one row's scores of one tile and replaces
// them by their exponentials against the largest, unnormalised; it
// returns the largest score and the exponentials' sum.
func (ap attnParams) weights(sc []float32) (mx, sum float32) {
	if ap.softcap != 0 {
		kernels.Softcap(sc, ap.softcap)
	}
	if ap.scale != 1 {
		kernels.Scale(sc, ap.scale)
	}
	mx = maxOf(sc)
	return mx, float32(kernels.ExpSubSum(sc, mx))
}

// maxOf returns the largest value of x (not empty), in four independent
// chains: the comparisons of one chain need not wait for the others.
func maxOf(x []float32) float32 {
	m0 := x[0]
	m1, m2, m3 := m0, m0, m0
	i := 0
	for ; i+4 <= len(x); i += 4 {
		if v := x[i]; v > m0 {
			m0 = v
		}
		if v := x[i+1]; v > m1 {
			m1 = v
		}
		if v := x[i+2]; v > m2 {
			m2 = v
		}
		if v := x[i+3]; v > m3 {
			m3 = v
		}
	}
	for ; i < len(x); i++ {
		if x[i] > m0 {
			m0 = x[i]
		}
	}
	return max(m0, m1, m2, m3)
}

// reduceRow folds the split mode's partial results of row (token i, head
// h) = (row/NHead, row%NHead) in tile order and writes its output.
func (r *Runner) reduceRow(row int) {
	cfg := r.m.Config
	at := &r.at
	hd, qd := cfg.HeadDim, cfg.QDim()
	i, h := row/cfg.NHead, row%cfg.NHead
	p := int(at.b.Pos[i])
	M, L := float32(math.Inf(-1)), float32(0)
	out := r.att[i*qd+h*hd : i*qd+(h+1)*hd]
	if at.cols {
		clear(out)
	}
	for ch := at.p.first(p) / attnChunk; ch*attnChunk <= p; ch++ {
		pt := at.part[(row*at.nChunk+ch)*(hd+2):][:hd+2]
		if !at.cols {
			foldTile(&M, &L, out, pt[0], pt[1], pt[2:])
			continue
		}
		var a, b float32
		a, b, M, L = foldCoef(M, L, pt[0], pt[1])
		for d, u := range pt[2:] {
			out[d] = float32(out[d]*a) + float32(u*b)
		}
	}
	if at.p.sinks != nil {
		kernels.Scale(out, sinkScale(M, L, at.p.sinks[h]))
	}
}
