// llref prints llama.cpp's answers for a model file as JSON, to serve as
// references for lisa's tests: prompt ids, greedy ids and teacher-forced
// top-k logits at every position (mode logits, the shape of `lisa run
// --json`), tokenization in the four (add_special, parse_special)
// combinations (mode tokenize), and chat-template rendering with its ids
// (mode chat). It drives the prebuilt libllama of node-llama-cpp 3.22.1
// (llama.cpp release "v0.5.0"); see ref.sh, which installs, builds and
// runs it, and README.md beside it.
//
// usage: llref LIBDIR MODE MODEL INPUT      (INPUT "-" = standard input)
//
// INPUT is line based, one directive per line; '#' starts a comment line,
// blank lines are skipped. TEXT is the rest of the line after one space,
// with the escapes \\ \n \r \t and \xHH (any byte); a lone backslash
// before anything else is an error. IDS is a comma-separated list of
// token ids; RANGES is a comma-separated list of positions or A-B ranges.
//
//   settings (anywhere; they apply to every case):
//     n_ctx N          context size (default 512)
//     n_batch N        tokens per llama_decode call, also n_ubatch
//                      (default 512, lisa run's prompt batch)
//     gen_batch N      teacher-forced ids per llama_decode call after
//                      the prompt (default 1, as lisa run feeds them;
//                      raise it for long sequences; at most n_batch)
//     n_gen N          greedy tokens to generate (default 32)
//     top_k N          [id, logit] pairs per position (default 10)
//     add_special 0|1  tokenize prompts with BOS/EOS added (default 1)
//     parse_special 0|1  parse special-token text in prompts (default 0)
//     add_generation_prompt 0|1   chat mode (default 1)
//   mode logits, one case per prompt:
//     prompt TEXT      a prompt, tokenized with the settings above
//     prompt_ids IDS   a prompt given as ids
//     teacher IDS      (after a prompt) evaluate these ids instead of
//                      generating: generated_ids are exactly IDS
//     report RANGES    (after a prompt) print only these positions
//                      (default: every position); the result then
//                      lists them as "report": [[a, b], ...]
//   mode tokenize:
//     text TEXT        a string to tokenize
//     texts_from FILE  every string of a llama.cpp vocab test .inp file
//                      (split on "\n__ggml_vocab_test__\n", the empty
//                      piece after the last separator dropped)
//   mode chat:
//     chat             starts a conversation
//     msg ROLE TEXT    a message of the current conversation (ROLE is
//                      one word; TEXT may be empty)
//     template TEXT    render with this template instead of the model's
//     template_file FILE   the same, read from FILE (exact bytes)
//
// Mode chat renders each conversation with llama_chat_apply_template (the
// library's built-in renderer, which recognises known templates by their
// text; it is what llama-server uses with --no-jinja) and the model's own
// template; "ids" tokenizes the rendering as llama-server tokenizes a chat
// prompt (add_special and parse_special on), "ids_bos_stripped" does the
// same after removing a leading BOS text when the vocabulary adds BOS,
// which is what llama-server's default (jinja) path does to its own
// rendering. A conversation the renderer does not know gets "error".
// (ref.sh's mode chat-jinja runs llref-jinja.cpp instead: llama-server's
// default Jinja rendering, with the same input and output shape.)
//
// Mode logits: each case starts from an empty cache; the prompt is
// evaluated as llama.cpp's examples and lisa run do, in batches of n_batch, then
// one token per llama_decode (teacher-forced ids: gen_batch tokens);
// greedy = argmax of the raw logits, lowest id on ties, end-of-generation
// NOT a stop. Every reported position gets an output row in that same
// pass (a batch's rows are computed together, so a row's value does not
// depend on which others are requested); "positions" are those rows:
// {"position": p, "top": [[id, logit], ...]}, the row of the token at p
// (so the row at p predicts token p+1), sorted by logit, lowest id first
// on ties. The last position (after the last generated id) is included;
// lisa run --json stops one earlier. Batch shape matters: the same
// position's logits differ in the last digits between a row computed in
// a prompt batch and one computed alone (other matrix kernels), so
// compare against lisa with the same n_batch and gen_batch 1. "text"
// is the generated ids' pieces (llama_token_to_piece, special tokens
// rendered) back to back. Settings: 1 thread, KV cache F16, flash
// attention off, the library's default model parameters (CPU, mmap,
// weight repacking on). Logits print as %.9g (exact float32), non-finite
// ones as null.
//
// Strings in the output: valid UTF-8 is copied, '"', '\\' and bytes
// below 0x20 and 0x7f are escaped (\uXXXX), and every maximal run of
// bytes that is not valid UTF-8 (Go's rules: no overlongs, surrogates or
// values past U+10FFFF) becomes one U+FFFD, as Go's
// strings.ToValidUTF8(s, "\uFFFD") does and as lisa run's "text" does.
// Every such string but a chat role has a "..._hex" twin holding its
// exact bytes.
//
// The parameter structs are declared here by hand from this release's
// include/llama.h (the node-llama-cpp package ships the release's source
// as llama/gitRelease.bundle); main checks at run time that the defaults
// the library fills in sit at the offsets declared, and stops otherwise.
#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama_abi.h"

