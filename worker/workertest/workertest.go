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

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
	"github.com/lisa-llm/lisa/worker"
)

// VocabSize is the Engine's vocabulary: the 256 byte values and "<s>".
const VocabSize = 257

// ContextSize is the Engine's context: large, so tests may ask for long
// generations, and below ipc.MaxTokens.
const ContextSize = 1 << 22

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
	return worker.Info{Name: "echo", Architecture: "test", ContextSize: ContextSize, VocabSize: VocabSize,
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
// checking ctx before every token. Its prompt is one token per byte of the
// text (and of each message's content) or the ids given; like a real
// engine it refuses, with a *gen.Error, a prompt that leaves no room in
// the context (see Info) and a request for tools or a format. A prompt of
// "fail" fails at once with an error of the engine's own.
func (e *Engine) Generate(ctx context.Context, req gen.Request, emit func(gen.Chunk) error) (gen.End, error) {
	e.Generates.Add(1)
	prompt := req.PromptText()
	for _, m := range req.Messages {
		prompt += m.Content
	}
	if prompt == "fail" {
		return gen.End{}, errors.New("engine failure on request")
	}
	if req.Constrained() {
		return gen.End{}, gen.Errorf(gen.CodeUnsupported, "tools", "the echo model follows no tools or formats")
	}
	n, ctxSize := len(prompt)+len(req.PromptIDs), e.Info().ContextSize
	maxTokens := req.MaxTokens
	switch {
	case n >= ctxSize:
		return gen.End{}, gen.Errorf(gen.CodeContextLength, "messages", "the prompt has %d tokens; the context holds %d", n, ctxSize)
	case req.FitContext:
		maxTokens = min(maxTokens, ctxSize-n)
	case n+maxTokens > ctxSize:
		return gen.End{}, gen.Errorf(gen.CodeContextLength, "max_tokens", "%d prompt tokens and %d to generate exceed the context of %d", n, maxTokens, ctxSize)
	}
	for i := range maxTokens {
		if err := ctx.Err(); err != nil {
			e.Cancelled.Add(1)
			return gen.End{}, err
		}
		if e.Step > 0 {
			time.Sleep(e.Step)
		}
		c := gen.Chunk{Text: fmt.Sprintf("tok%d ", i)}
		if req.Logprobs {
			c.Logprobs = []gen.TokenProb{{Token: c.Text, Logprob: -0.5}}
		}
		if err := emit(c); err != nil {
			return gen.End{}, err
		}
	}
	return gen.End{Finish: gen.FinishLength, Usage: gen.Usage{PromptTokens: n, CompletionTokens: maxTokens}}, nil
}
