package model

import (
	"errors"
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/tensor"
)

// Mixture-of-experts feed-forward blocks, as llama.cpp's build_moe_ffn
// computes them for Mixtral (the llama family with <arch>.expert_count)
// and qwen3moe: a router (ffn_gate_inp, kept F32 by llama.cpp's
// converter and quantizer) gives each token NExpert logits; their softmax
// is taken, the NExpertUsed most probable experts are chosen (best
// first), their probabilities renormalised to sum to 1 (the sum clamped
// below at F16's smallest normal, as llama.cpp does), and the token's
// output is the sum, in that order, of each chosen expert's SwiGLU FFN
// output times its weight. The experts are stacked in 3-D tensors
// (ffn_gate_exps, ffn_up_exps, ffn_down_exps: GGUF dims [NEmbd, NFFExp,
// NExpert] and [NFFExp, NEmbd, NExpert]); each expert is a view of the
// mapped file, so only the experts a batch routes to are read.
//
// The experts' products are batched per expert: the rows of the tokens
// that chose an expert are gathered, multiplied by it in one product
// each for gate, up and down, and scattered back weighted to the tokens'
// slots. The experts are taken in groups (all of a decode step's, a
// prompt's a few hundred pairs at a time), and the quantized experts'
// gate and up products of a group are one pool job, their down products
// another (kernels.Products): a decode step of Qwen3-30B-A3B would
// otherwise start and wait for 24 small products per layer. Every value
// is computed by one goroutine in a fixed order, so the results do not
// depend on the thread count or the grouping, and a token's output is
// bit for bit what computing it alone through the same products gives.

// Limits on the experts a file may declare: llama.cpp's LLAMA_MAX_EXPERTS,
// and a bound on the experts per token (published models use 1 to 10)
// that keeps a Runner's per-slot scratch within a small multiple of its
// residual stream.
const (
	MaxExperts     = 1024
	MaxExpertsUsed = 64
)

// ExpertMode says whether a family's blocks may or must be mixtures of
// experts.
type ExpertMode uint8

// The expert modes of a Family.
const (
	ExpertsNone     ExpertMode = iota // dense FFN only: a file with experts is refused
	ExpertsAllowed                    // a dense FFN, or experts when the file declares expert_count (llama: Mixtral)
	ExpertsRequired                   // experts only (qwen3moe)
)

// moeMinNormSum is the smallest sum of the chosen experts' probabilities
// the renormalisation divides by (the smallest normal F16, llama.cpp's
// clamp against division by zero).
const moeMinNormSum = 6.103515625e-5

// MoE holds the mixture-of-experts weights of one block, in place of
// Layer's Gate, Up and Down.
type MoE struct {
	Router kernels.Matrix   // blk.N.ffn_gate_inp.weight, NExpert rows of NEmbd
	Gate   []kernels.Matrix // blk.N.ffn_gate_exps.weight, per expert NFFExp rows of NEmbd
	Up     []kernels.Matrix // blk.N.ffn_up_exps.weight, per expert NFFExp rows of NEmbd
	Down   []kernels.Matrix // blk.N.ffn_down_exps.weight, per expert NEmbd rows of NFFExp

	// The biases, nil unless Config.MoEBias (gpt-oss): the router's
	// (blk.N.ffn_gate_inp.bias [NExpert]) and per expert those of its
	// gate, up and down products (blk.N.ffn_gate_exps.bias and
	// ffn_up_exps.bias [NFFExp, NExpert], ffn_down_exps.bias [NEmbd,
	// NExpert]).
	RouterBias                 []float32
	GateBias, UpBias, DownBias [][]float32
}

// allF32 reports whether every matrix of the experts is F32 (true for
// no experts).
func (m *MoE) allF32() bool {
	if m == nil {
		return true
	}
	all := m.Router.Type == tensor.F32
	for _, ms := range [][]kernels.Matrix{m.Gate, m.Up, m.Down} {
		for _, w := range ms {
			all = all && w.Type == tensor.F32
		}
	}
	return all
}

