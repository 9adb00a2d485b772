// Package bench measures a model's prompt-processing (pp) and
// text-generation (tg) speed the way llama.cpp's llama-bench does: pp is
// NPrompt tokens decoded in logical batches of NBatch (each split into
// forward passes of at most NUBatch tokens), tg is NGen single-token
// steps, and a pg test is a prompt followed by generation, timed as one.
// Every test runs at each context depth: the KV cache first holds that
// many tokens, whose filling is not timed. Each test runs once to warm
// up, then Reps times, and reports the mean and sample standard deviation
// of tokens per second. Results carry llama-bench's JSON field names where
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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/kernels"
	"github.com/lisa-llm/lisa/model"
)

// llama-bench's default batch sizes: the logical batch (tokens handed to
// one decode call) and the physical one (tokens of one forward pass).
const (
	DefaultNBatch  = 2048
	DefaultNUBatch = 512
)

// MaxContext bounds the positions a benchmark's cache holds (the deepest
// depth plus the longest test): beyond it the cache alone is gigabytes
// for any model worth measuring.
const MaxContext = 1 << 20

// maxListLen bounds the values of one list parameter (depths, pg tests):
// every value is a test at every thread count.
const maxListLen = 64

// PG is a combined test: NPrompt prompt tokens, then NGen single-token
// steps, timed as one (llama-bench's -pg).
type PG struct {
	NPrompt int `json:"n_prompt"`
	NGen    int `json:"n_gen"`
}