typedef struct {
	const char *role;
	const char *content;
} chat_msg_t;

typedef void (*log_cb_t)(int level, const char *text, void *user);

void ggml_backend_load_all_from_path(const char *dir);
void llama_backend_init(void);
void llama_log_set(log_cb_t cb, void *user);
const char *llama_version(void);
model_params_t llama_model_default_params(void);
ctx_params_t llama_context_default_params(void);
void *llama_model_load_from_file(const char *path, model_params_t p);
int32_t llama_model_desc(const void *model, char *buf, size_t size);
const void *llama_model_get_vocab(const void *model);
const char *llama_model_chat_template(const void *model, const char *name);
void *llama_init_from_model(void *model, ctx_params_t p);
void llama_set_n_threads(void *ctx, int32_t n, int32_t n_batch);
int32_t llama_decode(void *ctx, batch_t b);
float *llama_get_logits_ith(void *ctx, int32_t i);
void *llama_get_memory(void *ctx);
void llama_memory_clear(void *mem, bool data);
int32_t llama_vocab_n_tokens(const void *vocab);
int32_t llama_vocab_bos(const void *vocab);
int32_t llama_vocab_eos(const void *vocab);
bool llama_vocab_get_add_bos(const void *vocab);
bool llama_vocab_get_add_eos(const void *vocab);
bool llama_vocab_is_eog(const void *vocab, int32_t id);
int32_t llama_tokenize(const void *vocab, const char *text, int32_t len, int32_t *ids, int32_t max,
		       bool add_special, bool parse_special);
int32_t llama_token_to_piece(const void *vocab, int32_t id, char *buf, int32_t len, int32_t lstrip,
			     bool special);
int32_t llama_detokenize(const void *vocab, const int32_t *ids, int32_t n, char *text, int32_t max,
			 bool remove_special, bool unparse_special);
int32_t llama_chat_apply_template(const char *tmpl, const chat_msg_t *chat, size_t n, bool add_ass,
				  char *buf, int32_t len);

static void die(const char *fmt, const char *arg, long n) {
	fprintf(stderr, "llref: ");
	fprintf(stderr, fmt, arg, n);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		die("out of memory (%s%ld bytes)", "", (long)n);
	return p;
}

static void *xrealloc(void *p, size_t n) {
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		die("out of memory (%s%ld bytes)", "", (long)n);
	return p;
}

// Library log lines: warnings and errors go to standard error prefixed,
// the rest (load chatter) is dropped; a continuation follows its line.
static void log_cb(int level, const char *text, void *user) {
	int *keep = user;
	if (level != 5)
		*keep = level >= 3;
	if (*keep)
		fprintf(stderr, "llref: llama.cpp: %s", text);
}

// A growable byte string.
typedef struct {
	char *p;
	size_t n, cap;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n) {
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = 0;
}

// A growable id list.
typedef struct {
	int32_t *v;
	size_t n, cap;
} ids_t;

static void ids_add(ids_t *l, int32_t id) {
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(int32_t));
	}
	l->v[l->n++] = id;
}

// utf8_len returns the length of the valid UTF-8 sequence at s (n bytes
// available), or 0 if there is none, by Go's unicode/utf8 rules.
static int utf8_len(const unsigned char *s, size_t n) {
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	int len;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0; // no overlongs
		if (c == 0xed)
			hi = 0x9f; // no surrogates
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		if (c == 0xf4)
			hi = 0x8f; // nothing past U+10FFFF
	} else
		return 0;
	if ((size_t)len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

// json_str writes s (n bytes) as a JSON string: see the header comment.
static void json_str(const char *s, size_t n) {
	const unsigned char *u = (const unsigned char *)s;
	putchar('"');
	size_t i = 0;
	while (i < n) {
		int l = utf8_len(u + i, n - i);
		if (l == 0) {
			while (i < n && utf8_len(u + i, n - i) == 0)
				i++;
			fputs("\xef\xbf\xbd", stdout);
			continue;
		}
		unsigned char c = u[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			fwrite(u + i, 1, l, stdout);
		i += l;
	}
	putchar('"');
}

static void json_hex(const char *s, size_t n) {
	putchar('"');
	for (size_t i = 0; i < n; i++)
		printf("%02x", (unsigned char)s[i]);
	putchar('"');
}

// json_str_hex writes `"key": "...", "key_hex": "..."`.
static void json_str_hex(const char *key, const char *s, size_t n) {
	printf("\"%s\": ", key);
	json_str(s, n);
	printf(", \"%s_hex\": ", key);
	json_hex(s, n);
}

static void json_ids(const int32_t *v, size_t n) {
	putchar('[');
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? ", " : "", v[i]);
	putchar(']');
}

// unescape decodes TEXT (see the header) into out; it returns false on a
// bad escape.
static bool unescape(const char *s, buf_t *out) {
	out->n = 0;
	buf_add(out, "", 0);
	for (; *s; s++) {
		char c = *s;
		if (c == '\\') {
			s++;
			switch (*s) {
			case '\\': c = '\\'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'x': {
				if (!isxdigit((unsigned char)s[1]) || !isxdigit((unsigned char)s[2]))
					return false;
				char h[3] = {s[1], s[2], 0};
				long v = strtol(h, NULL, 16);
				c = (char)v;
				s += 2;
				break;
			}
			default:
				return false;
			}
		}
		buf_add(out, &c, 1);
	}
	return true;
}

// parse_ids parses IDS into l; it returns false on a malformed list.
static bool parse_ids(const char *s, ids_t *l) {
	l->n = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);
		if (end == s || v < 0 || v > INT32_MAX)
			return false;
		ids_add(l, (int32_t)v);
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return l->n > 0;
}

