package model

import "fmt"

// The qwen3moe family (Qwen3-30B-A3B, Qwen3-235B-A22B): the qwen3 block
// (Q/K norms, NeoX RoPE, no biases) with a mixture-of-experts FFN
// (moe.go) of qwen3moe.expert_feed_forward_length values per expert
// (feed_forward_length/expert_used_count when the key is absent, as
// llama.cpp takes it). llama.cpp always renormalises the chosen experts'
// weights for this architecture (the models' norm_topk_prob).
func init() {
	register(&Family{
		Arch:     "qwen3moe",
		RopeNeoX: true,
		Experts:  ExpertsRequired,
		Block:    []BlockWeight{wAttnNorm, wQ, wK, wV, wO, wQNorm, wKNorm, wFFNNorm},
		Hyper: func(r reader, c *Config, k func(string) string) error {
			ff, err := r.count(k("expert_feed_forward_length"), 0, MaxFF, 0)
			if err != nil {
				return err
			}
			if ff == 0 {
				ff = c.NFF / c.NExpertUsed
			}
			if ff < 1 {
				return &KeyError{Key: k("expert_feed_forward_length"), Reason: fmt.Sprintf("absent or 0, and feed_forward_length %d over %d experts per token is 0", c.NFF, c.NExpertUsed), Err: ErrInvalid}
			}
			c.NFFExp = ff
			return nil
		},
	})
}
