package model

import (
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/kernels"
)

// MaxBatch bounds the tokens one Decode call may carry.
const MaxBatch = 1 << 14

// Batch is one step of work: token i is Tokens[i] at position Pos[i] of
// sequence Seq[i]. Within a sequence the positions must continue the
// cache without gaps (the first is the sequence's current Len, the next
// one more, and so on; entries of different sequences may interleave).
// Logits[i] asks for the output row of token i; a nil Logits asks for the
// last token's only.
type Batch struct {
	Tokens []int32
	Pos    []int32
	Seq    []int32
	Logits []bool
}

// Runner evaluates batches of a Model against a Cache. It owns all the
// scratch a step needs, sized for maxBatch tokens at construction (the
// logits buffer grows to the largest number of rows ever asked for), so a
// step allocates nothing. A Runner is not safe for concurrent use.
type Runner struct {
	m        *Model
	c        *Cache
	ar       arith
	arith    Arithmetic // what ar was made for
	maxBatch int
	group    []int32 // per batch row: rows of its sequence in the current product
	llama    bool    // llama.cpp's batch-size-dependent summation orders
	seqN     []int32 // per sequence: a counter for group

	x, xn, q, k, v, att, proj []float32
	gate, up                  []float32   // ffnRows(maxBatch) rows each (ffnSpan)
	ffnChunk                  int         // the constant ffnChunk (tests raise it to compare)
	qkv, gateUp               []float32   // fused projections' outputs (phi3), else nil
	moe                       *moeScratch // the experts' scratch (moe.go), else nil

	pool    *kernels.Pool
	heads   []headScratch // one per attention worker (the pool's threads)
	attnMin int           // least multiply-adds worth spreading over workers
	attnL   int           // the layer the attention workers are on
	attnB   Batch         // the batch the attention workers are on
	attnP   attnParams    // the scores' scale, soft cap and window of layer attnL
	attnNW  int           // how many workers share the heads
	attnFn  func(w int)   // runs worker w's heads on the pool (made once: no allocation per layer)
	at      tiledAttn     // the tiled attention's state (attn.go)
	next    []int         // per sequence: the next position a batch may write
	outIdx  []int         // batch indices whose logits are wanted
	logits  []float32
	rows    [][]float32

	// exactAttn is set when the arithmetic reproduces ggml's attention
	// orders (the per-head path); perHead forces the per-head path on
	// F16 caches (tests and benchmarks compare the two).
	exactAttn, perHead bool
}

// headScratch is what one attention worker computes a head with.
type headScratch struct {
	scores []float32 // attention weights of one head, nCtx
	q16    []uint16  // one query head rounded to F16
	p16    []uint16  // attention weights rounded to F16, nCtx
}

// attnParallelMin is the attention work (multiply-adds of one layer)
// below which a step's heads run on the calling goroutine: starting the
// workers costs more than such a step.
const attnParallelMin = 1 << 16

// NewRunner returns a Runner for batches of up to maxBatch tokens (at
// least 1, at most MaxBatch) of model m over cache c, splitting matrix
// products across pool.
func NewRunner(m *Model, c *Cache, pool *kernels.Pool, maxBatch int) *Runner {
	maxBatch = min(max(maxBatch, 1), MaxBatch)
	cfg := m.Config
	f := func(w int) []float32 { return make([]float32, maxBatch*w) }
	r := &Runner{
		m: m, c: c, ar: ggmlArith(pool, ArithAuto.exact(m)), maxBatch: maxBatch,
		group: make([]int32, maxBatch), seqN: make([]int32, c.nSeq),
		x: f(cfg.NEmbd), xn: f(cfg.NEmbd), proj: f(cfg.NEmbd),
		q: f(cfg.QDim()), att: f(cfg.QDim()), k: f(cfg.KVDim()), v: f(cfg.KVDim()),
		gate: make([]float32, ffnRows(maxBatch)*cfg.NFF), up: make([]float32, ffnRows(maxBatch)*cfg.NFF), ffnChunk: ffnChunk,
		pool:    pool,
		heads:   make([]headScratch, max(pool.Threads(), 1)),
		attnMin: attnParallelMin,
		next:    make([]int, c.nSeq),
		outIdx:  make([]int, 0, maxBatch),
		rows:    make([][]float32, 0, maxBatch),
	}
	if m.Layers[0].QKV.Rows > 0 {
		r.qkv = f(cfg.QDim() + 2*cfg.KVDim())
	}
	if m.Layers[0].GateUp.Rows > 0 {
		r.gateUp = make([]float32, ffnRows(maxBatch)*2*cfg.NFF)
	}
	r.moe = newMoEScratch(m, maxBatch)
	r.attnFn = func(w int) {
		if w < r.attnNW {
			r.headsPart(w, r.attnNW)
		}
	}
	r.exactAttn = ArithAuto.exact(m)
	r.newTiledAttn()
	for w := range r.heads {
		r.heads[w] = headScratch{scores: make([]float32, c.nCtx), q16: make([]uint16, cfg.HeadDim), p16: make([]uint16, c.nCtx)}
	}
	return r
}

