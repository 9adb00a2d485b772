// llembed prints llama.cpp's embeddings of texts as JSON, the reference
// lisa's engine tests compare its /v1/embeddings vectors with. It drives
// the prebuilt libllama of node-llama-cpp 3.22.1 (release "v0.5.0") as
// llref does (parameter structs declared by hand from that release's
// llama.h; see llref.c and ref.sh).
//
// usage: llembed LIBDIR MODEL POOLING TEXT...
//
// POOLING is mean, cls, last or model (the file's <arch>.pooling_type).
// Each TEXT is tokenized as llama-server tokenizes an embedding input
// (BOS/EOS as the vocabulary asks, special-token text left as text),
// evaluated from an empty cache in one batch with embeddings on (1
// thread, KV cache F16, flash attention off), pooled by the library
// (llama_get_embeddings_seq) and L2-normalized here, as llama-server
// normalizes by default. Values print as %.9g.
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_abi.h"

typedef void (*log_cb_t)(int level, const char *text, void *user);

void ggml_backend_load_all_from_path(const char *dir);
void llama_backend_init(void);
void llama_log_set(log_cb_t cb, void *user);
model_params_t llama_model_default_params(void);
ctx_params_t llama_context_default_params(void);
void *llama_model_load_from_file(const char *path, model_params_t p);
const void *llama_model_get_vocab(const void *model);
int32_t llama_model_n_embd(const void *model);
void *llama_init_from_model(void *model, ctx_params_t p);
void llama_free(void *ctx);
void llama_set_n_threads(void *ctx, int32_t n, int32_t n_batch);
int32_t llama_pooling_type(const void *ctx);
int32_t llama_decode(void *ctx, batch_t b);
float *llama_get_embeddings_seq(void *ctx, int32_t seq);
int32_t llama_tokenize(const void *vocab, const char *text, int32_t len, int32_t *ids, int32_t max,
		       bool add_special, bool parse_special);

static void log_cb(int level, const char *text, void *user) {
	int *keep = user;
	if (level != 5)
		*keep = level >= 3;
	if (*keep)
		fprintf(stderr, "llembed: llama.cpp: %s", text);
}

static void die(const char *msg, const char *arg) {
	fprintf(stderr, "llembed: %s %s\n", msg, arg);
	exit(1);
}

// json_str prints s, escaping what JSON needs (the texts are ASCII
// command-line arguments).
static void json_str(const char *s) {
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

int main(int argc, char **argv) {
	if (argc < 5)
		die("usage: llembed LIBDIR MODEL mean|cls|last|model TEXT...", "");
	int32_t pooling;
	if (!strcmp(argv[3], "mean"))
		pooling = 1;
	else if (!strcmp(argv[3], "cls"))
		pooling = 2;
	else if (!strcmp(argv[3], "last"))
		pooling = 3;
	else if (!strcmp(argv[3], "model"))
		pooling = -1;
	else
		die("unknown pooling", argv[3]);
	int keep = 0;
	llama_log_set(log_cb, &keep);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	void *model = llama_model_load_from_file(argv[2], llama_model_default_params());
	if (model == NULL)
		die("cannot load", argv[2]);
	const void *vocab = llama_model_get_vocab(model);
	int32_t n_embd = llama_model_n_embd(model);
	const char *base = strrchr(argv[2], '/');
	printf("{\"tool\": \"llembed\", \"model_file\": ");
	json_str(base ? base + 1 : argv[2]);
	printf(", \"pooling_arg\": ");
	json_str(argv[3]);
	printf(", \"n_embd\": %d, \"inputs\": [", n_embd);
	for (int a = 4; a < argc; a++) {
		ctx_params_t cp = llama_context_default_params();
		cp.n_ctx = cp.n_batch = cp.n_ubatch = 512;
		cp.n_threads = cp.n_threads_batch = 1;
		cp.flash_attn_type = 0;
		cp.type_k = cp.type_v = 1;
		cp.embeddings = true;
		cp.pooling_type = pooling;
		void *ctx = llama_init_from_model(model, cp);
		if (ctx == NULL)
			die("cannot make a context for", argv[2]);
		llama_set_n_threads(ctx, 1, 1);
		int32_t ids[512];
		int32_t n = llama_tokenize(vocab, argv[a], (int32_t)strlen(argv[a]), ids, 512, true, false);
		if (n <= 0)
			die("cannot tokenize", argv[a]);
		int32_t pos[512], nseq[512], seq0 = 0, *seqs[512];
		int8_t out[512];
		for (int32_t i = 0; i < n; i++) {
			pos[i] = i;
			nseq[i] = 1;
			seqs[i] = &seq0;
			out[i] = 1;
		}
		batch_t b = {.n_tokens = n, .token = ids, .pos = pos, .n_seq_id = nseq, .seq_id = seqs, .logits = out};
		if (llama_decode(ctx, b) != 0)
			die("llama_decode failed on", argv[a]);
		const float *e = llama_get_embeddings_seq(ctx, 0);
		if (e == NULL)
			die("no pooled embedding (pooling none?) for", argv[a]);
		double ss = 0;
		for (int32_t i = 0; i < n_embd; i++)
			ss += (double)e[i] * e[i];
		double inv = ss > 0 ? 1 / sqrt(ss) : 0;
		printf("%s\n {\"text\": ", a > 4 ? "," : "");
		json_str(argv[a]);
		printf(", \"pooling\": %d, \"ids\": [", llama_pooling_type(ctx));
		for (int32_t i = 0; i < n; i++)
			printf("%s%d", i ? ", " : "", ids[i]);
		printf("], \"embedding\": [");
		for (int32_t i = 0; i < n_embd; i++)
			printf("%s%.9g", i ? ", " : "", (float)(e[i] * inv));
		printf("]}");
		llama_free(ctx);
	}
	printf("\n]}\n");
	return 0;
}
