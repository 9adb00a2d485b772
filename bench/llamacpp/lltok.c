// lltok prints llama.cpp's tokenization of test strings for one
// vocabulary, through a prebuilt libllama (see lltok.sh, which builds and
// runs it). The model is loaded with vocab_only, so a vocabulary-only
// GGUF file is enough.
//
// usage: lltok LIBDIR MODEL INPUT
//
// INPUT holds the test strings separated by "\n__ggml_vocab_test__\n" (the
// format of llama.cpp's vocabulary test files). For each string lltok
// prints one line with three tab-separated fields:
//
//   ids of llama_tokenize(add_special=true, parse_special=false)
//   ids of llama_tokenize(add_special=true, parse_special=true)
//   llama_detokenize(first ids, remove_special=false, unparse_special=false)
//     as hex, or "=" when it equals the string
//
// Ids are space-separated decimals. No llama.h is needed: the few
// prototypes are declared by hand, and llama_model_params is treated as
// opaque except for vocab_only. Its offset is the one of the current
// library, checked against the defaults; a wrong offset would also show
// as a failed load, since vocabulary files have no tensors.
#define _GNU_SOURCE // memmem
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Larger than any version's struct: returned and passed by value.
typedef struct { char b[1024]; } params_t;

// Offset of vocab_only in llama_model_params: after two pointers, four
// int32 and five pointers (the bool two after it, use_extra_bufts, is
// true by default).
enum { VOCAB_ONLY = 72 };

void ggml_backend_load_all_from_path(const char *dir);
void llama_backend_init(void);
void llama_log_set(void (*cb)(int, const char *, void *), void *ud);
params_t llama_model_default_params(void);
void *llama_model_load_from_file(const char *path, params_t p);
const void *llama_model_get_vocab(const void *model);
int32_t llama_tokenize(const void *vocab, const char *text, int32_t len, int32_t *toks, int32_t max,
		       bool add_special, bool parse_special);
int32_t llama_detokenize(const void *vocab, const int32_t *toks, int32_t n, char *text, int32_t max,
			 bool remove_special, bool unparse_special);

static void quiet(int level, const char *msg, void *ud) {
	(void)ud;
	if (level >= 4) // GGML_LOG_LEVEL_ERROR
		fputs(msg, stderr);
}

static char *slurp(const char *path, size_t *n) {
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap);
	for (size_t r; (r = fread(b + len, 1, cap - len, f)) > 0;) {
		len += r;
		if (len == cap)
			b = realloc(b, cap *= 2);
	}
	fclose(f);
	*n = len;
	return b;
}

static int32_t *tokenize(const void *vocab, const char *s, int32_t len, bool special, int32_t *n) {
	int32_t cap = len + 16;
	int32_t *t = malloc(sizeof *t * cap);
	*n = llama_tokenize(vocab, s, len, t, cap, true, special);
	if (*n < 0) {
		cap = -*n;
		t = realloc(t, sizeof *t * cap);
		*n = llama_tokenize(vocab, s, len, t, cap, true, special);
	}
	if (*n < 0) {
		fprintf(stderr, "lltok: tokenize failed\n");
		exit(1);
	}
	return t;
}

static void print_ids(const int32_t *t, int32_t n) {
	for (int32_t i = 0; i < n; i++)
		printf(i ? " %d" : "%d", t[i]);
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: lltok LIBDIR MODEL INPUT\n");
		return 2;
	}
	llama_log_set(quiet, NULL);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	params_t p = llama_model_default_params();
	if (p.b[VOCAB_ONLY] != 0 || p.b[VOCAB_ONLY + 2] != 1) {
		fprintf(stderr, "lltok: llama_model_params layout is not the expected one\n");
		return 1;
	}
	p.b[VOCAB_ONLY] = 1;
	void *model = llama_model_load_from_file(argv[2], p);
	if (!model) {
		fprintf(stderr, "lltok: cannot load %s\n", argv[2]);
		return 1;
	}
	const void *vocab = llama_model_get_vocab(model);
	size_t n;
	char *in = slurp(argv[3], &n);
	static const char sep[] = "\n__ggml_vocab_test__\n";
	const size_t seplen = sizeof sep - 1;
	for (size_t a = 0; a < n;) {
		char *e = memmem(in + a, n - a, sep, seplen);
		size_t b = e ? (size_t)(e - in) : n;
		int32_t len = (int32_t)(b - a), n1, n2;
		int32_t *t1 = tokenize(vocab, in + a, len, false, &n1);
		int32_t *t2 = tokenize(vocab, in + a, len, true, &n2);
		print_ids(t1, n1);
		putchar('\t');
		print_ids(t2, n2);
		putchar('\t');
		int32_t cap = 4 * len + 64;
		char *text = malloc(cap);
		int32_t m = llama_detokenize(vocab, t1, n1, text, cap, false, false);
		if (m < 0) {
			cap = -m;
			text = realloc(text, cap);
			m = llama_detokenize(vocab, t1, n1, text, cap, false, false);
		}
		if (m == len && memcmp(text, in + a, len) == 0)
			putchar('=');
		else
			for (int32_t i = 0; i < m; i++)
				printf("%02x", (unsigned char)text[i]);
		putchar('\n');
		free(t1);
		free(t2);
		free(text);
		a = e ? b + seplen : n;
	}
	return 0;
}
