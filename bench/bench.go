// Package bench measures a model's prompt-processing (pp) and
// text-generation (tg) speed the way llama.cpp's llama-bench does: pp is
// one batch of NPrompt tokens into an empty cache, tg is NGen single-token
// steps after a one-token prompt; each test runs once to warm up, then
// Reps times, and reports the mean and sample standard deviation of
// tokens per second. Results carry llama-bench's JSON field names where
// they mean the same thing.
package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
)

// Params are what one benchmark run measures.
type Params struct {
	NPrompt int   // pp test size (0: no pp test)
	NGen    int   // tg test size (0: no tg test)
	Reps    int   // repetitions after the warm-up
	Threads []int // thread counts, each measured in turn
	// Progress, when set, is called with each line of progress: the model
	// load's end (and, for a slow load, a line about once a second before
	// it), then before each measurement.
	Progress func(msg string)
	// Kernels forces the kernel path of RunWorker's worker ("generic",
	// "avx2", "avx512"; "" lets it choose). In-process runs use the path
	// this process chose at start-up.
	Kernels string
	// MemoryLimit is the sandboxed worker's memory_limit_bytes, applied as
	// lisa serve applies it (RLIMIT_DATA and the Go memory limit); 0 means
	// serve's default, config.Default().MemoryLimitBytes.
	MemoryLimit int64
	// TypeK and TypeV are the KV cache's key and value types ("f16",
	// "q8_0", "f32"; "": f16), llama-bench's -ctk and -ctv.
	TypeK, TypeV string
}

// cacheTypes returns p's KV cache types.
func (p Params) cacheTypes() (k, v model.KVType, err error) {
	parse := func(s string) (model.KVType, error) {
		if s == "" {
			return model.KVF16, nil
		}
		return model.ParseKVType(s)
	}
	if k, err = parse(p.TypeK); err != nil {
		return 0, 0, fmt.Errorf("bench: type_k: %w", err)
	}
	if v, err = parse(p.TypeV); err != nil {
		return 0, 0, fmt.Errorf("bench: type_v: %w", err)
	}
	return k, v, nil
}

// Validate checks the parameters' ranges.
func (p Params) Validate() error {
	switch {
	case p.NPrompt < 0 || p.NPrompt > model.MaxBatch:
		return fmt.Errorf("bench: n_prompt %d out of range [0, %d]", p.NPrompt, model.MaxBatch)
	case p.NGen < 0 || p.NGen > model.MaxCtx-1:
		return fmt.Errorf("bench: n_gen %d out of range [0, %d]", p.NGen, model.MaxCtx-1)
	case p.NPrompt == 0 && p.NGen == 0:
		return errors.New("bench: nothing to measure (n_prompt and n_gen are 0)")
	case p.Reps < 1 || p.Reps > 1000:
		return fmt.Errorf("bench: repetitions %d out of range [1, 1000]", p.Reps)
	case len(p.Threads) == 0:
		return errors.New("bench: no thread counts")
	case p.MemoryLimit < 0:
		return fmt.Errorf("bench: memory limit %d is negative", p.MemoryLimit)
	}
	if _, _, err := p.cacheTypes(); err != nil {
		return err
	}
	for _, t := range p.Threads {
		if t < 1 || t > 1024 {
			return fmt.Errorf("bench: threads %d out of range [1, 1024]", t)
		}
	}
	return nil
}

// Result is one test (pp or tg at one thread count), in llama-bench's
// JSON shape plus this project's kernel path, sandbox state and the
// measuring process's peak memory.
type Result struct {
	ModelFilename string    `json:"model_filename"`
	ModelType     string    `json:"model_type"`
	ModelSize     int64     `json:"model_size"`
	ModelNParams  int64     `json:"model_n_params"`
	NThreads      int       `json:"n_threads"`
	NPrompt       int       `json:"n_prompt"`
	NGen          int       `json:"n_gen"`
	TestTime      string    `json:"test_time"`
	AvgNs         int64     `json:"avg_ns"`
	StddevNs      int64     `json:"stddev_ns"`
	AvgTs         float64   `json:"avg_ts"`
	StddevTs      float64   `json:"stddev_ts"`
	SamplesNs     []int64   `json:"samples_ns"`
	SamplesTs     []float64 `json:"samples_ts"`
	TypeK         string    `json:"type_k"`
	TypeV         string    `json:"type_v"`
	Kernels       string    `json:"kernels"`
	Sandbox       bool      `json:"sandbox"`
	PeakRSS       int64     `json:"peak_rss_bytes"`
}