// Params are what one benchmark run measures.
type Params struct {
	NPrompt int   // pp test size (0: no pp test)
	NGen    int   // tg test size (0: no tg test)
	PG      []PG  // combined prompt-then-generation tests
	Depths  []int // context depths every test runs at (nil: 0 only)
	NBatch  int   // logical batch: prompt tokens per decode call (0: DefaultNBatch)
	NUBatch int   // physical batch: tokens per forward pass at most (0: DefaultNUBatch)
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

// batches returns the logical and physical batch sizes, defaults applied.
func (p Params) batches() (nb, nub int) {
	nb, nub = p.NBatch, p.NUBatch
	if nb == 0 {
		nb = DefaultNBatch
	}
	if nub == 0 {
		nub = DefaultNUBatch
	}
	return nb, nub
}

// depths returns the context depths, [0] when none were given.
func (p Params) depths() []int {
	if len(p.Depths) == 0 {
		return []int{0}
	}
	return p.Depths
}

// test is one measurement's shape.
type test struct{ np, ng int }

// tests lists the tests of one depth and thread count in llama-bench's
// order: pp, tg, then the pg tests.
func (p Params) tests() []test {
	var ts []test
	if p.NPrompt > 0 {
		ts = append(ts, test{p.NPrompt, 0})
	}
	if p.NGen > 0 {
		ts = append(ts, test{0, p.NGen})
	}
	for _, pg := range p.PG {
		ts = append(ts, test{pg.NPrompt, pg.NGen})
	}
	return ts
}

// context returns the cache positions the tests need: the deepest depth
// plus the longest test.
func (p Params) context() int {
	longest := 0
	for _, t := range p.tests() {
		longest = max(longest, t.np+t.ng)
	}
	return slices.Max(p.depths()) + longest
}

// Validate checks the parameters' ranges.
func (p Params) Validate() error {
	nb, nub := p.batches()
	switch {
	case p.NPrompt < 0 || p.NPrompt > MaxContext:
		return fmt.Errorf("bench: n_prompt %d out of range [0, %d]", p.NPrompt, MaxContext)
	case p.NGen < 0 || p.NGen > MaxContext:
		return fmt.Errorf("bench: n_gen %d out of range [0, %d]", p.NGen, MaxContext)
	case len(p.PG) > maxListLen:
		return fmt.Errorf("bench: %d pg tests, at most %d", len(p.PG), maxListLen)
	case len(p.Depths) > maxListLen:
		return fmt.Errorf("bench: %d depths, at most %d", len(p.Depths), maxListLen)
	case nb < 1 || nb > MaxContext:
		return fmt.Errorf("bench: n_batch %d out of range [1, %d]", nb, MaxContext)
	case nub < 1 || nub > model.MaxBatch:
		return fmt.Errorf("bench: n_ubatch %d out of range [1, %d]", nub, model.MaxBatch)
	case p.Reps < 1 || p.Reps > 1000:
		return fmt.Errorf("bench: repetitions %d out of range [1, 1000]", p.Reps)
	case len(p.Threads) == 0:
		return errors.New("bench: no thread counts")
	case len(p.Threads) > maxListLen:
		return fmt.Errorf("bench: %d thread counts, at most %d", len(p.Threads), maxListLen)
	case p.MemoryLimit < 0:
		return fmt.Errorf("bench: memory limit %d is negative", p.MemoryLimit)
	}
	for i, pg := range p.PG {
		if pg.NPrompt < 1 || pg.NGen < 1 || pg.NPrompt > MaxContext || pg.NGen > MaxContext {
			return fmt.Errorf("bench: pg test %d (%d,%d): want prompt and generation lengths in [1, %d]", i, pg.NPrompt, pg.NGen, MaxContext)
		}
	}
	for i, d := range p.Depths {
		if d < 0 || d > MaxContext {
			return fmt.Errorf("bench: depth %d (%d) out of range [0, %d]", i, d, MaxContext)
		}
	}
	if len(p.tests()) == 0 {
		return errors.New("bench: nothing to measure (n_prompt and n_gen are 0 and no pg test)")
	}
	if c := p.context(); c > MaxContext {
		return fmt.Errorf("bench: the deepest depth plus the longest test is %d positions, at most %d", c, MaxContext)
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

// Result is one test (pp, tg or pg at one depth and thread count), in
// llama-bench's JSON shape plus this project's kernel path, sandbox
// state, the KV cache's size and the measuring process's peak memory.
type Result struct {
	ModelFilename string    `json:"model_filename"`
	ModelType     string    `json:"model_type"`
	ModelSize     int64     `json:"model_size"`
	ModelNParams  int64     `json:"model_n_params"`
	NBatch        int       `json:"n_batch"`
	NUBatch       int       `json:"n_ubatch"`
	NThreads      int       `json:"n_threads"`
	TypeK         string    `json:"type_k"`
	TypeV         string    `json:"type_v"`
	NPrompt       int       `json:"n_prompt"`
	NGen          int       `json:"n_gen"`
	NDepth        int       `json:"n_depth"`
	TestTime      string    `json:"test_time"`
	AvgNs         int64     `json:"avg_ns"`
	StddevNs      int64     `json:"stddev_ns"`
	AvgTs         float64   `json:"avg_ts"`
	StddevTs      float64   `json:"stddev_ts"`
	SamplesNs     []int64   `json:"samples_ns"`
	SamplesTs     []float64 `json:"samples_ts"`
	Kernels       string    `json:"kernels"`
	Sandbox       bool      `json:"sandbox"`
	KVCacheBytes  int64     `json:"kv_cache_bytes"`
	PeakRSS       int64     `json:"peak_rss_bytes"`
}

// Test names the test as llama-bench does: pp512, tg128, pp512+tg128,
// with " @ d4096" at a context depth.
func (r Result) Test() string {
	name := r.baseTest()
	if r.NDepth > 0 {
		name += " @ d" + strconv.Itoa(r.NDepth)
	}
	return name
}

// baseTest is the test's name without its depth.
func (r Result) baseTest() string {
	switch {
	case r.NPrompt > 0 && r.NGen > 0:
		return "pp" + strconv.Itoa(r.NPrompt) + "+tg" + strconv.Itoa(r.NGen)
	case r.NPrompt > 0:
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

// fileTypeName is llama.cpp's llama_model_ftype_name for the types lisa
// reads and `lisa gguf synth` writes, so that result files of both engines
// carry the same model_type (38, MXFP4 MoE, as a current llama.cpp prints it).
func fileTypeName(ft int32, ok bool) string {
	names := map[int32]string{0: "all F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
		10: "Q2_K - Medium", 11: "Q3_K - Small", 12: "Q3_K - Medium", 13: "Q3_K - Large", 14: "Q4_K - Small",
		15: "Q4_K - Medium", 16: "Q5_K - Small", 17: "Q5_K - Medium", 18: "Q6_K", 25: "IQ4_NL - 4.5 bpw",
		30: "IQ4_XS - 4.25 bpw", 32: "BF16", 38: "MXFP4 MoE"}
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
	if s.cache, err = model.NewCacheTypes(m.Config, tk, tv, 1, p.context()); err != nil {
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

// Measure runs the tests at every thread count and depth, in
// llama-bench's order (threads, then depth, then pp, tg and the pg
// tests), each with a warm-up run and Reps measured ones. Before every
// run the cache is cut back to the depth; the tokens below it are
// decoded once and kept as long as no shallower test overwrites them, as
// llama-bench keeps a depth's state and restores it.
func (s *Session) Measure() ([]Result, error) {
	p := s.p
	nb, nub := p.batches()
	var out []Result
	valid := 0 // positions of the cache that hold the depth fill
	for i, th := range p.Threads {
		if i > 0 {
			debug.FreeOSMemory() // the previous runner's scratch
		}
		r := newRunner(s.m, s.cache, s.pools[i], p)
		for _, d := range p.depths() {
			if valid < d {
				if p.Progress != nil {
					p.Progress(fmt.Sprintf("depth %d, %d threads: filling the cache (not timed)", d, th))
				}
				if err := r.fill(valid, d); err != nil {
					return nil, err
				}
			}
			valid = d
			for _, t := range p.tests() {
				res := Result{ModelFilename: s.name, ModelType: s.typ, ModelSize: s.size, ModelNParams: s.params,
					NBatch: nb, NUBatch: nub, NThreads: th, TypeK: s.cache.TypeK().String(), TypeV: s.cache.TypeV().String(),
					NPrompt: t.np, NGen: t.ng, NDepth: d, TestTime: time.Now().UTC().Format(time.RFC3339),
					Kernels: string(kernels.Selected()), Sandbox: s.Sandbox, KVCacheBytes: s.cache.Bytes()}
				if p.Progress != nil {
					p.Progress(fmt.Sprintf("%s, %d threads: warm-up", res.Test(), th))
				}
				if _, err := r.once(d, t); err != nil {
					return nil, err
				}
				for k := range p.Reps {
					if p.Progress != nil {
						p.Progress(fmt.Sprintf("%s, %d threads: repetition %d/%d", res.Test(), th, k+1, p.Reps))
					}
					el, err := r.once(d, t)
					if err != nil {
						return nil, err
					}
					res.SamplesNs = append(res.SamplesNs, el.Nanoseconds())
				}
				res.summarise()
				res.PeakRSS = PeakRSS()
				out = append(out, res)
			}
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
	nb     int // logical batch
	nub    int // physical batch: the runner's scratch, at most nb
	tokens []int32
	pos    []int32
	seq    []int32
	logits []bool
}

// newRunner makes a runner for p's tests over cache c: its forward passes
// carry at most n_ubatch tokens (at most n_batch, as llama.cpp clamps
// them), and no more than the longest prompt or fill needs.
func newRunner(m *model.Model, c *model.Cache, pool *kernels.Pool, p Params) *runner {
	nb, nub := p.batches()
	nub = min(nub, nb)
	longest := slices.Max(p.depths())
	for _, t := range p.tests() {
		longest = max(longest, t.np)
	}
	nub = max(min(nub, longest), 1)
	return &runner{m: m, cache: c, run: model.NewRunner(m, c, pool, nub), rng: newRand(), nb: nb, nub: nub}
}

// batch fills the scratch batch with n random tokens from position
// start; logits marks the last one as wanted, else none is.
func (r *runner) batch(n, start int, logits bool) model.Batch {
	if cap(r.tokens) < n {
		r.tokens, r.pos, r.seq, r.logits = make([]int32, n), make([]int32, n), make([]int32, n), make([]bool, n)
	}
	b := model.Batch{Tokens: r.tokens[:n], Pos: r.pos[:n], Seq: r.seq[:n], Logits: r.logits[:n]}
	for i := range n {
		b.Tokens[i] = int32(r.rng.IntN(r.m.Config.NVocab))
		b.Pos[i] = int32(start + i)
		b.Logits[i] = false
	}
	b.Logits[n-1] = logits
	return b
}

// prompt decodes n random tokens from position start as llama-bench's
// prompt does: in logical batches of nb tokens, each one decode call
// that wants the logits of its last token, split into forward passes of
// at most nub tokens. It returns the last logits row.
func (r *runner) prompt(start, n int) ([]float32, error) {
	var last []float32
	for done := 0; done < n; {
		lb := min(n-done, r.nb)
		for k := 0; k < lb; {
			ub := min(lb-k, r.nub)
			rows, err := r.run.Decode(r.batch(ub, start+done+k, k+ub == lb))
			if err != nil {
				return nil, fmt.Errorf("position %d: %w", start+done+k, err)
			}
			if k+ub == lb {
				last = rows[0]
			}
			k += ub
		}
		done += lb
	}
	return last, nil
}

// fill decodes the depth tokens from position from (the cache holds the
// ones before it) to depth, untimed.
func (r *runner) fill(from, depth int) error {
	if err := r.cache.Truncate(0, from); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if _, err := r.prompt(from, depth-from); err != nil {
		return fmt.Errorf("bench: depth %d: %w", depth, err)
	}
	return nil
}

// once runs test t on a cache cut back to depth (which must hold that
// many tokens) and returns its duration: the prompt, then the
// single-token steps, as llama-bench times them.
func (r *runner) once(depth int, t test) (time.Duration, error) {
	if err := r.cache.Truncate(0, depth); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	if r.cache.Len(0) != depth {
		return 0, fmt.Errorf("bench: the cache holds %d positions, want the depth %d", r.cache.Len(0), depth)
	}
	t0 := time.Now()
	if t.np > 0 {
		if _, err := r.prompt(depth, t.np); err != nil {
			return 0, fmt.Errorf("bench: pp%d: %w", t.np, err)
		}
	}
	for i := range t.ng {
		if _, err := r.run.Decode(r.batch(1, depth+t.np+i, true)); err != nil {
			return 0, fmt.Errorf("bench: tg%d step %d: %w", t.ng, i, err)
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
