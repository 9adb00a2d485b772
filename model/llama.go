package model

// The llama family: Llama 1-3.x, Mistral and Mistral Nemo (whose heads
// are wider than NEmbd/NHead: attention.key_length), SmolLM,
// DeepSeek-R1-Distill-Llama, TinyLlama. Llama 3.1 and later carry their
// llama3 RoPE scaling as rope_freqs.weight; llama.cpp also accepts biases
// on the attention projections of this architecture. Mixtral is this
// family with llama.expert_count: its FFN is then a mixture of experts
// (moe.go) of feed_forward_length values each.
func init() {
	register(&Family{
		Arch:      "llama",
		RopeFreqs: true,
		Experts:   ExpertsAllowed,
		Block:     append(preNormBlock(), wQBias.optional(), wKBias.optional(), wVBias.optional(), wOBias.optional()),
	})
}