// Test names the test as llama-bench does: pp512, tg128.
func (r Result) Test() string {
	if r.NPrompt > 0 {
		return "pp" + strconv.Itoa(r.NPrompt)
	}
	return "tg" + strconv.Itoa(r.NGen)
}

// describeModel returns llama-bench's model_type text ("llama 1.1B
// Q4_K - Medium"), the bytes of tensor data and the parameter count.
func describeModel(f *gguf.File) (string, int64, int64) {
	var size, params int64
	for i := range f.Tensors {
		size += f.Tensors[i].Size
		params += f.Tensors[i].Elements()
	}
	ft, err := f.Int32("general.file_type")
	name := fileTypeName(ft, err == nil)
	return fmt.Sprintf("%s %s %s", f.Architecture(), humanParams(params), name), size, params
}

// fileTypeName is llama.cpp's llama_model_ftype_name for the common types.
func fileTypeName(ft int32, ok bool) string {
	names := map[int32]string{0: "all F32", 1: "F16", 2: "Q4_0", 7: "Q8_0", 8: "Q5_0", 10: "Q2_K - Medium",
		12: "Q3_K - Medium", 14: "Q4_K - Small", 15: "Q4_K - Medium", 17: "Q5_K - Medium", 18: "Q6_K", 32: "BF16"}
	if n, found := names[ft]; ok && found {
		return n
	}
	if !ok {
		return "unknown type"
	}
	return "file type " + strconv.Itoa(int(ft))
}

// humanParams formats a parameter count as llama.cpp does: 1.1B, 110M.
func humanParams(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%dM", n/1e6)
	}
	return fmt.Sprintf("%dK", n/1e3)
}

// Session is a loaded model ready to be measured: its cache and one
// kernel pool per thread count, made up front so that measuring creates
// no threads (a sandboxed worker measures under the serving seccomp
// stage, entered between Prepare and Measure). The runners' batch scratch
// is made for one thread count at a time and returned to the system
// before the next, so the peak memory is that of one served
// configuration, not the sum over every -t value.
type Session struct {
	p       Params
	m       *model.Model
	cache   *model.Cache
	pools   []*kernels.Pool
	name    string
	typ     string
	size    int64
	params  int64
	Sandbox bool // recorded in the results
}

// Prepare loads the model of f (which must stay open) for p.
func Prepare(f *gguf.File, p Params) (*Session, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var progress func(model.LoadProgress)
	if p.Progress != nil {
		progress = model.Throttle(func(lp model.LoadProgress) { p.Progress(lp.String()) }, time.Second)
	}
	m, err := model.LoadWithProgress(f, progress)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	s := &Session{p: p, m: m}
	s.typ, s.size, s.params = describeModel(f)
	if v, ok := f.Lookup("general.name"); ok {
		s.name, _ = v.Str()
	}
	tk, tv, err := p.cacheTypes()
	if err != nil {
		return nil, err
	}
	if s.cache, err = model.NewCacheTypes(m.Config, tk, tv, 1, max(p.NPrompt, 1+p.NGen)); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for _, th := range p.Threads {
		s.pools = append(s.pools, kernels.NewPool(th))
	}
	// What parsing and binding left behind goes back before the scratch
	// is allocated.
	debug.FreeOSMemory()
	return s, nil
}

// Close stops the session's pools.
func (s *Session) Close() {
	for _, p := range s.pools {
		p.Close()
	}
}

