package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/tensor"
)

// refMatVec returns m·x for a row-major rows×cols matrix, in float64.
func refMatVec(m []float32, rows, cols int, x []float64) []float64 {
	out := make([]float64, rows)
	for r := range rows {
		var acc float64
		for c := range cols {
			acc += float64(m[r*cols+c]) * x[c]
		}
		out[r] = acc
	}
	return out
}

// refRMS returns x / rms(x) * g with epsilon 1e-5.
func refRMS(x []float64, g []float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	sc := 1 / math.Sqrt(ss/float64(len(x))+1e-5)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * sc * float64(g[i])
	}
	return out
}

// refRope rotates the first ropeDim values of each head: adjacent pairs,
// or (i, i+ropeDim/2) for NeoX, by pos·10000^(-2i/ropeDim) divided by the
// pair's frequency factor, then scaled linearly or by YaRN (the ramp
// between interpolation and extrapolation over the pairs whose
// wavelength lies between the original context's 32 and 1 rotations,
// and the magnitude 1 + 0.1·ln(factor)).
func refRope(sp synthSpec, factors []float32, x []float64, nh, pos int) {
	hd, rd := sp.headDim, sp.ropeDim
	scale, mag := 1.0, 1.0
	if sp.linear != 0 {
		scale = 1 / float64(sp.linear)
	}
	var low, high float64
	if sp.yarn != 0 {
		scale = 1 / float64(sp.yarn)
		mag = 1 + 0.1*math.Log(float64(sp.yarn))
		dim := func(rot float64) float64 {
			return float64(rd) * math.Log(float64(sp.yarnOrigCtx)/(rot*2*math.Pi)) / (2 * math.Log(10000))
		}
		low, high = math.Max(0, math.Floor(dim(32))), math.Min(float64(rd-1), math.Ceil(dim(1)))
	}
	for h := range nh {
		for i := 0; i < rd/2; i++ {
			theta := float64(pos) * math.Pow(10000, -2*float64(i)/float64(rd))
			if factors != nil {
				theta /= float64(factors[i])
			}
			t := theta * scale
			if sp.yarn != 0 {
				ramp := 1 - math.Min(1, math.Max(0, (float64(i)-low)/math.Max(0.001, high-low)))
				t = t*(1-ramp) + theta*ramp
			}
			c, sn := math.Cos(t)*mag, math.Sin(t)*mag
			ia, ib := h*hd+2*i, h*hd+2*i+1
			if sp.arch == "qwen2" || sp.arch == "qwen3" {
				ia, ib = h*hd+i, h*hd+i+rd/2
			}
			a, b := x[ia], x[ib]
			x[ia], x[ib] = a*c-b*sn, a*sn+b*c
		}
	}
}

// refAddScaled adds v·s to x (s = 0 means 1).
func refAddScaled(x, v []float64, s float64) {
	if s == 0 {
		s = 1
	}
	for i := range x {
		x[i] += v[i] * s
	}
}

// refBias adds the named bias tensor to x when the model has it.
func refBias(s *synth, name string, x []float64) {
	if t := s.tensor(name); t != nil {
		for i := range x {
			x[i] += float64(t.vals[i])
		}
	}
}

// refHeadNorm applies the named per-head norm to each head of x when the
// model has it.
func refHeadNorm(s *synth, name string, x []float64, hd int) {
	t := s.tensor(name)
	if t == nil {
		return
	}
	for h := 0; h < len(x); h += hd {
		copy(x[h:h+hd], refRMS(x[h:h+hd], t.vals))
	}
}

