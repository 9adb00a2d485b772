// llbench measures llama.cpp the way llama-bench does (pp: one batch of
// n_prompt tokens; tg: n_gen single-token decodes from an empty cache;
// a warm-up run, then r timed runs) through a prebuilt libllama, and
// prints the results as a JSON array in llama-bench's -o json shape, for
// `lisa bench chart`. It uses llama.cpp's default model and context
// parameters; only the thread count is set, with a threadpool attached as
// llama-bench attaches one. The parameter structs are treated as opaque
// (only their defaults are passed on), so no llama.h is needed: see
// run.sh, which builds and runs it.
//
// usage: llbench LIBDIR MODEL THREADS(1,2) N_PROMPT N_GEN REPS
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// Larger than any version's struct: returned and passed by value, only
// the defaults llama.cpp filled in are ever read.
typedef struct { char b[1024]; } params_t;
typedef struct { char b[256]; } batch_t;

// ggml_threadpool_params as ggml.h declares it (GGML_MAX_N_THREADS 512).
typedef struct {
	int8_t cpumask[512];
	int n_threads;
	int prio;
	uint32_t poll;
	int8_t strict_cpu;
	int8_t paused;
} tp_params_t;

void ggml_backend_load_all_from_path(const char *dir);
void *ggml_backend_reg_by_name(const char *name);
void *ggml_backend_reg_get_proc_address(void *reg, const char *name);
void ggml_threadpool_params_init(tp_params_t *p, int n_threads);
void llama_backend_init(void);
params_t llama_model_default_params(void);
params_t llama_context_default_params(void);
void *llama_model_load_from_file(const char *path, params_t p);
int32_t llama_model_desc(const void *model, char *buf, size_t size);
uint64_t llama_model_size(const void *model);
uint64_t llama_model_n_params(const void *model);
void *llama_init_from_model(void *model, params_t p);
void llama_free(void *ctx);
void llama_set_n_threads(void *ctx, int32_t n, int32_t n_batch);
void llama_attach_threadpool(void *ctx, void *tp, void *tp_batch);
batch_t llama_batch_get_one(int32_t *tokens, int32_t n);
int32_t llama_decode(void *ctx, batch_t b);
void llama_synchronize(void *ctx);
void *llama_get_memory(void *ctx);
void llama_memory_clear(void *mem, int data);
const char *llama_print_system_info(void);

// json_string writes s as a JSON string (a model's description comes from
// its file: quotes, backslashes and control bytes are escaped).
static void json_string(const char *s) {
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

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

// run times one pp (n_prompt > 0) or tg test and returns its seconds.
static double run(void *ctx, int32_t *toks, int n_prompt, int n_gen) {
	for (int i = 0; i < n_prompt + n_gen; i++)
		toks[i] = 1 + rand() % 31000;
	llama_memory_clear(llama_get_memory(ctx), 1);
	double t0 = now();
	if (n_prompt > 0) {
		if (llama_decode(ctx, llama_batch_get_one(toks, n_prompt)) != 0) {
			fprintf(stderr, "llbench: decode of %d tokens failed\n", n_prompt);
			exit(1);
		}
	}
	for (int i = 0; i < n_gen; i++) {
		if (llama_decode(ctx, llama_batch_get_one(&toks[i], 1)) != 0) {
			fprintf(stderr, "llbench: decode of token %d failed\n", i);
			exit(1);
		}
	}
	llama_synchronize(ctx);
	return now() - t0;
}

int main(int argc, char **argv) {
	if (argc != 7) {
		fprintf(stderr, "usage: llbench LIBDIR MODEL THREADS N_PROMPT N_GEN REPS\n");
		return 2;
	}
	int n_prompt = atoi(argv[4]), n_gen = atoi(argv[5]), reps = atoi(argv[6]);
	if (n_prompt < 0 || n_gen < 0 || reps < 1 || reps > 100 || n_prompt > 4096 || n_gen > 4096) {
		fprintf(stderr, "llbench: bad N_PROMPT, N_GEN or REPS\n");
		return 2;
	}
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	void *model = llama_model_load_from_file(argv[2], llama_model_default_params());
	if (model == NULL) {
		fprintf(stderr, "llbench: cannot load %s\n", argv[2]);
		return 1;
	}
	char desc[256];
	llama_model_desc(model, desc, sizeof desc);
	fprintf(stderr, "llbench: %s\n", llama_print_system_info());
	void *cpu = ggml_backend_reg_by_name("CPU");
	void *(*threadpool_new)(tp_params_t *) =
		cpu ? ggml_backend_reg_get_proc_address(cpu, "ggml_threadpool_new") : NULL;
	if (threadpool_new == NULL) {
		fprintf(stderr, "llbench: the CPU backend has no ggml_threadpool_new\n");
		return 1;
	}
	int32_t *toks = malloc(sizeof(int32_t) * (n_prompt + n_gen + 1));
	double *samples = malloc(sizeof(double) * reps);
	printf("[");
	int first = 1;
	char *list = strdup(argv[3]);
	for (char *tok = strtok(list, ","); tok != NULL; tok = strtok(NULL, ",")) {
		int threads = atoi(tok);
		if (threads < 1 || threads > 512) {
			fprintf(stderr, "llbench: bad thread count %s\n", tok);
			return 2;
		}
		void *ctx = llama_init_from_model(model, llama_context_default_params());
		if (ctx == NULL) {
			fprintf(stderr, "llbench: cannot make a context\n");
			return 1;
		}
		llama_set_n_threads(ctx, threads, threads);
		tp_params_t tpp;
		memset(&tpp, 0, sizeof tpp);
		ggml_threadpool_params_init(&tpp, threads);
		tpp.poll = 50; // llama-bench's default
		llama_attach_threadpool(ctx, threadpool_new(&tpp), NULL);
		for (int test = 0; test < 2; test++) {
			int np = test == 0 ? n_prompt : 0, ng = test == 1 ? n_gen : 0;
			if (np + ng == 0)
				continue;
			run(ctx, toks, np, ng); // warm-up
			double sum = 0, sq = 0;
			for (int i = 0; i < reps; i++) {
				samples[i] = (np + ng) / run(ctx, toks, np, ng);
				sum += samples[i];
			}
			double mean = sum / reps;
			for (int i = 0; i < reps; i++)
				sq += (samples[i] - mean) * (samples[i] - mean);
			double sd = reps > 1 ? sqrt(sq / (reps - 1)) : 0;
			printf("%s\n {\"model_type\": ", first ? "" : ",");
			json_string(desc);
			printf(", \"model_size\": %llu, \"model_n_params\": %llu, "
			       "\"n_threads\": %d, \"n_prompt\": %d, \"n_gen\": %d, \"avg_ts\": %.6f, "
			       "\"stddev_ts\": %.6f, \"samples_ts\": [",
			       (unsigned long long)llama_model_size(model),
			       (unsigned long long)llama_model_n_params(model), threads, np, ng, mean, sd);
			for (int i = 0; i < reps; i++)
				printf("%s%.6f", i ? ", " : "", samples[i]);
			printf("]}");
			fflush(stdout);
			first = 0;
		}
		llama_free(ctx);
	}
	printf("\n]\n");
	return 0;
}
