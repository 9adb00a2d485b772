//go:debug updatemaxprocs=0
//go:debug containermaxprocs=0

package bench

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/internal/splitgguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/synth"
)

// miniModel writes (once per test binary) a mini-shape Q4_K_M synthetic
// model and returns its path.
func miniModel(tb testing.TB) string { return miniModelOf(tb, synth.Q4_K_M) }

// minis are the synthetic mini models written so far, by file type.
var minis struct {
	sync.Mutex
	paths map[synth.FileType]string
	dir   string
}

// miniModelOf writes (once per test binary and type) a mini-shape
// synthetic model of file type ft and returns its path.
func miniModelOf(tb testing.TB, ft synth.FileType) string {
	tb.Helper()
	vocabPath := shared.Path(tb, "ref/vocab/ggml-vocab-llama-spm.gguf")
	minis.Lock()
	defer minis.Unlock()
	if p, ok := minis.paths[ft]; ok {
		return p
	}
	if minis.dir == "" {
		dir, err := os.MkdirTemp("", "lisa-bench-test-")
		if err != nil {
			tb.Fatal(err)
		}
		minis.dir, minis.paths = dir, map[synth.FileType]string{}
	}
	v, err := gguf.Open(vocabPath, gguf.DefaultLimits())
	if err != nil {
		tb.Fatal(err)
	}
	defer v.Close()
	s, _ := synth.Lookup("mini")
	p := filepath.Join(minis.dir, "mini-"+ft.String()+".gguf")
	if _, err := synth.WriteFile(p, synth.Options{Shape: s, Type: ft, Seed: 5, Vocab: v}); err != nil {
		tb.Fatal(err)
	}
	minis.paths[ft] = p
	return p
}

// TestMain lets the test binary serve as its own benchmark worker (the
// sandboxed worker's environment is empty, so the first argument says).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(WorkerMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == fakeServeArg {
		fmt.Fprintln(os.Stderr, "fake server starting")
		os.Exit(fakeServe(os.Args[2:]))
	}
	code := m.Run()
	if minis.dir != "" {
		os.RemoveAll(minis.dir)
	}
	os.Exit(code)
}

// openMini opens the mini Q4_K_M model.
func openMini(t *testing.T) *gguf.File { return openMiniOf(t, synth.Q4_K_M) }

