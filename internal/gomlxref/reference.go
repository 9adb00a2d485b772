package gomlxref

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/lisa-llm/lisa/gguf"
)

// MaxTokens bounds one Forward call: the graph holds the full
// tokens × tokens attention matrix of every head.
const MaxTokens = 4096

// Model is a llama, qwen2, qwen3 or granite model read from a GGUF file
// for the reference forward pass: its configuration and every weight
// dequantized to float32.
type Model struct {
	// Config is what ReadConfig read; Forward uses it as it is at the
	// call, so a test may change it (NeoX, RopeBase, ...).
	Config  Config
	w       *weights
	backend backends.Backend
}

// Load reads the configuration and weights of a llama, qwen2, qwen3 or
// granite file f (refusing any tensor its family does not use) and
// returns a Model computing on gomlx's pure-Go backend. Errors are
// *Error.
func Load(f *gguf.File) (*Model, error) {
	c, fam, err := readConfig(f)
	if err != nil {
		return nil, err
	}
	w, err := loadWeights(f, c, fam)
	if err != nil {
		return nil, err
	}
	b, err := simplego.New("")
	if err != nil {
		return nil, &Error{What: "backend", Reason: err.Error(), Err: ErrGraph}
	}
	return &Model{Config: c, w: w, backend: b}, nil
}

// Forward returns the logits of every position of tokens, a sequence
// starting at position 0: row t holds NVocab float32 values computed from
// tokens[0..t]. Each call builds and compiles its own graph.
func (m *Model) Forward(tokens []int32) ([][]float32, error) {
	c := m.Config
	if len(tokens) == 0 || len(tokens) > MaxTokens {
		return nil, fail(ErrInvalid, "tokens", "%d tokens, want 1 to %d", len(tokens), MaxTokens)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= c.NVocab {
			return nil, fail(ErrInvalid, "tokens", "token %d at %d outside the vocabulary of %d", t, i, c.NVocab)
		}
	}
	exec, err := graph.NewExec(m.backend, func(tok *graph.Node) *graph.Node { return forward(tok, m.w, c) })
	if err != nil {
		return nil, &Error{What: "graph", Reason: err.Error(), Err: ErrGraph}
	}
	defer exec.Finalize()
	out, err := exec.Exec1(tensors.FromFlatDataAndDimensions(append([]int32(nil), tokens...), len(tokens)))
	if err != nil {
		return nil, &Error{What: "graph", Reason: err.Error(), Err: ErrGraph}
	}
	flat, err := tensors.CopyFlatData[float32](out)
	out.FinalizeAll()
	if err != nil {
		return nil, &Error{What: "graph", Reason: fmt.Sprintf("logits: %v", err), Err: ErrGraph}
	}
	if len(flat) != len(tokens)*c.NVocab {
		return nil, fail(ErrGraph, "graph", "%d logits, want %d", len(flat), len(tokens)*c.NVocab)
	}
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = flat[i*c.NVocab : (i+1)*c.NVocab : (i+1)*c.NVocab]
	}
	return rows, nil
}
