package supervisor

import (
	"context"
	"fmt"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/ipc"
)

// Embed returns the unit-length embedding of one input (text, or token
// ids when text is empty) on the ready worker, and the tokens it took.
func (s *Supervisor) Embed(ctx context.Context, text string, ids []int32) (broker.Embedding, error) {
	in, err := s.serving()
	if err != nil {
		return broker.Embedding{}, err
	}
	// The worker checks the message as strictly; checking it here first
	// keeps a broker bug from looking like a worker failure.
	if err := ipc.Check(&ipc.Embed{ID: 1, Text: text, IDs: ids}); err != nil {
		return broker.Embedding{}, fmt.Errorf("supervisor: invalid embed request: %w", err)
	}
	r, err := in.roundTrip(ctx, ipc.ReqEmbed, func(id uint64) ipc.Message {
		return &ipc.Embed{ID: id, Text: text, IDs: ids}
	})
	if err != nil {
		return broker.Embedding{}, err
	}
	return broker.Embedding{Vector: r.vec, Tokens: r.tokens}, nil
}