// SetLlamaOrder chooses between two summation orders for F32 matrix
// products and the attention weights×values product. Off (the default),
// every token is summed in ggml's one-token order whatever batch it comes
// in, so a sequence's logits are bit for bit the same however its tokens
// are split into batches and whatever else shares them (what a serving
// engine needs for reproducible answers and prefix reuse). On, a sequence
// with two or more tokens in a batch is summed in ggml's batched order
// (llamafile's tinyBLAS), as llama.cpp does, which reproduces llama.cpp's
// logits of F32 models to float32 ulps (`lisa run`, reference tests), at
// the price of logits that depend on how a prompt is split into batches.
// Results stay independent of the other sequences in a batch either way
// for float, Q4_K and Q6_K weights (Q4_K_M and Q6_K files; the tests pin
// it). For the other quantized types the assembly paths' multi-token
// kernels (the prompt tile of the 32-value block types, the eight-token
// dots of Q3_K, Q5_K and IQ4_XS on avx512) may sum in another order than
// the one-token dot, so a token decoded alone and the same token beside
// another sequence's can differ in float rounding (kernels/doc.go).
func (r *Runner) SetLlamaOrder(on bool) { r.llama = on }

// SetArithmetic chooses the summation orders of the attention dot
// products, softmax and SiLU (ArithAuto, the default, unless told).
func (r *Runner) SetArithmetic(a Arithmetic) {
	r.ar = ggmlArith(r.pool, a.exact(r.m))
	r.arith = a
	r.exactAttn = a.exact(r.m)
}

// Arithmetic returns the summation orders in use.
func (r *Runner) Arithmetic() Arithmetic { return r.arith }

// MaxBatch returns the most tokens one Decode call may carry.
func (r *Runner) MaxBatch() int { return r.maxBatch }

// check validates b against the model and cache and fills r.outIdx.
func (r *Runner) check(b Batch) error {
	cfg := r.m.Config
	if r.c.width != cfg.KVDim() || r.c.nLayer != cfg.NLayer {
		return &BatchError{Field: "cache", Index: -1, Reason: fmt.Sprintf("cache of %d layers × %d values does not fit the model's %d × %d", r.c.nLayer, r.c.width, cfg.NLayer, cfg.KVDim())}
	}
	n := len(b.Tokens)
	if n == 0 || n > r.maxBatch {
		return &BatchError{Field: "Tokens", Index: -1, Reason: fmt.Sprintf("%d tokens, want 1 to %d", n, r.maxBatch)}
	}
	if len(b.Pos) != n || len(b.Seq) != n || (b.Logits != nil && len(b.Logits) != n) {
		return &BatchError{Field: "Pos", Index: -1, Reason: fmt.Sprintf("lengths %d/%d/%d differ from %d tokens", len(b.Pos), len(b.Seq), len(b.Logits), n)}
	}
	copy(r.next, r.c.lens)
	for i, t := range b.Tokens {
		if t < 0 || int(t) >= r.m.Config.NVocab {
			return &BatchError{Field: "Tokens", Index: i, Reason: fmt.Sprintf("token %d outside the vocabulary of %d", t, r.m.Config.NVocab)}
		}
		s := int(b.Seq[i])
		if s < 0 || s >= r.c.nSeq {
			return &BatchError{Field: "Seq", Index: i, Reason: fmt.Sprintf("sequence %d of %d", s, r.c.nSeq)}
		}
		p := int(b.Pos[i])
		if p != r.next[s] {
			return &BatchError{Field: "Pos", Index: i, Reason: fmt.Sprintf("position %d, sequence %d continues at %d", p, s, r.next[s])}
		}
		if p >= r.c.nCtx {
			return &BatchError{Field: "Pos", Index: i, Reason: fmt.Sprintf("position %d beyond the cache's %d positions", p, r.c.nCtx)}
		}
		r.next[s]++
	}
	r.outIdx = r.outIdx[:0]
	for i := range n {
		if (b.Logits == nil && i == n-1) || (b.Logits != nil && b.Logits[i]) {
			r.outIdx = append(r.outIdx, i)
		}
	}
	return nil
}

