package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	msynth "github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/tensor"
)

// TestRoute checks the expert choice and weights of single tokens:
// best first, the lower index first among equal probabilities, weights
// renormalised to the chosen experts (the sum clamped below at F16's
// smallest normal).
func TestRoute(t *testing.T) {
	tests := []struct {
		name string
		p    []float32
		k    int
		sel  []int32
	}{
		{"top2 of 8", []float32{0.05, 0.3, 0.1, 0.02, 0.4, 0.03, 0.05, 0.05}, 2, []int32{4, 1}},
		{"top1", []float32{0.1, 0.2, 0.7}, 1, []int32{2}},
		{"all", []float32{0.2, 0.5, 0.3}, 3, []int32{1, 2, 0}},
		{"ties keep the lower index", []float32{0.25, 0.25, 0.25, 0.25}, 2, []int32{0, 1}},
		{"tie at the cut", []float32{0.1, 0.3, 0.3, 0.3}, 2, []int32{1, 2}},
		{"tie behind the best", []float32{0.2, 0.2, 0.6}, 2, []int32{2, 0}},
		{"ascending", []float32{0.01, 0.02, 0.03, 0.04, 0.9}, 3, []int32{4, 3, 2}},
		{"tiny probabilities", []float32{1e-6, 2e-6, 3e-6, 0.999994}, 2, []int32{3, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sel, w := make([]int32, tc.k), make([]float32, tc.k)
			route(tc.p, sel, w)
			if !slices.Equal(sel, tc.sel) {
				t.Fatalf("chose %v, want %v", sel, tc.sel)
			}
			var sum float64
			for _, e := range sel {
				sum += float64(tc.p[e])
			}
			s := max(float32(sum), moeMinNormSum)
			for j, e := range sel {
				if want := tc.p[e] / s; w[j] != want {
					t.Errorf("weight %d = %g, want %g", j, w[j], want)
				}
			}
		})
	}
	// A sum below the clamp is divided by the clamp, not renormalised.
	sel, w := make([]int32, 2), make([]float32, 2)
	route([]float32{1e-7, 3e-7, 0}, sel, w)
	if sel[0] != 1 || sel[1] != 0 || w[0] != float32(3e-7)/moeMinNormSum || w[0]+w[1] > 0.01 {
		t.Errorf("tiny sum: %v %v", sel, w)
	}
}

// moeSpec is a small mixture-of-experts model for tests.
type moeSpec struct {
	arch         string // "llama" (Mixtral) or "qwen3moe"
	nExp, used   int
	ffExp        int
	wtype, xtype tensor.Type // attention and expert matrices
}

// newMoESynth builds a model of sp: the dense synthetic model with the
// dense FFN replaced by an F32 router and stacked experts.
func newMoESynth(tb testing.TB, sp moeSpec) *synth {
	tb.Helper()
	s := newSynth(tb, synthSpec{embd: 64, layers: 2, heads: 4, kvHeads: 2, ff: 96, vocab: 60, seed: 5, wtype: sp.wtype,
		arch: sp.arch, qkNorm: sp.arch == "qwen3moe"})
	a := sp.arch + "."
	s.setKey(a+"expert_count", gguf.Uint32Value(uint32(sp.nExp)))
	s.setKey(a+"expert_used_count", gguf.Uint32Value(uint32(sp.used)))
	ff := 96
	if sp.arch == "qwen3moe" {
		s.setKey(a+"expert_feed_forward_length", gguf.Uint32Value(uint32(sp.ffExp)))
		ff = sp.ffExp
	}
	r := rand.New(rand.NewPCG(7, uint64(sp.nExp)))
	rnd := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	ne := uint64(sp.nExp)
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		s.dropTensor(p + "ffn_gate.weight")
		s.dropTensor(p + "ffn_up.weight")
		s.dropTensor(p + "ffn_down.weight")
		s.tensors = append(s.tensors,
			encode(tb, p+"ffn_gate_inp.weight", tensor.F32, []uint64{64, ne}, rnd(64*sp.nExp, 1)),
			encode(tb, p+"ffn_gate_exps.weight", sp.xtype, []uint64{64, uint64(ff), ne}, rnd(64*ff*sp.nExp, 0.125)),
			encode(tb, p+"ffn_up_exps.weight", sp.xtype, []uint64{64, uint64(ff), ne}, rnd(64*ff*sp.nExp, 0.125)),
			encode(tb, p+"ffn_down_exps.weight", sp.xtype, []uint64{uint64(ff), 64, ne}, rnd(64*ff*sp.nExp, 1/math.Sqrt(float64(ff)))))
	}
	return s
}