// parse_ranges parses RANGES into pairs (a, b) stored in l.
static bool parse_ranges(const char *s, ids_t *l) {
	l->n = 0;
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b;
		if (end == s || a < 0 || a > INT32_MAX)
			return false;
		s = end;
		b = a;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a || b > INT32_MAX)
				return false;
			s = end;
		}
		ids_add(l, (int32_t)a);
		ids_add(l, (int32_t)b);
		if (*s == ',')
			s++;
		else if (*s)
			return false;
	}
	return l->n > 0;
}

// A case of mode logits.
typedef struct {
	buf_t text;
	bool from_text;
	ids_t ids, teacher, report;
	bool has_teacher, has_report;
} lcase_t;

// A conversation of mode chat.
typedef struct {
	char **role, **content;
	size_t n;
} conv_t;

typedef struct {
	long n_ctx, n_batch, gen_batch, n_gen, top_k;
	bool add_special, parse_special, add_gen;
	lcase_t *cases;
	size_t n_cases;
	buf_t *texts;
	size_t n_texts;
	conv_t *convs;
	size_t n_convs;
	buf_t tmpl;
	bool has_tmpl;
} input_t;

static void add_text(input_t *in, const char *s, size_t n) {
	in->texts = xrealloc(in->texts, (in->n_texts + 1) * sizeof(buf_t));
	buf_t *b = &in->texts[in->n_texts++];
	memset(b, 0, sizeof *b);
	buf_add(b, s, n);
}

// read_file reads all of path (at most 64 MiB) into b.
static void read_file(const char *path, buf_t *b) {
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		die("cannot open %s", path, 0);
	b->n = 0;
	buf_add(b, "", 0);
	char chunk[65536];
	size_t k;
	while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
		buf_add(b, chunk, k);
		if (b->n > (64u << 20))
			die("%s is larger than 64 MiB", path, 0);
	}
	fclose(f);
}

// texts_from adds the strings of a vocab test .inp file.
static void texts_from(input_t *in, const char *path) {
	buf_t all = {0};
	read_file(path, &all);
	const char *sep = "\n__ggml_vocab_test__\n";
	size_t seplen = strlen(sep), start = 0;
	for (;;) {
		char *hit = all.p ? strstr(all.p + start, sep) : NULL;
		if (hit == NULL)
			break;
		add_text(in, all.p + start, (size_t)(hit - all.p) - start);
		start = (size_t)(hit - all.p) + seplen;
	}
	if (start < all.n)
		add_text(in, all.p + start, all.n - start);
	free(all.p);
}

static long num(const char *arg, const char *key, long lo, long hi, long line) {
	char *end;
	long v = strtol(arg, &end, 10);
	if (end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, "llref: input line %ld: %s wants an integer in [%ld, %ld]\n", line, key, lo, hi);
		exit(2);
	}
	return v;
}

