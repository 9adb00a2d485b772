package model

// The granite family (IBM Granite 3.x dense models): the llama block with
// four scalars of its own, each optional: the attention scores' scale (in
// place of 1/sqrt(head_dim)), a factor on the token embeddings, one on
// each block's attention and FFN outputs before they join the residual
// stream, and a divisor of the logits. As in current llama.cpp,
// rope.scaling.finetuned (default true) switches RoPE on or off, and
// rope_freqs.weight is taken as llama takes it.
func init() {
	register(&Family{
		Arch:      "granite",
		RopeFreqs: true,
		Block:     append(preNormBlock(), wQBias.optional(), wKBias.optional(), wVBias.optional(), wOBias.optional()),
		Hyper: func(r reader, c *Config, k func(string) string) error {
			rope, err := r.flag(k("rope.scaling.finetuned"), true)
			if err != nil {
				return err
			}
			c.RopeOff = !rope
			for _, s := range []struct {
				key string
				dst *float32
			}{
				{"attention.scale", &c.AttnScale},
				{"embedding_scale", &c.EmbedScale},
				{"residual_scale", &c.ResidualScale},
				{"logit_scale", &c.LogitScale},
			} {
				if err := readScale(r, k(s.key), s.dst); err != nil {
					return err
				}
			}
			return nil
		},
	})
}
