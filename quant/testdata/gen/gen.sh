#!/usr/bin/env bash
# Regenerates quant/testdata/ref from llama.cpp's ggml (the library
# bench/llamacpp/run.sh installs) and shared/ref/quant's adversarial rows:
#
#   quant/testdata/gen/gen.sh [SHARED_DIR]
#
# Per type T (ggml's lower-case name) the gzipped files are, row after row:
#   T.quant.bin               quantize_row_T_ref of every row of input.f32.bin
#   T.dequant.f32.bin         dequantize_row_T of those bytes
#   T.hostile.bin             random bytes (4 rows of 512 values)
#   T.hostile.dequant.f32.bin dequantize_row_T of them
#   T.act.bin                 3 random input rows in T's activation partner
#                             format, as the CPU backend quantizes them
#   T.dot.f32.bin             ggml_vec_dot_T_q8_X_generic of the last 8
#                             quantized rows with each activation row
# MXFP4 (mxfp4.*) has 20 hostile rows whose first 256 blocks carry the
# exponent bytes 0..255, and three more sets:
#   mxfp4.hostile2.bin, .hostile2.dot.f32.bin  more such rows, and their dots
#                             with the 3 activation rows
#   mxfp4.adv.input.f32.bin, .adv.quant.bin, .adv.dequant.f32.bin
#                             6 rows of subnormals, powers of two and their
#                             predecessors, ±FLT_MAX, ties, ±0, Inf and NaN,
#                             quantized and dequantized
# input.f32.bin holds the 18 adversarial rows then 6 random ones, 512
# values each. The CPU library used is the baseline x86-64 variant.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shared=${1:-$here/../../../../shared}
lib=${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lisa-llamacpp}/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
out=$here/../ref
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/refgen" "$here/refgen.c" -L"$lib" -l:libggml-base.so -ldl -lm -Wl,-rpath,"$lib"
"$tmp/refgen" "$lib/libggml-cpu-x64.so" "$shared/ref/quant/q8_0.adversarial.input.f32.bin" "$tmp"
rm -f "$out"/*.gz
for f in "$tmp"/*.bin; do
	gzip -n -9 -c "$f" >"$out/$(basename "$f").gz"
done