static void read_input(FILE *f, const char *mode, input_t *in) {
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	long ln = 0;
	buf_t tmp = {0};
	while ((got = getline(&line, &cap, f)) >= 0) {
		ln++;
		while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r'))
			line[--got] = 0;
		if (got == 0 || line[0] == '#')
			continue;
		char *arg = strchr(line, ' ');
		if (arg)
			*arg++ = 0;
		else
			arg = line + got;
		const char *key = line;
		lcase_t *last = in->n_cases ? &in->cases[in->n_cases - 1] : NULL;
#define BAD(what)                                                                       \
	do {                                                                            \
		fprintf(stderr, "llref: input line %ld: %s: %s\n", ln, key, what);      \
		exit(2);                                                                \
	} while (0)
		if (!strcmp(key, "n_ctx"))
			in->n_ctx = num(arg, key, 1, 1 << 20, ln);
		else if (!strcmp(key, "n_batch"))
			in->n_batch = num(arg, key, 1, 1 << 16, ln);
		else if (!strcmp(key, "gen_batch"))
			in->gen_batch = num(arg, key, 1, 1 << 16, ln);
		else if (!strcmp(key, "n_gen"))
			in->n_gen = num(arg, key, 0, 1 << 20, ln);
		else if (!strcmp(key, "top_k"))
			in->top_k = num(arg, key, 1, 1000, ln);
		else if (!strcmp(key, "add_special"))
			in->add_special = num(arg, key, 0, 1, ln);
		else if (!strcmp(key, "parse_special"))
			in->parse_special = num(arg, key, 0, 1, ln);
		else if (!strcmp(key, "add_generation_prompt"))
			in->add_gen = num(arg, key, 0, 1, ln);
		else if (!strcmp(mode, "logits") && (!strcmp(key, "prompt") || !strcmp(key, "prompt_ids"))) {
			in->cases = xrealloc(in->cases, (in->n_cases + 1) * sizeof(lcase_t));
			lcase_t *c = &in->cases[in->n_cases++];
			memset(c, 0, sizeof *c);
			if (!strcmp(key, "prompt")) {
				c->from_text = true;
				if (!unescape(arg, &c->text))
					BAD("bad escape");
			} else if (!parse_ids(arg, &c->ids))
				BAD("want comma-separated ids");
		} else if (!strcmp(mode, "logits") && !strcmp(key, "teacher")) {
			if (!last)
				BAD("before any prompt");
			if (!parse_ids(arg, &last->teacher))
				BAD("want comma-separated ids");
			last->has_teacher = true;
		} else if (!strcmp(mode, "logits") && !strcmp(key, "report")) {
			if (!last)
				BAD("before any prompt");
			if (!parse_ranges(arg, &last->report))
				BAD("want positions or A-B ranges, comma-separated");
			last->has_report = true;
		} else if (!strcmp(mode, "tokenize") && !strcmp(key, "text")) {
			if (!unescape(arg, &tmp))
				BAD("bad escape");
			add_text(in, tmp.p, tmp.n);
		} else if (!strcmp(mode, "tokenize") && !strcmp(key, "texts_from"))
			texts_from(in, arg);
		else if (!strcmp(mode, "chat") && !strcmp(key, "chat")) {
			in->convs = xrealloc(in->convs, (in->n_convs + 1) * sizeof(conv_t));
			memset(&in->convs[in->n_convs++], 0, sizeof(conv_t));
		} else if (!strcmp(mode, "chat") && !strcmp(key, "msg")) {
			if (!in->n_convs)
				BAD("before any chat");
			conv_t *c = &in->convs[in->n_convs - 1];
			char *text = strchr(arg, ' ');
			if (text)
				*text++ = 0;
			else
				text = arg + strlen(arg);
			if (!*arg)
				BAD("want ROLE TEXT");
			if (!unescape(text, &tmp))
				BAD("bad escape");
			if (strlen(tmp.p) != tmp.n)
				BAD("a message cannot hold a zero byte (llama_chat_message is a C string)");
			c->role = xrealloc(c->role, (c->n + 1) * sizeof(char *));
			c->content = xrealloc(c->content, (c->n + 1) * sizeof(char *));
			c->role[c->n] = strdup(arg);
			c->content[c->n++] = strdup(tmp.p);
		} else if (!strcmp(mode, "chat") && !strcmp(key, "template_file")) {
			read_file(arg, &in->tmpl);
			if (strlen(in->tmpl.p) != in->tmpl.n)
				BAD("a template cannot hold a zero byte");
			in->has_tmpl = true;
		} else if (!strcmp(mode, "chat") && !strcmp(key, "template")) {
			if (!unescape(arg, &in->tmpl))
				BAD("bad escape");
			in->has_tmpl = true;
		} else
			BAD("unknown directive for this mode");
#undef BAD
	}
	free(line);
	free(tmp.p);
}

// tokenize returns the ids of s (n bytes).
static void tokenize(const void *vocab, const char *s, size_t n, bool add, bool parse, ids_t *out) {
	if (n > INT32_MAX / 2)
		die("text too long%s (%ld bytes)", "", (long)n);
	out->n = 0;
	int32_t want = (int32_t)n + 8;
	for (int tries = 0; tries < 2; tries++) {
		if (out->cap < (size_t)want) {
			out->cap = want;
			out->v = xrealloc(out->v, out->cap * sizeof(int32_t));
		}
		int32_t got = llama_tokenize(vocab, s, (int32_t)n, out->v, (int32_t)out->cap, add, parse);
		if (got >= 0) {
			out->n = got;
			return;
		}
		if (got == INT32_MIN)
			die("tokenization overflows%s", "", 0);
		want = -got;
	}
	die("llama_tokenize disagrees with itself%s", "", 0);
}

