// refgen writes llama.cpp's quantization, dequantization and dot-product
// results for package quant's reference tests (quant/testdata/ref), using
// the ggml library node-llama-cpp ships. Run gen.sh; see it for the files.
//
// Prototypes are declared here by hand (no ggml headers); the layouts of
// the two traits structs are checked at run time against known values.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*to_float_t)(const void *x, float *y, int64_t k);
typedef void (*from_float_t)(const float *x, void *y, int64_t k);
typedef void (*vec_dot_t)(int n, float *s, size_t bs, const void *x, size_t bx,
			  const void *y, size_t by, int nrc);

struct type_traits { // struct ggml_type_traits
	const char *type_name;
	int64_t blck_size;
	int64_t blck_size_interleave;
	size_t type_size;
	bool is_quantized;
	to_float_t to_float;
	from_float_t from_float_ref;
};

struct type_traits_cpu { // struct ggml_type_traits_cpu
	from_float_t from_float;
	vec_dot_t vec_dot;
	int vec_dot_type;
	int64_t nrows;
};

const struct type_traits *ggml_get_type_traits(int type);

enum { NCOLS = 512, NRAND = 6, NHOSTILE = 4, NDOTW = 8, NDOTX = 3 };

// MXFP4 is ggml's type number of the OCP microscaling FP4 format: a block
// is one E8M0 exponent byte then 16 bytes of E2M1 codes. Its hostile rows
// are 20 instead of NHOSTILE, so that the first 256 blocks can carry every
// exponent byte 0..255 in turn (the rest stay random), and it has its own
// adversarial input rows (mxfp4Adversarial).
enum { MXFP4 = 39, MXFP4_HOSTILE = 20, MXFP4_ADV = 6 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next(void) {
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static float uniform(void) { return (float)((next() >> 11) * (1.0 / 9007199254740992.0)); }

static float gauss(void) {
	double u = uniform() + 1e-12, v = uniform();
	return (float)(sqrt(-2 * log(u)) * cos(2 * M_PI * v));
}

static void put(const char *dir, const char *name, const char *suffix, const void *p, size_t n) {
	char path[1024];
	snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "refgen: cannot write %s\n", path);
		exit(1);
	}
}

struct want {
	int type;
	const char *name;
	int64_t blck;
	size_t size;
};

// The types refgen covers, with the sizes ggml must report for them.
static const struct want types[] = {
	{2, "q4_0", 32, 18},   {3, "q4_1", 32, 20},   {6, "q5_0", 32, 22},
	{7, "q5_1", 32, 24},   {8, "q8_0", 32, 34},   {9, "q8_1", 32, 36},
	{10, "q2_K", 256, 84}, {11, "q3_K", 256, 110}, {12, "q4_K", 256, 144},
	{13, "q5_K", 256, 176}, {14, "q6_K", 256, 210}, {15, "q8_K", 256, 292},
	{20, "iq4_nl", 32, 18}, {23, "iq4_xs", 256, 136}, {MXFP4, "mxfp4", 32, 17},
};

