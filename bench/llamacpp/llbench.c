// llbench measures llama.cpp the way llama-bench does (pp: n_prompt
// tokens in decode calls of n_batch; tg: n_gen single-token decodes; each
// at every context depth, the cache first holding that many tokens whose
// decoding is not timed; a warm-up run, then r timed runs) through a
// prebuilt libllama, and prints the results as a JSON array in
// llama-bench's -o json shape, for `lisa bench chart`. It uses llama.cpp's
// default model and context parameters but for the context size, which
// is depth + n_prompt + n_gen as llama-bench makes it, and the thread
// count, with a threadpool attached as llama-bench attaches one. The
// parameter structs are opaque but for the context parameters' first
// three fields (n_ctx, n_batch, n_ubatch), whose defaults are checked
// before they are set, so no llama.h is needed: see run.sh, which builds
// and runs it.
//
// A depth's tokens are decoded once per thread count and depth; before
// every run the positions from the depth on are removed
// (llama_memory_seq_rm), which leaves the cache as llama-bench's restored
// state of that depth leaves it.
//
// usage: llbench LIBDIR MODEL THREADS(1,2) N_PROMPT N_GEN REPS [DEPTHS(0,4096)]
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
_Bool llama_memory_seq_rm(void *mem, int32_t seq, int32_t p0, int32_t p1);
int32_t llama_memory_seq_pos_max(void *mem, int32_t seq);
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

// The context parameters' leading fields, the same in every release
// since the parameters were split from the model's (n_ctx, n_batch,
// n_ubatch, in that order, at the start of llama_context_params).
typedef struct {
	uint32_t n_ctx, n_batch, n_ubatch;
} ctx_head_t;

// decode decodes n random tokens in calls of at most n_batch, as
// llama-bench's test_prompt does (n_batch 1 for tg's single steps).
static void decode(void *ctx, int32_t *toks, int n, int n_batch, const char *what) {
	for (int done = 0; done < n;) {
		int k = n - done < n_batch ? n - done : n_batch;
		for (int i = 0; i < k; i++)
			toks[i] = 1 + rand() % 31000;
		if (llama_decode(ctx, llama_batch_get_one(toks, k)) != 0) {
			fprintf(stderr, "llbench: %s: decode of %d tokens failed\n", what, k);
			exit(1);
		}
		done += k;
	}
}

// at_depth cuts the cache back to its first depth positions and checks
// that it holds exactly those.
static void at_depth(void *ctx, int depth) {
	void *mem = llama_get_memory(ctx);
	if (depth == 0)
		llama_memory_clear(mem, 1);
	else if (!llama_memory_seq_rm(mem, 0, depth, -1)) {
		fprintf(stderr, "llbench: cannot cut the cache back to depth %d\n", depth);
		exit(1);
	}
	if (llama_memory_seq_pos_max(mem, 0) != depth - 1) {
		fprintf(stderr, "llbench: the cache ends at position %d, want depth %d\n",
			llama_memory_seq_pos_max(mem, 0), depth);
		exit(1);
	}
}

// run times one pp (n_prompt > 0) or tg test at depth (the cache holds
// the depth's tokens) and returns its seconds.
static double run(void *ctx, int32_t *toks, int depth, int n_prompt, int n_gen, int n_batch) {
	at_depth(ctx, depth);
	double t0 = now();
	decode(ctx, toks, n_prompt, n_batch, "prompt");
	for (int i = 0; i < n_gen; i++)
		decode(ctx, toks, 1, 1, "generation");
	llama_synchronize(ctx);
	return now() - t0;
}