// Decode evaluates the batch: it stores every token's keys and values in
// the cache, advances each sequence's length, and returns the logits rows
// (NVocab values each) of the tokens b.Logits selects, in batch order. The
// rows belong to the Runner and are valid until its next Decode. A batch
// that does not fit returns a *BatchError and changes nothing.
func (r *Runner) Decode(b Batch) ([][]float32, error) {
	if err := r.forward(b); err != nil {
		return nil, err
	}
	return r.output()
}

// Hidden evaluates the batch as Decode does but stops before the output
// matrix: it returns the final hidden states after the output norm
// (NEmbd values each) of the tokens b.Logits selects, in batch order, what
// an embedding pools. The rows belong to the Runner and are valid until
// its next Decode or Hidden.
func (r *Runner) Hidden(b Batch) ([][]float32, error) {
	if err := r.forward(b); err != nil {
		return nil, err
	}
	e := r.m.Config.NEmbd
	n := r.normed()
	r.rows = r.rows[:0]
	for i := range n {
		r.rows = append(r.rows, r.xn[i*e:(i+1)*e:(i+1)*e])
	}
	return r.rows, nil
}

// forward runs the blocks of Decode and Hidden: the wanted rows' final
// residuals end in r.x, compacted in r.outIdx's order.
func (r *Runner) forward(b Batch) error {
	if err := r.check(b); err != nil {
		return err
	}
	cfg := r.m.Config
	n := len(b.Tokens)
	r.groups(b, nil)
	for i, t := range b.Tokens {
		if err := r.m.Embed.Row(int(t), r.x[i*cfg.NEmbd:(i+1)*cfg.NEmbd]); err != nil {
			return fmt.Errorf("model: decode: %w", err)
		}
	}
	if cfg.EmbedScale != 0 {
		kernels.Scale(r.x[:n*cfg.NEmbd], cfg.EmbedScale)
	}
	for l := range r.m.Layers {
		last := l == len(r.m.Layers)-1
		if err := r.attention(l, b, n); err != nil {
			return err
		}
		rows := n
		if last {
			// Only the wanted rows go on, as llama.cpp does in its last block.
			rows = r.compact()
			r.groups(b, r.outIdx)
		}
		if err := r.feedForward(l, rows); err != nil {
			return err
		}
	}
	for i := range n {
		s := int(b.Seq[i])
		r.c.lens[s] = max(r.c.lens[s], int(b.Pos[i])+1)
	}
	return nil
}

// groups fills r.group for the batch rows idx (all of b's rows when idx
// is nil): how many of those rows belong to each row's sequence, or 1 for
// all of them unless SetLlamaOrder is on.
func (r *Runner) groups(b Batch, idx []int) {
	clear(r.seqN)
	n := len(idx)
	if idx == nil {
		n = len(b.Tokens)
	}
	at := func(j int) int {
		if idx == nil {
			return j
		}
		return idx[j]
	}
	for j := range n {
		r.seqN[b.Seq[at(j)]]++
	}
	for j := range n {
		r.group[j] = 1
		if r.llama {
			r.group[j] = r.seqN[b.Seq[at(j)]]
		}
	}
}

// compact moves the residual rows of r.outIdx to the front of r.x and
// returns how many there are.
func (r *Runner) compact() int {
	e := r.m.Config.NEmbd
	for j, i := range r.outIdx {
		if i != j {
			copy(r.x[j*e:(j+1)*e], r.x[i*e:(i+1)*e])
		}
	}
	return len(r.outIdx)
}

