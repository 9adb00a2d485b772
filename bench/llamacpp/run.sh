#!/usr/bin/env bash
# Measures llama.cpp on this machine beside `lisa bench`, for a side-by-side
# comparison on the same CPU and the same files.
#
#   bench/llamacpp/run.sh MODEL [THREADS [N_PROMPT [N_GEN [REPS [DEPTHS]]]]] > llamacpp.json
#
# DEPTHS (default 0) is a comma-separated list of context depths, as
# `lisa bench -d`: before each test the KV cache holds that many tokens,
# whose decoding is not timed.
#
# llama.cpp comes prebuilt from the npm registry (the package that
# node-llama-cpp uses: libllama with ggml's CPU backend in one variant per
# x86-64 level, of which ggml loads the best one this CPU runs, named in
# the system-info line on standard error). It is installed once into
# LLAMACPP_DIR (default: ~/.cache/lisa-llamacpp) and driven by llbench.c,
# compiled here with cc. Nothing of it is linked into lisa. Output: a JSON
# array in llama-bench's -o json shape, which `lisa bench chart` reads.
set -euo pipefail
if [ $# -lt 1 ]; then
	sed -n '5p' "$0" >&2
	exit 2
fi
model=$1 threads=${2:-1,2} n_prompt=${3:-512} n_gen=${4:-128} reps=${5:-3} depths=${6:-0}
pkg=@node-llama-cpp/linux-x64@3.22.1
dir=${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lisa-llamacpp}
lib=$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -e "$lib/libllama.v0.5.0.so" ]; then
	mkdir -p "$dir"
	(cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error "$pkg" >&2)
fi
if [ ! -x "$dir/llbench" ] || [ "$here/llbench.c" -nt "$dir/llbench" ]; then
	cc -O2 -o "$dir/llbench" "$here/llbench.c" -L"$lib" -l:libllama.v0.5.0.so \
		-l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$lib"
fi
exec "$dir/llbench" "$lib" "$model" "$threads" "$n_prompt" "$n_gen" "$reps" "$depths" 2> >(grep -E '^llbench' >&2)
