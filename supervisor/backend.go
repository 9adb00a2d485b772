package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// Info describes the ready worker's model.
func (s *Supervisor) Info(ctx context.Context) (broker.ModelInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return broker.ModelInfo{}, s.health
	}
	info := s.info
	info.SpecialTokens = append([]string(nil), s.info.SpecialTokens...)
	info.ControlIDs = append([]int32(nil), s.info.ControlIDs...)
	return info, nil
}

// Generate starts one generation on the ready worker.
func (s *Supervisor) Generate(ctx context.Context, req gen.Request) (<-chan broker.Event, error) {
	in, err := s.serving()
	if err != nil {
		return nil, err
	}
	return in.generate(ctx, req)
}

// Tokenize turns text into token ids on the ready worker.
func (s *Supervisor) Tokenize(ctx context.Context, text string, special bool) ([]int32, error) {
	in, err := s.serving()
	if err != nil {
		return nil, err
	}
	r, err := in.roundTrip(ctx, ipc.ReqTokenize, func(id uint64) ipc.Message {
		return &ipc.Tokenize{ID: id, Text: text, Special: special}
	})
	return r.ids, err
}

// Detokenize turns token ids into text on the ready worker.
func (s *Supervisor) Detokenize(ctx context.Context, ids []int32) (string, error) {
	in, err := s.serving()
	if err != nil {
		return "", err
	}
	if ids == nil {
		ids = []int32{}
	}
	r, err := in.roundTrip(ctx, ipc.ReqDetokenize, func(id uint64) ipc.Message {
		return &ipc.Detokenize{ID: id, IDs: ids}
	})
	return r.text, err
}

func (in *instance) generate(ctx context.Context, req gen.Request) (<-chan broker.Event, error) {
	// The worker checks the message as strictly; checking it here first
	// keeps a broker bug from looking like a worker failure.
	g := &ipc.Generate{ID: 1, Request: req}
	if err := ipc.Check(g); err != nil {
		return nil, fmt.Errorf("supervisor: invalid generate request: %w", err)
	}
	c := &call{kind: ipc.ReqGenerate, n: req.Choices(), maxTokens: req.MaxTokens,
		maxBytes: req.Choices() * min(req.MaxTokens*in.s.cfg.MaxTokenBytes, in.s.cfg.MaxTextBytes),
		logprobs: req.Logprobs, topLogprobs: req.TopLogprobs, maxCalls: maxCalls(&req), wake: make(chan struct{}, 1)}
	id, err := in.register(c)
	if err != nil {
		return nil, err
	}
	g.ID = id
	if err := in.sendMessage(ctx, id, g); err != nil {
		return nil, err
	}
	out := make(chan broker.Event, 4)
	go c.pump(ctx, out, func() { in.abandon(c) })
	return out, nil
}

// roundTrip sends the request msg(id) builds and waits for its answer.
func (in *instance) roundTrip(ctx context.Context, kind ipc.ReqKind, msg func(id uint64) ipc.Message) (result, error) {
	c := &call{kind: kind, result: make(chan result, 1)}
	id, err := in.register(c)
	if err != nil {
		return result{}, err
	}
	if err := in.sendMessage(ctx, id, msg(id)); err != nil {
		return result{}, err
	}
	select {
	case r := <-c.result:
		return r, r.err
	case <-ctx.Done():
		in.abandon(c)
		return result{}, ctx.Err()
	}
}

// register issues an id for c.
func (in *instance) register(c *call) (uint64, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.failErr != nil {
		return 0, workerFailed(in.failErr)
	}
	if len(in.calls) == 0 {
		in.quiet.Store(time.Now().UnixNano()) // the stall clock starts now
	}
	c.id = in.tracker.Issue(c.kind)
	in.calls[c.id] = c
	return c.id, nil
}

// unregister forgets a call whose request never reached the worker.
func (in *instance) unregister(id uint64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.tracker.Finish(id)
	delete(in.calls, id)
}

// sendMessage queues m; on failure the call is unregistered.
func (in *instance) sendMessage(ctx context.Context, id uint64, m ipc.Message) error {
	f, err := ipc.Encode(nil, m)
	if err != nil {
		in.unregister(id)
		return fmt.Errorf("supervisor: %w", err)
	}
	t := time.NewTimer(in.s.cfg.SendTimeout)
	defer t.Stop()
	select {
	case in.sendq <- f:
		return nil
	case <-in.failed:
		err = workerFailed(in.failure())
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		in.fail(fmt.Errorf("worker stalled: send queue full for %v", in.s.cfg.SendTimeout))
		err = workerFailed(in.failure())
	}
	in.unregister(id)
	return err
}

// abandon marks a live call as given up and, for a generation, sends
// cancel; the worker must end it within CancelGrace.
func (in *instance) abandon(c *call) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.calls[c.id] != c || !c.abandonedAt.IsZero() {
		return
	}
	c.abandonedAt = time.Now()
	if c.kind != ipc.ReqGenerate && c.kind != ipc.ReqEmbed {
		return
	}
	f, err := ipc.Encode(nil, &ipc.Cancel{ID: c.id})
	if err != nil {
		return
	}
	select {
	case in.sendq <- f:
	default: // the queue is full: the grace clock runs anyway
	}
}
