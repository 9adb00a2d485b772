package model

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/kernels"
)

// refFile is a llama.cpp reference file (schema llama.cpp-reference/v1).
type refFile struct {
	ModelFile string      `json:"model_file"`
	NVocab    int         `json:"n_vocab"`
	Trained   bool        `json:"trained"`
	Prompts   []refPrompt `json:"prompts"`
}

type refPrompt struct {
	Prompt          string        `json:"prompt"`
	PromptIDs       []int32       `json:"prompt_ids"`
	GeneratedIDs    []int32       `json:"generated_ids"`
	LastLogitsFile  string        `json:"last_prompt_logits_file"`
	GenLogitsFile   string        `json:"gen_logits_file"`
	PromptPositions []refPosition `json:"prompt_positions"`
	Positions       []refPosition `json:"positions"`
}

type refPosition struct {
	Position   int          `json:"position"`
	InputToken int32        `json:"input_token"`
	Argmax     *int32       `json:"argmax"`
	Top        [][2]float64 `json:"top"`
}

// tolerance is what a model's logits must meet against llama.cpp's.
type tolerance struct {
	prompt  float64 // largest |Δlogit| at prompt positions (the recorded top-10 ids)
	gen     float64 // largest |Δlogit| at generated positions (the recorded top-10 ids)
	fullRow float64 // largest |Δlogit| over all ids of the .bin rows
	topSets bool    // top-10 sets must be equal
	gap     float64 // top-1 must agree where llama.cpp's top1-top2 gap exceeds this
}

// Tolerances: the issue's. F32 models get 1e-3 at every recorded position
// and in the full-vocabulary rows; the production arithmetic (ggml.go)
// sums an F32 model's products, attention, softmax, SiLU and RoPE in
// ggml's orders, which keeps the F16 roundings of keys, values, queries
// and attention weights identical to llama.cpp's (stories260K: 1.9e-6; with
// other summation orders one flipped rounding moved it by 3e-3 to 6e-3).
// F16 and quantized models get 0.05 everywhere, full rows included
// (small-110m's full rows measure 0.046: its Q4_K/Q6_K dot products run
// on Q8_K activations as ggml's do, but package kernels accumulates the
// blocks in another order than ggml's AVX2 lanes, see emuArith).
const (
	tolQuantized        = 0.05
	tolQuantizedFullRow = 0.05
	tolF32              = 1e-3
)

// toleranceFor returns the tolerance for a model whose weights are all
// F32 or not.
func toleranceFor(m *Model) tolerance {
	if m.allF32() {
		return tolerance{prompt: tolF32, gen: tolF32, fullRow: tolF32, topSets: true}
	}
	return tolerance{prompt: tolQuantized, gen: tolQuantized, fullRow: tolQuantizedFullRow, gap: 0.05}
}

