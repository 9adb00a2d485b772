package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/internal/gcbound"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/sandbox"
)

// WorkerArg is the argument, after the command name given to RunWorker,
// that makes lisa a benchmark worker instead of the broker side.
const WorkerArg = "--bench-worker"

// maxResultBytes bounds the worker's reply: the broker side treats the
// worker as hostile like any other.
const maxResultBytes = 1 << 20

// workerParams is Params as sent to the worker on its command line.
type workerParams struct {
	NPrompt int    `json:"n_prompt"`
	NGen    int    `json:"n_gen"`
	PG      []PG   `json:"pg"`
	Depths  []int  `json:"depths"`
	NBatch  int    `json:"n_batch"`
	NUBatch int    `json:"n_ubatch"`
	Reps    int    `json:"reps"`
	Threads []int  `json:"threads"`
	TypeK   string `json:"type_k"`
	TypeV   string `json:"type_v"`
}

// workerReply is what the worker writes on fd 3: results or an error.
type workerReply struct {
	Results []Result `json:"results"`
	Error   string   `json:"error,omitempty"`
}

// RunWorker starts a worker that re-executes this binary with execArgs
// (e.g. "bench", WorkerArg) in the sandbox (or, with sandboxed false,
// unsandboxed as a child process), measures the model at path there and
// returns its results, each with the worker's peak resident memory read
// from /proc/<pid>/status before it exits. Progress lines the worker
// prints go to progress (nil: discarded).
func RunWorker(path string, p Params, sandboxed bool, execArgs []string, progress io.Writer) ([]Result, error) {
	return runWorker(path, p, sandboxed, execArgs, progress, nil)
}

// workerMemoryLimit is the memory limit a sandboxed benchmark worker runs
// under: the one lisa serve would give it, so the numbers are the served
// configuration's (an unsandboxed child gets none, as serve's).
func workerMemoryLimit(p Params, sandboxed bool) int64 {
	switch {
	case !sandboxed:
		return 0
	case p.MemoryLimit > 0:
		return p.MemoryLimit
	}
	return config.Default().MemoryLimitBytes
}

// runWorker is RunWorker; inspect, when set, is called with the worker's
// pid once its results are in and before it is told to exit (tests read
// its limits there).
func runWorker(path string, p Params, sandboxed bool, execArgs []string, progress io.Writer, inspect func(pid int)) ([]Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	shardPaths, shards, err := broker.OpenShards(abs, sandbox.MaxShards)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer broker.CloseShards(shards)
	arg, _ := json.Marshal(workerParams{p.NPrompt, p.NGen, p.PG, p.Depths, p.NBatch, p.NUBatch, p.Reps, p.Threads, p.TypeK, p.TypeV})
	proc, err := sandbox.Start(sandbox.Config{Enabled: sandboxed, ModelPath: abs, Model: f, ShardPaths: shardPaths, Shards: shards, Threads: p.maxThreads(), Kernels: p.Kernels,
		MemoryLimit: workerMemoryLimit(p, sandboxed), ExecArgs: execArgs, Args: []string{string(arg)}, Stderr: progress})
	if err != nil {
		return nil, fmt.Errorf("bench: start worker: %w", err)
	}
	defer proc.Kill()
	var rep workerReply
	dec := json.NewDecoder(io.LimitReader(proc.Conn, maxResultBytes))
	derr := dec.Decode(&rep)
	peak := vmHWM("/proc/" + strconv.Itoa(proc.Pid) + "/status")
	if inspect != nil && derr == nil {
		inspect(proc.Pid)
	}
	proc.Conn.Close() // the worker exits when it sees the end of its socket
	exit := proc.Wait()
	if derr != nil {
		return nil, fmt.Errorf("bench: worker reply: %w (worker: %s)", derr, exit.String())
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("bench: worker: %s", rep.Error)
	}
	if len(rep.Results) == 0 {
		return nil, errors.New("bench: worker returned no results")
	}
	for i := range rep.Results {
		if peak > 0 {
			rep.Results[i].PeakRSS = peak
		}
		rep.Results[i].Sandbox = sandboxed
	}
	return rep.Results, nil
}

