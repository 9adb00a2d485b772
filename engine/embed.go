package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/model"
)

// Pooling is how an embedding is made of the final hidden states of its
// tokens: the values of llama.cpp's <arch>.pooling_type metadata.
type Pooling uint32

// The pooling types (llama.cpp's numbering, as stored in GGUF files).
const (
	PoolingNone Pooling = 0 // one vector per token: no single embedding
	PoolingMean Pooling = 1 // the average of every token's hidden state
	PoolingCLS  Pooling = 2 // the first token's hidden state
	PoolingLast Pooling = 3 // the last token's hidden state (Qwen3-Embedding)
	PoolingRank Pooling = 4 // a reranker's score: not an embedding
)

// String names the pooling as llama.cpp's --pooling flag does.
func (p Pooling) String() string {
	switch p {
	case PoolingNone:
		return "none"
	case PoolingMean:
		return "mean"
	case PoolingCLS:
		return "cls"
	case PoolingLast:
		return "last"
	case PoolingRank:
		return "rank"
	}
	return fmt.Sprintf("pooling(%d)", uint32(p))
}

// Pooling returns the model's pooling type from <arch>.pooling_type, or
// PoolingMean when the file does not say (decoder-only models carry no
// such key; mean pooling is llama.cpp's server default for them too).
func (e *Engine) Pooling() (Pooling, error) {
	key := e.file.Architecture() + ".pooling_type"
	if _, ok := e.file.Lookup(key); !ok {
		return PoolingMean, nil
	}
	v, err := e.file.Uint32(key)
	if err != nil {
		return 0, fmt.Errorf("engine: %w", err)
	}
	return Pooling(v), nil
}

// Embed returns the L2-normalized embedding of one input and the number
// of tokens it took: text is tokenized with the vocabulary's BOS and EOS
// as it asks for them (what llama.cpp's embedding endpoint does) and with
// special-token texts left as plain text; ids (when text is empty) are
// evaluated as given. The final hidden states (after the output norm) are
// pooled as the model's pooling type says. A model whose pooling is none
// or rank, an empty input or one longer than the context fails with a
// *gen.Error.
func (e *Engine) Embed(ctx context.Context, text string, ids []int32) ([]float32, int, error) {
	pool, err := e.Pooling()
	if err != nil {
		return nil, 0, err
	}
	if pool != PoolingMean && pool != PoolingCLS && pool != PoolingLast {
		return nil, 0, promptError(gen.CodeUnsupported, "model", "the model's pooling type is %s: it makes no single embedding of an input", pool)
	}
	if text != "" {
		ids = e.tok.Encode(text, true, false)
	} else if err := e.checkIDs(ids); err != nil {
		return nil, 0, err
	}
	if len(ids) == 0 {
		return nil, 0, promptError(gen.CodeInvalidPrompt, "input", "the input has no tokens")
	}
	if n := e.sched.cache.NCtx(); len(ids) > n {
		return nil, 0, promptError(gen.CodeContextLength, "input", "the input has %d tokens, more than the context of %d", len(ids), n)
	}
	j := &embedJob{ctx: ctx, ids: ids, pool: pool, done: make(chan struct{})}
	if err := e.sched.submitEmbed(j); err != nil {
		return nil, 0, err
	}
	// The loop drops the job once ctx is done, before it starts or
	// between its batches.
	<-j.done
	return j.vec, len(ids), j.err
}

// embedJob is one embedding waiting for, or done by, the scheduler loop:
// it borrows a free slot's cache sequence, so it runs between steps.
type embedJob struct {
	ctx  context.Context
	ids  []int32
	pool Pooling
	done chan struct{}
	vec  []float32
	err  error
}

// runEmbeds runs the queued embeddings on a free slot, if there is one;
// they wait otherwise (generations free their slots as they end).
func (s *scheduler) runEmbeds() {
	s.mu.Lock()
	jobs := s.embeds
	s.embeds = nil
	s.mu.Unlock()
	var wait []*embedJob
	for _, j := range jobs {
		sl := s.freeSlot()
		if err := j.ctx.Err(); err != nil {
			j.err = err
			close(j.done)
			continue
		}
		if sl == nil {
			wait = append(wait, j)
			continue
		}
		j.vec, j.err = s.embed(j.ctx, sl, j.ids, j.pool)
		close(j.done)
	}
	if len(wait) > 0 {
		s.mu.Lock()
		s.embeds = append(wait, s.embeds...)
		s.mu.Unlock()
	}
}

// freeSlot returns the least recently used slot without a generation, or
// nil when every slot is busy.
func (s *scheduler) freeSlot() *slot {
	var best *slot
	for _, sl := range s.slots {
		if sl.req == nil && (best == nil || sl.lastUse < best.lastUse) {
			best = sl
		}
	}
	return best
}

// embed evaluates ids on sl's sequence (which it clears before and after:
// its keys and values are of no use to a generation) and pools the final
// hidden states into a unit vector.
func (s *scheduler) embed(ctx context.Context, sl *slot, ids []int32, pool Pooling) ([]float32, error) {
	sl.cached = sl.cached[:0]
	if err := s.cache.Clear(sl.seq); err != nil {
		return nil, err
	}
	defer func() { _ = s.cache.Clear(sl.seq) }()
	var sum []float64
	b := model.Batch{}
	for start := 0; start < len(ids); start += s.maxBatch {
		// A long input takes several passes; a request that has gone
		// stops between them.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := min(s.maxBatch, len(ids)-start)
		b.Tokens, b.Pos, b.Seq, b.Logits = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
		for i := range n {
			p := start + i
			b.Tokens = append(b.Tokens, ids[p])
			b.Pos = append(b.Pos, int32(p))
			b.Seq = append(b.Seq, int32(sl.seq))
			// Mean pooling needs every row; CLS the first, last the last.
			b.Logits = append(b.Logits, pool == PoolingMean || (pool == PoolingCLS && p == 0) || (pool == PoolingLast && p == len(ids)-1))
		}
		rows, err := s.run.Hidden(b)
		if err != nil {
			return nil, fmt.Errorf("engine: embedding: %w", err)
		}
		for _, row := range rows {
			if sum == nil {
				sum = make([]float64, len(row))
			}
			for k, v := range row {
				sum[k] += float64(v)
			}
		}
	}
	return normalize(sum)
}

// normalize returns v scaled to unit length as float32 (the scale of a
// mean drops out), or an error when v has no direction or is not finite.
func normalize(v []float64) ([]float32, error) {
	var ss float64
	for _, x := range v {
		ss += x * x
	}
	if ss == 0 || math.IsInf(ss, 0) || math.IsNaN(ss) {
		return nil, fmt.Errorf("engine: embedding: the pooled state has norm² %v", ss)
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x * inv)
	}
	return out, nil
}

// submitEmbed queues j for the loop.
func (s *scheduler) submitEmbed(j *embedJob) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.embeds = append(s.embeds, j)
	s.signal()
	return nil
}

// failEmbeds ends the queued embeddings with err (the loop is closing).
func (s *scheduler) failEmbeds(err error) {
	s.mu.Lock()
	jobs := s.embeds
	s.embeds = nil
	s.mu.Unlock()
	for _, j := range jobs {
		j.err = err
		close(j.done)
	}
}
