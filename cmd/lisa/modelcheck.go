package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"

	"github.com/lisa-llm/lisa/engine"
	"github.com/lisa-llm/lisa/model"
)

// lisa serve checks the model before it listens: a one-job sandboxed
// worker (the lock-down of the serving worker) parses the file and
// reports its architecture and training context. The broker still never
// parses the model: a file that is no GGUF model stops lisa serve with one
// line instead of a server that listens and then fails, and a ctx_size
// past the training context is warned about as llama.cpp does.

// maxModelInfoReply bounds the model check's reply.
const maxModelInfoReply = 4 << 10

// maxPlanBytes bounds the byte counts of a model check's reply: beyond
// any machine's memory, and far from overflowing a sum of them.
const maxPlanBytes = 1 << 50

// modelInfo is the model check's reply. It comes from the worker: the
// architecture is only logged (slog quotes it), the context length only
// compared, the plan's sizes only counted against the models memory
// budget (a lie makes a model count less there, never lets its worker
// take more than its memory cap).
type modelInfo struct {
	Architecture string `json:"architecture"`
	NCtxTrain    uint64 `json:"n_ctx_train"` // 0: the file does not say
	// With a plan asked for: the resolved tokens per slot and slots, and
	// the bytes of the KV cache and of the scratch the serving worker
	// allocates beside the weights.
	CtxSize      int   `json:"ctx_size,omitempty"`
	Parallel     int   `json:"parallel,omitempty"`
	KVCacheBytes int64 `json:"kv_cache_bytes,omitempty"`
	ScratchBytes int64 `json:"scratch_bytes,omitempty"`
}

// modelPlan is what a server with several models asks the model check to
// plan for: the settings its serving worker gets. With MemoryLimit above
// 0, a KV cache and scratch that do not fit it fail the check, with the
// error the serving worker would give.
type modelPlan struct {
	CtxSize     int    `json:"ctx_size"`
	Parallel    int    `json:"parallel"`
	CacheTypeK  string `json:"cache_type_k"`
	CacheTypeV  string `json:"cache_type_v"`
	Threads     int    `json:"threads"`
	MemoryLimit int64  `json:"memory_limit_bytes"`
}

// modelInfoParams are the model check's parameters: the plan is optional.
type modelInfoParams struct {
	Plan *modelPlan `json:"plan,omitempty"`
}

// modelInfoJob parses the model and writes its modelInfo, planning its
// serving memory when asked to.
func modelInfoJob(env *jobEnv) error {
	var p modelInfoParams
	f, err := env.parse(&p)
	if err != nil {
		return err
	}
	if err := env.serving(); err != nil {
		return err
	}
	arch := f.Architecture()
	if arch == "" {
		return fmt.Errorf("not a model: no general.architecture")
	}
	info := modelInfo{Architecture: arch}
	if n, err := f.Uint64(arch + ".context_length"); err == nil {
		info.NCtxTrain = n
	}
	if p.Plan != nil {
		o := engine.Options{Threads: p.Plan.Threads, CtxSize: p.Plan.CtxSize, Parallel: p.Plan.Parallel, MemoryLimit: p.Plan.MemoryLimit}
		for _, c := range []struct {
			key, v string
			t      *model.KVType
		}{{"cache_type_k", p.Plan.CacheTypeK, &o.KV}, {"cache_type_v", p.Plan.CacheTypeV, &o.KVV}} {
			if c.v == "" {
				continue
			}
			if *c.t, err = model.ParseKVType(c.v); err != nil {
				return fmt.Errorf("%s: %w", c.key, err)
			}
		}
		r, cache, scratch, err := engine.Plan(f, o)
		if err != nil {
			return err
		}
		info.CtxSize, info.Parallel = r.CtxSize, r.Parallel
		info.KVCacheBytes, info.ScratchBytes = int64(cache), int64(scratch)
	}
	return json.NewEncoder(env.out).Encode(info)
}

// checkModel runs the model check on the model at path, planning for
// plan when it is not nil; sandboxed unless the sandbox is off. stderr
// receives the worker's stderr.
func checkModel(path string, sandboxed bool, plan *modelPlan, stderr io.Writer) (modelInfo, error) {
	var out bytes.Buffer
	err := runJob(jobCall{cmd: "lisa serve", job: "modelinfo", model: path, noSandbox: !sandboxed, params: modelInfoParams{Plan: plan},
		noSandboxHint: "--sandbox-enabled=false runs the worker unsandboxed",
		limit:         func(int64) int64 { return maxModelInfoReply }}, &out, stderr)
	if err != nil {
		return modelInfo{}, err
	}
	return decodeModelInfo(out.Bytes())
}

// decodeModelInfo decodes the worker's reply (hostile: at most
// maxModelInfoReply bytes): one JSON object of known fields, a short
// printable architecture.
func decodeModelInfo(reply []byte) (modelInfo, error) {
	var info modelInfo
	dec := json.NewDecoder(bytes.NewReader(reply))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		return modelInfo{}, fmt.Errorf("model check reply: %w", err)
	}
	if dec.More() {
		return modelInfo{}, fmt.Errorf("model check reply: data after the object at offset %d", dec.InputOffset())
	}
	if info.Architecture == "" || len(info.Architecture) > 64 || !isPrintableASCII(info.Architecture) {
		return modelInfo{}, fmt.Errorf("model check reply: architecture of %d bytes, want 1 to 64 printable ASCII", len(info.Architecture))
	}
	for _, v := range []struct {
		key string
		n   int64
	}{{"ctx_size", int64(info.CtxSize)}, {"parallel", int64(info.Parallel)}, {"kv_cache_bytes", info.KVCacheBytes}, {"scratch_bytes", info.ScratchBytes}} {
		if v.n < 0 || v.n > maxPlanBytes {
			return modelInfo{}, fmt.Errorf("model check reply: %s %d out of range [0, %d]", v.key, v.n, int64(maxPlanBytes))
		}
	}
	return info, nil
}

func isPrintableASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// ctxWarning returns the warning for a context size past the model's
// training context (llama.cpp: "n_ctx_per_seq > n_ctx_train -- possible
// training context overflow"), or "" when there is none. ctxSize is per
// slot, as n_ctx_per_seq; 0 means the model's own.
func ctxWarning(ctxSize int, nCtxTrain uint64) string {
	if ctxSize <= 0 || nCtxTrain == 0 || uint64(ctxSize) <= nCtxTrain {
		return ""
	}
	return fmt.Sprintf("ctx_size %d is past the model's training context of %d tokens: "+
		"past %d tokens the model may lose coherence (llama.cpp warns the same)", ctxSize, nCtxTrain, nCtxTrain)
}
