package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	msynth "github.com/lisa-llm/lisa/model/synth"
	"github.com/lisa-llm/lisa/model/synth/vocab"
	"github.com/lisa-llm/lisa/tensor"
)

// gptossSmall is gpt-oss's layout at the smallest widths its synthetic
// vocabulary allows: queries wider than the residual stream, four query
// heads per KV head, a window of 2 on the even layer, four experts two
// per token, YaRN 32 over 16.
var gptossSmall = msynth.Shape{Name: "gpt-oss", Arch: msynth.ArchGptOss, NEmbd: 8, NLayer: 2, NHead: 4, NHeadKV: 1,
	HeadDim: 4, HeadDimKey: true, NFF: 8, NVocab: 460, NCtx: 64, RopeBase: 150000, SlidingWindow: 2,
	Rope: msynth.RopeScaling{Type: "yarn", Factor: 32, OrigCtx: 16}, NExpert: 4, NExpertUsed: 2, NFFExp: 4,
	Vocab: vocab.Spec{Family: vocab.GptOss, NVocab: 460, SpecialAt: 420}}

// gptossBytes writes gptossSmall (F32).
func gptossBytes(tb testing.TB) []byte {
	tb.Helper()
	var b bytes.Buffer
	if _, err := msynth.Write(&b, msynth.Options{Shape: gptossSmall, Type: msynth.F32, Seed: 5, Threads: 1}); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// gguEdit changes a file rewritten by rewriteGGUF: kv edits the metadata,
// tensor a tensor (returning false drops it).
type gguEdit struct {
	kv     func([]gguf.KV) []gguf.KV
	tensor func(name string, typ *tensor.Type, dims *[]uint64, data *[]byte) bool
}

// rewriteGGUF parses data and writes it again with the edits applied.
func rewriteGGUF(tb testing.TB, data []byte, e gguEdit) []byte {
	tb.Helper()
	f, err := gguf.ParseBytes(data, gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	kvs := slices.Clone(f.KV)
	if e.kv != nil {
		kvs = e.kv(kvs)
	}
	w := gguf.NewWriter()
	for _, kv := range kvs {
		if err := w.Add(kv.Key, kv.Value); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		d, err := f.TensorData(ti)
		if err != nil {
			tb.Fatal(err)
		}
		typ, dims, d := ti.Type, slices.Clone(ti.Dims), slices.Clone(d)
		if e.tensor != nil && !e.tensor(ti.Name, &typ, &dims, &d) {
			continue
		}
		if err := w.AddTensor(ti.Name, typ, dims, d); err != nil {
			tb.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// loadBytes parses and loads a model file.
func loadBytes(tb testing.TB, data []byte) (*Model, error) {
	tb.Helper()
	f, err := gguf.ParseBytes(data, gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	return Load(f)
}

// setKV returns an edit that sets key to v (adding it when absent); a
// zero Value deletes it.
func setKV(key string, v gguf.Value) func([]gguf.KV) []gguf.KV {
	return func(kvs []gguf.KV) []gguf.KV {
		for i := range kvs {
			if kvs[i].Key == key {
				if v == (gguf.Value{}) {
					return slices.Delete(kvs, i, i+1)
				}
				kvs[i].Value = v
				return kvs
			}
		}
		if v == (gguf.Value{}) {
			return kvs
		}
		return append(kvs, gguf.KV{Key: key, Value: v})
	}
}

// TestGptOssLoad checks what the family reads and binds from a file of
// gpt-oss's layout.
func TestGptOssLoad(t *testing.T) {
	m, err := loadBytes(t, gptossBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.NFFExp != 4 || c.NSWA != 2 || c.SWAPattern != 2 || !c.LayerSWA(0) || c.LayerSWA(1) || !c.RopeNeoX ||
		c.RopeScaling != RopeScalingYaRN || c.RopeScale != 1.0/32 || c.RopeOrigCtx != 16 || c.RopeExtFactor != 1 ||
		!c.MoEBias || !c.MoEWeightsSoftmax || c.MoESwiGLULimit != 7 || c.MoESwiGLUAlpha != 1.702 ||
		c.AttnScale != 0.5 || c.QDim() != 16 || c.TiedOutput || c.RopeBaseSWA != 0 {
		t.Fatalf("config %+v", c)
	}
	for l, ly := range m.Layers {
		mo := ly.MoE
		if len(ly.Sinks) != 4 || len(ly.QBias) != 16 || len(ly.KBias) != 4 || len(ly.VBias) != 4 || len(ly.OBias) != 8 ||
			len(ly.FFNNorm) != 8 || ly.AttnPostNorm != nil || mo == nil || len(mo.RouterBias) != 4 ||
			len(mo.GateBias) != 4 || len(mo.GateBias[3]) != 4 || len(mo.UpBias[0]) != 4 || len(mo.DownBias[2]) != 8 {
			t.Fatalf("layer %d: %+v", l, ly)
		}
	}
	if m.RopeFor(0, 64) != m.Rope || m.RopeFor(1, 64) != m.Rope {
		t.Error("the windowed layers have a rope of their own without rope.freq_base_swa")
	}
}

// TestGptOssKeys checks the optional keys: the window pattern as
// llama.cpp's set_swa_pattern takes it, and a base of the windowed
// layers' own.
func TestGptOssKeys(t *testing.T) {
	base := gptossBytes(t)
	for _, tc := range []struct {
		name  string
		key   string
		v     gguf.Value
		check func(*Model) bool
	}{
		{"pattern 1 windows no layer", "gpt-oss.attention.sliding_window_pattern", gguf.Uint32Value(1),
			func(m *Model) bool { return !m.Config.LayerSWA(0) && !m.Config.LayerSWA(1) }},
		{"pattern 0 windows every layer", "gpt-oss.attention.sliding_window_pattern", gguf.Uint32Value(0),
			func(m *Model) bool { return m.Config.LayerSWA(0) && m.Config.LayerSWA(1) }},
		{"pattern 3", "gpt-oss.attention.sliding_window_pattern", gguf.Uint32Value(3),
			func(m *Model) bool { return m.Config.LayerSWA(0) && m.Config.LayerSWA(1) && m.Config.SWAPattern == 3 }},
		{"windowed base", "gpt-oss.rope.freq_base_swa", gguf.Float32Value(10000),
			func(m *Model) bool {
				p := m.RopeSWA.Params()
				return m.RopeFor(0, 64) == m.RopeSWA && m.RopeFor(1, 64) == m.Rope && p.Base == 10000 &&
					p.FreqScale == 1.0/32 && p.ExtFactor == 1 && m.Rope.Params().Base == 150000
			}},
		{"yarn beta keys ignored as llama.cpp does for gpt-oss", "gpt-oss.rope.scaling.yarn_beta_fast", gguf.Float32Value(8),
			func(m *Model) bool { return m.Rope.Params().BetaFast == 32 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := loadBytes(t, rewriteGGUF(t, base, gguEdit{kv: setKV(tc.key, tc.v)}))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(m) {
				t.Errorf("%+v", m.Config)
			}
		})
	}
}

// TestGptOssHostile checks that malformed gpt-oss files are refused at
// load with a typed error naming the key or tensor.
func TestGptOssHostile(t *testing.T) {
	base := gptossBytes(t)
	f32 := func(vs ...float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	retensor := func(target string, fn func(typ *tensor.Type, dims *[]uint64, data *[]byte) bool) gguEdit {
		return gguEdit{tensor: func(name string, typ *tensor.Type, dims *[]uint64, data *[]byte) bool {
			if name != target {
				return true
			}
			return fn(typ, dims, data)
		}}
	}
	// reshape gives tensor target the dimensions dims and the data data
	// makes of its old data, each unchanged where nil.
	reshape := func(target string, dims []uint64, data func(old []byte) []byte) gguEdit {
		return retensor(target, func(_ *tensor.Type, d *[]uint64, b *[]byte) bool {
			if dims != nil {
				*d = dims
			}
			if data != nil {
				*b = data(*b)
			}
			return true
		})
	}
	values := func(vs ...float32) func([]byte) []byte { return func([]byte) []byte { return f32(vs...) } }
	first := func(n int) func([]byte) []byte { return func(b []byte) []byte { return b[:n] } }
	drop := func(name string) gguEdit {
		return retensor(name, func(*tensor.Type, *[]uint64, *[]byte) bool { return false })
	}
	key := func(k string, v gguf.Value) gguEdit { return gguEdit{kv: setKV(k, v)} }
	for _, tc := range []struct {
		name    string
		edit    gguEdit
		key     string // the KeyError's key, or
		tensor  string // the TensorError's tensor
		wantErr error
	}{
		{"expert width missing", key("gpt-oss.expert_feed_forward_length", gguf.Value{}), "gpt-oss.expert_feed_forward_length", "", ErrMissing},
		{"expert width 0", key("gpt-oss.expert_feed_forward_length", gguf.Uint32Value(0)), "gpt-oss.expert_feed_forward_length", "", ErrInvalid},
		{"window missing", key("gpt-oss.attention.sliding_window", gguf.Value{}), "gpt-oss.attention.sliding_window", "", ErrMissing},
		{"window 0", key("gpt-oss.attention.sliding_window", gguf.Uint32Value(0)), "gpt-oss.attention.sliding_window", "", ErrInvalid},
		{"window a string", key("gpt-oss.attention.sliding_window", gguf.StringValue("128")), "gpt-oss.attention.sliding_window", "", ErrInvalid},
		{"pattern too large", key("gpt-oss.attention.sliding_window_pattern", gguf.Uint32Value(MaxLayers+1)),
			"gpt-oss.attention.sliding_window_pattern", "", ErrInvalid},
		{"windowed base NaN", key("gpt-oss.rope.freq_base_swa", gguf.Float32Value(float32(math.NaN()))), "gpt-oss.rope.freq_base_swa", "", ErrInvalid},
		{"no experts", key("gpt-oss.expert_count", gguf.Value{}), "gpt-oss.expert_count", "", ErrMissing},
		{"more experts used than there are", key("gpt-oss.expert_used_count", gguf.Uint32Value(5)), "gpt-oss.expert_used_count", "", ErrInvalid},
		{"too many experts", key("gpt-oss.expert_count", gguf.Uint32Value(MaxExperts+1)), "gpt-oss.expert_count", "", ErrInvalid},
		{"rotary width not the head's", key("gpt-oss.rope.dimension_count", gguf.Uint32Value(2)), "gpt-oss.rope.dimension_count", "", ErrInvalid},
		{"sinks missing", drop("blk.1.attn_sinks.weight"), "", "blk.1.attn_sinks.weight", ErrMissing},
		{"sinks per KV head", reshape("blk.0.attn_sinks.weight", []uint64{1}, values(0.5)), "", "blk.0.attn_sinks.weight", ErrInvalid},
		{"sinks NaN", reshape("blk.0.attn_sinks.weight", nil, values(0, 1, float32(math.NaN()), 2)), "", "blk.0.attn_sinks.weight", ErrInvalid},
		{"sinks quantized", retensor("blk.0.attn_sinks.weight", func(typ *tensor.Type, d *[]uint64, b *[]byte) bool {
			*typ, *d, *b = tensor.Q8_0, []uint64{32}, make([]byte, 34)
			return true
		}), "", "blk.0.attn_sinks.weight", ErrInvalid},
		{"query bias missing", drop("blk.0.attn_q.bias"), "", "blk.0.attn_q.bias", ErrMissing},
		{"output bias missing", drop("blk.1.attn_output.bias"), "", "blk.1.attn_output.bias", ErrMissing},
		{"FFN norm missing", drop("blk.0.post_attention_norm.weight"), "", "blk.0.post_attention_norm.weight", ErrMissing},
		{"router bias missing", drop("blk.0.ffn_gate_inp.bias"), "", "blk.0.ffn_gate_inp.bias", ErrMissing},
		{"router bias of 3", reshape("blk.0.ffn_gate_inp.bias", []uint64{3}, values(1, 2, 3)), "", "blk.0.ffn_gate_inp.bias", ErrInvalid},
		{"expert bias transposed", reshape("blk.1.ffn_down_exps.bias", []uint64{4, 8}, nil), "", "blk.1.ffn_down_exps.bias", ErrInvalid},
		{"expert bias for one expert", reshape("blk.0.ffn_gate_exps.bias", []uint64{4}, first(16)), "", "blk.0.ffn_gate_exps.bias", ErrInvalid},
		{"expert bias infinite", reshape("blk.0.ffn_up_exps.bias", nil, func(b []byte) []byte {
			copy(b[20:], f32(float32(math.Inf(1))))
			return b
		}), "", "blk.0.ffn_up_exps.bias", ErrInvalid},
		{"up bias missing", drop("blk.1.ffn_up_exps.bias"), "", "blk.1.ffn_up_exps.bias", ErrMissing},
		{"experts of another width", reshape("blk.0.ffn_gate_exps.weight", []uint64{8, 2, 4}, first(8*2*4*4)), "", "blk.0.ffn_gate_exps.weight", ErrInvalid},
		{"a dense FFN instead", reshape("blk.0.ffn_up_exps.weight", []uint64{8, 4}, first(8*4*4)), "", "blk.0.ffn_up_exps.weight", ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadBytes(t, rewriteGGUF(t, base, tc.edit))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %v, want %v", err, tc.wantErr)
			}
			var ke *KeyError
			var te *TensorError
			switch {
			case tc.key != "" && (!errors.As(err, &ke) || ke.Key != tc.key):
				t.Errorf("got %v, want a KeyError for %s", err, tc.key)
			case tc.tensor != "" && (!errors.As(err, &te) || te.Name != tc.tensor):
				t.Errorf("got %v, want a TensorError for %s", err, tc.tensor)
			}
		})
	}
}

// TestSwiGLUOAI checks gpt-oss's clamped SwiGLU against its definition
// in float64: the gate clamped above at 7, the up value to ±7.
func TestSwiGLUOAI(t *testing.T) {
	gate := []float32{0, 1, -1, 3.5, 6.99, 7, 12, -3, -40, -100, 0.25}
	up := []float32{0, 2, -0.5, 9, -9, 1, -1, 7.5, 3, -8, -1}
	want := func(g, u float32) float64 {
		x := math.Min(float64(g), 7)
		y := math.Max(-7, math.Min(float64(u), 7))
		return x / (1 + math.Exp(-1.702*x)) * (y + 1)
	}
	dst := make([]float32, len(gate))
	swigluOAI(dst, gate, up, 1.702, 7)
	for i := range gate {
		w := want(gate[i], up[i])
		if d := math.Abs(float64(dst[i]) - w); d > 1e-6*math.Max(1, math.Abs(w)) {
			t.Errorf("gate %g up %g: %g, want %g", gate[i], up[i], dst[i], w)
		}
	}
	// In place over the gate, as the runner calls it.
	g := slices.Clone(gate)
	swigluOAI(g, g, up, 1.702, 7)
	if !slices.Equal(g, dst) {
		t.Errorf("in place %v, want %v", g, dst)
	}
}

// TestSoftmaxSink checks the sink softmax against a softmax of the row
// with the sink appended (its weight dropped), and the tiled fold's
// scale against the same.
func TestSoftmaxSink(t *testing.T) {
	for _, tc := range []struct {
		x    []float32
		sink float32
	}{
		{[]float32{0.5, -1, 2}, 0},
		{[]float32{0.5, -1, 2}, 5},   // the sink larger than every score
		{[]float32{0.5, -1, 2}, -60}, // a sink of no weight
		{[]float32{3}, 3},
		{[]float32{-2, -2, -2, -2}, 1.5},
	} {
		ext := append(slices.Clone(tc.x), tc.sink)
		var sum float64
		mx := slices.Max(ext)
		for _, v := range ext {
			sum += math.Exp(float64(v - mx))
		}
		got := slices.Clone(tc.x)
		softmaxSink(got, tc.sink)
		// The tiled path: a normalised row (the plain softmax) scaled.
		tiled := slices.Clone(tc.x)
		m := slices.Max(tiled)
		l := kernels.ExpSubSum(tiled, m)
		kernels.Scale(tiled, float32(1/l))
		kernels.Scale(tiled, sinkScale(m, float32(l), tc.sink))
		for i, v := range tc.x {
			w := math.Exp(float64(v-mx)) / sum
			if math.Abs(float64(got[i])-w) > 1e-6 || math.Abs(float64(tiled[i])-w) > 1e-6 {
				t.Errorf("%v sink %g: weight %d is %g (tiled %g), want %g", tc.x, tc.sink, i, got[i], tiled[i], w)
			}
		}
	}
}

// TestGptOssSinksInAttention decodes the tiny gpt-oss shape past its
// window and past the tiled attention's first tile (a batch, then one
// token) with the per-head and the tiled paths (which must agree), and checks that the sinks take part:
// the logits move when they are dropped, and do not when they are so
// negative that their weight is 0.
func TestGptOssSinksInAttention(t *testing.T) {
	m := loadShape(t, "gpt-oss-tiny")
	const n = 300
	pool := kernels.NewPool(2)
	defer pool.Close()
	run := func(perHead bool, kv ...KVType) []float32 {
		typ := KVF16
		if len(kv) > 0 {
			typ = kv[0]
		}
		c, err := NewCache(m.Config, typ, 1, n+1)
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(m, c, pool, n)
		r.perHead = perHead
		b := Batch{Tokens: make([]int32, n), Pos: make([]int32, n), Seq: make([]int32, n)}
		for i := range n {
			b.Tokens[i], b.Pos[i] = int32(i*7919%3800+10), int32(i)
		}
		rows, err := r.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		out := slices.Clone(rows[0])
		// One more token alone: the tiled path splits its two tiles
		// over the threads and folds them afterwards.
		rows, err = r.Decode(Batch{Tokens: []int32{42}, Pos: []int32{n}, Seq: []int32{0}})
		if err != nil {
			t.Fatal(err)
		}
		return append(out, rows[0]...)
	}
	maxDiff := func(a, b []float32) float64 {
		d := 0.0
		for i := range a {
			d = max(d, math.Abs(float64(a[i]-b[i])))
		}
		return d
	}
	ref := run(true)
	d := maxDiff(ref, run(false))
	t.Logf("tiled and per-head attention differ by %g", d)
	if d > 1e-3 {
		t.Errorf("tiled and per-head attention differ by %g", d)
	}
	// A Q8_0 cache (always tiled, its tiles dequantized) rounds keys and
	// values more coarsely, the sinks folded in the same way: the logits
	// move by far less than the sinks' weight (below).
	d = maxDiff(ref, run(false, KVQ8_0))
	t.Logf("a Q8_0 cache moves the logits by %g", d)
	if d > 3e-3 {
		t.Errorf("a Q8_0 cache moves the logits by %g", d)
	}
	saved := make([][]float32, len(m.Layers))
	for l := range m.Layers {
		saved[l] = m.Layers[l].Sinks
		m.Layers[l].Sinks = nil
	}
	without := run(true)
	for l := range m.Layers {
		m.Layers[l].Sinks = slices.Repeat([]float32{-1e30}, m.Config.NHead)
	}
	for _, perHead := range []bool{true, false} {
		if d := maxDiff(without, run(perHead)); d > 1e-3 {
			t.Errorf("per-head %v: sinks of no weight move the logits by %g", perHead, d)
		}
	}
	for l := range m.Layers {
		m.Layers[l].Sinks = saved[l]
	}
	t.Logf("the sinks move the logits by %g", maxDiff(ref, without))
	if d := maxDiff(ref, without); d < 4e-3 {
		t.Errorf("the sinks move the logits by only %g", d)
	}
}

// TestGptOssGating checks the experts' weights: the softmax of the chosen
// router logits (bias included), best first, equal to the renormalised
// probabilities of all.
func TestGptOssGating(t *testing.T) {
	m, err := loadBytes(t, gptossBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(m.Config, KVF16, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(1)
	defer pool.Close()
	r := NewRunner(m, c, pool, 3)
	x := []float32{1, -0.5, 0.25, 2, -1, 0.75, 0.1, -2, 0.3, 0.3, 1, -1, 0.5, 0.5, -0.25, 1.5, 0, 0, 0.5, 1, -1, 2, -2, 0.125}
	copy(r.xn, x)
	if err := r.moeFFN(0, 3); err != nil {
		t.Fatal(err)
	}
	mo := m.Layers[0].MoE
	for tok := range 3 {
		logits := make([]float64, 4)
		for e := range 4 {
			row := make([]float32, 8)
			if err := quantDequant(mo.Router, e, row); err != nil {
				t.Fatal(err)
			}
			s := float64(mo.RouterBias[e])
			for i, w := range row {
				s += float64(w) * float64(x[tok*8+i])
			}
			logits[e] = s
		}
		order := []int{0, 1, 2, 3}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case logits[a] > logits[b]:
				return -1
			case logits[a] < logits[b]:
				return 1
			}
			return 0
		})
		den := math.Exp(logits[order[0]]-logits[order[0]]) + math.Exp(logits[order[1]]-logits[order[0]])
		for j := range 2 {
			if got := r.moe.sel[tok*2+j]; int(got) != order[j] {
				t.Fatalf("token %d slot %d: expert %d, want %d (logits %v)", tok, j, got, order[j], logits)
			}
			w := math.Exp(logits[order[j]]-logits[order[0]]) / den
			if got := r.moe.wts[tok*2+j]; math.Abs(float64(got)-w) > 1e-5 {
				t.Errorf("token %d slot %d: weight %g, want %g", tok, j, got, w)
			}
		}
	}
}

// quantDequant decodes row e of an F32 matrix.
func quantDequant(w kernels.Matrix, e int, dst []float32) error {
	if w.Type != tensor.F32 {
		return errors.New("not F32")
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(w.Data[4*(e*w.Cols+i):]))
	}
	return nil
}

// TestGptOssMoEBatchedEqualsPerToken checks that gpt-oss's experts, with
// their biases, gating and clamped SwiGLU, batched per expert over a
// batch give each token bit for bit what computing it alone gives.
func TestGptOssMoEBatchedEqualsPerToken(t *testing.T) {
	m, err := loadBytes(t, gptossBytes(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(m.Config, KVF16, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(3)
	defer pool.Close()
	r := NewRunner(m, c, pool, 16)
	r.ar = rowArith(r.ar)
	e := m.Config.NEmbd
	rng := rand.New(rand.NewPCG(3, 4))
	clamped := false
	for _, n := range []int{1, 3, 16} {
		for i := range r.xn[:n*e] {
			// Wide enough that some gates and ups pass the clamps.
			r.xn[i] = float32(rng.NormFloat64() * 200)
		}
		xn := slices.Clone(r.xn[:n*e])
		for l := range m.Layers {
			copy(r.xn, xn)
			if err := r.moeFFN(l, n); err != nil {
				t.Fatal(err)
			}
			got := slices.Clone(r.proj[:n*e])
			clamped = clamped || slices.ContainsFunc(r.moe.up, func(v float32) bool { return v > 7 || v < -7 })
			for tok := range n {
				want := moeByToken(t, r, l, xn[tok*e:(tok+1)*e])
				for i, v := range want {
					if math.Float32bits(v) != math.Float32bits(got[tok*e+i]) {
						t.Fatalf("layer %d, %d tokens: token %d value %d: batched %g, alone %g", l, n, tok, i, got[tok*e+i], v)
					}
				}
			}
		}
	}
	if !clamped {
		t.Error("no up value passed the clamp: the test does not reach it")
	}
}
