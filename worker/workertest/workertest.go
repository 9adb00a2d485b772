// Package workertest provides a small deterministic worker.Engine for tests
// of the worker loop and of the supervisor, in the spirit of httptest: it
// runs no model, it echoes.
package workertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
)

// VocabSize is the Engine's vocabulary: the 256 byte values and "<s>".
const VocabSize = 257

// BOS is the id of "<s>", the one special token.
const BOS = 256

// Engine tokenizes bytes as ids and generates "tok0 tok1 …", one token per
// Step, until MaxTokens.
type Engine struct {
	Step      time.Duration // pause per generated token
	Tensors   int           // tensors the Loader reports validating, one at a time, of 1 KiB each
	Generates atomic.Int64  // generations started
	Cancelled atomic.Int64  // generations that ended because their ctx did
}

// Loader returns a worker.EngineLoader that reports progress through
// e.Tensors and returns e.
func (e *Engine) Loader() worker.EngineLoader {
	return func(_ []*os.File, _ ipc.Hello, progress func(worker.LoadProgress)) (worker.Engine, error) {
		for i := range e.Tensors {
			progress(worker.LoadProgress{Tensors: i + 1, TensorsTotal: e.Tensors, Bytes: int64(i+1) << 10, BytesTotal: int64(e.Tensors) << 10})
		}
		return e, nil
	}
}

// Info describes the echo model.
func (e *Engine) Info() worker.Info {
	return worker.Info{Name: "echo", Architecture: "test", ContextSize: 1024, VocabSize: VocabSize,
		SpecialTokens: []string{"<s>"}, ControlIDs: []int32{BOS}, BOS: BOS, Kernels: "none"}
}

// Tokenize returns one id per byte; with special, "<s>" becomes BOS.
func (e *Engine) Tokenize(text string, special bool) ([]int32, error) {
	ids := []int32{}
	for len(text) > 0 {
		if special && strings.HasPrefix(text, "<s>") {
			ids = append(ids, BOS)
			text = text[3:]
			continue
		}
		ids = append(ids, int32(text[0]))
		text = text[1:]
	}
	return ids, nil
}

// Detokenize is Tokenize's inverse.
func (e *Engine) Detokenize(ids []int32) (string, error) {
	var b strings.Builder
	for _, id := range ids {
		switch {
		case id == BOS:
			b.WriteString("<s>")
		case id >= 0 && id < 256:
			b.WriteByte(byte(id))
		default:
			return "", fmt.Errorf("token id %d out of range", id)
		}
	}
	return b.String(), nil
}

// Generate emits "tok0 ", "tok1 ", … with a logprob per token when asked,
// checking ctx before every token. A prompt of "fail" fails at once.
func (e *Engine) Generate(ctx context.Context, req worker.GenerateParams, emit func(worker.TextChunk) error) (worker.DoneInfo, error) {
	e.Generates.Add(1)
	prompt := req.Prompt
	for _, m := range req.Messages {
		prompt += m.Content
	}
	if prompt == "fail" {
		return worker.DoneInfo{}, errors.New("engine failure on request")
	}
	n := len(prompt) + len(req.PromptIDs)
	for i := range req.MaxTokens {
		if err := ctx.Err(); err != nil {
			e.Cancelled.Add(1)
			return worker.DoneInfo{}, err
		}
		if e.Step > 0 {
			time.Sleep(e.Step)
		}
		c := worker.TextChunk{Text: fmt.Sprintf("tok%d ", i)}
		if req.Logprobs {
			c.Logprobs = []ipc.TokenProb{{Token: c.Text, Logprob: -0.5}}
		}
		if err := emit(c); err != nil {
			return worker.DoneInfo{}, err
		}
	}
	return worker.DoneInfo{Finish: "length", Usage: ipc.Usage{PromptTokens: n, CompletionTokens: req.MaxTokens}}, nil
}