// openMiniOf opens the mini model of file type ft.
func openMiniOf(t *testing.T, ft synth.FileType) *gguf.File {
	t.Helper()
	f, err := gguf.Open(miniModelOf(t, ft), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// checkResults checks the shape and arithmetic of results for p.
func checkResults(t *testing.T, rs []Result, p Params, sandboxed bool) {
	t.Helper()
	want := len(p.Threads) * len(p.depths()) * len(p.tests())
	if len(rs) != want {
		t.Fatalf("%d results, want %d", len(rs), want)
	}
	nb, nub := p.batches()
	for _, r := range rs {
		if len(r.SamplesNs) != p.Reps || len(r.SamplesTs) != p.Reps {
			t.Errorf("%s: %d samples, want %d", r.Test(), len(r.SamplesNs), p.Reps)
		}
		var sum float64
		for i, ns := range r.SamplesNs {
			if ns <= 0 {
				t.Errorf("%s: sample %d is %d ns", r.Test(), i, ns)
			}
			ts := float64(r.NPrompt+r.NGen) * 1e9 / float64(ns)
			if math.Abs(ts-r.SamplesTs[i]) > 1e-9*ts {
				t.Errorf("%s: samples_ts[%d] %g, want %g", r.Test(), i, r.SamplesTs[i], ts)
			}
			sum += ts
		}
		if mean := sum / float64(p.Reps); math.Abs(mean-r.AvgTs) > 1e-9*mean {
			t.Errorf("%s: avg_ts %g, want %g", r.Test(), r.AvgTs, mean)
		}
		if r.Sandbox != sandboxed || r.Kernels == "" || r.ModelNParams != 17958144 ||
			!strings.HasPrefix(r.ModelType, "llama 17M Q4_K - Medium") || r.NBatch != nb || r.NUBatch != nub ||
			r.TypeK != "f16" || r.TypeV != "f16" || r.KVCacheBytes <= 0 {
			t.Errorf("%s: %+v", r.Test(), r)
		}
		if r.PeakRSS <= 0 && os.Getenv("CI") != "" {
			t.Errorf("%s: no peak RSS", r.Test())
		}
	}
}

// TestRunInProcess measures the mini model in this process.
func TestRunInProcess(t *testing.T) {
	p := Params{NPrompt: 16, NGen: 4, Reps: 2, Threads: []int{1, 2}}
	rs, err := Run(openMini(t), p)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rs, p, false)
	if rs[0].Test() != "pp16" || rs[1].Test() != "tg4" || rs[2].NThreads != 2 {
		t.Errorf("order: %s %s t%d", rs[0].Test(), rs[1].Test(), rs[2].NThreads)
	}
}

// TestRunDepths measures pp, tg and a pg test at two depths and two
// thread counts, with logical and physical batches smaller than the
// prompt: the results come in llama-bench's order and name.
func TestRunDepths(t *testing.T) {
	p := Params{NPrompt: 12, NGen: 3, PG: []PG{{5, 2}}, Depths: []int{0, 20}, NBatch: 8, NUBatch: 3, Reps: 1, Threads: []int{1, 2}}
	rs, err := Run(openMini(t), p)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rs, p, false)
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("t%d %s", r.NThreads, r.Test()))
	}
	want := []string{"t1 pp12", "t1 tg3", "t1 pp5+tg2", "t1 pp12 @ d20", "t1 tg3 @ d20", "t1 pp5+tg2 @ d20",
		"t2 pp12", "t2 tg3", "t2 pp5+tg2", "t2 pp12 @ d20", "t2 tg3 @ d20", "t2 pp5+tg2 @ d20"}
	if !slices.Equal(got, want) {
		t.Errorf("tests:\n got %q\nwant %q", got, want)
	}
}

// TestDepthFillsOnce checks that a depth's tokens are decoded only when
// the cache does not hold them: descending depths reuse the deepest fill
// (a shallower depth is its prefix), a depth after a shallower test is
// filled again, and every thread count after the first starts from the
// cache the previous one left.
func TestDepthFillsOnce(t *testing.T) {
	var fills []string
	p := Params{NPrompt: 4, NGen: 2, Depths: []int{16, 4, 0, 8}, Reps: 1, Threads: []int{1, 2},
		Progress: func(m string) {
			if strings.Contains(m, "filling") {
				fills = append(fills, m)
			}
		}}
	rs, err := Run(openMini(t), p)
	if err != nil {
		t.Fatal(err)
	}
	checkResults(t, rs, p, false)
	want := []string{"depth 16, 1 threads: filling the cache (not timed)", "depth 8, 1 threads: filling the cache (not timed)",
		"depth 16, 2 threads: filling the cache (not timed)", "depth 8, 2 threads: filling the cache (not timed)"}
	if !slices.Equal(fills, want) {
		t.Errorf("fills:\n got %q\nwant %q", fills, want)
	}
}

// TestDepthFilled checks the depth fill and the prompt at depth: after
// the fill the cache holds exactly depth positions, and the prompt's
// last logits row (decoded in logical batches split into forward passes,
// as the benchmark does) is the row of an unbenchmarked run that decodes
// the same tokens in one pass from an empty cache: bit for bit for Q8_0,
// whose several-token dots equal the one-token dot on every kernel path,
// and within 0.05 for Q4_K_M, whose eight-token dots on the avx512 path
// sum in another order than its one-token dot (so a pass of eight tokens
// or more rounds differently from shorter ones; the generic and avx2
// paths match bit for bit there too).
func TestDepthFilled(t *testing.T) {
	for _, ft := range []synth.FileType{synth.Q8_0, synth.Q4_K_M} {
		t.Run(ft.String(), func(t *testing.T) { testDepthFilled(t, openMiniOf(t, ft), ft == synth.Q8_0) })
	}
}