// moeMeta is baseMeta with Mixtral's expert keys.
func moeMeta() fakeMeta {
	m := maps.Clone(baseMeta())
	m["llama.expert_count"] = uint32(8)
	m["llama.expert_used_count"] = uint32(2)
	return m
}

// TestMoEConfig checks the expert keys: the counts read and bounded,
// qwen3moe's expert width, and the refusal of the variants this block
// does not compute.
func TestMoEConfig(t *testing.T) {
	type edit = func(fakeMeta)
	set := func(k string, v any) edit { return func(m fakeMeta) { m[k] = v } }
	del := func(k string) edit { return func(m fakeMeta) { delete(m, k) } }
	tests := []struct {
		name    string
		edits   []edit
		wantKey string // "" = success
		wantErr error
		check   func(Config) bool
	}{
		{name: "mixtral", check: func(c Config) bool { return c.NExpert == 8 && c.NExpertUsed == 2 && c.NFFExp == c.NFF }},
		{name: "one expert of one", edits: []edit{set("llama.expert_count", uint32(1)), set("llama.expert_used_count", uint32(1))},
			check: func(c Config) bool { return c.NExpert == 1 && c.NExpertUsed == 1 }},
		{name: "no experts", edits: []edit{del("llama.expert_count"), del("llama.expert_used_count")},
			check: func(c Config) bool { return c.NExpert == 0 && c.NExpertUsed == 0 }},
		{name: "qwen3moe width", edits: []edit{renameArch("qwen3moe"), set("qwen3moe.expert_feed_forward_length", uint32(48))},
			check: func(c Config) bool { return c.NFFExp == 48 && c.NFF == 172 && c.RopeNeoX }},
		{name: "qwen3moe default width", edits: []edit{renameArch("qwen3moe")},
			check: func(c Config) bool { return c.NFFExp == 172/2 }},
		{name: "qwen3moe without experts", edits: []edit{renameArch("qwen3moe"), del("qwen3moe.expert_count")},
			wantKey: "qwen3moe.expert_count", wantErr: ErrMissing},
		{name: "qwen3moe zero width", edits: []edit{renameArch("qwen3moe"), set("qwen3moe.feed_forward_length", uint32(1))},
			wantKey: "qwen3moe.expert_feed_forward_length", wantErr: ErrInvalid},
		{name: "too many experts", edits: []edit{set("llama.expert_count", uint32(MaxExperts+1))}, wantKey: "llama.expert_count", wantErr: ErrInvalid},
		{name: "huge expert count", edits: []edit{set("llama.expert_count", uint32(math.MaxUint32))}, wantKey: "llama.expert_count", wantErr: ErrInvalid},
		{name: "more used than experts", edits: []edit{set("llama.expert_used_count", uint32(9))}, wantKey: "llama.expert_used_count", wantErr: ErrInvalid},
		{name: "none used", edits: []edit{set("llama.expert_used_count", uint32(0))}, wantKey: "llama.expert_used_count", wantErr: ErrInvalid},
		{name: "too many used", edits: []edit{set("llama.expert_count", uint32(512)), set("llama.expert_used_count", uint32(MaxExpertsUsed+1))},
			wantKey: "llama.expert_used_count", wantErr: ErrInvalid},
		{name: "used count missing", edits: []edit{del("llama.expert_used_count")}, wantKey: "llama.expert_used_count", wantErr: ErrMissing},
		{name: "used count per layer", edits: []edit{set("llama.expert_used_count", "2,2")}, wantKey: "llama.expert_used_count", wantErr: ErrInvalid},
		{name: "expert groups", edits: []edit{set("llama.expert_group_count", uint32(4))}, wantKey: "llama.expert_group_count", wantErr: ErrUnsupported},
		{name: "one group", edits: []edit{set("llama.expert_group_count", uint32(1))}, check: func(c Config) bool { return c.NExpert == 8 }},
		{name: "shared experts", edits: []edit{set("llama.expert_shared_count", uint32(1))}, wantKey: "llama.expert_shared_count", wantErr: ErrUnsupported},
		{name: "shared expert width", edits: []edit{set("llama.expert_shared_feed_forward_length", uint32(64))},
			wantKey: "llama.expert_shared_feed_forward_length", wantErr: ErrUnsupported},
		{name: "sigmoid gating", edits: []edit{set("llama.expert_gating_func", uint32(2))}, wantKey: "llama.expert_gating_func", wantErr: ErrUnsupported},
		{name: "softmax gating", edits: []edit{set("llama.expert_gating_func", uint32(1))}, check: func(c Config) bool { return c.NExpert == 8 }},
		{name: "scaled weights", edits: []edit{set("llama.expert_weights_scale", float32(2.5))}, wantKey: "llama.expert_weights_scale", wantErr: ErrUnsupported},
		{name: "unnormalised weights", edits: []edit{set("llama.expert_weights_norm", false)}, wantKey: "llama.expert_weights_norm", wantErr: ErrUnsupported},
		{name: "experts in a dense family", edits: []edit{renameArch("qwen3")}, wantKey: "qwen3.expert_count", wantErr: ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := moeMeta()
			for _, e := range tc.edits {
				e(m)
			}
			c, err := configFrom(m, errFakeNotFound)
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !tc.check(c) {
					t.Fatalf("%+v", c)
				}
				if err := c.validExperts(); err != nil {
					t.Fatal(err)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tc.wantKey || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want a KeyError for %s wrapping %v", err, tc.wantKey, tc.wantErr)
			}
		})
	}
	good := Config{NExpert: 8, NExpertUsed: 2, NFFExp: 16}
	for i, bad := range []Config{{NExpertUsed: 1}, {NExpert: 8}, {NExpert: 8, NExpertUsed: 9, NFFExp: 16}, {NExpert: 8, NExpertUsed: 2},
		{NExpert: MaxExperts + 1, NExpertUsed: 2, NFFExp: 16}, {NExpert: 8, NExpertUsed: 2, NFFExp: MaxFF + 1}} {
		if err := bad.validExperts(); !errors.Is(err, ErrInvalid) {
			t.Errorf("case %d: %+v: %v", i, bad, err)
		}
	}
	if err := good.validExperts(); err != nil {
		t.Error(err)
	}
}