// readExperts reads the expert counts of a file into c. A family that
// does not take experts refuses a file that declares some; one that needs
// them (Family.Experts == ExpertsRequired) refuses a file without. The
// variants llama.cpp computes differently from this block (expert groups,
// shared experts, other gating functions, scaled or unnormalised weights)
// are refused by name.
func readExperts(r reader, c *Config, k func(string) string, fam *Family) error {
	n, err := r.count(k("expert_count"), 0, math.MaxUint32, 0)
	if err != nil {
		return err
	}
	switch {
	case n == 0 && fam.Experts == ExpertsRequired:
		return &KeyError{Key: k("expert_count"), Reason: fmt.Sprintf("the %s architecture is a mixture of experts: required key is missing or 0", c.Arch), Err: ErrMissing}
	case n == 0:
		return nil
	case fam.Experts == ExpertsNone:
		return &KeyError{Key: k("expert_count"), Reason: fmt.Sprintf("%d experts: mixture-of-experts %s models are not supported", n, c.Arch), Err: ErrUnsupported}
	case n > MaxExperts:
		return &KeyError{Key: k("expert_count"), Reason: fmt.Sprintf("value %d out of range [1, %d]", n, MaxExperts), Err: ErrInvalid}
	}
	used, err := r.count(k("expert_used_count"), 1, min(n, MaxExpertsUsed), -1)
	if err != nil {
		return err
	}
	c.NExpert, c.NExpertUsed, c.NFFExp = n, used, c.NFF
	for _, key := range []string{"expert_group_count", "expert_shared_count", "expert_shared_feed_forward_length"} {
		v, err := r.count(k(key), 0, math.MaxUint32, 0)
		if err != nil {
			return err
		}
		// One group is no grouping.
		if v > 1 || v == 1 && key != "expert_group_count" {
			return &KeyError{Key: k(key), Reason: fmt.Sprintf("value %d: expert groups and shared experts are not supported", v), Err: ErrUnsupported}
		}
	}
	// llama.cpp's enum llama_expert_gating_func_type: 1 is softmax.
	if g, err := r.count(k("expert_gating_func"), 0, math.MaxUint32, 1); err != nil {
		return err
	} else if g != 1 {
		return &KeyError{Key: k("expert_gating_func"), Reason: fmt.Sprintf("gating function %d is not supported (want 1, softmax)", g), Err: ErrUnsupported}
	}
	if s, err := r.float(k("expert_weights_scale"), 0, 1e6, true, 1); err != nil {
		return err
	} else if s != 1 {
		return &KeyError{Key: k("expert_weights_scale"), Reason: fmt.Sprintf("scale %g is not supported (want 1)", s), Err: ErrUnsupported}
	}
	if norm, err := r.flag(k("expert_weights_norm"), true); err != nil {
		return err
	} else if !norm {
		return &KeyError{Key: k("expert_weights_norm"), Reason: "unnormalised expert weights are not supported", Err: ErrUnsupported}
	}
	return nil
}

// validExperts checks the expert fields of c (Validate).
func (c Config) validExperts() error {
	switch {
	case c.NExpert == 0 && c.NExpertUsed == 0:
		return nil
	case c.NExpert < 1 || c.NExpert > MaxExperts || c.NExpertUsed < 1 || c.NExpertUsed > min(c.NExpert, MaxExpertsUsed) ||
		c.NFFExp < 1 || c.NFFExp > MaxFF:
		return fmt.Errorf("model: config experts %d/%d of %d: %w", c.NExpertUsed, c.NExpert, c.NFFExp, ErrInvalid)
	}
	return nil
}

// denseFFN reports whether w is one of the dense FFN's matrices, which
// the experts replace.
func denseFFN(w BlockWeight) bool {
	switch w.Name {
	case wGate.Name, wUp.Name, wDown.Name:
		return true
	}
	return false
}

// blockFor returns the block tensors of f for a model of config c: the
// family's table, without the dense FFN when c has experts (bound by
// experts instead).
func (f *Family) blockFor(c Config) []BlockWeight {
	if c.NExpert == 0 {
		return f.Block
	}
	var t []BlockWeight
	for _, w := range f.Block {
		if !denseFFN(w) {
			t = append(t, w)
		}
	}
	return t
}