// refAttention returns the attention output of query q (all heads) over
// the keys and values of positions 0..len(keys)-1.
func refAttention(sp synthSpec, q []float64, keys, vals [][]float64) []float64 {
	hd := sp.headDim
	att := make([]float64, sp.heads*hd)
	for h := range sp.heads {
		g := h / (sp.heads / sp.kvHeads)
		sc := make([]float64, len(keys))
		mx := math.Inf(-1)
		for j := range sc {
			var d float64
			for e := range hd {
				d += q[h*hd+e] * keys[j][g*hd+e]
			}
			sc[j] = d / math.Sqrt(float64(hd))
			if sp.granite {
				sc[j] = d * testAttnScale
			}
			mx = math.Max(mx, sc[j])
		}
		var sum float64
		for j := range sc {
			sc[j] = math.Exp(sc[j] - mx)
			sum += sc[j]
		}
		for j := range sc {
			for e := range hd {
				att[h*hd+e] += sc[j] / sum * vals[j][g*hd+e]
			}
		}
	}
	return att
}

// refForward is a plain float64 forward pass over the synthetic model's
// (dequantized) weights, with no rounding of keys, values or attention
// weights: the ground truth for the shape of the computation.
func refForward(s *synth, tokens []int32) [][]float64 {
	sp := s.spec
	qd, kd := sp.heads*sp.headDim, sp.kvHeads*sp.headDim
	w := func(name string) []float32 { return s.tensor(name).vals }
	emb := w("token_embd.weight")
	var factors []float32
	if t := s.tensor("rope_freqs.weight"); t != nil {
		factors = t.vals
	}
	var resScale float64
	if sp.granite {
		resScale = testResidualScale
	}
	keys := make([][][]float64, sp.layers)
	vals := make([][][]float64, sp.layers)
	var out [][]float64
	for pos, tok := range tokens {
		x := make([]float64, sp.embd)
		for i := range x {
			x[i] = float64(emb[int(tok)*sp.embd+i])
			if sp.granite {
				x[i] *= testEmbedScale
			}
		}
		for l := range sp.layers {
			p := fmt.Sprintf("blk.%d.", l)
			xn := refRMS(x, w(p+"attn_norm.weight"))
			q := refMatVec(w(p+"attn_q.weight"), qd, sp.embd, xn)
			k := refMatVec(w(p+"attn_k.weight"), kd, sp.embd, xn)
			v := refMatVec(w(p+"attn_v.weight"), kd, sp.embd, xn)
			refBias(s, p+"attn_q.bias", q)
			refBias(s, p+"attn_k.bias", k)
			refBias(s, p+"attn_v.bias", v)
			refHeadNorm(s, p+"attn_q_norm.weight", q, sp.headDim)
			refHeadNorm(s, p+"attn_k_norm.weight", k, sp.headDim)
			refRope(sp, factors, q, sp.heads, pos)
			refRope(sp, factors, k, sp.kvHeads, pos)
			keys[l] = append(keys[l], k)
			vals[l] = append(vals[l], v)
			o := refMatVec(w(p+"attn_output.weight"), sp.embd, qd, refAttention(sp, q, keys[l], vals[l]))
			refBias(s, p+"attn_output.bias", o)
			refAddScaled(x, o, resScale)
			xn = refRMS(x, w(p+"ffn_norm.weight"))
			gate := refMatVec(w(p+"ffn_gate.weight"), sp.ff, sp.embd, xn)
			up := refMatVec(w(p+"ffn_up.weight"), sp.ff, sp.embd, xn)
			for i := range gate {
				gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
			}
			d := refMatVec(w(p+"ffn_down.weight"), sp.embd, sp.ff, gate)
			refAddScaled(x, d, resScale)
		}
		ow := "output.weight"
		if sp.tied {
			ow = "token_embd.weight"
		}
		logits := refMatVec(w(ow), sp.vocab, sp.embd, refRMS(x, w("output_norm.weight")))
		if sp.granite {
			for i := range logits {
				logits[i] /= testLogitScale
			}
		}
		out = append(out, logits)
	}
	return out
}

func randomTokens(r *rand.Rand, n, vocab int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(r.IntN(vocab))
	}
	return t
}