// matmul runs out = w·x for n rows, naming the weight on failure.
func (r *Runner) matmul(out []float32, w kernels.Matrix, x []float32, n int, what string, layer int) error {
	if err := r.ar.matmul(out[:n*w.Rows], w, x[:n*w.Cols], n, r.group[:n]); err != nil {
		return fmt.Errorf("model: layer %d %s: %w", layer, what, err)
	}
	return nil
}

// attention runs the attention half of block l on the n batch rows of
// r.x, adding its output to r.x.
func (r *Runner) attention(l int, b Batch, n int) error {
	cfg := r.m.Config
	ly := &r.m.Layers[l]
	e, qd, kd, hd := cfg.NEmbd, cfg.QDim(), cfg.KVDim(), cfg.HeadDim
	for i := range n {
		kernels.RMSNorm(r.xn[i*e:(i+1)*e], r.x[i*e:(i+1)*e], ly.AttnNorm, cfg.RMSEps)
	}
	if err := r.projectQKV(l, n); err != nil {
		return err
	}
	addBias(r.q[:n*qd], ly.QBias)
	addBias(r.k[:n*kd], ly.KBias)
	addBias(r.v[:n*kd], ly.VBias)
	rope := r.m.RopeFor(l, r.c.nCtx)
	p := r.layerAttn(l)
	for i := range n {
		pos := int(b.Pos[i])
		q, k := r.q[i*qd:(i+1)*qd], r.k[i*kd:(i+1)*kd]
		headNorm(q, hd, ly.QNorm, cfg.RMSEps)
		headNorm(k, hd, ly.KNorm, cfg.RMSEps)
		r.ar.rope(q, cfg.NHead, hd, pos, rope)
		r.ar.rope(k, cfg.NHeadKV, hd, pos, rope)
		if cfg.QueryPreScale {
			kernels.Scale(q, cfg.AttnScale)
		}
		r.c.store(l, int(b.Seq[i]), pos, k, r.v[i*kd:(i+1)*kd])
	}
	if r.useTiled() {
		if err := r.tiledAttention(l, b, n, p); err != nil {
			return fmt.Errorf("model: layer %d attention: %w", l, err)
		}
	} else if err := r.headAttention(l, b, n, p); err != nil {
		return err
	}
	if err := r.matmul(r.proj, ly.O, r.att, n, "attn_output", l); err != nil {
		return err
	}
	addBias(r.proj[:n*e], ly.OBias)
	postNorm(r.proj[:n*e], e, ly.AttnPostNorm, cfg.RMSEps)
	r.residual(n)
	return nil
}

// headAttention computes the attention of the n batch rows of layer l
// one head at a time (Runner.head) into r.att.
func (r *Runner) headAttention(l int, b Batch, n int, p attnParams) error {
	cfg := r.m.Config
	hd := cfg.HeadDim
	r.attnL, r.attnB, r.attnP = l, b, p
	work := 0
	for i := range n {
		work += (int(b.Pos[i]) + 1) * cfg.NHead * hd * 2
	}
	// Heads × tokens spread over the workers, interleaved for balance
	// (later tokens see more keys). Each head is computed by one worker
	// from the same inputs in the same order whatever the split, so the
	// results are bit for bit those of one worker.
	nw := min(len(r.heads), n*cfg.NHead)
	if work < r.attnMin {
		nw = 1
	}
	r.attnNW = nw
	if nw == 1 {
		r.headsPart(0, 1)
	} else if err := r.pool.Run(r.attnFn); err != nil {
		return fmt.Errorf("model: layer %d attention: %w", l, err)
	}
	r.attnB = Batch{}
	return nil
}