func readRef(t *testing.T, name string) refFile {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, "ref/reference/"+name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r refFile
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func readF32s(t *testing.T, rel string) []float32 {
	t.Helper()
	b, err := os.ReadFile(shared.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// loadModel opens and loads a shared model; the file is closed at cleanup.
func loadModel(t testing.TB, name string) *Model {
	t.Helper()
	f, err := gguf.Open(shared.Model(t, name), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// session is one model with a one-sequence cache and a runner.
type session struct {
	m *Model
	c *Cache
	r *Runner
}

func newSession(t testing.TB, m *Model, nCtx int) *session {
	t.Helper()
	c, err := NewCache(m.Config, KVF16, 1, nCtx)
	if err != nil {
		t.Fatal(err)
	}
	pool := kernels.NewPool(2)
	t.Cleanup(pool.Close)
	r := NewRunner(m, c, pool, 512)
	r.SetLlamaOrder(true)
	return &session{m: m, c: c, r: r}
}

// feed decodes tokens at the end of sequence 0 as one batch and returns
// copies of the logits rows (all of them when all is set, else the last).
func (s *session) feed(t testing.TB, tokens []int32, all bool) [][]float32 {
	t.Helper()
	n := len(tokens)
	b := Batch{Tokens: tokens, Pos: make([]int32, n), Seq: make([]int32, n), Logits: make([]bool, n)}
	start := s.c.Len(0)
	for i := range tokens {
		b.Pos[i] = int32(start + i)
		b.Logits[i] = all || i == n-1
	}
	rows, err := s.r.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
	}
	return out
}

// compare checks one row against a recorded top list and returns the
// largest |Δ| over the listed ids.
func compare(t *testing.T, what string, row []float32, pos refPosition, tol tolerance, limit float64) float64 {
	t.Helper()
	var worst float64
	for _, e := range pos.Top {
		d := math.Abs(float64(row[int(e[0])]) - e[1])
		worst = math.Max(worst, d)
	}
	if worst > limit {
		t.Errorf("%s position %d: max |Δlogit| %.3g over the top-%d exceeds %g", what, pos.Position, worst, len(pos.Top), limit)
	}
	ours := topIDs(row, len(pos.Top))
	if tol.topSets {
		want := make([]int32, len(pos.Top))
		for i, e := range pos.Top {
			want[i] = int32(e[0])
		}
		slices.Sort(want)
		got := slices.Clone(ours)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s position %d: top-%d set %v, llama.cpp %v", what, pos.Position, len(want), got, want)
		}
	}
	if len(pos.Top) >= 2 && pos.Top[0][1]-pos.Top[1][1] > tol.gap && ours[0] != int32(pos.Top[0][0]) {
		t.Errorf("%s position %d: top-1 %d, llama.cpp %d (gap %.3g)", what, pos.Position, ours[0], int32(pos.Top[0][0]), pos.Top[0][1]-pos.Top[1][1])
	}
	return worst
}

// topIDs returns the ids of the k highest logits, best first, lowest id on ties.
func topIDs(row []float32, k int) []int32 {
	ids := make([]int32, len(row))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case row[a] > row[b]:
			return -1
		case row[a] < row[b]:
			return 1
		}
		return 0
	})
	return ids[:k]
}

// limitAt returns the bound for recorded position k of a prompt (0 is the
// last prompt position, computed in the prompt batch).
func limitAt(k int, tol tolerance) float64 {
	if k == 0 {
		return tol.prompt
	}
	return tol.gen
}

// maxDiff returns max |a[i]-b[i]|.
func maxDiff(a, b []float32) float64 {
	var worst float64
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i])-float64(b[i])))
	}
	return worst
}

var referenceModels = []string{
	"stories260K.gguf",
	"llama-2-tiny-random.gguf",
	"mini-24m-f16.gguf",
	"mini-24m-q8_0.gguf",
	"mini-24m-q4_k_m.gguf",
	"small-110m-q4_k_m.gguf",
}

// TestTeacherForced feeds every reference prompt and its recorded
// continuation and compares the logits at every recorded position, and the
// full-vocabulary rows of the .bin files.
func TestTeacherForced(t *testing.T) {
	for _, name := range referenceModels {
		t.Run(name, func(t *testing.T) {
			ref := readRef(t, name)
			m := loadModel(t, name)
			if m.Config.NVocab != ref.NVocab {
				t.Fatalf("n_vocab %d, reference %d", m.Config.NVocab, ref.NVocab)
			}
			tol := toleranceFor(m)
			var worstPrompt, worstGen, worstBin float64
			for pi, p := range ref.Prompts {
				s := newSession(t, m, 512)
				rows := s.feed(t, p.PromptIDs, true)
				for _, pp := range p.PromptPositions {
					worstPrompt = math.Max(worstPrompt, compare(t, "prompt", rows[pp.Position], pp, tol, tol.prompt))
				}
				// llama.cpp's generation run asked for the last prompt row only,
				// so its last block and output ran on that row alone: do the same.
				s = newSession(t, m, 512)
				last := s.feed(t, p.PromptIDs, false)[0]
				if p.LastLogitsFile != "" {
					full := readF32s(t, "ref/reference/"+p.LastLogitsFile)
					d := maxDiff(last, full)
					worstBin = math.Max(worstBin, d)
					if d > tol.fullRow {
						t.Errorf("prompt %d: full-vocabulary last-prompt logits differ by %.3g", pi, d)
					}
				}
				var gen []float32
				if p.GenLogitsFile != "" {
					gen = readF32s(t, "ref/reference/"+p.GenLogitsFile)
				}
				nv := m.Config.NVocab
				for k, pos := range p.Positions {
					if k > 0 {
						last = s.feed(t, []int32{p.GeneratedIDs[k-1]}, false)[0]
					}
					if want := s.c.Len(0) - 1; pos.Position != want {
						t.Fatalf("prompt %d: recorded position %d, fed up to %d", pi, pos.Position, want)
					}
					worstGen = math.Max(worstGen, compare(t, "generated", last, pos, tol, limitAt(k, tol)))
					if gen != nil && (k+1)*nv <= len(gen) {
						d := maxDiff(last, gen[k*nv:(k+1)*nv])
						worstBin = math.Max(worstBin, d)
						if d > tol.fullRow {
							t.Errorf("prompt %d step %d: full-vocabulary logits differ by %.3g", pi, k, d)
						}
					}
				}
			}
			t.Logf("%s: max |Δlogit| prompt positions %.3g, generated positions %.3g, full-vocabulary rows %.3g (limits %g, %g, %g)",
				name, worstPrompt, worstGen, worstBin, tol.prompt, tol.gen, tol.fullRow)
		})
	}
}