// TestMoELoad checks a mixture-of-experts file binds each expert as a
// view of its stacked tensor, and that files with experts of the wrong
// shape, the old per-expert layout or a dense FFN beside the experts are
// refused naming the tensor.
func TestMoELoad(t *testing.T) {
	sp := moeSpec{arch: "llama", nExp: 4, used: 2, wtype: tensor.F32, xtype: tensor.Q8_0}
	ms := newMoESynth(t, sp)
	m, err := ms.load(t)
	if err != nil {
		t.Fatal(err)
	}
	mo := m.Layers[1].MoE
	if mo == nil || len(mo.Gate) != 4 || len(mo.Up) != 4 || len(mo.Down) != 4 || mo.Router.Rows != 4 || mo.Router.Cols != 64 {
		t.Fatalf("experts %+v", mo)
	}
	if mo.Down[3].Rows != 64 || mo.Down[3].Cols != 96 || mo.Gate[2].Rows != 96 || mo.Gate[2].Type != tensor.Q8_0 {
		t.Errorf("expert shapes %+v %+v", mo.Down[3], mo.Gate[2])
	}
	if m.Layers[0].Gate.Rows != 0 || m.Config.NExpert != 4 {
		t.Errorf("dense FFN bound beside the experts")
	}
	// F32 attention with Q8_0 experts is not an all-F32 model (ggml's exact
	// orders are for those); with F32 experts it is.
	if m.allF32() {
		t.Error("Q8_0 experts count as F32")
	}
	sp32 := sp
	sp32.xtype = tensor.F32
	if m32, err := newMoESynth(t, sp32).load(t); err != nil || !m32.allF32() {
		t.Errorf("F32 experts: %v, all F32 %v", err, err == nil && m32.allF32())
	}
	// Expert e's view is the e-th quarter of the tensor's bytes, and no
	// more (its capacity ends there).
	data := ms.tensor("blk.1.ffn_up_exps.weight").data
	size := len(data) / 4
	for e, x := range mo.Up {
		if !slices.Equal(x.Data, data[e*size:(e+1)*size]) || cap(x.Data) != size {
			t.Errorf("expert %d is not the quarter %d of ffn_up_exps", e, e)
		}
	}

	tests := []struct {
		name    string
		edit    func(s *synth)
		tensor  string
		wantErr error
	}{
		{"too few experts", func(s *synth) {
			x := s.tensor("blk.0.ffn_up_exps.weight")
			x.dims[2], x.data = 3, x.data[:len(x.data)/4*3]
		}, "blk.0.ffn_up_exps.weight", ErrInvalid},
		{"swapped dims", func(s *synth) {
			d := s.tensor("blk.1.ffn_down_exps.weight").dims
			d[0], d[1] = d[1], d[0]
		}, "blk.1.ffn_down_exps.weight", ErrInvalid},
		{"two-dimensional experts", func(s *synth) {
			x := s.tensor("blk.0.ffn_gate_exps.weight")
			x.dims = []uint64{64, 96 * 4}
		}, "blk.0.ffn_gate_exps.weight", ErrInvalid},
		{"router missing", func(s *synth) { s.dropTensor("blk.1.ffn_gate_inp.weight") }, "blk.1.ffn_gate_inp.weight", ErrMissing},
		{"router of another count", func(s *synth) { s.tensor("blk.0.ffn_gate_inp.weight").dims = []uint64{32, 8} }, "blk.0.ffn_gate_inp.weight", ErrInvalid},
		{"split experts", func(s *synth) {
			x := s.tensor("blk.0.ffn_gate_exps.weight")
			s.dropTensor(x.name)
			one := *x
			one.name, one.dims, one.data = "blk.0.ffn_gate.0.weight", []uint64{64, 96}, x.data[:len(x.data)/4]
			s.tensors = append(s.tensors, &one)
		}, "blk.0.ffn_gate.0.weight", ErrUnsupported},
		{"dense FFN beside the experts", func(s *synth) {
			s.tensors = append(s.tensors, encode(t, "blk.0.ffn_gate.weight", tensor.F32, []uint64{64, 96}, make([]float32, 64*96)))
		}, "blk.0.ffn_gate.weight", ErrUnsupported},
		{"unsupported expert type", func(s *synth) {
			x := s.tensor("blk.1.ffn_up_exps.weight")
			x.typ, x.data = tensor.I32, make([]byte, 64*96*4*4)
		}, "blk.1.ffn_up_exps.weight", ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newMoESynth(t, sp)
			tc.edit(s)
			_, err := s.load(t)
			var te *TensorError
			if !errors.As(err, &te) || te.Name != tc.tensor || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want a TensorError for %s wrapping %v", err, tc.tensor, tc.wantErr)
			}
		})
	}
}