// experts binds the mixture-of-experts tensors of block i.
func (b *binder) experts(i int, c Config) (*MoE, error) {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s", i, s) }
	if _, ok := b.f.Tensor(name("ffn_gate_exps.weight")); !ok {
		// Files converted before llama.cpp stacked the experts (early
		// 2024) hold one tensor per expert.
		for _, s := range []string{"ffn_gate.0.weight", "ffn_up.0.weight", "ffn_down.0.weight"} {
			if _, ok := b.f.Tensor(name(s)); ok {
				return nil, &TensorError{Name: name(s), Reason: "one tensor per expert (the layout before llama.cpp stacked them in ffn_*_exps) is not supported: convert the model again", Err: ErrUnsupported}
			}
		}
	}
	m := &MoE{}
	var err error
	if m.Router, err = b.matrix(name("ffn_gate_inp.weight"), c.NEmbd, c.NExpert); err != nil {
		return nil, err
	}
	if c.MoEBias {
		if m.RouterBias, err = b.norm(name("ffn_gate_inp.bias"), c.NExpert); err != nil {
			return nil, err
		}
		for _, x := range []struct {
			name string
			n    int
			dst  *[][]float32
		}{
			{"ffn_gate_exps.bias", c.NFFExp, &m.GateBias},
			{"ffn_up_exps.bias", c.NFFExp, &m.UpBias},
			{"ffn_down_exps.bias", c.NEmbd, &m.DownBias},
		} {
			if *x.dst, err = b.biasRows(name(x.name), x.n, c.NExpert); err != nil {
				return nil, err
			}
		}
	}
	for _, x := range []struct {
		name       string
		cols, rows int
		dst        *[]kernels.Matrix
	}{
		{"ffn_gate_exps.weight", c.NEmbd, c.NFFExp, &m.Gate},
		{"ffn_up_exps.weight", c.NEmbd, c.NFFExp, &m.Up},
		{"ffn_down_exps.weight", c.NFFExp, c.NEmbd, &m.Down},
	} {
		if *x.dst, err = b.stacked(name(x.name), x.cols, x.rows, c.NExpert); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// biasRows binds a 2-D tensor of rows vectors of n values (one bias per
// expert), decoded.
func (b *binder) biasRows(name string, n, rows int) ([][]float32, error) {
	v, err := b.floats(name, []int{n, rows}, n*rows)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, rows)
	for e := range out {
		out[e] = v[e*n : (e+1)*n : (e+1)*n]
	}
	return out, nil
}

// stacked binds a 3-D tensor of n matrices of rows rows of cols values as
// n views of its data, each checked as a matrix (nothing of the data is
// read).
func (b *binder) stacked(name string, cols, rows, n int) ([]kernels.Matrix, error) {
	ti, data, err := b.lookup(name, []int{cols, rows, n})
	if err != nil {
		return nil, err
	}
	rb, err := ti.Type.RowBytes(int64(cols))
	if err == nil {
		_, err = tensor.MulInt64(rb*int64(rows), int64(n))
	}
	if err != nil || rb*int64(rows)*int64(n) != int64(len(data)) {
		return nil, &TensorError{Name: name, Reason: fmt.Sprintf("%d bytes do not hold %d×%d rows of %d %s values", len(data), n, rows, cols, ti.Type), Err: ErrInvalid}
	}
	size := int(rb) * rows
	ms := make([]kernels.Matrix, n)
	for e := range ms {
		ms[e], err = kernels.NewMatrix(ti.Type, rows, cols, data[e*size:(e+1)*size:(e+1)*size])
		if errors.Is(err, kernels.ErrUnsupportedType) {
			return nil, &TensorError{Name: name, Reason: fmt.Sprintf("type %s is not supported for a weight matrix (supported: %v)", ti.Type, kernels.SupportedTypes()), Err: ErrUnsupported}
		}
		if err != nil {
			return nil, &TensorError{Name: name, Reason: err.Error(), Err: ErrInvalid}
		}
	}
	b.bound(ti)
	return ms, nil
}

// moeScratch is what a Runner computes a mixture-of-experts block with,
// sized for its largest batch.
type moeScratch struct {
	k       int       // experts per token
	probs   []float32 // per token: NExpert router logits, then probabilities
	sel     []int32   // per token: its k experts, best first
	wts     []float32 // per token: their weights
	count   []int32   // per expert: the (token, slot) pairs routed to it
	start   []int32   // per expert: where its pairs begin in pairs
	pairs   []int32   // token·k+slot, grouped by expert in token order
	ones    []int32   // product groups of one row (each row in the one-token order)
	rows    int       // the most pairs one group of experts is multiplied with at once
	xg      []float32 // the gathered rows of a group of experts' pairs
	gate    []float32 // their gate products, then the SwiGLU
	up      []float32 // their up products
	down    []float32 // their down products
	slots   []float32 // per token·k+slot: the weighted expert output
	nExpert int

	// prod multiplies a group's experts in one pool job per stage (gate
	// and up, then down) when every expert matrix of the model is of a
	// type it takes; nil otherwise (each product is then the
	// arithmetic's, one pool job each).
	prod *kernels.Products
}

// moeGroupRows is the most (token, expert) pairs a prompt's experts are
// multiplied with in one group (a decode step's are always one group):
// enough that each stage of a group is one large pool job, few enough
// that the gathered rows and products stay a few MiB (Qwen3-30B-A3B:
// 512 rows of 2048 gathered values and 768 of each product).
const moeGroupRows = 512

// moeRows returns the rows of the gathered-rows and product scratch for
// batches of up to maxBatch tokens with k experts each.
func moeRows(maxBatch, k int) int { return min(maxBatch*k, max(maxBatch, moeGroupRows)) }

// ExpertScratchBytes returns the bytes a Runner of batches of up to
// maxBatch tokens allocates for c's experts beyond the dense scratch (0
// without experts), for memory budgets: its own buffers, and the
// activations its grouped products convert (expertArenaBytes).
func (c Config) ExpertScratchBytes(maxBatch int) float64 {
	if c.NExpert == 0 {
		return 0
	}
	b, k := float64(maxBatch), float64(c.NExpertUsed)
	g := float64(moeRows(maxBatch, c.NExpertUsed))
	return 4*(b*float64(c.NExpert)+ // router probabilities
		3*b*k+b+ // choices, weights, pairs; the unit groups
		2*g*float64(c.NEmbd)+2*g*float64(c.NFFExp)+ // gathered rows, products
		b*k*float64(c.NEmbd)) + // weighted slots
		c.expertArenaBytes(maxBatch)
}

// expertArenaBytes bounds the activations kernels.Products keeps for a
// group's products: at most 2.5 bytes a value (a Q8_K or Q8_0 block and
// the prompt tile's codes and scales) of both stages, the gate and up
// products' rows of NEmbd and the down products' of NFFExp (the arenas
// of one partner format serve both when the types share it).
func (c Config) expertArenaBytes(maxBatch int) float64 {
	g := float64(moeRows(maxBatch, c.NExpertUsed))
	return 2.5 * g * float64(2*c.NEmbd+c.NFFExp)
}

// newMoEScratch returns the scratch for m's experts and batches of up to
// maxBatch tokens, or nil when m has none.
func newMoEScratch(m *Model, maxBatch int) *moeScratch {
	c := m.Config
	if c.NExpert == 0 {
		return nil
	}
	k := c.NExpertUsed
	g := moeRows(maxBatch, k)
	s := &moeScratch{
		k: k, nExpert: c.NExpert, rows: g,
		probs: make([]float32, maxBatch*c.NExpert), sel: make([]int32, maxBatch*k), wts: make([]float32, maxBatch*k),
		count: make([]int32, c.NExpert), start: make([]int32, c.NExpert+1), pairs: make([]int32, maxBatch*k),
		ones: make([]int32, maxBatch),
		xg:   make([]float32, g*c.NEmbd), gate: make([]float32, g*c.NFFExp), up: make([]float32, g*c.NFFExp),
		down: make([]float32, g*c.NEmbd), slots: make([]float32, maxBatch*k*c.NEmbd),
	}
	for i := range s.ones {
		s.ones[i] = 1
	}
	batched := true
	for _, l := range m.Layers {
		if l.MoE == nil {
			continue
		}
		for _, ms := range [][]kernels.Matrix{l.MoE.Gate, l.MoE.Up, l.MoE.Down} {
			for _, w := range ms {
				batched = batched && kernels.ProductsSupport(w.Type)
			}
		}
	}
	if batched {
		s.prod = kernels.NewProducts()
	}
	return s
}

// route chooses the k experts of one token from its router
// probabilities p: sel gets them best first (the lower index first among
// equal probabilities), w their probabilities renormalised to sum to 1
// (the sum taken in float64 and clamped below, as ggml's sum_rows and
// llama.cpp's clamp).
func route(p []float32, sel []int32, w []float32) {
	topK(p, sel)
	var sum float64
	for j, e := range sel {
		w[j] = p[e]
		sum += float64(w[j])
	}
	s := max(float32(sum), moeMinNormSum)
	for j := range w {
		w[j] /= s
	}
}

// topK sets sel to the indices of the len(sel) largest values of p, best
// first (the lower index first among equal values), as ggml's
// descending argsort.
func topK(p []float32, sel []int32) {
	k := len(sel)
	// Insertion into a sorted top k: k is small and a pass reads p once.
	n := 0
	for e, v := range p {
		if n == k && !(v > p[sel[k-1]]) {
			continue
		}
		j := min(n, k-1)
		for j > 0 && v > p[sel[j-1]] {
			sel[j] = sel[j-1]
			j--
		}
		sel[j] = int32(e)
		n = min(n+1, k)
	}
}

// moeFFN runs the mixture-of-experts FFN of block l on the n normed rows
// of r.xn, into r.proj.
func (r *Runner) moeFFN(l, n int) error {
	cfg := r.m.Config
	mo, s := r.m.Layers[l].MoE, r.moe
	e, k := cfg.NEmbd, s.k
	probs := s.probs[:n*cfg.NExpert]
	if err := r.matmul(probs, mo.Router, r.xn, n, "ffn_gate_inp", l); err != nil {
		return err
	}
	addBias(probs, mo.RouterBias)
	clear(s.count)
	for t := range n {
		p := probs[t*cfg.NExpert : (t+1)*cfg.NExpert]
		sel, w := s.sel[t*k:(t+1)*k], s.wts[t*k:(t+1)*k]
		if cfg.MoEWeightsSoftmax {
			// The softmax of the chosen logits: the same weights as the
			// renormalised probabilities, in llama.cpp's order.
			topK(p, sel)
			for j, x := range sel {
				w[j] = p[x]
			}
			r.ar.softmax(w)
		} else {
			r.ar.softmax(p)
			route(p, sel, w)
		}
		for _, x := range sel {
			s.count[x]++
		}
	}
	// Counting sort of the (token, slot) pairs by expert, tokens in order.
	s.start[0] = 0
	for x, c := range s.count {
		s.start[x+1] = s.start[x] + c
	}
	fill := s.count // reused as each expert's fill position
	copy(fill, s.start[:cfg.NExpert])
	for i, x := range s.sel[:n*k] {
		s.pairs[fill[x]] = int32(i)
		fill[x]++
	}
	// The experts in index order, in groups of at most s.rows pairs (an
	// expert's pairs are at most the batch's tokens, which fit).
	for x0 := 0; x0 < cfg.NExpert; {
		base := s.start[x0]
		x1 := x0 + 1
		for x1 < cfg.NExpert && int(s.start[x1+1]-base) <= s.rows {
			x1++
		}
		if err := r.moeGroup(l, x0, x1); err != nil {
			return err
		}
		x0 = x1
	}
	// Each token's slots summed best first, as llama.cpp adds its views.
	for t := range n {
		out := r.proj[t*e : (t+1)*e]
		copy(out, s.slots[t*k*e:(t*k+1)*e])
		for j := 1; j < k; j++ {
			kernels.Add(out, out, s.slots[(t*k+j)*e:(t*k+j+1)*e])
		}
	}
	return nil
}

// moeGroup runs the products of experts x0..x1-1 (at most s.rows pairs
// together) of block l on their gathered rows and leaves each pair's
// weighted output in its slot. With s.prod the gate and up products of
// every expert of the group are one pool job, the down products another;
// else each product is one.
func (r *Runner) moeGroup(l, x0, x1 int) error {
	cfg := r.m.Config
	mo, s := r.m.Layers[l].MoE, r.moe
	e, ff, k := cfg.NEmbd, cfg.NFFExp, s.k
	base := int(s.start[x0])
	ps := s.pairs[base:s.start[x1]]
	if len(ps) == 0 {
		return nil // no token chose these: their weights are never read
	}
	for j, pi := range ps {
		t := int(pi) / k
		copy(s.xg[j*e:(j+1)*e], r.xn[t*e:(t+1)*e])
	}
	// Expert x's pairs are the gathered rows o..o+m-1. An expert with a
	// single pair (every expert of a decode step) takes its token's row
	// in place: the products of one token's experts then share one
	// activation slice, which kernels.Products converts once for all of
	// them (the gate and up products of one expert share theirs anyway).
	for x := x0; x < x1; x++ {
		o, m := int(s.start[x])-base, int(s.start[x+1]-s.start[x])
		if m == 0 {
			continue
		}
		xs := s.xg[o*e:]
		if m == 1 {
			t := int(ps[o]) / k
			xs = r.xn[t*e : (t+1)*e]
		}
		if err := r.expertProduct(s.gate[o*ff:], mo.Gate[x], xs, m, "ffn_gate_exps", l); err != nil {
			return err
		}
		if err := r.expertProduct(s.up[o*ff:], mo.Up[x], xs, m, "ffn_up_exps", l); err != nil {
			return err
		}
	}
	if err := r.expertRun("ffn_gate_exps", l); err != nil {
		return err
	}
	for x := x0; x < x1 && mo.GateBias != nil; x++ {
		o, m := int(s.start[x])-base, int(s.start[x+1]-s.start[x])
		addBias(s.gate[o*ff:(o+m)*ff], mo.GateBias[x])
		addBias(s.up[o*ff:(o+m)*ff], mo.UpBias[x])
	}
	for j := range ps {
		g := s.gate[j*ff : (j+1)*ff]
		if cfg.MoESwiGLULimit != 0 {
			swigluOAI(g, g, s.up[j*ff:(j+1)*ff], cfg.MoESwiGLUAlpha, cfg.MoESwiGLULimit)
		} else {
			r.ar.siluMul(g, g, s.up[j*ff:(j+1)*ff])
		}
	}
	for x := x0; x < x1; x++ {
		o, m := int(s.start[x])-base, int(s.start[x+1]-s.start[x])
		if m == 0 {
			continue
		}
		if err := r.expertProduct(s.down[o*e:], mo.Down[x], s.gate[o*ff:], m, "ffn_down_exps", l); err != nil {
			return err
		}
	}
	if err := r.expertRun("ffn_down_exps", l); err != nil {
		return err
	}
	for x := x0; x < x1 && mo.DownBias != nil; x++ {
		o, m := int(s.start[x])-base, int(s.start[x+1]-s.start[x])
		addBias(s.down[o*e:(o+m)*e], mo.DownBias[x])
	}
	for j, pi := range ps {
		dst := s.slots[int(pi)*e : (int(pi)+1)*e]
		w := s.wts[pi]
		for d, v := range s.down[j*e : (j+1)*e] {
			dst[d] = v * w
		}
	}
	return nil
}

// expertProduct computes out = w·x for the m gathered rows of one
// expert: added to the group's pool job when the experts are batched
// (expertRun runs it), else at once.
func (r *Runner) expertProduct(out []float32, w kernels.Matrix, x []float32, m int, what string, layer int) error {
	p := r.moe.prod
	if p == nil {
		return r.expertMatmul(out, w, x, m, what, layer)
	}
	if err := p.Add(out[:m*w.Rows], w, x[:m*w.Cols], m); err != nil {
		p.Reset()
		return fmt.Errorf("model: layer %d %s: %w", layer, what, err)
	}
	return nil
}

// expertRun runs the products expertProduct added (none when the experts
// are not batched).
func (r *Runner) expertRun(what string, layer int) error {
	if p := r.moe.prod; p != nil {
		if err := p.Run(r.pool); err != nil {
			return fmt.Errorf("model: layer %d %s: %w", layer, what, err)
		}
	}
	return nil
}

// expertMatmul runs out = w·x for the m gathered rows of one expert, each
// row in the one-token order (ggml multiplies experts row by row).
func (r *Runner) expertMatmul(out []float32, w kernels.Matrix, x []float32, m int, what string, layer int) error {
	if err := r.ar.matmul(out[:m*w.Rows], w, x[:m*w.Cols], m, r.moe.ones[:m]); err != nil {
		return fmt.Errorf("model: layer %d %s: %w", layer, what, err)
	}
	return nil
}