// TestGreedyStories checks stories260K's free-running greedy generation
// against llama.cpp's for every prompt, including BOS alone.
func TestGreedyStories(t *testing.T) {
	ref := readRef(t, "stories260K.gguf")
	m := loadModel(t, "stories260K.gguf")
	for pi, p := range ref.Prompts {
		s := newSession(t, m, 512)
		row := s.feed(t, p.PromptIDs, false)[0]
		var got []int32
		for range p.GeneratedIDs {
			id := topIDs(row, 1)[0]
			got = append(got, id)
			row = s.feed(t, []int32{id}, false)[0]
		}
		if !slices.Equal(got, p.GeneratedIDs) {
			t.Errorf("prompt %d %q: generated\n%v\nllama.cpp\n%v", pi, p.Prompt, got, p.GeneratedIDs)
		}
	}
}

// TestBatchSplitInvariance: with the default summation orders a
// sequence's logits are bit for bit the same however its prompt is split
// into batches and whatever other sequence shares them (the serving
// engine's prefix reuse and batching rely on it), for float (F32) and
// K-quant (Q4_K_M: Q4_K and Q6_K) weights, whose products take a batch's
// tokens several at a time.
func TestBatchSplitInvariance(t *testing.T) {
	for _, tc := range []struct {
		model  string
		prompt int // the reference prompt whose ids are fed
		n      int // how many of its ids
	}{
		{"stories260K.gguf", 1, 10},
		{"mini-24m-q4_k_m.gguf", 2, 13},
	} {
		t.Run(tc.model, func(t *testing.T) {
			ref := readRef(t, tc.model)
			m := loadModel(t, tc.model)
			ids := ref.Prompts[tc.prompt].PromptIDs[:tc.n]
			testBatchSplit(t, m, ids)
		})
	}
}

// testBatchSplit runs TestBatchSplitInvariance's checks on model m with
// the prompt ids.
func testBatchSplit(t *testing.T, m *Model, ids []int32) {
	pool := kernels.NewPool(2)
	defer pool.Close()
	run := func(splits []int, other bool) []float32 {
		c, err := NewCache(m.Config, KVF16, 2, 128)
		if err != nil {
			t.Fatal(err)
		}
		r := NewRunner(m, c, pool, 64)
		var rows [][]float32
		start := 0
		for _, end := range append(splits, len(ids)) {
			var b Batch
			for i := start; i < end; i++ {
				b.Tokens, b.Pos, b.Seq = append(b.Tokens, ids[i]), append(b.Pos, int32(i)), append(b.Seq, 0)
				b.Logits = append(b.Logits, i == len(ids)-1)
			}
			if other {
				// Another sequence's tokens in the same batch.
				for j := range 3 {
					b.Tokens, b.Pos, b.Seq = append(b.Tokens, int32(20+j)), append(b.Pos, int32(c.Len(1)+j)), append(b.Seq, 1)
					b.Logits = append(b.Logits, j == 2)
				}
			}
			out, err := r.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			rows = out
			start = end
		}
		return slices.Clone(rows[0])
	}
	whole := run(nil, false)
	for _, tc := range []struct {
		splits []int
		other  bool
	}{{[]int{1}, false}, {[]int{len(ids) - 1}, false}, {[]int{2, 3, 5}, true}, {nil, true}} {
		if got := run(tc.splits, tc.other); !slices.Equal(got, whole) {
			t.Errorf("split %v (other sequence %v): logits differ by %.3g from one batch", tc.splits, tc.other, maxDiff(got, whole))
		}
	}
}