// rowArith is a's arithmetic with every matrix product taken one row at a
// time, so that a row's result does not depend on the rows beside it.
func rowArith(a arith) arith {
	mm := a.matmul
	a.matmul = func(out []float32, w kernels.Matrix, x []float32, n int, group []int32) error {
		for t := range n {
			if err := mm(out[t*w.Rows:(t+1)*w.Rows], w, x[t*w.Cols:(t+1)*w.Cols], 1, group[t:t+1]); err != nil {
				return err
			}
		}
		return nil
	}
	return a
}

// moeByToken computes the experts' output of one normed row x as the
// block's definition says, token by token and slot by slot, with r's
// arithmetic.
func moeByToken(t *testing.T, r *Runner, l int, x []float32) []float32 {
	t.Helper()
	cfg := r.m.Config
	mo := r.m.Layers[l].MoE
	one := []int32{1}
	p := make([]float32, cfg.NExpert)
	if err := r.ar.matmul(p, mo.Router, x, 1, one); err != nil {
		t.Fatal(err)
	}
	sel, w := make([]int32, cfg.NExpertUsed), make([]float32, cfg.NExpertUsed)
	if cfg.MoEWeightsSoftmax {
		// gpt-oss: the router's bias, then the softmax of the chosen logits.
		kernels.Add(p, p, mo.RouterBias)
		topK(p, sel)
		for j, e := range sel {
			w[j] = p[e]
		}
		r.ar.softmax(w)
	} else {
		r.ar.softmax(p)
		route(p, sel, w)
	}
	g, u, d := make([]float32, cfg.NFFExp), make([]float32, cfg.NFFExp), make([]float32, cfg.NEmbd)
	out := make([]float32, cfg.NEmbd)
	for j, e := range sel {
		for _, mm := range []struct {
			out []float32
			w   kernels.Matrix
			x   []float32
		}{{g, mo.Gate[e], x}, {u, mo.Up[e], x}} {
			if err := r.ar.matmul(mm.out, mm.w, mm.x, 1, one); err != nil {
				t.Fatal(err)
			}
		}
		if mo.GateBias != nil {
			kernels.Add(g, g, mo.GateBias[e])
			kernels.Add(u, u, mo.UpBias[e])
		}
		if cfg.MoESwiGLULimit != 0 {
			swigluOAI(g, g, u, cfg.MoESwiGLUAlpha, cfg.MoESwiGLULimit)
		} else {
			r.ar.siluMul(g, g, u)
		}
		if err := r.ar.matmul(d, mo.Down[e], g, 1, one); err != nil {
			t.Fatal(err)
		}
		if mo.DownBias != nil {
			kernels.Add(d, d, mo.DownBias[e])
		}
		for i := range d {
			if j == 0 {
				out[i] = d[i] * w[j]
			} else {
				out[i] += float32(d[i] * w[j]) // rounded, never fused: as the runner's separate steps
			}
		}
	}
	return out
}