func testDepthFilled(t *testing.T, f *gguf.File, exact bool) {
	cases := []struct{ depth, np, nb, nub int }{
		{0, 7, 2048, 512},
		{1, 5, 2048, 512},
		{37, 9, 16, 5},
		{64, 16, 4, 8}, // n_ubatch above n_batch: passes of n_batch
		{0, 16, 16, 5},
		{0, 16, 16, 8},
		{0, 16, 16, 4},
		{0, 16, 4, 4},
		{0, 16, 1, 1},
		{15, 1, 16, 16},
		{8, 8, 8, 8},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("d%d_pp%d_b%d_ub%d", c.depth, c.np, c.nb, c.nub), func(t *testing.T) {
			p := Params{NPrompt: c.np, Depths: []int{c.depth}, NBatch: c.nb, NUBatch: c.nub, Reps: 1, Threads: []int{2}}
			s, err := Prepare(f, p)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			r := newRunner(s.m, s.cache, s.pools[0], p)
			if want := min(c.nb, c.nub, max(c.depth, c.np)); r.run.MaxBatch() != want {
				t.Errorf("forward passes of %d tokens, want %d", r.run.MaxBatch(), want)
			}
			if err := r.fill(0, c.depth); err != nil {
				t.Fatal(err)
			}
			if n := s.cache.Len(0); n != c.depth {
				t.Fatalf("after the fill the cache holds %d positions, want %d", n, c.depth)
			}
			got, err := r.prompt(c.depth, c.np)
			if err != nil {
				t.Fatal(err)
			}
			if n := s.cache.Len(0); n != c.depth+c.np {
				t.Fatalf("after the prompt the cache holds %d positions, want %d", n, c.depth+c.np)
			}
			// The same token stream, in one batch, from an empty cache.
			rng := newRand()
			n := c.depth + c.np
			b := model.Batch{Tokens: make([]int32, n), Pos: make([]int32, n), Seq: make([]int32, n)}
			for i := range n {
				b.Tokens[i], b.Pos[i] = int32(rng.IntN(s.m.Config.NVocab)), int32(i)
			}
			cache, err := model.NewCache(s.m.Config, model.KVF16, 1, n)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := model.NewRunner(s.m, cache, s.pools[0], n).Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			want := rows[0]
			if len(got) != len(want) {
				t.Fatalf("%d logits, want %d", len(got), len(want))
			}
			for i := range want {
				if exact && math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Abs(float64(got[i]-want[i])) > 0.05 {
					t.Fatalf("logit %d at position %d: %g, unbenchmarked %g", i, n-1, got[i], want[i])
				}
			}
		})
	}
}

