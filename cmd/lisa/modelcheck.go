package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
)

// lisa serve checks the model before it listens: a one-job sandboxed
// worker (the lock-down of the serving worker) parses the file and
// reports its architecture and training context. The broker still never
// parses the model: a file that is no GGUF model stops lisa serve with one
// line instead of a server that listens and then fails, and a ctx_size
// past the training context is warned about as llama.cpp does.

// maxModelInfoReply bounds the model check's reply.
const maxModelInfoReply = 4 << 10

// modelInfo is the model check's reply. It comes from the worker: the
// architecture is only logged (slog quotes it), the context length only
// compared.
type modelInfo struct {
	Architecture string `json:"architecture"`
	NCtxTrain    uint64 `json:"n_ctx_train"` // 0: the file does not say
}

// modelInfoJob parses the model and writes its modelInfo.
func modelInfoJob(env *jobEnv) error {
	var p struct{}
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
	return json.NewEncoder(env.out).Encode(info)
}

// checkModel runs the model check on the model at path; sandboxed unless
// the sandbox is off. stderr receives the worker's stderr.
func checkModel(path string, sandboxed bool, stderr io.Writer) (modelInfo, error) {
	var out bytes.Buffer
	err := runJob(jobCall{cmd: "lisa serve", job: "modelinfo", model: path, noSandbox: !sandboxed, params: struct{}{},
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
