package model

// The phi3 family (Phi-3, Phi-3.5-mini, Phi-4, Phi-4-mini): the llama
// block with Q, K and V fused in attn_qkv and the FFN's gate and up
// fused in one ffn_up (gate first), queries scaled before the scores,
// NeoX RoPE over rope.dimension_count values of each head (Phi-4-mini
// rotates three quarters), and LongRoPE: rope_factors_short.weight and
// rope_factors_long.weight with rope.scaling.attn_factor on cos and sin,
// the long factors taken when the context per sequence exceeds
// rope.scaling.original_context_length. The output may be tied
// (Phi-4-mini).
//
// attention.sliding_window is read and checked but not applied: current
// llama.cpp turns Phi's sliding window off (its converter does not say
// which layers have one), and this engine matches llama.cpp.
func init() {
	register(&Family{
		Arch:     "phi3",
		RopeNeoX: true,
		LongRope: true,
		Block:    []BlockWeight{wAttnNorm, wQKV, wO, wFFNNorm, wGateUp, wDown},
		Hyper: func(r reader, c *Config, k func(string) string) error {
			if _, err := r.count(k("attention.sliding_window"), 0, MaxCtx, 0); err != nil {
				return err
			}
			c.QueryPreScale = true
			return nil
		},
	})
}
