#!/usr/bin/env bash
# Prints llama.cpp's reference answers for a model file as JSON (see the
# header of llref.c for the modes and the input format, and README.md).
#
#   bench/llamacpp/ref.sh logits|tokenize|chat MODEL INPUT > ref.json
#
# INPUT is a file of directives, or - for standard input. The prebuilt
# llama.cpp comes from the npm registry exactly as for run.sh (installed
# once into LLAMACPP_DIR, default ~/.cache/lisa-llamacpp); llref.c is
# compiled here with cc. Library warnings and errors go to standard error.
set -euo pipefail
if [ $# -ne 3 ]; then
	sed -n '5p' "$0" >&2
	exit 2
fi
pkg=@node-llama-cpp/linux-x64@3.22.1
dir=${LLAMACPP_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lisa-llamacpp}
lib=$dir/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -e "$lib/libllama.v0.5.0.so" ]; then
	mkdir -p "$dir"
	(cd "$dir" && npm install --no-save --no-audit --no-fund --loglevel=error "$pkg" >&2)
fi
if [ ! -x "$dir/llref" ] || [ "$here/llref.c" -nt "$dir/llref" ]; then
	cc -std=gnu11 -O2 -Wall -Wextra -o "$dir/llref.tmp" "$here/llref.c" -L"$lib" \
		-l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$lib"
	mv "$dir/llref.tmp" "$dir/llref"
fi
exec "$dir/llref" "$lib" "$@"
