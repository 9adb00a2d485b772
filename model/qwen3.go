package model

// The qwen3 family (dense Qwen3 models): the llama block without biases,
// with an RMSNorm over each query and key head (its own weights, the
// layers' epsilon) after the projection and before the NeoX rotary
// embedding.
func init() {
	register(&Family{
		Arch:     "qwen3",
		RopeNeoX: true,
		Block:    append(preNormBlock(), wQNorm, wKNorm),
	})
}
