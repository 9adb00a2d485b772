package engine

import (
	"testing"

	"github.com/lisa-llm/lisa/gen"
	"github.com/lisa-llm/lisa/ipc"
)

// TestSamplerAcceptsIPCLimits checks that every edge of the sampling
// ranges ipc accepts (which are the broker's ranges) is accepted by the
// sampler too: a request the broker let through must not fail in the
// worker as an internal error.
func TestSamplerAcceptsIPCLimits(t *testing.T) {
	base := gen.Sampling{Temperature: 1, TopP: 1, RepeatPenalty: 1, RepeatLastN: 64}
	tests := []struct {
		name string
		mod  func(*gen.Sampling)
	}{
		{"temperature 0", func(s *gen.Sampling) { s.Temperature = 0 }},
		{"temperature max", func(s *gen.Sampling) { s.Temperature = ipc.MaxTemperature }},
		{"top_p 0", func(s *gen.Sampling) { s.TopP = 0 }},
		{"min_p 1", func(s *gen.Sampling) { s.MinP = 1 }},
		{"repeat_penalty 0", func(s *gen.Sampling) { s.RepeatPenalty = 0 }},
		{"repeat_penalty max", func(s *gen.Sampling) { s.RepeatPenalty = ipc.MaxRepeatPen }},
		{"presence max", func(s *gen.Sampling) { s.PresencePenalty = ipc.MaxPenalty }},
		{"presence min", func(s *gen.Sampling) { s.PresencePenalty = -ipc.MaxPenalty }},
		{"frequency max", func(s *gen.Sampling) { s.FrequencyPenalty = ipc.MaxPenalty }},
		{"frequency min", func(s *gen.Sampling) { s.FrequencyPenalty = -ipc.MaxPenalty }},
		{"top_k max", func(s *gen.Sampling) { s.TopK = ipc.MaxTopK }},
		{"repeat_last_n max", func(s *gen.Sampling) { s.RepeatLastN = ipc.MaxRepeatLastN }},
		{"repeat_last_n 0", func(s *gen.Sampling) { s.RepeatLastN = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.mod(&s)
			p := "x"
			if err := ipc.Check(&ipc.Generate{ID: 1, Request: gen.Request{Prompt: &p, MaxTokens: 1, Sampling: s}}); err != nil {
				t.Fatalf("ipc refuses its own edge: %v", err)
			}
			if err := samplerParams(s, 0).Validate(); err != nil {
				t.Fatalf("ipc accepts %+v but the sampler refuses it: %v", s, err)
			}
		})
	}
	// One past an edge must be refused by ipc, or the edges above prove nothing.
	s := base
	s.RepeatLastN = ipc.MaxRepeatLastN + 1
	p := "x"
	if err := ipc.Check(&ipc.Generate{ID: 1, Request: gen.Request{Prompt: &p, MaxTokens: 1, Sampling: s}}); err == nil {
		t.Fatal("ipc accepts repeat_last_n past its limit")
	}
}
