package model

// The qwen2 family: Qwen2, Qwen2.5 (and Coder, Math), QwQ,
// DeepSeek-R1-Distill-Qwen. The llama block with biases on the Q, K and V
// projections and NeoX rotary embeddings; YaRN scaling where the file
// says so.
func init() {
	register(&Family{
		Arch:     "qwen2",
		RopeNeoX: true,
		Block:    append(preNormBlock(), wQBias, wKBias, wVBias),
	})
}
