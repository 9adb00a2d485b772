package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/model"
	"github.com/lisa-llm/lisa/sandbox"
)

// runWorkerArg, after "run", makes lisa the sandboxed evaluation worker
// of `lisa run --json` / `--teacher-force` instead of the command.
const runWorkerArg = "--run-worker"

// maxEvalReply bounds the evaluation worker's reply (the top logits of
// every position): the command treats the worker as hostile, as the
// broker does.
const maxEvalReply = 256 << 20

// evalParams is what the command passes the evaluation worker on its
// command line: the options that shape the evaluation.
type evalParams struct {
	Prompt    string  `json:"prompt"`
	N         int     `json:"n"`
	Temp      float64 `json:"temp"`
	TopK      int     `json:"top_k"`
	TopP      float64 `json:"top_p"`
	MinP      float64 `json:"min_p"`
	Repeat    float64 `json:"repeat"`
	Seed      int64   `json:"seed"`
	Threads   int     `json:"threads"`
	JSON      bool    `json:"json"`
	TopLogits int     `json:"top_logits"`
	IgnoreEOS bool    `json:"ignore_eos"`
	Teacher   []int32 `json:"teacher,omitempty"`
	HasTeach  bool    `json:"has_teacher"`
	Arith     string  `json:"arith"`
}

// evalReply is what the evaluation worker writes on its socket.
type evalReply struct {
	Output string `json:"output"` // what the command prints
	Error  string `json:"error,omitempty"`
}

// params and options convert between the command's options and the
// worker's parameters.
func (o runOptions) params() evalParams {
	return evalParams{Prompt: o.prompt, N: o.n, Temp: o.temp, TopK: o.topK, TopP: o.topP, MinP: o.minP, Repeat: o.repeat,
		Seed: o.seed, Threads: o.threads, JSON: o.json, TopLogits: o.topLogits, IgnoreEOS: o.ignoreEOS,
		Teacher: o.teacher, HasTeach: o.teacherFlag, Arith: o.arith.String()}
}

func (p evalParams) options() (runOptions, error) {
	arith, err := model.ParseArithmetic(p.Arith)
	if err != nil {
		return runOptions{}, err
	}
	return runOptions{arith: arith, prompt: p.Prompt, n: p.N, temp: p.Temp, topK: p.TopK, topP: p.TopP, minP: p.MinP, repeat: p.Repeat,
		seed: p.Seed, threads: p.Threads, json: p.JSON, topLogits: p.TopLogits, ignoreEOS: p.IgnoreEOS,
		teacher: p.Teacher, teacherFlag: p.HasTeach, progress: os.Stderr}, nil
}

// evaluateSandboxed runs the evaluation in a sandboxed worker (the same
// lock-down and serving seccomp stage as lisa serve's worker) and writes
// its output to w.
func evaluateSandboxed(o runOptions, w *bufio.Writer, stderr io.Writer) error {
	path, err := filepath.Abs(o.model)
	if err != nil {
		return err
	}
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	shardPaths, shards, err := broker.OpenShards(path, sandbox.MaxShards)
	if err != nil {
		return err
	}
	defer broker.CloseShards(shards)
	arg, err := json.Marshal(o.params())
	if err != nil {
		return err
	}
	proc, err := sandbox.Start(sandbox.Config{Enabled: true, ModelPath: path, Model: fh, ShardPaths: shardPaths, Shards: shards, Threads: o.threads,
		MemoryLimit: config.Default().MemoryLimitBytes, ExecArgs: []string{"run", runWorkerArg}, Args: []string{string(arg)}, Stderr: stderr})
	if err != nil {
		return fmt.Errorf("start the sandboxed worker: %w", err)
	}
	defer proc.Kill()
	var rep evalReply
	derr := json.NewDecoder(io.LimitReader(proc.Conn, maxEvalReply)).Decode(&rep)
	proc.Conn.Close() // the worker exits when it sees the end of its socket
	exit := proc.Wait()
	switch {
	case derr != nil:
		return fmt.Errorf("worker reply: %w (worker: %s)", derr, exit.String())
	case rep.Error != "":
		return errors.New(rep.Error)
	}
	_, err = w.WriteString(rep.Output)
	return err
}

// runWorkerMain is the evaluation worker's whole life; args follow
// runWorkerArg. It locks down as the serving worker does, reads the
// model, enters the serving seccomp stage, evaluates, writes the reply on
// its socket and waits for the command to close it.
func runWorkerMain(args []string) int {
	wc, err := sandbox.WorkerFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa run worker:", err)
		return 2
	}
	mf, rep, err := sandbox.LockDown(wc)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lisa run worker: lock-down:", err)
		return 1
	}
	conn := os.NewFile(sandbox.FDIPC, "ipc")
	reply := func(r evalReply) int {
		w := bufio.NewWriter(conn)
		if err := json.NewEncoder(w).Encode(r); err != nil || w.Flush() != nil {
			return 1
		}
		io.Copy(io.Discard, conn) // until the command closes its end
		if r.Error != "" {
			return 1
		}
		return 0
	}
	if len(wc.Args) != 1 {
		return reply(evalReply{Error: fmt.Sprintf("want one parameter argument, got %d", len(wc.Args))})
	}
	var p evalParams
	if err := json.Unmarshal([]byte(wc.Args[0]), &p); err != nil {
		return reply(evalReply{Error: "parameters: " + err.Error()})
	}
	// Under the serving stage close is not allowed: the model's files stay
	// open (and referenced, so no finalizer closes it) until exit.
	defer runtime.KeepAlive(mf)
	f, err := gguf.LoadSplit(mf, gguf.DefaultLimits())
	if err != nil {
		return reply(evalReply{Error: err.Error()})
	}
	defer runtime.KeepAlive(f)
	opts, err := p.options()
	if err != nil {
		return reply(evalReply{Error: "parameters: " + err.Error()})
	}
	ev, err := prepareEval(f, opts)
	if err != nil {
		return reply(evalReply{Error: err.Error()})
	}
	defer ev.close()
	if err := sandbox.EnterServing(&rep); err != nil {
		return reply(evalReply{Error: "enter serving: " + err.Error()})
	}
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	if err := ev.run(w); err != nil {
		return reply(evalReply{Error: err.Error()})
	}
	w.Flush()
	return reply(evalReply{Output: out.String()})
}
