package model

import "math"

// The gemma2 family (Gemma 2): the llama block with a GELU-gated FFN, an
// RMSNorm on the attention output and one on the FFN output before each
// joins the residual stream, token embeddings multiplied by √NEmbd,
// queries scaled before the scores (1/√head_dim, or 1/√(NEmbd/NHead) for
// the 27B model, whose query_pre_attn_scalar the file does not carry:
// llama.cpp recognises it by its 46 blocks), attention scores and logits
// soft-capped, and a sliding window on the even layers. Published files
// have no output.weight (the output is token_embd); one that has it is
// loaded with it, as for the other families. The file's norm weights
// already hold Gemma's 1+w
// (convert_hf_to_gguf.py adds the 1), so they are used as they are.
func init() {
	register(&Family{
		Arch:     "gemma2",
		RopeNeoX: true,
		Block:    gemmaBlock(),
		Hyper: func(r reader, c *Config, k func(string) string) error {
			gemmaCommon(c, 46)
			// llama.cpp's defaults when the keys are absent.
			c.AttnSoftcap, c.FinalSoftcap = 50, 30
			if err := readScale(r, k("attn_logit_softcapping"), &c.AttnSoftcap); err != nil {
				return err
			}
			if err := readScale(r, k("final_logit_softcapping"), &c.FinalSoftcap); err != nil {
				return err
			}
			var err error
			if c.NSWA, err = r.count(k("attention.sliding_window"), 0, MaxCtx, 4096); err != nil {
				return err
			}
			c.SWAPattern = 2
			return nil
		},
	})
}

// gemmaBlock is the tensors of the Gemma 2 block: the llama block with
// post-attention and post-FFN norms.
func gemmaBlock() []BlockWeight {
	return append(preNormBlock(), wAttnPostNorm, wFFNPostNorm)
}

// gemmaCommon sets what Gemma 2 and 3 share: embeddings times √NEmbd,
// queries scaled before the scores, the GELU FFN, and the attention scale
// of the largest model (recognised by its block count big).
func gemmaCommon(c *Config, big int) {
	c.EmbedScale = float32(math.Sqrt(float64(float32(c.NEmbd))))
	c.QueryPreScale = true
	c.FFNGELU = true
	if c.NLayer == big {
		c.AttnScale = 1 / float32(math.Sqrt(float64(float32(c.NEmbd/c.NHead))))
	}
}