// Measure runs the tests at every thread count: pp then tg, each with a
// warm-up run and Reps measured ones.
func (s *Session) Measure() ([]Result, error) {
	p := s.p
	var out []Result
	for i, th := range p.Threads {
		if i > 0 {
			debug.FreeOSMemory() // the previous runner's scratch
		}
		r := &runner{m: s.m, cache: s.cache, run: model.NewRunner(s.m, s.cache, s.pools[i], max(p.NPrompt, 1)), rng: newRand()}
		for _, t := range []struct{ np, ng int }{{p.NPrompt, 0}, {0, p.NGen}} {
			if t.np == 0 && t.ng == 0 {
				continue
			}
			res := Result{ModelFilename: s.name, ModelType: s.typ, ModelSize: s.size, ModelNParams: s.params,
				NThreads: th, NPrompt: t.np, NGen: t.ng, TestTime: time.Now().UTC().Format(time.RFC3339),
				Kernels: string(kernels.Selected()), Sandbox: s.Sandbox, TypeK: s.cache.TypeK().String(), TypeV: s.cache.TypeV().String()}
			if p.Progress != nil {
				p.Progress(fmt.Sprintf("%s, %d threads: warm-up", res.Test(), th))
			}
			if _, err := r.once(t.np, t.ng); err != nil {
				return nil, err
			}
			for k := range p.Reps {
				if p.Progress != nil {
					p.Progress(fmt.Sprintf("%s, %d threads: repetition %d/%d", res.Test(), th, k+1, p.Reps))
				}
				d, err := r.once(t.np, t.ng)
				if err != nil {
					return nil, err
				}
				res.SamplesNs = append(res.SamplesNs, d.Nanoseconds())
			}
			res.summarise()
			res.PeakRSS = PeakRSS()
			out = append(out, res)
		}
	}
	return out, nil
}

// Run loads the model of f and measures it in this process.
func Run(f *gguf.File, p Params) ([]Result, error) {
	s, err := Prepare(f, p)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Measure()
}

// newRand returns the generator of the benchmark's token ids.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// summarise fills the averages and standard deviations from SamplesNs.
func (r *Result) summarise() {
	n := r.NPrompt + r.NGen
	r.SamplesTs = make([]float64, len(r.SamplesNs))
	ns := make([]float64, len(r.SamplesNs))
	for i, s := range r.SamplesNs {
		ns[i] = float64(s)
		r.SamplesTs[i] = float64(n) * 1e9 / float64(s)
	}
	m, sd := meanStddev(ns)
	r.AvgNs, r.StddevNs = int64(m), int64(sd)
	r.AvgTs, r.StddevTs = meanStddev(r.SamplesTs)
}

// meanStddev returns the mean and the sample standard deviation (n-1), 0
// for a single sample, as llama-bench computes them.
func meanStddev(x []float64) (float64, float64) {
	if len(x) == 0 {
		return 0, 0
	}
	var s float64
	for _, v := range x {
		s += v
	}
	mean := s / float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	var q float64
	for _, v := range x {
		q += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(q / float64(len(x)-1))
}

// runner drives one model and cache for the tests.
type runner struct {
	m      *model.Model
	cache  *model.Cache
	run    *model.Runner
	rng    *rand.Rand
	tokens []int32
	pos    []int32
	seq    []int32
}

// batch fills the scratch batch with n random tokens from position start.
func (r *runner) batch(n, start int) model.Batch {
	if cap(r.tokens) < n {
		r.tokens, r.pos, r.seq = make([]int32, n), make([]int32, n), make([]int32, n)
	}
	b := model.Batch{Tokens: r.tokens[:n], Pos: r.pos[:n], Seq: r.seq[:n]}
	for i := range n {
		b.Tokens[i] = int32(r.rng.IntN(r.m.Config.NVocab))
		b.Pos[i] = int32(start + i)
	}
	return b
}

// once runs one test from an empty cache and returns its duration: pp
// times one batch of np tokens; tg times ng single-token steps after one
// prompt token (not timed), as llama-bench does.
func (r *runner) once(np, ng int) (time.Duration, error) {
	if err := r.cache.Clear(0); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	if np > 0 {
		b := r.batch(np, 0)
		t0 := time.Now()
		if _, err := r.run.Decode(b); err != nil {
			return 0, fmt.Errorf("bench: pp%d: %w", np, err)
		}
		return time.Since(t0), nil
	}
	if _, err := r.run.Decode(r.batch(1, 0)); err != nil {
		return 0, fmt.Errorf("bench: tg%d prompt: %w", ng, err)
	}
	t0 := time.Now()
	for i := range ng {
		if _, err := r.run.Decode(r.batch(1, 1+i)); err != nil {
			return 0, fmt.Errorf("bench: tg%d step %d: %w", ng, i, err)
		}
	}
	return time.Since(t0), nil
}

// PeakRSS returns this process's peak resident memory (VmHWM of
// /proc/self/status) in bytes, or 0 where it is not available.
func PeakRSS() int64 {
	return vmHWM("/proc/self/status")
}

// vmHWM reads the VmHWM line of a /proc/<pid>/status file.
func vmHWM(path string) int64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}