int main(int argc, char **argv) {
	if (argc != 7 && argc != 8) {
		fprintf(stderr, "usage: llbench LIBDIR MODEL THREADS N_PROMPT N_GEN REPS [DEPTHS]\n");
		return 2;
	}
	int n_prompt = atoi(argv[4]), n_gen = atoi(argv[5]), reps = atoi(argv[6]);
	if (n_prompt < 0 || n_gen < 0 || reps < 1 || reps > 100 || n_prompt > 16384 || n_gen > 16384) {
		fprintf(stderr, "llbench: bad N_PROMPT, N_GEN or REPS\n");
		return 2;
	}
	int depths[64], n_depths = 0;
	for (const char *p = argc == 8 ? argv[7] : "0";; p++) {
		char *end;
		long d = strtol(p, &end, 10);
		if (end == p || *p == '-' || *p == '+' || *p == ' ' || (*end != ',' && *end != 0) || d < 0 ||
		    d > 1 << 20 || n_depths == 64) {
			fprintf(stderr, "llbench: bad depth list %s (want up to 64 depths in [0, %d], comma-separated)\n",
				argv[7], 1 << 20);
			return 2;
		}
		depths[n_depths++] = (int)d;
		p = end;
		if (*p == 0)
			break;
	}
	int max_depth = 0;
	for (int i = 0; i < n_depths; i++)
		max_depth = depths[i] > max_depth ? depths[i] : max_depth;
	params_t cparams = llama_context_default_params();
	ctx_head_t head;
	memcpy(&head, cparams.b, sizeof head);
	if (head.n_ctx != 512 || head.n_batch != 2048 || head.n_ubatch != 512) {
		fprintf(stderr, "llbench: the context parameters do not start with n_ctx 512, n_batch 2048, "
				"n_ubatch 512 (got %u, %u, %u): not a layout llbench knows\n",
			head.n_ctx, head.n_batch, head.n_ubatch);
		return 1;
	}
	// llama-bench's context: as deep as the deepest test reaches.
	head.n_ctx = (uint32_t)(max_depth + n_prompt + n_gen);
	memcpy(cparams.b, &head, sizeof head);
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
	int n_batch = (int)head.n_batch;
	int32_t *toks = malloc(sizeof(int32_t) * (size_t)(n_batch + 1));
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
		void *ctx = llama_init_from_model(model, cparams);
		if (ctx == NULL) {
			fprintf(stderr, "llbench: cannot make a context of %u positions\n", head.n_ctx);
			return 1;
		}
		llama_set_n_threads(ctx, threads, threads);
		tp_params_t tpp;
		memset(&tpp, 0, sizeof tpp);
		ggml_threadpool_params_init(&tpp, threads);
		tpp.poll = 50; // llama-bench's default
		llama_attach_threadpool(ctx, threadpool_new(&tpp), NULL);
		llama_memory_clear(llama_get_memory(ctx), 1);
		int valid = 0; // the positions holding a depth's tokens
		for (int di = 0; di < n_depths; di++) {
			int depth = depths[di];
			if (valid < depth) {
				fprintf(stderr, "llbench: depth %d, %d threads: filling the cache (not timed)\n", depth, threads);
				at_depth(ctx, valid);
				decode(ctx, toks, depth - valid, n_batch, "depth");
				llama_synchronize(ctx);
			}
			valid = depth;
			for (int test = 0; test < 2; test++) {
				int np = test == 0 ? n_prompt : 0, ng = test == 1 ? n_gen : 0;
				if (np + ng == 0)
					continue;
				run(ctx, toks, depth, np, ng, n_batch); // warm-up
				double sum = 0, sq = 0, ns = 0;
				for (int i = 0; i < reps; i++) {
					double sec = run(ctx, toks, depth, np, ng, n_batch);
					samples[i] = (np + ng) / sec;
					sum += samples[i];
					ns += sec * 1e9;
				}
				double mean = sum / reps;
				for (int i = 0; i < reps; i++)
					sq += (samples[i] - mean) * (samples[i] - mean);
				double sd = reps > 1 ? sqrt(sq / (reps - 1)) : 0;
				printf("%s\n {\"model_type\": ", first ? "" : ",");
				json_string(desc);
				printf(", \"model_size\": %llu, \"model_n_params\": %llu, \"n_batch\": %u, \"n_ubatch\": %u, "
				       "\"n_threads\": %d, \"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"avg_ns\": %.0f, "
				       "\"avg_ts\": %.6f, \"stddev_ts\": %.6f, \"samples_ts\": [",
				       (unsigned long long)llama_model_size(model),
				       (unsigned long long)llama_model_n_params(model), head.n_batch, head.n_ubatch, threads, np,
				       ng, depth, ns / reps, mean, sd);
				for (int i = 0; i < reps; i++)
					printf("%s%.6f", i ? ", " : "", samples[i]);
				printf("]}");
				fflush(stdout);
				first = 0;
			}
		}
		llama_free(ctx);
	}
	printf("\n]\n");
	return 0;
}