// TestDepthReuse checks that the fill is decoded once and reused: after
// a test at a depth the cache is back at that depth for the next run, a
// deeper depth extends it, and a run at a depth the cache does not hold
// is refused rather than measured at the wrong position.
func TestDepthReuse(t *testing.T) {
	p := Params{NPrompt: 4, NGen: 2, Depths: []int{8, 16}, Reps: 1, Threads: []int{1}}
	s, err := Prepare(openMini(t), p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := newRunner(s.m, s.cache, s.pools[0], p)
	if err := r.fill(0, 8); err != nil {
		t.Fatal(err)
	}
	for _, tt := range p.tests() {
		if _, err := r.once(8, tt); err != nil {
			t.Fatal(err)
		}
		if n := s.cache.Len(0); n != 8+tt.np+tt.ng {
			t.Errorf("after %+v at depth 8 the cache holds %d", tt, n)
		}
	}
	if err := r.fill(8, 16); err != nil {
		t.Fatal(err)
	}
	if n := s.cache.Len(0); n != 16 {
		t.Errorf("extended fill: %d positions, want 16", n)
	}
	s.cache.Clear(0)
	if _, err := r.once(8, test{4, 0}); err == nil || !strings.Contains(err.Error(), "want the depth 8") {
		t.Errorf("a run over an unfilled cache: %v", err)
	}
}

// TestRunWorker measures the mini model in a child, sandboxed (the
// served configuration, seccomp stage 2 included) and not.
func TestRunWorker(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandboxed worker is Linux-only")
	}
	path := miniModel(t)
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandbox=%v", sandboxed), func(t *testing.T) {
			p := Params{NPrompt: 16, NGen: 4, Reps: 2, Threads: []int{1, 2}}
			var progress bytes.Buffer
			var limits string
			rs, err := runWorker(path, p, sandboxed, []string{WorkerArg}, &syncWriter{w: &progress}, func(pid int) {
				b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
				limits = string(b)
			})
			if err != nil {
				t.Fatal(err)
			}
			// The sandboxed worker has lisa serve's default memory limit.
			want := "unlimited"
			if sandboxed {
				want = fmt.Sprint(config.Default().MemoryLimitBytes)
			}
			if f := limitLine(limits, "Max data size"); len(f) < 2 || f[0] != want {
				t.Errorf("worker's RLIMIT_DATA: %q, want %s", f, want)
			}
			checkResults(t, rs, p, sandboxed)
			if rs[0].PeakRSS < 1<<20 {
				t.Errorf("worker peak RSS %d", rs[0].PeakRSS)
			}
		})
	}
}

// TestRunWorkerSplit measures the mini model split in three shards, given
// by its first: the worker, sandboxed or not, reads all three and
// measures the whole model; a missing shard is named before any worker
// starts.
func TestRunWorkerSplit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandboxed worker is Linux-only")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	paths, err := splitgguf.Write(miniModel(t), dir, "mini", 3)
	if err != nil {
		t.Fatal(err)
	}
	p := Params{NPrompt: 8, NGen: 2, Reps: 1, Threads: []int{1}}
	for _, sandboxed := range []bool{false, true} {
		rs, err := runWorker(paths[0], p, sandboxed, []string{WorkerArg}, nil, nil)
		if err != nil {
			t.Fatalf("sandbox=%v: %v", sandboxed, err)
		}
		checkResults(t, rs, p, sandboxed)
	}
	if err := os.Remove(paths[2]); err != nil {
		t.Fatal(err)
	}
	if _, err := runWorker(paths[0], p, true, []string{WorkerArg}, nil, nil); err == nil || !strings.Contains(err.Error(), "shard 3 of 3 (mini-00003-of-00003.gguf) cannot be opened") {
		t.Errorf("a missing shard: %v", err)
	}
}

