package worker

import (
	"context"
	"fmt"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// Embedder is an Engine that also makes embeddings; the worker answers
// embed requests to an engine without it with unsupported_for_model.
type Embedder interface {
	// Embed returns the unit-length embedding of one input — text, or
	// token ids when text is empty — and how many tokens it took. An
	// input the model cannot embed fails with a *gen.Error. It returns
	// ctx's error when ctx is done before the work starts.
	Embed(ctx context.Context, text string, ids []int32) ([]float32, int, error)
}

// embed answers m in its own goroutine (a cancel names its id as it
// names a generation's).
func (s *server) embed(m *ipc.Embed) error {
	em, ok := s.eng.(Embedder)
	if !ok {
		return s.out.sendError(m.ID, gen.Errorf(gen.CodeUnsupported, "model", "this engine makes no embeddings"))
	}
	return s.spawn(m.ID, "embed", func(ctx context.Context) {
		vec, n, err := em.Embed(ctx, m.Text, m.IDs)
		if err == nil {
			reply := &ipc.Embedding{ID: m.ID, Vector: vec, Tokens: n}
			if err = ipc.Check(reply); err == nil {
				_ = s.out.send(reply)
				return
			}
			err = fmt.Errorf("worker: embedding: %w", err)
		}
		_ = s.out.sendError(m.ID, err)
	})
}