// mxfp4Adversarial fills MXFP4_ADV rows of NCOLS values with what the
// shared adversarial rows lack and MXFP4's quantizer treats specially:
// subnormals, values just below and at powers of two over the whole
// exponent range (floorf(log2f(amax)) picks the block exponent), ±FLT_MAX,
// exact ties between neighbouring E2M1 values, signed zeros, and blocks
// holding infinities or NaNs beside finite values.
static void mxfp4Adversarial(float *x) {
	float *r = x;
	for (int i = 0; i < NCOLS; i++) { // subnormals and the smallest normals
		uint32_t bits = (uint32_t)(next() % 0x00900000u) | (next() & 1u) << 31;
		memcpy(&r[i], &bits, 4);
	}
	r = x + NCOLS;
	for (int i = 0; i < NCOLS; i++) { // 2^k and its float predecessor, k over -149..127
		int k = -149 + (i / 2) % 277;
		float p = ldexpf(1, k);
		r[i] = (i & 1) ? nextafterf(p, 0) : p;
		if (next() & 1) r[i] = -r[i];
	}
	r = x + 2 * NCOLS;
	for (int i = 0; i < NCOLS; i++) { // large magnitudes up to ±FLT_MAX
		float m = (i % 32 == 0) ? 3.4028234663852886e38f : ldexpf(1 + uniform(), 100 + (int)(next() % 28));
		r[i] = (next() & 1) ? -m : m;
	}
	r = x + 3 * NCOLS;
	// Ties: each block's largest value 6*2^s fixes the scale 2^s*... and the
	// other values sit exactly halfway between two table entries (or on one).
	static const float half[] = {0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f, 2, 2.5f, 3, 3.5f, 4, 5, 6};
	for (int b = 0; b < NCOLS / 32; b++) {
		float s = ldexpf(1, (int)(next() % 40) - 20);
		for (int j = 0; j < 32; j++) {
			float v = j == 0 ? 6 : half[next() % (sizeof half / sizeof half[0])];
			if (next() & 1) v = -v;
			r[b * 32 + j] = v * s;
		}
	}
	r = x + 4 * NCOLS;
	for (int i = 0; i < NCOLS; i++) r[i] = gauss(); // infinities and signed zeros among finite values
	for (int b = 0; b < NCOLS / 32; b++) {
		switch (b % 4) {
		case 0: r[b * 32 + (int)(next() % 32)] = INFINITY; break;
		case 1: r[b * 32 + (int)(next() % 32)] = -INFINITY; break;
		case 2: for (int j = 0; j < 32; j++) r[b * 32 + j] = (j & 1) ? -0.0f : 0.0f; break;
		case 3: r[b * 32 + 5] = INFINITY; r[b * 32 + 9] = -INFINITY; break;
		}
	}
	r = x + 5 * NCOLS;
	for (int i = 0; i < NCOLS; i++) r[i] = gauss(); // NaNs: one, several, a whole block
	for (int b = 0; b < NCOLS / 32; b++) {
		switch (b % 4) {
		case 0: r[b * 32 + (int)(next() % 32)] = NAN; break;
		case 1: for (int j = 0; j < 32; j += 3) r[b * 32 + j] = -NAN; break;
		case 2: for (int j = 0; j < 32; j++) r[b * 32 + j] = NAN; break;
		case 3: r[b * 32] = NAN; r[b * 32 + 1] = INFINITY; break;
		}
	}
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: refgen CPU_LIB ADVERSARIAL_INPUT OUT_DIR\n");
		return 2;
	}
	void *cpu = dlopen(argv[1], RTLD_NOW);
	if (!cpu) {
		fprintf(stderr, "refgen: %s\n", dlerror());
		return 1;
	}
	const struct type_traits_cpu *(*traits_cpu)(int) = dlsym(cpu, "ggml_get_type_traits_cpu");
	void (*cpu_init)(void) = dlsym(cpu, "ggml_cpu_init");
	if (!traits_cpu || !cpu_init) {
		fprintf(stderr, "refgen: %s lacks ggml_get_type_traits_cpu or ggml_cpu_init\n", argv[1]);
		return 1;
	}
	cpu_init();

	// Input rows: the shared adversarial set, then NRAND rows of N(0,1)
	// scaled by 10^U(-3,1).
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "refgen: cannot open %s\n", argv[2]);
		return 1;
	}
	static float in[64 * NCOLS];
	size_t nadv = fread(in, sizeof(float), 64 * NCOLS, f) / NCOLS;
	fclose(f);
	int rows = (int)nadv + NRAND;
	for (int r = (int)nadv; r < rows; r++) {
		float s = powf(10, -3 + 4 * uniform());
		for (int i = 0; i < NCOLS; i++) in[r * NCOLS + i] = s * gauss();
	}
	put(argv[3], "input", ".f32.bin", in, sizeof(float) * rows * NCOLS);

	static uint8_t q[64 * NCOLS * 2], act[NDOTX * NCOLS * 2];
	static float deq[64 * NCOLS];
	for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
		const struct want *w = &types[ti];
		const struct type_traits *tt = ggml_get_type_traits(w->type);
		const struct type_traits_cpu *tc = traits_cpu(w->type);
		if (strcmp(tt->type_name, w->name) != 0 || tt->blck_size != w->blck || tt->type_size != w->size) {
			fprintf(stderr, "refgen: type %d is %s/%lld/%zu, want %s/%lld/%zu: traits layout changed?\n",
				w->type, tt->type_name, (long long)tt->blck_size, tt->type_size, w->name,
				(long long)w->blck, w->size);
			return 1;
		}
		size_t rowb = NCOLS / w->blck * w->size;
		from_float_t ref = tt->from_float_ref;
		if (!ref) { // Q8_K's traits have none; the function exists
			char fn[64];
			snprintf(fn, sizeof fn, "quantize_row_%s_ref", w->name);
			ref = (from_float_t)dlsym(RTLD_DEFAULT, fn);
		}
		if (!ref) {
			fprintf(stderr, "refgen: no reference quantizer for %s\n", w->name);
			return 1;
		}
		// Quantize every input row with the reference quantizer and
		// dequantize the result.
		for (int r = 0; r < rows; r++) ref(in + r * NCOLS, q + r * rowb, NCOLS);
		put(argv[3], w->name, ".quant.bin", q, rowb * rows);
		if (tt->to_float) {
			for (int r = 0; r < rows; r++) tt->to_float(q + r * rowb, deq + r * NCOLS, NCOLS);
			put(argv[3], w->name, ".dequant.f32.bin", deq, sizeof(float) * NCOLS * rows);
			// Hostile blocks: random bytes, every scale bit pattern possible.
			int nh = w->type == MXFP4 ? MXFP4_HOSTILE : NHOSTILE;
			for (size_t i = 0; i < rowb * nh; i++) q[i] = (uint8_t)next();
			if (w->type == MXFP4)
				for (int e = 0; e < 256; e++) q[e * w->size] = (uint8_t)e;
			put(argv[3], w->name, ".hostile.bin", q, rowb * nh);
			for (int r = 0; r < nh; r++) tt->to_float(q + r * rowb, deq + r * NCOLS, NCOLS);
			put(argv[3], w->name, ".hostile.dequant.f32.bin", deq, sizeof(float) * NCOLS * nh);
		}
		// Dots: the weight rows are the quantized last NDOTW input rows; the
		// activations the first NDOTX random rows in the partner format, as
		// the CPU backend quantizes them; the dot is ggml's generic C kernel.
		char sym[64];
		const struct type_traits_cpu *tx = NULL;
		if (tc->vec_dot == NULL || w->type == 15 || w->type == 9) continue;
		snprintf(sym, sizeof sym, "ggml_vec_dot_%s_q8_%s_generic", w->name,
			 tc->vec_dot_type == 15 ? "K" : tc->vec_dot_type == 9 ? "1" : "0");
		vec_dot_t gen = dlsym(cpu, sym);
		if (!gen) {
			fprintf(stderr, "refgen: no %s\n", sym);
			return 1;
		}
		tx = traits_cpu(tc->vec_dot_type);
		const struct type_traits *xt = ggml_get_type_traits(tc->vec_dot_type);
		size_t xrowb = NCOLS / xt->blck_size * xt->type_size;
		for (int r = 0; r < NDOTX; r++) tx->from_float(in + (nadv + r) * NCOLS, act + r * xrowb, NCOLS);
		put(argv[3], w->name, ".act.bin", act, xrowb * NDOTX);
		for (int r = 0; r < rows; r++) ref(in + r * NCOLS, q + r * rowb, NCOLS);
		float dots[NDOTW * NDOTX];
		for (int i = 0; i < NDOTW; i++)
			for (int j = 0; j < NDOTX; j++)
				gen(NCOLS, &dots[i * NDOTX + j], 0, q + (rows - NDOTW + i) * rowb, 0, act + j * xrowb, 0, 1);
		put(argv[3], w->name, ".dot.f32.bin", dots, sizeof dots);
		if (w->type == MXFP4) {
			// The hostile rows (every exponent byte) against the same
			// activations, and the MXFP4 adversarial rows quantized.
			static float hdots[MXFP4_HOSTILE * NDOTX];
			for (size_t i = 0; i < rowb * MXFP4_HOSTILE; i++) q[i] = (uint8_t)next();
			for (int e = 0; e < 256; e++) q[e * w->size] = (uint8_t)e;
			put(argv[3], w->name, ".hostile2.bin", q, rowb * MXFP4_HOSTILE);
			for (int i = 0; i < MXFP4_HOSTILE; i++)
				for (int j = 0; j < NDOTX; j++)
					gen(NCOLS, &hdots[i * NDOTX + j], 0, q + i * rowb, 0, act + j * xrowb, 0, 1);
			put(argv[3], w->name, ".hostile2.dot.f32.bin", hdots, sizeof hdots);
			static float adv[MXFP4_ADV * NCOLS];
			mxfp4Adversarial(adv);
			put(argv[3], w->name, ".adv.input.f32.bin", adv, sizeof adv);
			for (int r = 0; r < MXFP4_ADV; r++) ref(adv + r * NCOLS, q + r * rowb, NCOLS);
			put(argv[3], w->name, ".adv.quant.bin", q, rowb * MXFP4_ADV);
			for (int r = 0; r < MXFP4_ADV; r++) tt->to_float(q + r * rowb, deq + r * NCOLS, NCOLS);
			put(argv[3], w->name, ".adv.dequant.f32.bin", deq, sizeof(float) * NCOLS * MXFP4_ADV);
		}
		fprintf(stderr, "refgen: %s (partner %s)\n", w->name, xt->type_name);
	}
	return 0;
}