// TestMoEBatchedEqualsPerToken checks that the experts' products batched
// per expert over a batch give each token bit for bit what computing it
// alone, slot by slot, gives with the same products; and that experts no
// token chose are never read (their bytes poisoned, the output unchanged).
func TestMoEBatchedEqualsPerToken(t *testing.T) {
	for _, sp := range []moeSpec{
		{arch: "llama", nExp: 8, used: 2, wtype: tensor.F16, xtype: tensor.Q8_0},
		{arch: "qwen3moe", nExp: 16, used: 8, ffExp: 32, wtype: tensor.F32, xtype: tensor.F16},
		{arch: "qwen3moe", nExp: 32, used: 1, ffExp: 64, wtype: tensor.Q8_0, xtype: tensor.F32},
		// gpt-oss's layout: MXFP4 experts, the rest Q8_0.
		{arch: "llama", nExp: 8, used: 4, wtype: tensor.Q8_0, xtype: tensor.MXFP4},
	} {
		t.Run(fmt.Sprintf("%s-%d-%d-%s", sp.arch, sp.nExp, sp.used, sp.xtype), func(t *testing.T) {
			m, err := newMoESynth(t, sp).load(t)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCache(m.Config, KVF16, 1, 32)
			if err != nil {
				t.Fatal(err)
			}
			pool := kernels.NewPool(3)
			defer pool.Close()
			r := NewRunner(m, c, pool, 16)
			r.ar = rowArith(r.ar)
			// Every expert product through the arithmetic, one row at a
			// time (TestMoEGroupedProducts compares the grouped pool jobs
			// with the per-expert products).
			r.moe.prod = nil
			e := m.Config.NEmbd
			rng := rand.New(rand.NewPCG(1, 2))
			for _, n := range []int{1, 3, 16} {
				for i := range r.xn[:n*e] {
					r.xn[i] = float32(rng.NormFloat64())
				}
				xn := slices.Clone(r.xn[:n*e])
				if err := r.moeFFN(1, n); err != nil {
					t.Fatal(err)
				}
				got := slices.Clone(r.proj[:n*e])
				for tok := range n {
					want := moeByToken(t, r, 1, xn[tok*e:(tok+1)*e])
					for i, v := range want {
						if math.Float32bits(v) != math.Float32bits(got[tok*e+i]) {
							t.Fatalf("%d tokens: token %d value %d: batched %g, alone %g", n, tok, i, got[tok*e+i], v)
						}
					}
				}
				// Poison every expert this batch did not choose.
				chosen := map[int32]bool{}
				for _, x := range r.moe.sel[:n*sp.used] {
					chosen[x] = true
				}
				if len(chosen) == sp.nExp {
					continue
				}
				mo := *m.Layers[1].MoE
				saved := mo
				mo.Gate, mo.Up, mo.Down = slices.Clone(mo.Gate), slices.Clone(mo.Up), slices.Clone(mo.Down)
				for x := range sp.nExp {
					if !chosen[int32(x)] {
						for _, ms := range [][]kernels.Matrix{mo.Gate, mo.Up, mo.Down} {
							ms[x].Data = slices.Repeat([]byte{0xff}, len(ms[x].Data))
						}
					}
				}
				m.Layers[1].MoE = &mo
				copy(r.xn, xn)
				if err := r.moeFFN(1, n); err != nil {
					t.Fatal(err)
				}
				m.Layers[1].MoE = &saved
				for i, v := range got {
					if math.Float32bits(v) != math.Float32bits(r.proj[i]) {
						t.Fatalf("%d tokens: value %d is %g with the unchosen experts poisoned, %g before", n, i, r.proj[i], v)
					}
				}
			}
		})
	}
}