// TestForwardMatchesReference runs random small shapes (odd head counts,
// GQA ratios 1 to 4, partial RoPE, explicit head size, tied output,
// quantized weights) against refForward.
func TestForwardMatchesReference(t *testing.T) {
	tests := []struct {
		sp  synthSpec
		kv  KVType
		tol float64
	}{
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 4, ff: 40, vocab: 50, seed: 1}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 2}, KVF32, 1e-4},
		{synthSpec{embd: 64, layers: 1, heads: 8, kvHeads: 2, ff: 24, vocab: 33, seed: 3, tied: true}, KVF32, 1e-4},
		{synthSpec{embd: 48, layers: 2, heads: 3, kvHeads: 1, ff: 20, vocab: 30, seed: 4}, KVF32, 1e-4},
		{synthSpec{embd: 40, layers: 1, heads: 5, kvHeads: 5, ff: 16, vocab: 20, seed: 5, headDim: 6, ropeDim: 4}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 8, kvHeads: 1, ff: 32, vocab: 40, seed: 6, ropeDim: 2}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 7}, KVF16, 2e-2},
		{synthSpec{embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 64, vocab: 50, seed: 8, wtype: tensor.F16}, KVF32, 2e-2},
		{synthSpec{embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 64, vocab: 50, seed: 9, wtype: tensor.Q8_0}, KVF32, 1e-1},
		{synthSpec{embd: 256, layers: 1, heads: 4, kvHeads: 2, ff: 256, vocab: 20, seed: 10, wtype: tensor.Q6_K}, KVF32, 1e-1},
		// The families' features, each alone and together.
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 21, ropeFreqs: true}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 22, qkvBias: true, oBias: true}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 23, arch: "qwen2", qkvBias: true, tied: true}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 24, arch: "qwen2", qkvBias: true, yarn: 4, yarnOrigCtx: 32}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 1, ff: 40, vocab: 50, seed: 25, arch: "qwen3", qkNorm: true, headDim: 16}, KVF32, 1e-4},
		{synthSpec{embd: 48, layers: 2, heads: 3, kvHeads: 3, ff: 40, vocab: 50, seed: 26, arch: "qwen3", qkNorm: true, headDim: 8, ropeDim: 6}, KVF16, 2e-2},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 27, arch: "granite", granite: true, tied: true}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 28, linear: 2, ropeFreqs: true}, KVF32, 1e-4},
		{synthSpec{embd: 32, layers: 2, heads: 8, kvHeads: 2, ff: 40, vocab: 50, seed: 29, headDim: 8, ropeFreqs: true}, KVF32, 1e-4},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s_e%d_h%d_kv%d_hd%d_rope%d_tied%v_%s_%s_seed%d", tc.sp.arch, tc.sp.embd, tc.sp.heads, tc.sp.kvHeads, tc.sp.headDim, tc.sp.ropeDim, tc.sp.tied, tc.sp.wtype, tc.kv, tc.sp.seed)
		t.Run(name, func(t *testing.T) {
			s := newSynth(t, tc.sp)
			m, err := s.load(t)
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(tc.sp.seed, 5))
			toks := randomTokens(r, 13, tc.sp.vocab)
			want := refForward(s, toks)
			c, err := NewCache(m.Config, tc.kv, 1, 32)
			if err != nil {
				t.Fatal(err)
			}
			pool := kernels.NewPool(2)
			defer pool.Close()
			sess := &session{m: m, c: c, r: NewRunner(m, c, pool, 8)}
			// A prompt of 7 in one batch, then one token at a time.
			got := sess.feed(t, toks[:7], true)
			for _, tok := range toks[7:] {
				got = append(got, sess.feed(t, []int32{tok}, false)[0])
			}
			var worst float64
			for i := range want {
				for j := range want[i] {
					worst = math.Max(worst, math.Abs(float64(got[i][j])-want[i][j]))
				}
			}
			if worst > tc.tol {
				t.Errorf("max |Δ| %.3g against the float64 reference exceeds %g", worst, tc.tol)
			}
		})
	}
}