// limitLine returns the fields after name in a /proc/PID/limits file.
func limitLine(limits, name string) []string {
	for _, l := range strings.Split(limits, "\n") {
		if rest, ok := strings.CutPrefix(l, name); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// syncWriter serialises writes from the worker's stderr reader.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// TestMeanStddev checks llama-bench's statistics (sample stddev).
func TestMeanStddev(t *testing.T) {
	tests := []struct {
		x        []float64
		mean, sd float64
	}{
		{nil, 0, 0},
		{[]float64{5}, 5, 0},
		{[]float64{1, 2, 3, 4}, 2.5, math.Sqrt(5.0 / 3)},
		{[]float64{2, 2, 2}, 2, 0},
	}
	for _, tc := range tests {
		m, sd := meanStddev(tc.x)
		if math.Abs(m-tc.mean) > 1e-12 || math.Abs(sd-tc.sd) > 1e-12 {
			t.Errorf("meanStddev(%v) = %g, %g; want %g, %g", tc.x, m, sd, tc.mean, tc.sd)
		}
	}
}

// TestValidate checks out-of-range parameters are refused.
func TestValidate(t *testing.T) {
	good := Params{NPrompt: 8, NGen: 8, Reps: 1, Threads: []int{1}}
	if err := (Params{PG: []PG{{512, 128}}, Depths: []int{0, 4096}, NBatch: 1, NUBatch: 1, Reps: 1, Threads: []int{1}}).Validate(); err != nil {
		t.Errorf("a pg test alone at two depths: %v", err)
	}
	bad := map[string]func(*Params){
		"negative prompt": func(p *Params) { p.NPrompt = -1 },
		"nothing":         func(p *Params) { p.NPrompt, p.NGen = 0, 0 },
		"no reps":         func(p *Params) { p.Reps = 0 },
		"no threads":      func(p *Params) { p.Threads = nil },
		"zero threads":    func(p *Params) { p.Threads = []int{0} },
		"huge prompt":     func(p *Params) { p.NPrompt = 1 << 30 },
		"negative depth":  func(p *Params) { p.Depths = []int{0, -1} },
		"deep":            func(p *Params) { p.Depths = []int{MaxContext} },
		"many depths":     func(p *Params) { p.Depths = make([]int, maxListLen+1) },
		"empty pg":        func(p *Params) { p.PG = []PG{{0, 128}} },
		"zero batch":      func(p *Params) { p.NBatch = -1 },
		"huge ubatch":     func(p *Params) { p.NUBatch = model.MaxBatch + 1 },
		"key type":        func(p *Params) { p.TypeK = "q4_0" },
		"value type":      func(p *Params) { p.TypeV = "Q8_0" },
	}
	for _, typ := range []string{"", "f16", "q8_0", "f32"} {
		p := good
		p.TypeK, p.TypeV = typ, typ
		if err := p.Validate(); err != nil {
			t.Errorf("cache type %q: %v", typ, err)
		}
	}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range bad {
		p := good
		mut(&p)
		if err := p.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestWriteFormats renders results in each format and parses them back
// where the format allows.
func TestWriteFormats(t *testing.T) {
	rs := []Result{
		{ModelType: "llama 1.1B Q4_K - Medium", ModelSize: 1 << 20, ModelNParams: 1100000000, NBatch: 2048, NUBatch: 512, NThreads: 2,
			TypeK: "f16", TypeV: "f16", NPrompt: 512, AvgTs: 61.5, StddevTs: 0.5, SamplesTs: []float64{61, 62}, SamplesNs: []int64{1, 2},
			Kernels: "avx512", Sandbox: true},
		{ModelType: "llama <&>", NBatch: 2048, NUBatch: 512, NThreads: 1, TypeK: "f16", TypeV: "f16", NGen: 128, NDepth: 4096,
			AvgTs: 20, Kernels: "generic"},
		{ModelType: "llama 1.1B Q8_0", NBatch: 2048, NUBatch: 512, NThreads: 1, TypeK: "f16", TypeV: "f16", NPrompt: 512, NGen: 128,
			NDepth: 1024, AvgTs: 30, Kernels: "generic"},
	}
	tests := []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{"json", func(t *testing.T, out string) {
			var back []map[string]any
			if err := json.Unmarshal([]byte(out), &back); err != nil {
				t.Fatal(err)
			}
			if back[0]["avg_ts"] != 61.5 || back[0]["sandbox"] != true || back[1]["n_depth"] != 4096.0 || back[2]["n_gen"] != 128.0 ||
				back[0]["type_k"] != "f16" || back[0]["type_v"] != "f16" {
				t.Errorf("values: %v", back)
			}
		}},
		{"csv", func(t *testing.T, out string) {
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(recs) != 4 {
				t.Fatalf("csv: %v %v", recs, err)
			}
			col := map[string]int{}
			for i, name := range recs[0] {
				col[name] = i
			}
			for _, c := range []struct {
				row         int
				field, want string
			}{{1, "avg_ts", "61.500000"}, {2, "n_depth", "4096"}, {3, "n_prompt", "512"}, {3, "n_gen", "128"}, {1, "n_ubatch", "512"}} {
				if i, ok := col[c.field]; !ok || recs[c.row][i] != c.want {
					t.Errorf("csv row %d %s: %v, want %s", c.row, c.field, recs[c.row], c.want)
				}
			}
		}},
		{"md", func(t *testing.T, out string) {
			for _, want := range []string{"| pp512 | 61.50 ± 0.50 |", "| tg128 @ d4096 | 20.00 ± 0.00 |", "| pp512+tg128 @ d1024 | 30.00 ± 0.00 |"} {
				if !strings.Contains(out, want) {
					t.Errorf("markdown lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "n_batch") || strings.Contains(out, "type_k") {
				t.Errorf("default batch sizes and cache types got columns:\n%s", out)
			}
		}},
		{"svg", func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "<svg ") || strings.Count(out, "<rect ") != 3 || strings.Contains(out, "<&>") ||
				!strings.Contains(out, "&lt;&amp;&gt;") || !strings.Contains(out, "tg128 @ d4096") {
				t.Errorf("svg:\n%s", out)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, tc.format, rs); err != nil {
				t.Fatal(err)
			}
			tc.check(t, b.String())
		})
	}
	if err := Write(&bytes.Buffer{}, "xml", rs); err == nil || ValidFormat("xml") {
		t.Error("xml accepted")
	}
	// Batch sizes other than llama-bench's defaults get columns, as
	// llama-bench shows them.
	var b bytes.Buffer
	rs[0].NUBatch = 128
	if err := Write(&b, "md", rs); err != nil || !strings.Contains(b.String(), "| n_batch | n_ubatch |") ||
		!strings.Contains(b.String(), "| 2048 | 128 | pp512 |") {
		t.Errorf("markdown with n_ubatch 128 (%v):\n%s", err, b.String())
	}
	// So do cache types other than f16, in every format.
	rs[0].NUBatch, rs[0].TypeK = 512, "q8_0"
	b.Reset()
	if err := Write(&b, "md", rs); err != nil || !strings.Contains(b.String(), "| type_k | type_v |") ||
		!strings.Contains(b.String(), "| q8_0 | f16 | pp512 |") {
		t.Errorf("markdown with type_k q8_0 (%v):\n%s", err, b.String())
	}
	b.Reset()
	var back []map[string]any
	if err := Write(&b, "json", rs); err != nil || json.Unmarshal(b.Bytes(), &back) != nil || back[0]["type_k"] != "q8_0" || back[1]["type_k"] != "f16" {
		t.Errorf("json with type_k q8_0 (%v):\n%s", err, b.String())
	}
}

// llamaBenchFields are the fields of one result in llama-bench's JSON
// output (llama.cpp release v0.5.0, tools/llama-bench: test::get_fields
// and the samples arrays its JSON printer adds).
var llamaBenchFields = []string{"build_commit", "build_number", "cpu_info", "gpu_info", "backends",
	"model_filename", "model_type", "model_size", "model_n_params", "n_batch",
	"n_ubatch", "n_threads", "cpu_mask", "cpu_strict", "poll",
	"type_k", "type_v", "n_gpu_layers", "n_cpu_moe", "split_mode",
	"main_gpu", "no_kv_offload", "flash_attn", "devices", "tensor_split",
	"tensor_buft_overrides", "load_mode", "lazy_mode", "embeddings",
	"no_op_offload", "no_host", "fit_target", "fit_min_ctx",
	"n_prompt", "n_gen", "n_depth",
	"test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts"}

// TestJSONFieldNames checks that every field of a result is named as
// llama-bench names it, except this project's own, which llama-bench
// does not have, and that the fields a comparison needs are all there.
func TestJSONFieldNames(t *testing.T) {
	ours := map[string]bool{"kernels": true, "sandbox": true, "kv_cache_bytes": true, "peak_rss_bytes": true}
	theirs := map[string]bool{}
	for _, f := range llamaBenchFields {
		theirs[f] = true
	}
	data, err := json.Marshal(Result{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		if theirs[k] == ours[k] {
			t.Errorf("field %q: in llama-bench's output %v, one of this project's own %v", k, theirs[k], ours[k])
		}
	}
	for _, k := range []string{"model_filename", "model_type", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads",
		"type_k", "type_v", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns", "samples_ts"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no field %q", k)
		}
	}
	// The CSV header names the same fields.
	for _, k := range csvFields {
		if theirs[k] == ours[k] {
			t.Errorf("csv column %q is neither llama-bench's nor this project's", k)
		}
	}
}

// TestVmHWM reads this process's peak RSS and rejects files without it.
func TestVmHWM(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	if n := PeakRSS(); n < 1<<20 {
		t.Errorf("PeakRSS %d", n)
	}
	p := filepath.Join(t.TempDir(), "status")
	os.WriteFile(p, []byte("Name: x\nVmHWM:\tabc kB\n"), 0o600)
	if n := vmHWM(p); n != 0 {
		t.Errorf("garbled VmHWM gave %d", n)
	}
	os.WriteFile(p, []byte("VmHWM:\t  1234 kB\n"), 0o600)
	if n := vmHWM(p); n != 1234*1024 {
		t.Errorf("VmHWM gave %d", n)
	}
}

// BenchmarkPP measures one 64-token prompt batch of the mini model.
func BenchmarkPP(b *testing.B) { benchStep(b, 64, 0) }

// BenchmarkTG measures single-token steps of the mini model.
func BenchmarkTG(b *testing.B) { benchStep(b, 0, 1) }

func benchStep(b *testing.B, np, ng int) {
	f, err := gguf.Open(miniModel(b), gguf.DefaultLimits())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for _, th := range []int{1, 2} {
		b.Run("t"+string(rune('0'+th)), func(b *testing.B) {
			s, err := Prepare(f, Params{NPrompt: max(np, 1), NGen: 512, Reps: 1, Threads: []int{th}})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			r := newRunner(s.m, s.cache, s.pools[0], s.p)
			b.ReportAllocs()
			if np > 0 {
				for b.Loop() {
					if _, err := r.once(0, test{np, 0}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(np)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				return
			}
			for b.Loop() {
				if _, err := r.once(0, test{0, 16}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(16*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// TestOpenWorkerModel checks the worker's choice between a private copy
// and the mapping: the mini model is copied when there is no limit or
// the limit leaves room, and stays mapped (its file appears in
// /proc/self/maps) when the copy would not fit, as a real-size mixture of
// experts under serve's 4 GiB does.
func TestOpenWorkerModel(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/maps is Linux's")
	}
	path := miniModel(t)
	p := Params{NPrompt: 16, NGen: 4, Reps: 1, Threads: []int{1}}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		limit  int64
		mapped bool
	}{
		{"no limit", 0, false},
		{"unlimited", math.MaxInt64, false},
		{"room", 1 << 40, false},
		{"the file's size", st.Size(), true},
		{"1 MiB", 1 << 20, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if mapped := openedMapped(t, path, p, tc.limit); mapped != tc.mapped {
				t.Errorf("limit %d: file mapped %v, want %v", tc.limit, mapped, tc.mapped)
			}
		})
	}
}

// openedMapped opens the model at path as the worker does for p under
// limit and reports whether it stayed mapped (its file in
// /proc/self/maps); the model must load either way.
func openedMapped(t *testing.T, path string, p Params, limit int64) bool {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := openWorkerModel([]*os.File{fh}, p, limit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.Load(f); err != nil {
		t.Errorf("limit %d: %v", limit, err)
	}
	return strings.Contains(string(maps), path)
}

// TestFileTypeName checks the names against llama.cpp's llama_model_ftype_name
// (38 as the npm library prints a gpt-oss MXFP4_MOE file), so that both
// engines' results of one file carry the same model_type.
func TestFileTypeName(t *testing.T) {
	for _, c := range []struct {
		ft   int32
		ok   bool
		want string
	}{
		{0, true, "all F32"},
		{3, true, "Q4_1"},
		{9, true, "Q5_1"},
		{11, true, "Q3_K - Small"},
		{13, true, "Q3_K - Large"},
		{15, true, "Q4_K - Medium"},
		{16, true, "Q5_K - Small"},
		{25, true, "IQ4_NL - 4.5 bpw"},
		{30, true, "IQ4_XS - 4.25 bpw"},
		{38, true, "MXFP4 MoE"},
		{99, true, "file type 99"},
		{15, false, "unknown type"},
	} {
		if got := fileTypeName(c.ft, c.ok); got != c.want {
			t.Errorf("fileTypeName(%d, %v) = %q, want %q", c.ft, c.ok, got, c.want)
		}
	}
}

// TestWorkerModelSharesEstimate: the worker decides between a copy and
// the mapping with the serving engine's estimate (model.CopyFits over the
// plan of p's cache and runners), so the decision flips where that
// estimate says, attention scratch included; and the estimate bounds
// what the cache and the largest runner really allocate.
func TestWorkerModelSharesEstimate(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/maps is Linux's")
	}
	path := miniModel(t)
	// A private copy: the file stays out of /proc/self/maps, which
	// openedMapped reads.
	f, err := gguf.Load(path, gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := model.ConfigFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for _, p := range []Params{
		{NPrompt: 16, NGen: 4, Reps: 1, Threads: []int{1}},
		{NPrompt: 512, NGen: 16, Depths: []int{0, 1024}, Reps: 1, Threads: []int{3, 1}, NUBatch: 64},
		{NPrompt: 128, NGen: 8, Reps: 1, Threads: []int{2}, NBatch: 32, TypeK: "q8_0", TypeV: "f16"},
	} {
		plan, err := p.memoryPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		nb, nub := p.batches()
		tk, tv, _ := p.cacheTypes()
		if want := (model.MemoryPlan{TypeK: tk, TypeV: tv, Seqs: 1, Ctx: p.context(), Batch: min(nb, nub), Threads: slices.Max(p.Threads)}); plan != want {
			t.Errorf("%+v: plan %+v, want %+v", p, plan, want)
		}
		cache, scratch := plan.Need(cfg)
		attn := model.AttnScratchBytes(cfg, tk, tv, plan.Ctx, plan.Batch, plan.Threads)
		if attn <= 0 || scratch < attn {
			t.Errorf("%+v: scratch %.0f does not hold the attention's %.0f", p, scratch, attn)
		}
		limit := (float64(f.FileSize) + cache + scratch) / model.MemoryShare
		for _, c := range []struct {
			limit  int64
			mapped bool
		}{
			{int64(limit) + 4096, false},
			{int64(limit) - 4096, true},
			{int64(limit - attn), true}, // room but for the attention's scratch
		} {
			if got := openedMapped(t, path, p, c.limit); got != c.mapped {
				t.Errorf("%+v: limit %d (copy fits from %.0f): mapped %v, want %v", p, c.limit, limit, got, c.mapped)
			}
		}
		// The cache and the runner of the most threads (the runners are
		// made one at a time): what they allocate is within the estimate.
		pool := kernels.NewPool(plan.Threads)
		before := heap()
		c, err := model.NewCacheTypes(m.Config, tk, tv, 1, p.context())
		if err != nil {
			pool.Close()
			t.Fatal(err)
		}
		r := newRunner(m, c, pool, p)
		grown := float64(heap()) - float64(before)
		runtime.KeepAlive(r)
		pool.Close()
		if grown > cache+scratch {
			t.Errorf("%+v: the cache and runner grew the heap by %.0f bytes, the estimate is %.0f", p, grown, cache+scratch)
		}
		t.Logf("%+v: heap +%.0f, cache %.0f, scratch %.0f of which attention %.0f", p, grown, cache, scratch, attn)
	}
}