// piece appends the text of id to b (special tokens rendered).
static void piece(const void *vocab, int32_t id, bool special, buf_t *b) {
	char small[256];
	int32_t n = llama_token_to_piece(vocab, id, small, sizeof small, 0, special);
	if (n >= 0) {
		buf_add(b, small, n);
		return;
	}
	char *big = xmalloc(-n);
	n = llama_token_to_piece(vocab, id, big, -n, 0, special);
	if (n < 0)
		die("llama_token_to_piece failed for id %s%ld", "", id);
	buf_add(b, big, n);
	free(big);
}

static void detokenize(const void *vocab, const ids_t *ids, buf_t *out) {
	out->n = 0;
	int32_t cap = 64 + (int32_t)ids->n * 16;
	for (int tries = 0; tries < 2; tries++) {
		char *t = xmalloc(cap);
		int32_t n = llama_detokenize(vocab, ids->v, (int32_t)ids->n, t, cap, false, true);
		if (n >= 0) {
			buf_add(out, t, n);
			free(t);
			return;
		}
		free(t);
		cap = -n;
	}
	die("llama_detokenize disagrees with itself%s", "", 0);
}

// decode evaluates n tokens at positions start.. with an output row where
// out[i] is set (out may be NULL: only the last row).
static void decode(void *ctx, const int32_t *toks, int32_t n, int32_t start, const int8_t *out) {
	int32_t *pos = xmalloc(n * sizeof(int32_t)), *nseq = xmalloc(n * sizeof(int32_t));
	int32_t **seq = xmalloc(n * sizeof(int32_t *));
	int8_t *lg = xmalloc(n);
	static int32_t seq0 = 0;
	for (int32_t i = 0; i < n; i++) {
		pos[i] = start + i;
		nseq[i] = 1;
		seq[i] = &seq0;
		lg[i] = out ? out[i] : i == n - 1;
	}
	batch_t b = {n, (int32_t *)toks, NULL, pos, nseq, seq, lg};
	int32_t rc = llama_decode(ctx, b);
	if (rc != 0) {
		fprintf(stderr, "llref: llama_decode of %d tokens at position %d failed (%d)\n", n, start, rc);
		exit(1);
	}
	free(pos);
	free(nseq);
	free(seq);
	free(lg);
}

// better says whether logit a of id ia ranks before logit b of id ib: the
// higher logit first, the lower id among equals, NaN last.
static bool better(float a, int32_t ia, float b, int32_t ib) {
	if (isnan(a))
		return isnan(b) && ia < ib;
	return isnan(b) || a > b || (a == b && ia < ib);
}

// top_k stores the k highest logits of row (ids in ids, values in vals) in
// rank order (see better); k <= nv. One pass with insertion into the
// short sorted list: the vocabulary is large, k small.
static void top_k(const float *row, int32_t nv, long k, int32_t *ids, float *vals) {
	long n = 0;
	for (int32_t i = 0; i < nv; i++) {
		float v = row[i];
		if (n == k && !better(v, i, vals[n - 1], ids[n - 1]))
			continue;
		long j = n < k ? n++ : k - 1;
		for (; j > 0 && better(v, i, vals[j - 1], ids[j - 1]); j--) {
			vals[j] = vals[j - 1];
			ids[j] = ids[j - 1];
		}
		vals[j] = v;
		ids[j] = i;
	}
}

// argmax returns the highest logit's id, the lowest id on ties.
static int32_t argmax(const float *row, int32_t nv) {
	int32_t best = 0;
	for (int32_t i = 1; i < nv; i++)
		if (better(row[i], i, row[best], best))
			best = i;
	return best;
}

static bool reported(const lcase_t *c, size_t p) {
	if (!c->has_report)
		return true;
	for (size_t i = 0; i + 1 < c->report.n; i += 2)
		if (p >= (size_t)c->report.v[i] && p <= (size_t)c->report.v[i + 1])
			return true;
	return false;
}

// The rows recorded for one case: for each reported position, k ids and
// k logits.
typedef struct {
	size_t n, cap;
	long k;
	int32_t *pos, *ids;
	float *vals;
} rows_t;

// feed decodes seq->v[from:to] at their positions in chunks of chunk
// tokens, recording the top k of every reported row; the last token's
// row is always computed (the next greedy pick reads it).
static void feed(void *ctx, const lcase_t *c, const ids_t *seq, size_t from, size_t to, size_t chunk,
		 int32_t nv, rows_t *rows) {
	int8_t *want = xmalloc(chunk);
	for (size_t i = from; i < to; i += chunk) {
		size_t n = to - i < chunk ? to - i : chunk;
		for (size_t j = 0; j < n; j++)
			want[j] = reported(c, i + j) || i + j == to - 1;
		decode(ctx, seq->v + i, (int32_t)n, (int32_t)i, want);
		for (size_t j = 0; j < n; j++) {
			if (!reported(c, i + j))
				continue;
			float *row = llama_get_logits_ith(ctx, (int32_t)j);
			if (row == NULL)
				die("no logits%s at position %ld", "", (long)(i + j));
			if (rows->n == rows->cap) {
				rows->cap = rows->cap ? rows->cap * 2 : 64;
				rows->pos = xrealloc(rows->pos, rows->cap * sizeof(int32_t));
				rows->ids = xrealloc(rows->ids, rows->cap * rows->k * sizeof(int32_t));
				rows->vals = xrealloc(rows->vals, rows->cap * rows->k * sizeof(float));
			}
			rows->pos[rows->n] = (int32_t)(i + j);
			top_k(row, nv, rows->k, rows->ids + rows->n * rows->k, rows->vals + rows->n * rows->k);
			rows->n++;
		}
	}
	free(want);
}