// projectQKV computes the queries, keys and values of the n normed rows
// of r.xn into r.q, r.k and r.v, from one fused matrix when the layer
// has one.
func (r *Runner) projectQKV(l, n int) error {
	cfg := r.m.Config
	ly := &r.m.Layers[l]
	if ly.QKV.Rows == 0 {
		if err := r.matmul(r.q, ly.Q, r.xn, n, "attn_q", l); err != nil {
			return err
		}
		if err := r.matmul(r.k, ly.K, r.xn, n, "attn_k", l); err != nil {
			return err
		}
		return r.matmul(r.v, ly.V, r.xn, n, "attn_v", l)
	}
	if err := r.matmul(r.qkv, ly.QKV, r.xn, n, "attn_qkv", l); err != nil {
		return err
	}
	qd, kd := cfg.QDim(), cfg.KVDim()
	w := qd + 2*kd
	for i := range n {
		row := r.qkv[i*w : (i+1)*w]
		copy(r.q[i*qd:(i+1)*qd], row[:qd])
		copy(r.k[i*kd:(i+1)*kd], row[qd:qd+kd])
		copy(r.v[i*kd:(i+1)*kd], row[qd+kd:])
	}
	return nil
}

// attnParams is what one layer's attention does to its scores besides
// the softmax: the scale (1 when the queries were scaled already), the
// soft cap (0: none) and the sliding window (0: every earlier position).
type attnParams struct {
	scale   float32
	softcap float32
	window  int
	// sinks are the layer's per-head sink logits (gpt-oss), or nil; sink
	// is the one of the head being computed (Runner.head).
	sinks []float32
	sink  float32
}

// layerAttn returns the score parameters of layer l.
func (r *Runner) layerAttn(l int) attnParams {
	cfg := r.m.Config
	p := attnParams{scale: cfg.AttnScale, softcap: cfg.AttnSoftcap, sinks: r.m.Layers[l].Sinks}
	if cfg.QueryPreScale {
		p.scale = 1
	}
	if cfg.LayerSWA(l) {
		p.window = cfg.NSWA
	}
	return p
}

// postNorm applies RMSNorm with weight w to each row of x (rows of e
// values) in place; a nil w does nothing.
func postNorm(x []float32, e int, w []float32, eps float32) {
	if w == nil {
		return
	}
	for i := 0; i+e <= len(x); i += e {
		kernels.RMSNorm(x[i:i+e], x[i:i+e], w, eps)
	}
}

// residual adds the block half's output in r.proj to the first n rows of
// the residual stream r.x, scaled first when the family says so.
func (r *Runner) residual(n int) {
	e := r.m.Config.NEmbd
	if s := r.m.Config.ResidualScale; s != 0 {
		kernels.Scale(r.proj[:n*e], s)
	}
	kernels.Add(r.x[:n*e], r.x[:n*e], r.proj[:n*e])
}

// addBias adds bias to every row of x (rows of len(bias) values); a nil
// bias adds nothing.
func addBias(x, bias []float32) {
	if bias == nil {
		return
	}
	for i := 0; i+len(bias) <= len(x); i += len(bias) {
		kernels.Add(x[i:i+len(bias)], x[i:i+len(bias)], bias)
	}
}

// headNorm applies RMSNorm with weight w to each head of x (heads of hd
// values) in place; a nil w does nothing.
func headNorm(x []float32, hd int, w []float32, eps float32) {
	if w == nil {
		return
	}
	for h := 0; h+hd <= len(x); h += hd {
		kernels.RMSNorm(x[h:h+hd], x[h:h+hd], w, eps)
	}
}

// headsPart computes the attention heads w, w+nw, w+2·nw, ... of the
// batch's tokens × heads (token-major) with worker w's scratch.
func (r *Runner) headsPart(w, nw int) {
	cfg := r.m.Config
	qd, hd := cfg.QDim(), cfg.HeadDim
	group := cfg.NHead / cfg.NHeadKV
	b, hs := r.attnB, &r.heads[w]
	for k := w; k < len(b.Tokens)*cfg.NHead; k += nw {
		i, h := k/cfg.NHead, k%cfg.NHead
		q := r.q[i*qd+h*hd : i*qd+(h+1)*hd]
		out := r.att[i*qd+h*hd : i*qd+(h+1)*hd]
		ap := r.attnP
		if ap.sinks != nil {
			ap.sink = ap.sinks[h]
		}
		r.head(hs, r.attnL, int(b.Seq[i]), int(b.Pos[i]), h/group, q, out, ap, int(r.group[i]))
	}
}