// TestBatchShapes checks that splitting a sequence into batches, and
// interleaving two sequences in one batch, give the same logits as one
// sequence decoded alone, and that Truncate allows prefix reuse.
func TestBatchShapes(t *testing.T) {
	sp := synthSpec{embd: 32, layers: 2, heads: 4, kvHeads: 2, ff: 40, vocab: 50, seed: 11}
	m, err := newSynth(t, sp).load(t)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	a, b := randomTokens(r, 9, sp.vocab), randomTokens(r, 6, sp.vocab)
	pool := kernels.NewPool(2)
	defer pool.Close()
	alone := func(toks []int32) [][]float32 {
		c, _ := NewCache(m.Config, KVF16, 1, 16)
		s := &session{m: m, c: c, r: NewRunner(m, c, pool, 16)}
		return s.feed(t, toks, true)
	}
	wantA, wantB := alone(a), alone(b)
	close := func(what string, got, want []float32) {
		t.Helper()
		if d := maxDiff(got, want); d > 1e-4 {
			t.Errorf("%s: logits differ by %.3g", what, d)
		}
	}

	c, err := NewCache(m.Config, KVF16, 2, 16)
	if err != nil {
		t.Fatal(err)
	}
	run := NewRunner(m, c, pool, 4)
	// Interleave: batches of up to 4 tokens mixing both sequences.
	var ia, ib int
	for ia < len(a) || ib < len(b) {
		var bt Batch
		var who []string
		for len(bt.Tokens) < 4 && (ia < len(a) || ib < len(b)) {
			if ia < len(a) && (len(bt.Tokens)%2 == 0 || ib >= len(b)) {
				bt.Tokens, bt.Pos, bt.Seq = append(bt.Tokens, a[ia]), append(bt.Pos, int32(ia)), append(bt.Seq, 0)
				who = append(who, fmt.Sprintf("a%d", ia))
				ia++
			} else {
				bt.Tokens, bt.Pos, bt.Seq = append(bt.Tokens, b[ib]), append(bt.Pos, int32(ib)), append(bt.Seq, 1)
				who = append(who, fmt.Sprintf("b%d", ib))
				ib++
			}
			bt.Logits = append(bt.Logits, true)
		}
		rows, err := run.Decode(bt)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range who {
			var idx int
			fmt.Sscanf(w[1:], "%d", &idx)
			if w[0] == 'a' {
				close("interleaved "+w, rows[i], wantA[idx])
			} else {
				close("interleaved "+w, rows[i], wantB[idx])
			}
		}
	}
	if c.Len(0) != len(a) || c.Len(1) != len(b) {
		t.Fatalf("lengths %d, %d", c.Len(0), c.Len(1))
	}
	// Prefix reuse: keep 3 positions of sequence 0, continue with b's tokens.
	if err := c.Truncate(0, 3); err != nil {
		t.Fatal(err)
	}
	cont := append(append([]int32{}, a[:3]...), b...)
	wantCont := alone(cont)
	bt := Batch{Tokens: b, Pos: make([]int32, len(b)), Seq: make([]int32, len(b))}
	for i := range b {
		bt.Pos[i] = int32(3 + i)
	}
	run2 := NewRunner(m, c, pool, 8)
	rows, err := run2.Decode(bt) // nil Logits: the last row only
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("%d rows for nil Logits", len(rows))
	}
	close("after truncate", rows[0], wantCont[len(cont)-1])
	if err := c.Clear(1); err != nil || c.Len(1) != 0 {
		t.Fatalf("Clear: %v, len %d", err, c.Len(1))
	}
}