// TestMoEGroupedProducts checks that multiplying a group's experts in one
// pool job per stage (kernels.Products), in groups of any size, gives bit
// for bit what one product per expert (MatMul) gives.
func TestMoEGroupedProducts(t *testing.T) {
	for _, sp := range []moeSpec{
		{arch: "llama", nExp: 8, used: 2, wtype: tensor.F16, xtype: tensor.Q8_0},
		{arch: "qwen3moe", nExp: 32, used: 8, ffExp: 64, wtype: tensor.Q8_0, xtype: tensor.Q8_0},
		{arch: "llama", nExp: 8, used: 4, wtype: tensor.Q8_0, xtype: tensor.MXFP4},
		{arch: "qwen3moe", nExp: 16, used: 2, ffExp: 32, wtype: tensor.F32, xtype: tensor.Q4_0},
	} {
		t.Run(fmt.Sprintf("%s-%d-%d-%s", sp.arch, sp.nExp, sp.used, sp.xtype), func(t *testing.T) {
			m, err := newMoESynth(t, sp).load(t)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCache(m.Config, KVF16, 1, 32)
			if err != nil {
				t.Fatal(err)
			}
			pool := kernels.NewPool(2)
			defer pool.Close()
			r := NewRunner(m, c, pool, 16)
			prod, rows := r.moe.prod, r.moe.rows
			if prod == nil {
				t.Fatalf("%s experts are not batched", sp.xtype)
			}
			e := m.Config.NEmbd
			rng := rand.New(rand.NewPCG(3, 4))
			for _, n := range []int{1, 3, 16} {
				for i := range r.xn[:n*e] {
					r.xn[i] = float32(rng.NormFloat64())
				}
				xn := slices.Clone(r.xn[:n*e])
				var want []float32
				for _, v := range []struct {
					name string
					prod *kernels.Products
					rows int
				}{{"per expert", nil, rows}, {"one group", prod, rows}, {"groups of the batch's size", prod, n}} {
					r.moe.prod, r.moe.rows = v.prod, v.rows
					copy(r.xn, xn)
					if err := r.moeFFN(1, n); err != nil {
						t.Fatal(err)
					}
					got := r.proj[:n*e]
					if want == nil {
						want = slices.Clone(got)
						continue
					}
					for i, x := range want {
						if math.Float32bits(x) != math.Float32bits(got[i]) {
							t.Fatalf("%d tokens, %s: value %d is %g, per expert %g", n, v.name, i, got[i], x)
						}
					}
				}
			}
		})
	}
}

// TestMoEThreadsInvariant decodes the tiny Mixtral and Qwen3-MoE shapes
// of package synth (a prompt in one batch, then single tokens) with pools
// of 1 to 4 threads: the logits must be the same bits.
func TestMoEThreadsInvariant(t *testing.T) {
	for _, tc := range []struct {
		shape string
		ft    msynth.FileType
	}{{"mixtral-tiny", msynth.Q4_K_M}, {"qwen3moe-tiny", msynth.F16}} {
		t.Run(tc.shape, func(t *testing.T) {
			m, err := Load(openShape(t, tc.shape, tc.ft, 3))
			if err != nil {
				t.Fatal(err)
			}
			prompt := randomTokens(rand.New(rand.NewPCG(4, 4)), 12, m.Config.NVocab)
			var want [][]float32
			for threads := 1; threads <= 4; threads++ {
				c, err := NewCache(m.Config, KVF16, 1, 32)
				if err != nil {
					t.Fatal(err)
				}
				pool := kernels.NewPool(threads)
				s := &session{m: m, c: c, r: NewRunner(m, c, pool, 16)}
				got := s.feed(t, prompt, true)
				for _, tok := range []int32{5, 17, 300} {
					got = append(got, s.feed(t, []int32{tok}, false)...)
				}
				pool.Close()
				if threads == 1 {
					want = got
					continue
				}
				for i := range want {
					for j, v := range want[i] {
						if math.Float32bits(v) != math.Float32bits(got[i][j]) {
							t.Fatalf("%d threads: row %d logit %d is %g, one thread %g", threads, i, j, got[i][j], v)
						}
					}
				}
			}
		})
	}
}