static void run_logits(void *model, const input_t *in) {
	const void *vocab = llama_model_get_vocab(model);
	int32_t nv = llama_vocab_n_tokens(vocab);
	ctx_params_t cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)in->n_ctx;
	cp.n_batch = cp.n_ubatch = (uint32_t)(in->n_batch < in->n_ctx ? in->n_batch : in->n_ctx);
	cp.n_threads = cp.n_threads_batch = 1;
	cp.flash_attn_type = 0;
	cp.type_k = cp.type_v = 1;
	void *ctx = llama_init_from_model(model, cp);
	if (ctx == NULL)
		die("cannot make a context%s of %ld positions", "", in->n_ctx);
	llama_set_n_threads(ctx, 1, 1);
	size_t nb = cp.n_batch, gb = in->gen_batch < (long)nb ? (size_t)in->gen_batch : nb;
	printf(",\n \"settings\": {\"n_ctx\": %ld, \"n_batch\": %ld, \"n_ubatch\": %ld, \"gen_batch\": %ld, "
	       "\"n_threads\": 1, \"kv_cache_type\": \"f16\", \"flash_attn\": false, \"n_gen\": %ld, "
	       "\"top_k\": %ld, \"add_special\": %s, \"parse_special\": %s},\n \"results\": [",
	       in->n_ctx, (long)nb, (long)nb, (long)gb, in->n_gen, in->top_k,
	       in->add_special ? "true" : "false", in->parse_special ? "true" : "false");
	ids_t prompt = {0}, seq = {0};
	buf_t text = {0};
	rows_t rows = {.k = in->top_k < nv ? in->top_k : nv};
	for (size_t ci = 0; ci < in->n_cases; ci++) {
		const lcase_t *c = &in->cases[ci];
		if (c->from_text)
			tokenize(vocab, c->text.p, c->text.n, in->add_special, in->parse_special, &prompt);
		else {
			prompt.n = 0;
			for (size_t i = 0; i < c->ids.n; i++)
				ids_add(&prompt, c->ids.v[i]);
		}
		if (prompt.n == 0)
			die("prompt %s%ld tokenizes to no tokens", "", (long)ci);
		size_t n_gen = c->has_teacher ? c->teacher.n : (size_t)in->n_gen;
		if (prompt.n + n_gen > (size_t)in->n_ctx)
			die("prompt %s%ld needs more positions than n_ctx", "", (long)ci);
		seq.n = 0;
		for (size_t i = 0; i < prompt.n; i++)
			ids_add(&seq, prompt.v[i]);
		if (c->has_teacher)
			for (size_t i = 0; i < c->teacher.n; i++)
				ids_add(&seq, c->teacher.v[i]);
		for (size_t i = 0; i < seq.n; i++)
			if (seq.v[i] >= nv)
				die("id %s%ld outside the vocabulary", "", seq.v[i]);
		// The prompt, then the generated (or given) ids, as the examples
		// run them: every row is read from this one pass.
		llama_memory_clear(llama_get_memory(ctx), true);
		rows.n = 0;
		feed(ctx, c, &seq, 0, prompt.n, nb, nv, &rows);
		if (c->has_teacher)
			feed(ctx, c, &seq, prompt.n, seq.n, gb, nv, &rows);
		else
			for (size_t g = 0; g < n_gen; g++) {
				int32_t id = argmax(llama_get_logits_ith(ctx, -1), nv);
				ids_add(&seq, id);
				feed(ctx, c, &seq, seq.n - 1, seq.n, 1, nv, &rows);
			}
		printf("%s\n  {", ci ? "," : "");
		if (c->from_text) {
			json_str_hex("prompt", c->text.p, c->text.n);
			printf(", ");
		}
		if (c->has_report) {
			printf("\"report\": [");
			for (size_t i = 0; i + 1 < c->report.n; i += 2)
				printf("%s[%d, %d]", i ? ", " : "", c->report.v[i], c->report.v[i + 1]);
			printf("], ");
		}
		printf("\"teacher_forced\": %s, \"prompt_ids\": ", c->has_teacher ? "true" : "false");
		json_ids(prompt.v, prompt.n);
		printf(",\n   \"generated_ids\": ");
		json_ids(seq.v + prompt.n, seq.n - prompt.n);
		text.n = 0;
		buf_add(&text, "", 0);
		for (size_t i = prompt.n; i < seq.n; i++)
			piece(vocab, seq.v[i], true, &text);
		printf(",\n   ");
		json_str_hex("text", text.p, text.n);
		printf(",\n   \"positions\": [");
		for (size_t r = 0; r < rows.n; r++) {
			printf("%s\n    {\"position\": %d, \"top\": [", r ? "," : "", rows.pos[r]);
			for (long j = 0; j < rows.k; j++) {
				float v = rows.vals[r * rows.k + j];
				printf("%s[%d, ", j ? ", " : "", rows.ids[r * rows.k + j]);
				if (isfinite(v))
					printf("%.9g]", v);
				else
					printf("null]");
			}
			printf("]}");
		}
		printf("]}");
		fflush(stdout);
	}
	printf("\n ]");
}

