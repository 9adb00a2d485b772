// llcheck loads GGUF files with a prebuilt llama.cpp (libllama) and prints,
// per file, what llama.cpp made of it: its description, vocabulary size,
// special ids, the ids of a prompt with special tokens, the rendering of
// the file's chat template through llama.cpp's built-in template
// detection, the ids of that rendering (special tokens parsed) and of a
// plain text (not parsed), and the greedy next token after the rendering. It exits non-zero
// when llama.cpp refuses a file. See check.sh, which builds and runs it.
//
// usage: llcheck LIBDIR MODEL...
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Larger than any version's struct; only the leading uint32 n_ctx of the
// context parameters is changed (it has led the struct in every version).
typedef struct { char b[1024]; } params_t;
typedef struct { char b[256]; } batch_t;
typedef struct { const char *role; const char *content; } chat_msg_t;

void ggml_backend_load_all_from_path(const char *dir);
void llama_backend_init(void);
params_t llama_model_default_params(void);
params_t llama_context_default_params(void);
void *llama_model_load_from_file(const char *path, params_t p);
void llama_model_free(void *model);
int32_t llama_model_desc(const void *model, char *buf, size_t size);
const void *llama_model_get_vocab(const void *model);
int32_t llama_vocab_n_tokens(const void *vocab);
int32_t llama_vocab_bos(const void *vocab);
int32_t llama_vocab_eos(const void *vocab);
int32_t llama_vocab_eot(const void *vocab);
int32_t llama_tokenize(const void *vocab, const char *text, int32_t len, int32_t *toks, int32_t max, bool add_special, bool parse_special);
int32_t llama_token_to_piece(const void *vocab, int32_t tok, char *buf, int32_t len, int32_t lstrip, bool special);
const char *llama_model_chat_template(const void *model, const char *name);
int32_t llama_chat_apply_template(const char *tmpl, const chat_msg_t *chat, size_t n, bool add_ass, char *buf, int32_t len);
int32_t llama_model_meta_val_str(const void *model, const char *key, char *buf, size_t size);
void *llama_init_from_model(void *model, params_t p);
void llama_free(void *ctx);
batch_t llama_batch_get_one(int32_t *tokens, int32_t n);
int32_t llama_decode(void *ctx, batch_t b);
float *llama_get_logits_ith(void *ctx, int32_t i);

static void quoted(const char *s) {
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

static int check(const char *path) {
	void *model = llama_model_load_from_file(path, llama_model_default_params());
	if (!model) {
		fprintf(stderr, "llcheck: %s: llama.cpp refused the file\n", path);
		return 1;
	}
	const void *vocab = llama_model_get_vocab(model);
	char desc[256], arch[64];
	llama_model_desc(model, desc, sizeof desc);
	llama_model_meta_val_str(model, "general.architecture", arch, sizeof arch);
	int n = llama_vocab_n_tokens(vocab);
	printf("{\"file\": ");
	quoted(path);
	printf(", \"arch\": \"%s\", \"desc\": ", arch);
	quoted(desc);
	printf(", \"n_vocab\": %d, \"bos\": %d, \"eos\": %d, \"eot\": %d", n, llama_vocab_bos(vocab), llama_vocab_eos(vocab), llama_vocab_eot(vocab));

	const char *tmpl = llama_model_chat_template(model, NULL);
	chat_msg_t msgs[] = {{"system", "You are terse."}, {"user", "Hello, world!"}};
	static char rendered[8192];
	int32_t rn = tmpl ? llama_chat_apply_template(tmpl, msgs, 2, true, rendered, sizeof rendered - 1) : -1;
	const char *prompt = "Hello, world! The quick brown fox.";
	if (rn > 0 && rn < (int32_t)sizeof rendered) {
		rendered[rn] = 0;
		printf(", \"chat\": ");
		quoted(rendered);
		prompt = rendered;
	} else {
		printf(", \"chat\": null");
	}
	int32_t toks[4096];
	int32_t nt = llama_tokenize(vocab, prompt, (int32_t)strlen(prompt), toks, 4096, true, true);
	printf(", \"ids\": [");
	for (int i = 0; i < nt; i++)
		printf("%s%d", i ? ", " : "", toks[i]);
	printf("]");
	// Plain text, special parsing off: the pre-tokenizer and merges alone.
	const char *plain = "Hello, world! The quick brown fox jumps over the lazy dog. 12345 h\xc3\xa9llo \xf0\x9f\xa6\x99\n\tcode(); <|im_end|> [INST]";
	int32_t pt[512];
	int32_t np = llama_tokenize(vocab, plain, (int32_t)strlen(plain), pt, 512, true, false);
	printf(", \"plain\": ");
	quoted(plain);
	printf(", \"plain_ids\": [");
	for (int i = 0; i < np; i++)
		printf("%s%d", i ? ", " : "", pt[i]);
	printf("]");
	params_t cp = llama_context_default_params();
	uint32_t n_ctx = 512;
	memcpy(cp.b, &n_ctx, sizeof n_ctx);
	void *ctx = llama_init_from_model(model, cp);
	if (!ctx || nt <= 0 || llama_decode(ctx, llama_batch_get_one(toks, nt)) != 0) {
		printf("}\n");
		fprintf(stderr, "llcheck: %s: no context or decode failed\n", path);
		return 1;
	}
	float *logits = llama_get_logits_ith(ctx, -1);
	int best = 0;
	for (int i = 1; i < n; i++)
		if (logits[i] > logits[best])
			best = i;
	printf(", \"next\": %d, \"next_logit\": %.6f}\n", best, logits[best]);
	llama_free(ctx);
	llama_model_free(model);
	return 0;
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: llcheck LIBDIR MODEL...\n");
		return 2;
	}
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	int bad = 0;
	for (int i = 2; i < argc; i++)
		bad |= check(argv[i]);
	return bad;
}