// head computes one attention head of one token at position p of
// sequence s, using KV head g of layer l, into out, the way llama.cpp's
// CPU path does without flash attention: scores K·q with q rounded to the
// cache type, soft-capped and scaled as ap says, masked outside the
// window and soft-maxed over positions 0..p, then each output value is
// the dot product of the transposed V row with the weights rounded to
// the cache type. With sinks (gpt-oss) the head's sink logit joins the
// softmax's maximum and denominator as in ggml's soft_max; its
// exponentials are then package kernels', within an ulp of ggml's, also
// under ArithGGML.
//
// Positions before a sliding window get weight 0 and still take part in
// the weights×values product, as they do in llama.cpp's masked product
// (the cache keeps every position): the sums then run in ggml's order.
// Their scores are not computed.
//
// batch is how many tokens sequence s has in this step.
func (r *Runner) head(hs *headScratch, l, s, p, g int, q, out []float32, ap attnParams, batch int) {
	c := r.c
	hd := len(q)
	n := p + 1
	lo := 0 // the first position inside the window
	if ap.window > 0 {
		lo = max(0, n-ap.window)
	}
	sc := hs.scores[:n]
	if c.tk == KVF16 {
		q16 := hs.q16[:hd]
		kernels.F32ToF16Row(q16, q)
		ko := c.keyOff(l, s, g, lo)
		r.ar.dotKQ(sc[lo:], c.k16[ko:], hd, q16)
	} else {
		for j := lo; j < n; j++ {
			ko := c.keyOff(l, s, g, j)
			sc[j] = kernels.DotF32(c.k32[ko:ko+hd], q)
		}
	}
	if ap.softcap != 0 {
		kernels.Softcap(sc[lo:], ap.softcap)
	}
	if ap.scale != 1 {
		kernels.Scale(sc[lo:], ap.scale)
	}
	if ap.sinks != nil {
		clear(sc[:lo])
		softmaxSink(sc[lo:], ap.sink)
	} else {
		for j := range lo {
			sc[j] = float32(math.Inf(-1))
		}
		r.ar.softmax(sc)
	}
	if c.tv == KVF16 {
		p16 := hs.p16[:n]
		kernels.F32ToF16Row(p16, sc)
		vo := c.valOff(l, s, g*hd)
		r.ar.dotKQV(out[:hd], c.v16[vo:], c.nCtx, p16, batch)
		return
	}
	for d := range hd {
		vo := c.valOff(l, s, g*hd+d)
		out[d] = kernels.DotF32(c.v32[vo:vo+n], sc)
	}
}

// ffnChunk is how many rows the dense feed-forward half multiplies at a
// time: its gate and up products are the widest activations of a batch
// (2 × 5632 floats per token for tinyllama, 22 MiB for 512 tokens), and
// chunks of 128 rows cut that fourfold while the products still reuse
// each weight tile for many tokens (the quantized ones take a long
// prompt's tokens in blocks of about that many anyway).
const ffnChunk = 128

// ffnTail is the most rows beyond ffnChunk the last chunk takes instead
// of leaving them to a chunk of their own.
const ffnTail = 8

// ffnRows returns the rows of the feed-forward scratch for batches of up
// to maxBatch tokens.
func ffnRows(maxBatch int) int { return min(maxBatch, ffnChunk+ffnTail) }

// ffnSpan returns how many rows the feed-forward chunk starting at row
// r0 of n takes: ffnChunk, or all the rest when at most ffnChunk+ffnTail
// remain. Every chunk thus starts at a multiple of ffnChunk (a multiple of
// the products' 8- and 4-token groups) and none but a whole batch has
// fewer than ffnTail+1 rows (a product of a few tokens may take another
// path), so every token meets the same kernels as in one product over the
// batch: the results do not change with the chunking.
func ffnSpan(r0, n, chunk int) int {
	if n-r0 <= chunk+ffnTail {
		return n - r0
	}
	return chunk
}