static void run_tokenize(void *model, const input_t *in) {
	const void *vocab = llama_model_get_vocab(model);
	printf(",\n \"results\": [");
	ids_t ids = {0};
	buf_t text = {0};
	for (size_t i = 0; i < in->n_texts; i++) {
		printf("%s\n  {", i ? "," : "");
		json_str_hex("text", in->texts[i].p, in->texts[i].n);
		printf(", \"tokenizations\": [");
		for (int k = 0; k < 4; k++) {
			bool add = k & 2, parse = k & 1;
			tokenize(vocab, in->texts[i].p, in->texts[i].n, add, parse, &ids);
			printf("%s\n   {\"add_special\": %s, \"parse_special\": %s, \"ids\": ", k ? "," : "",
			       add ? "true" : "false", parse ? "true" : "false");
			json_ids(ids.v, ids.n);
			detokenize(vocab, &ids, &text);
			printf(", ");
			json_str_hex("detokenized", text.p, text.n);
			putchar('}');
		}
		printf("]}");
	}
	printf("\n ]");
}

static void run_chat(void *model, const char *tmpl, const input_t *in) {
	const void *vocab = llama_model_get_vocab(model);
	buf_t bos = {0};
	buf_add(&bos, "", 0);
	if (llama_vocab_get_add_bos(vocab) && llama_vocab_bos(vocab) >= 0)
		piece(vocab, llama_vocab_bos(vocab), true, &bos);
	printf(",\n ");
	json_str_hex("template", tmpl, strlen(tmpl));
	printf(",\n \"add_generation_prompt\": %s,\n \"results\": [", in->add_gen ? "true" : "false");
	ids_t ids = {0};
	for (size_t i = 0; i < in->n_convs; i++) {
		const conv_t *c = &in->convs[i];
		chat_msg_t *msgs = xmalloc(c->n * sizeof(chat_msg_t));
		size_t total = 0;
		for (size_t j = 0; j < c->n; j++) {
			msgs[j].role = c->role[j];
			msgs[j].content = c->content[j];
			total += strlen(c->role[j]) + strlen(c->content[j]);
		}
		if (total > (1u << 28))
			die("conversation %s%ld too long", "", (long)i);
		int32_t cap = (int32_t)(2 * total + 1024);
		char *out = xmalloc(cap);
		int32_t n = llama_chat_apply_template(tmpl, msgs, c->n, in->add_gen, out, cap);
		if (n > cap) {
			cap = n;
			out = xrealloc(out, cap);
			n = llama_chat_apply_template(tmpl, msgs, c->n, in->add_gen, out, cap);
		}
		printf("%s\n  {\"messages\": [", i ? "," : "");
		for (size_t j = 0; j < c->n; j++) {
			printf("%s{\"role\": ", j ? ", " : "");
			json_str(c->role[j], strlen(c->role[j]));
			printf(", ");
			json_str_hex("content", c->content[j], strlen(c->content[j]));
			putchar('}');
		}
		printf("],\n   ");
		if (n < 0 || n > cap) {
			// The legacy renderer does not know this template.
			printf("\"error\": \"llama_chat_apply_template returned %d\"}", n);
		} else {
			json_str_hex("rendered", out, n);
			tokenize(vocab, out, n, true, true, &ids);
			printf(",\n   \"ids\": ");
			json_ids(ids.v, ids.n);
			size_t skip = bos.n && (size_t)n >= bos.n && !memcmp(out, bos.p, bos.n) ? bos.n : 0;
			tokenize(vocab, out + skip, n - skip, true, true, &ids);
			printf(",\n   \"ids_bos_stripped\": ");
			json_ids(ids.v, ids.n);
			putchar('}');
		}
		free(out);
		free(msgs);
	}
	printf("\n ]");
}