// FuzzMoEConfig feeds arbitrary expert keys through the config reader:
// it must return a typed error or a config whose expert fields are valid.
func FuzzMoEConfig(f *testing.F) {
	f.Add(uint32(8), uint32(2), uint32(0), uint32(0), uint32(1), float32(1), uint32(0), false)
	f.Add(uint32(128), uint32(8), uint32(0), uint32(0), uint32(1), float32(1), uint32(768), true)
	f.Add(uint32(1<<31), uint32(1<<31), uint32(2), uint32(1), uint32(2), float32(-1), uint32(1<<30), true)
	f.Fuzz(func(t *testing.T, n, used, groups, shared, gating uint32, scale float32, ff uint32, qwen bool) {
		m := moeMeta()
		arch := "llama"
		if qwen {
			renameArch("qwen3moe")(m)
			arch = "qwen3moe"
			m[arch+".expert_feed_forward_length"] = ff
		}
		m[arch+".expert_count"], m[arch+".expert_used_count"] = n, used
		m[arch+".expert_group_count"], m[arch+".expert_shared_count"] = groups, shared
		m[arch+".expert_gating_func"], m[arch+".expert_weights_scale"] = gating, scale
		c, err := configFrom(m, errFakeNotFound)
		if err != nil {
			var ke *KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		c.NVocab = 32 // the loader fills it from the tokenizer or token_embd
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v (%+v)", err, c)
		}
		if qwen && c.NExpert == 0 {
			t.Fatal("qwen3moe accepted without experts")
		}
	})
}

// FuzzRoute checks route on arbitrary probabilities (NaN and infinities
// among them): the chosen experts are distinct and in range, and finite
// probabilities come best first.
func FuzzRoute(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 63, 0, 0, 0, 0}, uint8(2))
	f.Add([]byte{0, 0, 192, 127, 0, 0, 128, 127, 0, 0, 128, 255, 1, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, k uint8) {
		p := make([]float32, len(b)/4)
		for i := range p {
			p[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		n := int(k)%max(len(p), 1) + 1
		if len(p) == 0 {
			return
		}
		sel, w := make([]int32, n), make([]float32, n)
		route(p, sel, w)
		seen := map[int32]bool{}
		for j, e := range sel {
			if e < 0 || int(e) >= len(p) || seen[e] {
				t.Fatalf("chose %v of %d", sel, len(p))
			}
			seen[e] = true
			if j > 0 && !math.IsNaN(float64(p[e])) && !math.IsNaN(float64(p[sel[j-1]])) && p[e] > p[sel[j-1]] {
				t.Fatalf("chose %v: %g before %g", sel, p[sel[j-1]], p[e])
			}
		}
	})
}

// TestExpertScratchBytes checks the budget covers what a Runner's expert
// scratch holds, and is 0 without experts.
func TestExpertScratchBytes(t *testing.T) {
	for _, c := range []Config{{NEmbd: 2048, NExpert: 128, NExpertUsed: 8, NFFExp: 768}, {NEmbd: 64, NExpert: 8, NExpertUsed: 2, NFFExp: 96}} {
		for _, batch := range []int{1, 512} {
			s := newMoEScratch(&Model{Config: c}, batch)
			held := float64(4*(len(s.probs)+len(s.sel)+len(s.wts)+len(s.pairs)+len(s.ones)+len(s.xg)+len(s.gate)+len(s.up)+len(s.down)+len(s.slots))) +
				c.expertArenaBytes(batch)
			if got := c.ExpertScratchBytes(batch); got < held || got > 1.01*held {
				t.Errorf("%+v batch %d: budget %g, scratch %g", c, batch, got, held)
			}
		}
	}
	if got := (Config{NEmbd: 64}).ExpertScratchBytes(512); got != 0 {
		t.Errorf("dense: %g", got)
	}
}
