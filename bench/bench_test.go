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
	"strings"
	"sync"
	"testing"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/shared"
	"github.com/lisa-llm/lisa/internal/splitgguf"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/model/synth"
)

// miniModel writes (once per test binary) a mini-shape Q4_K_M synthetic
// model and returns its path.
var miniOnce struct {
	sync.Once
	path string
	err  error
}

func miniModel(tb testing.TB) string {
	tb.Helper()
	vocabPath := shared.Path(tb, "ref/vocab/ggml-vocab-llama-spm.gguf")
	miniOnce.Do(func() {
		v, err := gguf.Open(vocabPath, gguf.DefaultLimits())
		if err != nil {
			miniOnce.err = err
			return
		}
		defer v.Close()
		dir, err := os.MkdirTemp("", "lisa-bench-test-")
		if err != nil {
			miniOnce.err = err
			return
		}
		s, _ := synth.Lookup("mini")
		miniOnce.path = filepath.Join(dir, "mini-q4_k_m.gguf")
		_, miniOnce.err = synth.WriteFile(miniOnce.path, synth.Options{Shape: s, Type: synth.Q4_K_M, Seed: 5, Vocab: v})
	})
	if miniOnce.err != nil {
		tb.Fatal(miniOnce.err)
	}
	return miniOnce.path
}

// TestMain lets the test binary serve as its own benchmark worker (the
// sandboxed worker's environment is empty, so the first argument says).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WorkerArg {
		os.Exit(WorkerMain(os.Args[2:]))
	}
	code := m.Run()
	if miniOnce.path != "" {
		os.RemoveAll(filepath.Dir(miniOnce.path))
	}
	os.Exit(code)
}

// openMini opens the mini model.
func openMini(t *testing.T) *gguf.File {
	t.Helper()
	f, err := gguf.Open(miniModel(t), gguf.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// checkResults checks the shape and arithmetic of results for p.
func checkResults(t *testing.T, rs []Result, p Params, sandboxed bool) {
	t.Helper()
	want := 0
	for range p.Threads {
		if p.NPrompt > 0 {
			want++
		}
		if p.NGen > 0 {
			want++
		}
	}
	if len(rs) != want {
		t.Fatalf("%d results, want %d", len(rs), want)
	}
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
			!strings.HasPrefix(r.ModelType, "llama 17M Q4_K - Medium") {
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
	bad := map[string]func(*Params){
		"negative prompt": func(p *Params) { p.NPrompt = -1 },
		"nothing":         func(p *Params) { p.NPrompt, p.NGen = 0, 0 },
		"no reps":         func(p *Params) { p.Reps = 0 },
		"no threads":      func(p *Params) { p.Threads = nil },
		"zero threads":    func(p *Params) { p.Threads = []int{0} },
		"huge prompt":     func(p *Params) { p.NPrompt = 1 << 30 },
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
		{ModelType: "llama 1.1B Q4_K - Medium", ModelSize: 1 << 20, ModelNParams: 1100000000, NThreads: 2, NPrompt: 512,
			AvgTs: 61.5, StddevTs: 0.5, SamplesTs: []float64{61, 62}, SamplesNs: []int64{1, 2}, Kernels: "avx512", Sandbox: true, TypeK: "q8_0", TypeV: "f16"},
		{ModelType: "llama <&>", NThreads: 1, NGen: 128, AvgTs: 20, Kernels: "generic"},
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
			for _, k := range []string{"model_type", "model_size", "model_n_params", "n_threads", "n_prompt", "n_gen", "avg_ts", "stddev_ts", "samples_ts", "kernels", "sandbox"} {
				if _, ok := back[0][k]; !ok {
					t.Errorf("no field %s", k)
				}
			}
			if back[0]["avg_ts"] != 61.5 || back[0]["sandbox"] != true || back[0]["type_k"] != "q8_0" || back[0]["type_v"] != "f16" {
				t.Errorf("values: %v", back[0])
			}
		}},
		{"csv", func(t *testing.T, out string) {
			recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
			if err != nil || len(recs) != 3 || recs[1][12] != "61.500000" {
				t.Errorf("csv: %v %v", recs, err)
			}
		}},
		{"md", func(t *testing.T, out string) {
			if !strings.Contains(out, "| pp512 | 61.50 ± 0.50 |") || !strings.Contains(out, "| tg128 | 20.00 ± 0.00 |") {
				t.Errorf("markdown:\n%s", out)
			}
		}},
		{"svg", func(t *testing.T, out string) {
			if !strings.HasPrefix(out, "<svg ") || strings.Count(out, "<rect ") != 2 || strings.Contains(out, "<&>") ||
				!strings.Contains(out, "&lt;&amp;&gt;") {
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
			r := &runner{m: s.m, cache: s.cache, run: model.NewRunner(s.m, s.cache, s.pools[0], max(np, 1)), rng: newRand()}
			b.ReportAllocs()
			if np > 0 {
				for b.Loop() {
					if _, err := r.once(np, 0); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(np)*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				return
			}
			for b.Loop() {
				if _, err := r.once(0, 16); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(16*float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
