#!/bin/bash
# embed.sh regenerates the llama.cpp embedding references of engine's
# tests (engine/testdata/embed-*.json) with llembed.c, built against the
# prebuilt libllama that ref.sh uses. Run from the repository root with
# ../shared present.
set -euo pipefail
lib=${LLAMA_LIB:-$HOME/.cache/lisa-llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=gnu11 -O2 -Wall -Wextra -o "$tmp/llembed" "$here/llembed.c" -L"$lib" \
	-l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -lm -Wl,-rpath,"$lib"
texts=("Once upon a time" "The dog ran home." "A little girl found a red ball in the park, and she was happy.")
"$tmp/llembed" "$lib" ../shared/models/stories260K.gguf mean "${texts[@]}" >engine/testdata/embed-stories260K-mean.json
"$tmp/llembed" "$lib" ../shared/models/mini-24m-f16.gguf mean "${texts[@]}" >engine/testdata/embed-mini-24m-f16-mean.json
LISA_EMBED_SYNTH="$tmp/qwen3-tiny-last.gguf" CGO_ENABLED=0 go test ./engine -run '^TestEmbedSynthFile$' -count=1 >/dev/null
"$tmp/llembed" "$lib" "$tmp/qwen3-tiny-last.gguf" model "${texts[@]}" >engine/testdata/embed-qwen3-tiny-last.json
