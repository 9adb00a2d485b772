#!/usr/bin/env bash
# Prints llama.cpp's reference answers for a model file as JSON (see the
# header of llref.c for the modes and the input format, and README.md).
#
#   bench/llamacpp/ref.sh logits|tokenize|chat|chat-jinja MODEL INPUT > ref.json
#
# INPUT is a file of directives, or - for standard input. The prebuilt
# llama.cpp comes from the npm registry exactly as for run.sh (installed
# once into LLAMACPP_DIR, default ~/.cache/lisa-llamacpp); llref.c is
# compiled here with cc. Mode chat-jinja (llama-server's default chat
# rendering) runs llref-jinja.cpp instead, compiled with c++ against the
# headers of the same llama.cpp release, whose source the node-llama-cpp
# npm package ships as a git bundle (unpacked once into
# LLAMACPP_DIR/llama-src; needs git). Library warnings and errors go to
# standard error.
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
if [ "$1" = chat-jinja ]; then
	src=$dir/llama-src
	if [ ! -e "$src/common/chat.h" ]; then
		tgz=$(cd "$dir" && npm pack --silent --loglevel=error node-llama-cpp@3.22.1)
		tar -xzf "$dir/$tgz" -C "$dir" package/llama/gitRelease.bundle
		rm -rf "$src.tmp"
		git clone -q "$dir/package/llama/gitRelease.bundle" "$src.tmp" 2>/dev/null
		mv "$src.tmp" "$src"
		rm -rf "$dir/$tgz" "$dir/package"
	fi
	if [ ! -x "$dir/llref-jinja" ] || [ "$here/llref-jinja.cpp" -nt "$dir/llref-jinja" ]; then
		c++ -std=c++17 -O1 -Wall -o "$dir/llref-jinja.tmp" "$here/llref-jinja.cpp" -I"$src/include" \
			-I"$src/ggml/include" -I"$src/common" -I"$src/vendor" -rdynamic -L"$lib" \
			-l:libllama-common.so -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
			-Wl,-rpath,"$lib" 2> >(grep -v -e 'defined but not used' -e 'In file included' -e '^ *from ' -e '^ *[0-9]* |' -e '^ *|' >&2)
		mv "$dir/llref-jinja.tmp" "$dir/llref-jinja"
	fi
	exec "$dir/llref-jinja" "$2" "$3"
fi
if [ ! -x "$dir/llref" ] || [ "$here/llref.c" -nt "$dir/llref" ] || [ "$here/llama_abi.h" -nt "$dir/llref" ]; then
	cc -std=gnu11 -O2 -Wall -Wextra -o "$dir/llref.tmp" "$here/llref.c" -L"$lib" \
		-l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$lib"
	mv "$dir/llref.tmp" "$dir/llref"
fi
exec "$dir/llref" "$lib" "$@"
