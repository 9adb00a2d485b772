// llama_abi.h declares the parameter and batch structs of the prebuilt
// libllama of node-llama-cpp 3.22.1 (release "v0.5.0"), written by hand
// from that release's llama.h, for the C tools that drive it without its
// headers (llref.c, llembed.c): one copy, so a new release's layout is
// changed in one place.
#ifndef LISA_LLAMA_ABI_H
#define LISA_LLAMA_ABI_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// llama_model_params of release v0.5.0 (80 bytes on LP64).
typedef struct {
	void *devices;
	const void *tensor_buft_overrides;
	int32_t n_gpu_layers;
	int32_t split_mode;
	int32_t load_mode;
	int32_t lazy_mode;
	int32_t main_gpu;
	const float *tensor_split;
	void *progress_callback;
	void *progress_callback_user_data;
	const void *kv_overrides;
	bool vocab_only;
	bool check_tensors;
	bool use_extra_bufts;
	bool no_host;
	bool no_alloc;
	bool load_mtp;
} model_params_t;

// llama_context_params of release v0.5.0 (160 bytes on LP64).
typedef struct {
	uint32_t n_ctx;
	uint32_t n_batch;
	uint32_t n_ubatch;
	uint32_t n_seq_max;
	uint32_t n_rs_seq;
	uint32_t n_outputs_max;
	uint32_t n_outputs_max_per_seq;
	int32_t n_threads;
	int32_t n_threads_batch;
	int32_t ctx_type;
	int32_t rope_scaling_type;
	int32_t pooling_type;
	int32_t attention_type;
	int32_t flash_attn_type; // -1 auto, 0 disabled, 1 enabled
	float rope_freq_base;
	float rope_freq_scale;
	float yarn_ext_factor;
	float yarn_attn_factor;
	float yarn_beta_fast;
	float yarn_beta_slow;
	uint32_t yarn_orig_ctx;
	float defrag_thold;
	void *cb_eval;
	void *cb_eval_user_data;
	int32_t type_k; // ggml_type: 1 = F16
	int32_t type_v;
	void *abort_callback;
	void *abort_callback_data;
	bool embeddings;
	bool offload_kqv;
	bool no_perf;
	bool op_offload;
	bool swa_full;
	bool kv_unified;
	void *samplers;
	size_t n_samplers;
	void *ctx_other;
} ctx_params_t;

_Static_assert(sizeof(model_params_t) == 80, "llama_model_params is 80 bytes");
_Static_assert(offsetof(model_params_t, vocab_only) == 72, "vocab_only at 72");
_Static_assert(sizeof(ctx_params_t) == 160, "llama_context_params is 160 bytes");
_Static_assert(offsetof(ctx_params_t, flash_attn_type) == 52, "flash_attn_type at 52");
_Static_assert(offsetof(ctx_params_t, type_k) == 104, "type_k at 104");
_Static_assert(offsetof(ctx_params_t, embeddings) == 128, "embeddings at 128");

typedef struct {
	int32_t n_tokens;
	int32_t *token;
	float *embd;
	int32_t *pos;
	int32_t *n_seq_id;
	int32_t **seq_id;
	int8_t *logits;
} batch_t;

#endif