// TestDecodeStepBatchInvariance: a sequence's one-token decode step
// gives the same logits bit for bit whether it runs alone or beside 1..7
// other sequences' steps in the same batch, as a serving step batches
// its streaming clients; for F32 and Q4_K_M weights.
func TestDecodeStepBatchInvariance(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "mini-24m-q4_k_m.gguf"} {
		t.Run(name, func(t *testing.T) {
			ref := readRef(t, name)
			m := loadModel(t, name)
			ids := ref.Prompts[1].PromptIDs
			pool := kernels.NewPool(2)
			defer pool.Close()
			const seqs = 8
			c, err := NewCache(m.Config, KVF16, seqs, 128)
			if err != nil {
				t.Fatal(err)
			}
			r := NewRunner(m, c, pool, 64)
			// Every sequence gets the prompt, shifted so that they differ.
			for s := range seqs {
				var b Batch
				for i, id := range ids {
					b.Tokens, b.Pos, b.Seq = append(b.Tokens, (id+int32(s))%int32(m.Config.NVocab)), append(b.Pos, int32(i)), append(b.Seq, int32(s))
					b.Logits = append(b.Logits, false)
				}
				if _, err := r.Decode(b); err != nil {
					t.Fatal(err)
				}
			}
			// step decodes one token in each of sequences 0..k-1 at the
			// prompt's end (overwriting the same cache position) and
			// returns sequence 0's logits.
			step := func(k int) []float32 {
				var b Batch
				for s := range k {
					b.Tokens, b.Pos, b.Seq = append(b.Tokens, int32(30+s)), append(b.Pos, int32(len(ids))), append(b.Seq, int32(s))
					b.Logits = append(b.Logits, true)
					c.lens[s] = len(ids)
				}
				out, err := r.Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				return slices.Clone(out[0])
			}
			alone := step(1)
			for k := 2; k <= seqs; k++ {
				if got := step(k); !slices.Equal(got, alone) {
					t.Errorf("beside %d other sequences: logits differ by %.3g from a step alone", k-1, maxDiff(got, alone))
				}
			}
		})
	}
}

// TestParallelAttentionBitIdentical: attention spread over 1, 2 or 3
// workers (the parallel path forced even for short prompts) gives the
// same logits bit for bit, for a batched prompt and one-token steps.
func TestParallelAttentionBitIdentical(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "mini-24m-q8_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			ref := readRef(t, name)
			m := loadModel(t, name)
			p := ref.Prompts[len(ref.Prompts)-1]
			run := func(threads int) [][]float32 {
				pool := kernels.NewPool(threads)
				defer pool.Close()
				c, err := NewCache(m.Config, KVF16, 1, 128)
				if err != nil {
					t.Fatal(err)
				}
				r := NewRunner(m, c, pool, 128)
				r.SetLlamaOrder(true)
				r.attnMin = 0
				if len(r.heads) != threads {
					t.Fatalf("%d attention workers for %d threads", len(r.heads), threads)
				}
				s := &session{m: m, c: c, r: r}
				rows := s.feed(t, p.PromptIDs, true)
				for _, id := range p.GeneratedIDs[:4] {
					rows = append(rows, s.feed(t, []int32{id}, false)...)
				}
				return rows
			}
			one := run(1)
			for _, threads := range []int{2, 3} {
				for k, row := range run(threads) {
					if !slices.Equal(row, one[k]) {
						t.Errorf("%d threads: row %d differs from one thread by %.3g", threads, k, maxDiff(row, one[k]))
					}
				}
			}
		})
	}
}