// WorkerMain is the benchmark worker's whole life; args are its arguments
// after WorkerArg. It locks down as the serving worker does, loads the
// model, enters the serving seccomp stage, measures, writes the results
// as JSON on fd 3, and waits for the broker to close the socket.
func WorkerMain(args []string) int {
	wc, err := sandbox.WorkerFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa bench worker:", err)
		return 2
	}
	mf, rep, err := sandbox.LockDown(wc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa bench worker: lock-down:", err)
		return 1
	}
	conn := os.NewFile(sandbox.FDIPC, "ipc")
	reply := func(r workerReply) int {
		w := bufio.NewWriter(conn)
		if err := json.NewEncoder(w).Encode(r); err != nil || w.Flush() != nil {
			return 1
		}
		io.Copy(io.Discard, conn) // until the broker closes its end
		if r.Error != "" {
			return 1
		}
		return 0
	}
	if len(wc.Args) != 1 {
		return reply(workerReply{Error: fmt.Sprintf("want one parameter argument, got %d", len(wc.Args))})
	}
	var wp workerParams
	if err := json.Unmarshal([]byte(wc.Args[0]), &wp); err != nil {
		return reply(workerReply{Error: "parameters: " + err.Error()})
	}
	p := Params{NPrompt: wp.NPrompt, NGen: wp.NGen, PG: wp.PG, Depths: wp.Depths, NBatch: wp.NBatch, NUBatch: wp.NUBatch,
		Reps: wp.Reps, Threads: wp.Threads, TypeK: wp.TypeK, TypeV: wp.TypeV,
		Progress: func(msg string) { fmt.Fprintln(os.Stderr, msg) }}
	// Under the serving stage close is not allowed: the model's files stay
	// open (and referenced, so no finalizer closes it) until exit.
	defer runtime.KeepAlive(mf)
	f, err := openWorkerModel(mf, p, debug.SetMemoryLimit(-1))
	if err != nil {
		return reply(workerReply{Error: err.Error()})
	}
	defer runtime.KeepAlive(f)
	s, err := Prepare(f, p)
	if err != nil {
		return reply(workerReply{Error: err.Error()})
	}
	defer s.Close()
	s.Sandbox = wc.Enabled
	// As the serving worker does: return what loading left free and bound
	// the garbage between collections, so the peak measured is a served
	// configuration's.
	gcbound.Settle(gcbound.Garbage)
	if err := sandbox.EnterServing(&rep); err != nil {
		return reply(workerReply{Error: "enter serving: " + err.Error()})
	}
	rs, err := s.Measure()
	if err != nil {
		return reply(workerReply{Error: err.Error()})
	}
	return reply(workerReply{Results: rs})
}

// openWorkerModel opens the model's files as the serving worker does
// (model.OpenWithinLimit): mapped, or a private in-memory copy when the
// copy, the KV cache and the scratch fit in the serving engine's share of
// the memory limit (the Go memory limit the sandbox set). A model larger
// than that stays mapped: only the tensors a test reads (for a mixture of
// experts, the experts its tokens choose) are paged in. Before this, the
// worker always copied, so a model larger than the limit could not be
// measured at all.
func openWorkerModel(mf []*os.File, p Params, limit int64) (*gguf.File, error) {
	return model.OpenWithinLimit(mf, limit, p.memoryPlan)
}

// memoryPlan is the plan of the cache and the runners p's tests make,
// whatever the model's configuration: one sequence of p.context()
// positions, forward passes of at most n_ubatch tokens (and n_batch:
// newRunner clamps to both), on at most the most threads p lists (the
// runners are made one at a time).
func (p Params) memoryPlan(model.Config) (model.MemoryPlan, error) {
	tk, tv, err := p.cacheTypes()
	nb, nub := p.batches()
	return model.MemoryPlan{TypeK: tk, TypeV: tv, Seqs: 1, Ctx: p.context(), Batch: min(nb, nub), Threads: p.maxThreads()}, err
}

// maxThreads is the largest of p's thread counts (0 for none).
func (p Params) maxThreads() int {
	n := 0
	for _, t := range p.Threads {
		n = max(n, t)
	}
	return n
}
