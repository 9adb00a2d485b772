// llquant quantizes a GGUF model file as llama.cpp's llama-quantize does
// with no options but the file type (no importance matrix, default type
// choices per tensor), by calling llama_model_quantize of the prebuilt
// libllama of node-llama-cpp 3.22.1 (llama.cpp release "v0.5.0"), which
// ships no llama-quantize binary. See quant.sh, which builds and runs it.
//
// usage: llquant LIBDIR INPUT.gguf OUTPUT.gguf FTYPE
//
// FTYPE is a llama-quantize name (Q8_0, Q4_K_M, IQ4_XS, ...).
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

// llama_model_quantize_params of the release's include/llama.h.
typedef struct {
	int32_t nthread;
	int32_t ftype;                // enum llama_ftype
	int32_t output_tensor_type;   // enum ggml_type
	int32_t token_embedding_type; // enum ggml_type
	bool allow_requantize;
	bool quantize_output_tensor;
	bool only_copy;
	bool pure;
	bool keep_split;
	bool dry_run;
	const void *imatrix;
	const void *kv_overrides;
	const void *tt_overrides;
	const int32_t *prune_layers;
	size_t max_buf_size;
} quant_params_t;

_Static_assert(offsetof(quant_params_t, allow_requantize) == 16, "allow_requantize at 16");
_Static_assert(offsetof(quant_params_t, imatrix) == 24, "imatrix at 24");
_Static_assert(sizeof(quant_params_t) == 64, "64 bytes");

void llama_backend_init(void);
void ggml_backend_load_all_from_path(const char *dir);
quant_params_t llama_model_quantize_default_params(void);
uint32_t llama_model_quantize(const char *inp, const char *out, const quant_params_t *params);

// The llama_ftype values of llama.h for the names llama-quantize accepts.
static const struct {
	const char *name;
	int32_t ftype;
} ftypes[] = {
	{"F32", 0},     {"F16", 1},      {"Q4_0", 2},    {"Q4_1", 3},     {"Q8_0", 7},
	{"Q5_0", 8},    {"Q5_1", 9},     {"Q2_K", 10},   {"Q3_K_S", 11},  {"Q3_K_M", 12},
	{"Q3_K_L", 13}, {"Q4_K_S", 14},  {"Q4_K_M", 15}, {"Q5_K_S", 16},  {"Q5_K_M", 17},
	{"Q6_K", 18},   {"Q2_K_S", 21},  {"IQ4_NL", 25}, {"IQ4_XS", 30},  {"BF16", 32},
	{"MXFP4_MOE", 38},
};

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: llquant LIBDIR INPUT.gguf OUTPUT.gguf FTYPE\n");
		return 2;
	}
	int32_t ftype = -1;
	for (size_t i = 0; i < sizeof ftypes / sizeof ftypes[0]; i++)
		if (strcasecmp(argv[4], ftypes[i].name) == 0)
			ftype = ftypes[i].ftype;
	if (ftype < 0) {
		fprintf(stderr, "llquant: unknown file type %s\n", argv[4]);
		return 2;
	}
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	quant_params_t p = llama_model_quantize_default_params();
	// The defaults the release fills in, where this struct says they are:
	// a different layout must not pass silently.
	if (p.nthread != 0 || p.ftype != 7 || p.output_tensor_type != 43 || p.token_embedding_type != 43 ||
	    p.allow_requantize || !p.quantize_output_tensor || p.only_copy || p.pure || p.keep_split ||
	    p.dry_run || p.imatrix || p.kv_overrides || p.tt_overrides || p.prune_layers ||
	    p.max_buf_size != 8ull << 30) {
		fprintf(stderr, "llquant: llama_model_quantize_params defaults are not where llquant.c "
				"declares them: not the llama.cpp release it was written for (v0.5.0)\n");
		return 1;
	}
	// As llama-quantize INPUT OUTPUT FTYPE: only the type is set. One
	// thread: the result does not depend on it, and the machine is shared.
	p.ftype = ftype;
	p.nthread = 1;
	if (llama_model_quantize(argv[2], argv[3], &p) != 0) {
		fprintf(stderr, "llquant: quantizing %s failed\n", argv[2]);
		return 1;
	}
	return 0;
}
