#!/usr/bin/env bash
# Quantizes a GGUF file (F32/F16/BF16) as llama.cpp's llama-quantize
# INPUT OUTPUT FTYPE does (no importance matrix), with the prebuilt
# llama.cpp that ref.sh uses (installed once into LLAMACPP_DIR, default
# ~/.cache/lisa-llamacpp); llquant.c is compiled here with cc.
#
#   bench/llamacpp/quant.sh INPUT.gguf OUTPUT.gguf FTYPE    (FTYPE: Q4_K_M, IQ4_XS, ...)
set -euo pipefail
if [ $# -ne 3 ]; then
	sed -n '7p' "$0" >&2
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
if [ ! -x "$dir/llquant" ] || [ "$here/llquant.c" -nt "$dir/llquant" ]; then
	cc -std=gnu11 -O2 -Wall -Wextra -o "$dir/llquant.tmp" "$here/llquant.c" -L"$lib" \
		-l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$lib"
	mv "$dir/llquant.tmp" "$dir/llquant"
fi
exec "$dir/llquant" "$lib" "$@"