func TestBatchErrors(t *testing.T) {
	m, err := newSynth(t, smallSpec).load(t)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(m.Config, KVF16, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	r := NewRunner(m, c, pool, 3)
	if _, err := r.Decode(Batch{Tokens: []int32{1, 2}, Pos: []int32{0, 1}, Seq: []int32{0, 0}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		b     Batch
		field string
	}{
		{"empty", Batch{}, "Tokens"},
		{"too many", Batch{Tokens: []int32{1, 1, 1, 1}, Pos: []int32{2, 3, 4, 5}, Seq: []int32{0, 0, 0, 0}}, "Tokens"},
		{"lengths", Batch{Tokens: []int32{1}, Pos: []int32{2, 3}, Seq: []int32{0}}, "Pos"},
		{"logits length", Batch{Tokens: []int32{1}, Pos: []int32{2}, Seq: []int32{0}, Logits: []bool{true, true}}, "Pos"},
		{"token", Batch{Tokens: []int32{40}, Pos: []int32{2}, Seq: []int32{0}}, "Tokens"},
		{"negative token", Batch{Tokens: []int32{-1}, Pos: []int32{2}, Seq: []int32{0}}, "Tokens"},
		{"sequence", Batch{Tokens: []int32{1}, Pos: []int32{0}, Seq: []int32{2}}, "Seq"},
		{"gap", Batch{Tokens: []int32{1}, Pos: []int32{3}, Seq: []int32{0}}, "Pos"},
		{"rewrite", Batch{Tokens: []int32{1}, Pos: []int32{1}, Seq: []int32{0}}, "Pos"},
		{"out of order", Batch{Tokens: []int32{1, 1}, Pos: []int32{1, 0}, Seq: []int32{1, 1}}, "Pos"},
		{"cache full", Batch{Tokens: []int32{1, 1, 1}, Pos: []int32{2, 3, 4}, Seq: []int32{0, 0, 0}}, "Pos"},
	}
	for _, tc := range tests {
		_, err := r.Decode(tc.b)
		var be *BatchError
		if !errors.As(err, &be) || be.Field != tc.field || !errors.Is(err, ErrBatch) {
			t.Errorf("%s: got %v, want a BatchError on %s", tc.name, err, tc.field)
		}
		if c.Len(0) != 2 || c.Len(1) != 0 {
			t.Fatalf("%s: a rejected batch changed the cache: %d, %d", tc.name, c.Len(0), c.Len(1))
		}
	}
}

func TestNewCacheErrors(t *testing.T) {
	cfg := Config{NLayer: 2, NHeadKV: 2, HeadDim: 8}
	tests := []struct {
		kv         KVType
		nSeq, nCtx int
	}{
		{KVType(7), 1, 8}, {KVF16, 0, 8}, {KVF16, 1, 0}, {KVF16, 1, MaxCtx + 1}, {KVF32, 1 << 16, MaxCtx},
	}
	for _, tc := range tests {
		if _, err := NewCache(cfg, tc.kv, tc.nSeq, tc.nCtx); err == nil {
			t.Errorf("NewCache(%v, %d, %d) succeeded", tc.kv, tc.nSeq, tc.nCtx)
		}
	}
	c, err := NewCache(cfg, KVF32, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bytes() != 2*2*3*8*16*4 {
		t.Errorf("Bytes %d", c.Bytes())
	}
	if c.Truncate(3, 1) == nil || c.Truncate(0, -1) == nil || c.Clear(-1) == nil || c.Len(5) != 0 {
		t.Error("out-of-range sequence or length accepted")
	}
	for _, s := range []string{"f16", "f32", "q8_0"} {
		if kv, err := ParseKVType(s); err != nil || kv.String() != s {
			t.Errorf("ParseKVType(%q) = %v, %v", s, kv, err)
		}
	}
	for _, s := range []string{"q4_0", "F16", "", "bf16"} {
		if _, err := ParseKVType(s); err == nil {
			t.Errorf("ParseKVType accepted %q", s)
		}
	}
	// Q8_0 needs whole blocks along the head and does not mix with F32.
	for _, tc := range []struct {
		hd     int
		tk, tv KVType
	}{{8, KVQ8_0, KVF16}, {48, KVF16, KVQ8_0}, {64, KVF32, KVQ8_0}, {64, KVQ8_0, KVF32}} {
		c := Config{NLayer: 2, NHeadKV: 2, HeadDim: tc.hd}
		if _, err := NewCacheTypes(c, tc.tk, tc.tv, 1, 8); err == nil {
			t.Errorf("NewCacheTypes(head dim %d, %v, %v) succeeded", tc.hd, tc.tk, tc.tv)
		}
	}
	// The reported bytes follow the types: 34 bytes per 32 Q8_0 values.
	c64 := Config{NLayer: 2, NHeadKV: 2, HeadDim: 64}
	for _, tc := range []struct {
		tk, tv KVType
		want   int64
	}{
		{KVF16, KVF16, 2 * 2 * 8 * 128 * 2 * 3},
		{KVQ8_0, KVQ8_0, 2 * 2 * 8 * 4 * 34 * 3},
		{KVQ8_0, KVF16, 2 * 8 * (4*34 + 128*2) * 3},
		{KVF16, KVQ8_0, 2 * 8 * (4*34 + 128*2) * 3},
	} {
		c, err := NewCacheTypes(c64, tc.tk, tc.tv, 3, 8)
		if err != nil {
			t.Fatal(err)
		}
		if c.Bytes() != tc.want || CacheBytes(c64, tc.tk, tc.tv, 3, 8) != tc.want || c.TypeK() != tc.tk || c.TypeV() != tc.tv {
			t.Errorf("%v/%v: Bytes %d, CacheBytes %d, want %d", tc.tk, tc.tv, c.Bytes(), CacheBytes(c64, tc.tk, tc.tv, 3, 8), tc.want)
		}
	}
}

// TestDecodeAllocs checks that a decoding step allocates nothing once the
// runner and the pool have seen the batch shape.
func TestDecodeAllocs(t *testing.T) {
	for _, wt := range []tensor.Type{tensor.F32, tensor.F16, tensor.Q8_0} {
		sp := synthSpec{embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 64, vocab: 50, seed: 12, wtype: wt}
		m, err := newSynth(t, sp).load(t)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCache(m.Config, KVF16, 1, 256)
		if err != nil {
			t.Fatal(err)
		}
		pool := kernels.NewPool(2)
		r := NewRunner(m, c, pool, 4)
		b := Batch{Tokens: []int32{3}, Pos: []int32{0}, Seq: []int32{0}, Logits: []bool{true}}
		step := func() {
			b.Pos[0] = int32(c.Len(0))
			if _, err := r.Decode(b); err != nil {
				t.Fatal(err)
			}
		}
		step()
		if n := testing.AllocsPerRun(50, step); n != 0 {
			t.Errorf("%s: %v allocations per step", wt, n)
		}
		r.attnMin = 0 // the heads spread over the pool's workers
		step()
		if n := testing.AllocsPerRun(50, step); n != 0 {
			t.Errorf("%s: %v allocations per step with parallel attention", wt, n)
		}
		pool.Close()
	}
}

// TestDecodeNoLogits checks a batch that asks for no logits still fills
// the cache, so a later step sees it.
func TestDecodeNoLogits(t *testing.T) {
	m, err := newSynth(t, smallSpec).load(t)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	toks := []int32{5, 9, 2, 7}
	c, _ := NewCache(m.Config, KVF16, 1, 8)
	r := NewRunner(m, c, pool, 4)
	rows, err := r.Decode(Batch{Tokens: toks[:3], Pos: []int32{0, 1, 2}, Seq: []int32{0, 0, 0}, Logits: []bool{false, false, false}})
	if err != nil || len(rows) != 0 || c.Len(0) != 3 {
		t.Fatalf("rows %d, len %d, %v", len(rows), c.Len(0), err)
	}
	rows, err = r.Decode(Batch{Tokens: toks[3:], Pos: []int32{3}, Seq: []int32{0}})
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := NewCache(m.Config, KVF16, 1, 8)
	s := &session{m: m, c: c2, r: NewRunner(m, c2, pool, 4)}
	want := s.feed(t, toks, false)[0]
	if d := maxDiff(rows[0], want); d > 1e-5 {
		t.Errorf("logits after a no-logits batch differ by %g", d)
	}
}