// check_defaults stops unless the defaults the library fills in are where
// the structs above declare them: a layout change must not pass silently.
static void check_defaults(void) {
	model_params_t m = llama_model_default_params();
	ctx_params_t c = llama_context_default_params();
	const char *bad = NULL;
	if (m.devices || m.tensor_buft_overrides || m.n_gpu_layers != -1 || m.split_mode != 1 ||
	    m.load_mode != -1 || m.lazy_mode != 1 || m.main_gpu != 0 || m.tensor_split ||
	    m.progress_callback || m.kv_overrides || m.vocab_only || m.check_tensors ||
	    !m.use_extra_bufts || m.no_host || m.no_alloc || m.load_mtp)
		bad = "llama_model_params";
	else if (c.n_ctx != 512 || c.n_batch != 2048 || c.n_ubatch != 512 || c.n_seq_max != 1 ||
		 c.n_rs_seq != 0 || c.n_outputs_max != 0 || c.n_outputs_max_per_seq != 1 ||
		 c.n_threads != 4 || c.n_threads_batch != 4 || c.ctx_type != 0 ||
		 c.rope_scaling_type != -1 || c.pooling_type != -1 || c.attention_type != -1 ||
		 c.flash_attn_type != -1 || c.rope_freq_base != 0 || c.rope_freq_scale != 0 ||
		 c.yarn_ext_factor != -1 || c.yarn_attn_factor != -1 || c.yarn_beta_fast != -1 ||
		 c.yarn_beta_slow != -1 || c.yarn_orig_ctx != 0 || c.defrag_thold != -1 || c.cb_eval ||
		 c.cb_eval_user_data || c.type_k != 1 || c.type_v != 1 || c.abort_callback ||
		 c.abort_callback_data || c.embeddings || !c.offload_kqv || !c.no_perf || !c.op_offload ||
		 !c.swa_full || c.kv_unified || c.samplers || c.n_samplers || c.ctx_other)
		bad = "llama_context_params";
	if (bad) {
		fprintf(stderr, "llref: the library's %s defaults are not where llref.c declares them: "
				"this is not the llama.cpp release llref.c was written for (v0.5.0)\n", bad);
		exit(1);
	}
}

int main(int argc, char **argv) {
	if (argc != 5) {
		fprintf(stderr, "usage: llref LIBDIR logits|tokenize|chat MODEL INPUT\n");
		return 2;
	}
	const char *mode = argv[2];
	if (strcmp(mode, "logits") && strcmp(mode, "tokenize") && strcmp(mode, "chat")) {
		fprintf(stderr, "llref: unknown mode %s\n", mode);
		return 2;
	}
	input_t in = {.n_ctx = 512, .n_batch = 512, .gen_batch = 1, .n_gen = 32, .top_k = 10, .add_special = true, .add_gen = true};
	FILE *f = strcmp(argv[4], "-") ? fopen(argv[4], "r") : stdin;
	if (f == NULL)
		die("cannot open %s", argv[4], 0);
	read_input(f, mode, &in);
	if (f != stdin)
		fclose(f);
	int keep = 0;
	llama_log_set(log_cb, &keep);
	ggml_backend_load_all_from_path(argv[1]);
	llama_backend_init();
	check_defaults();
	model_params_t mp = llama_model_default_params();
	// Tokenizing and rendering read only the vocabulary and the metadata.
	mp.vocab_only = strcmp(mode, "logits") != 0;
	void *model = llama_model_load_from_file(argv[3], mp);
	if (model == NULL)
		die("cannot load %s", argv[3], 0);
	const void *vocab = llama_model_get_vocab(model);
	const char *tmpl = NULL;
	if (!strcmp(mode, "chat")) {
		tmpl = in.has_tmpl ? in.tmpl.p : llama_model_chat_template(model, NULL);
		if (tmpl == NULL)
			die("%s has no chat template (tokenizer.chat_template); give one with `template`", argv[3], 0);
	}
	char desc[256] = "";
	if (!mp.vocab_only)
		llama_model_desc(model, desc, sizeof desc);
	const char *base = strrchr(argv[3], '/');
	base = base ? base + 1 : argv[3];
	printf("{\"tool\": \"llref\", \"mode\": \"%s\", \"llama_cpp\": ", mode);
	json_str(llama_version(), strlen(llama_version()));
	printf(",\n \"model_file\": ");
	json_str(base, strlen(base));
	printf(", \"model_desc\": ");
	json_str(desc, strlen(desc));
	printf(",\n \"n_vocab\": %d, \"bos_id\": %d, \"eos_id\": %d, \"add_bos\": %s, \"add_eos\": %s",
	       llama_vocab_n_tokens(vocab), llama_vocab_bos(vocab), llama_vocab_eos(vocab),
	       llama_vocab_get_add_bos(vocab) ? "true" : "false",
	       llama_vocab_get_add_eos(vocab) ? "true" : "false");
	if (!strcmp(mode, "logits"))
		run_logits(model, &in);
	else if (!strcmp(mode, "tokenize"))
		run_tokenize(model, &in);
	else
		run_chat(model, tmpl, &in);
	printf("\n}\n");
	return 0;
}