// feedForward runs the SwiGLU half of block l on the first n rows of r.x,
// the dense products ffnSpan rows at a time.
func (r *Runner) feedForward(l, n int) error {
	cfg := r.m.Config
	ly := &r.m.Layers[l]
	e := cfg.NEmbd
	for i := range n {
		kernels.RMSNorm(r.xn[i*e:(i+1)*e], r.x[i*e:(i+1)*e], ly.FFNNorm, cfg.RMSEps)
	}
	if ly.MoE != nil {
		if err := r.moeFFN(l, n); err != nil {
			return err
		}
	} else {
		for r0 := 0; r0 < n; {
			c := ffnSpan(r0, n, r.ffnChunk)
			if err := r.denseFFN(l, r0, c); err != nil {
				return err
			}
			r0 += c
		}
	}
	postNorm(r.proj[:n*e], e, ly.FFNPostNorm, cfg.RMSEps)
	r.residual(n)
	return nil
}

// denseFFN computes the dense feed-forward products of the c normed rows
// of r.xn from row r0 into the same rows of r.proj.
func (r *Runner) denseFFN(l, r0, c int) error {
	cfg := r.m.Config
	ly := &r.m.Layers[l]
	e, ff := cfg.NEmbd, cfg.NFF
	xn, group := r.xn[r0*e:(r0+c)*e], r.group[r0:r0+c]
	if ly.GateUp.Rows > 0 {
		if err := r.matmulRows(r.gateUp, ly.GateUp, xn, c, group, "ffn_up", l); err != nil {
			return err
		}
		for i := range c {
			row := r.gateUp[i*2*ff : (i+1)*2*ff]
			r.ar.siluMul(r.gate[i*ff:(i+1)*ff], row[:ff], row[ff:])
		}
	} else {
		if err := r.matmulRows(r.gate, ly.Gate, xn, c, group, "ffn_gate", l); err != nil {
			return err
		}
		if err := r.matmulRows(r.up, ly.Up, xn, c, group, "ffn_up", l); err != nil {
			return err
		}
		for i := range c {
			g := r.gate[i*ff : (i+1)*ff]
			if cfg.FFNGELU {
				kernels.GELUMul(g, g, r.up[i*ff:(i+1)*ff])
			} else {
				r.ar.siluMul(g, g, r.up[i*ff:(i+1)*ff])
			}
		}
	}
	return r.matmulRows(r.proj[r0*e:(r0+c)*e], ly.Down, r.gate, c, group, "ffn_down", l)
}

// matmulRows runs out = w·x for the n rows of x whose sequences' row
// counts are group, naming the weight on failure.
func (r *Runner) matmulRows(out []float32, w kernels.Matrix, x []float32, n int, group []int32, what string, layer int) error {
	if err := r.ar.matmul(out[:n*w.Rows], w, x[:n*w.Cols], n, group[:n]); err != nil {
		return fmt.Errorf("model: layer %d %s: %w", layer, what, err)
	}
	return nil
}

// normed applies the final norm to the compacted rows, into r.xn, and
// returns how many there are.
func (r *Runner) normed() int {
	e := r.m.Config.NEmbd
	for i := range r.outIdx {
		kernels.RMSNorm(r.xn[i*e:(i+1)*e], r.x[i*e:(i+1)*e], r.m.OutputNorm, r.m.Config.RMSEps)
	}
	return len(r.outIdx)
}

// output applies the final norm and the output matrix to the compacted
// rows and returns the logits rows.
func (r *Runner) output() ([][]float32, error) {
	cfg := r.m.Config
	e, nv := cfg.NEmbd, cfg.NVocab
	n := len(r.outIdx)
	r.rows = r.rows[:0]
	if r.normed() == 0 {
		return r.rows, nil
	}
	if cap(r.logits) < n*nv {
		r.logits = make([]float32, n*nv)
	}
	lg := r.logits[:n*nv]
	if err := r.ar.matmul(lg, r.m.Output, r.xn[:n*e], n, r.group[:n]); err != nil {
		return nil, fmt.Errorf("model: output: %w", err)
	}
	if cfg.LogitScale != 0 {
		kernels.Scale(lg, 1/cfg.LogitScale)
	}
	if cfg.FinalSoftcap != 0 {
		kernels.Softcap(lg, cfg.FinalSoftcap)
	}
	for i := range n {
		r.rows = append(r.rows, lg[i*nv:(i+1)*nv:(i+1)*nv])
	}
	return r.rows, nil
}
